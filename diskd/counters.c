/*
 * counters.c
 *	  Cumulative statistics of the daemon: counters over every scan of every
 *	  connection since the daemon started, answered in StatsReply.
 *
 * Rules of this file:
 *   - One set of counters per daemon, updated with relaxed atomic adds once
 *     per scan (from its final ScanStats), never per tuple: scans on
 *     different connections never wait for each other.
 *   - A reply reads each counter atomically but not all of them at one
 *     instant: a scan ending during the read may be counted in some fields
 *     and not yet in others.  Every counter only grows.
 *   - Counters restart with the daemon (the launcher restarts a dead disk);
 *     uptime_us tells a reader that it happened.
 */
#include <stdatomic.h>

#include "diskd.h"

typedef struct ApCounters
{
	atomic_uint_fast64_t scans;
	atomic_uint_fast64_t pages_read;
	atomic_uint_fast64_t bytes_read;
	atomic_uint_fast64_t bytes_shipped;
	atomic_uint_fast64_t tuples_seen;
	atomic_uint_fast64_t tuples_passed;
	atomic_uint_fast64_t tuples_fallback;
	atomic_uint_fast64_t pages_fallback;
	atomic_uint_fast64_t xids_resolved;
	atomic_uint_fast64_t bloom_dropped;
	atomic_uint_fast64_t busy_us;
	atomic_uint_fast64_t throttle_us;
	atomic_uint_fast64_t cpu_us;
} ApCounters;

static ApCounters counters;
static atomic_uint_fast64_t start_ns;

/* Add to one counter; relaxed: the counters order nothing else. */
static inline void
add(atomic_uint_fast64_t *c, uint64_t v)
{
	if (v != 0)
		atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Read one counter. */
static inline uint64_t
get(atomic_uint_fast64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* Note the daemon's start (uptime counts from here); idempotent. */
void
ap_stats_start(void)
{
	uint_fast64_t expected = 0;

	atomic_compare_exchange_strong(&start_ns, &expected, ap_mono_ns());
}

/*
 * Add one finished scan (successful or not: whatever it read and shipped
 * happened).  busy_us is the scan's wall time, throttles included: an
 * emulated slow drive is busy while it is being slow.
 */
void
ap_stats_add_scan(const ActivePg__ScanStats *st)
{
	add(&counters.scans, 1);
	add(&counters.pages_read, st->pages_read);
	add(&counters.bytes_read, st->bytes_read);
	add(&counters.bytes_shipped, st->bytes_shipped);
	add(&counters.tuples_seen, st->tuples_seen);
	add(&counters.tuples_passed, st->tuples_passed);
	add(&counters.tuples_fallback, st->tuples_fallback);
	add(&counters.pages_fallback, st->pages_fallback);
	add(&counters.xids_resolved, st->xids_resolved);
	add(&counters.bloom_dropped, st->bloom_dropped);
	add(&counters.busy_us, st->wall_us);
	add(&counters.throttle_us, st->throttle_us);
	add(&counters.cpu_us, st->cpu_us);
}

/* Fill a StatsReply with the counters as they are now. */
void
ap_stats_fill(ActivePg__StatsReply *r)
{
	uint64_t	start;

	ap_stats_start();			/* a daemon that never called it counts from now */
	start = get(&start_ns);
	r->scans = get(&counters.scans);
	r->pages_read = get(&counters.pages_read);
	r->bytes_read = get(&counters.bytes_read);
	r->bytes_shipped = get(&counters.bytes_shipped);
	r->tuples_seen = get(&counters.tuples_seen);
	r->tuples_passed = get(&counters.tuples_passed);
	r->tuples_fallback = get(&counters.tuples_fallback);
	r->pages_fallback = get(&counters.pages_fallback);
	r->xids_resolved = get(&counters.xids_resolved);
	r->bloom_dropped = get(&counters.bloom_dropped);
	r->busy_us = get(&counters.busy_us);
	r->throttle_us = get(&counters.throttle_us);
	r->cpu_us = get(&counters.cpu_us);
	r->uptime_us = (ap_mono_ns() - start) / 1000;
}
