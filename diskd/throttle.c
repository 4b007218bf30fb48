/*
 * throttle.c
 *	  Emulation throttles: the drive's media rate (a token bucket on reads)
 *	  and the disk CPU's speed relative to the host (a wait after each chunk
 *	  of work).  Both are off by default, so the machine runs at full speed.
 *
 * Rules of this file:
 *   - The functions only compute waits; the caller sleeps (scan.c sleeps in
 *     slices so that a Cancel is seen while a slow disk is being emulated).
 *   - The media bucket is one per daemon and shared by every connection: the
 *     daemon is one drive, so concurrent scans split its rate.  Bytes are
 *     charged when a chunk is delivered to a scan.  The bucket may go into
 *     debt: each charger waits until its own bytes are paid for, so
 *     concurrent chargers queue up behind each other and the total rate
 *     stays at the set rate whatever the number of scans.
 *   - The bucket's depth is "one unit of read-ahead": the base burst
 *     (BUCKET_BURST_MS of the rate) or the chunk being charged, whichever is
 *     larger, but never more than BUCKET_DEPTH_MAX_MS of the rate.  A drive
 *     keeps reading ahead while the disk CPU works on the previous unit, so
 *     a CPU-bound scan must not pay for media time it overlapped; a depth
 *     below one chunk would charge every chunk twice (once as CPU, once as
 *     media) instead of the max() of the two that the model predicts.
 *   - The CPU wait uses the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID),
 *     never wall time: on a busy machine a preempted thread's wall time grows
 *     but its CPU time does not, so the emulated disk is not slowed twice.
 *     A chunk that took c seconds of CPU must take c / ratio: the wait is
 *     c * (1 / ratio - 1).
 *   - MB is 2^20 bytes, as in PostgreSQL's settings and --memory-mb.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "diskd.h"

/* Base burst of the media bucket: this much of a second's worth of bytes. */
#define BUCKET_BURST_MS			50
/* The bucket never holds more than this much of a second's worth of bytes. */
#define BUCKET_DEPTH_MAX_MS		1000
/* The smallest base burst: one heap page. */
#define BUCKET_BURST_MIN_BYTES	AP_BLCKSZ

#define NS_PER_SEC				1000000000ull

/* The daemon's drive: one bucket for all connections, and its CPU ratio. */
static ApBucket media_bucket = {.lock = PTHREAD_MUTEX_INITIALIZER};
static double cpu_ratio = 0.0;

/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t
ap_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * NS_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* Nanoseconds of CPU the calling thread has used (user + system). */
uint64_t
ap_thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t) ts.tv_sec * NS_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* Sleep us microseconds of CLOCK_MONOTONIC, resuming after signals. */
void
ap_sleep_us(uint64_t us)
{
	struct timespec until;
	uint64_t	end = ap_mono_ns() + us * 1000;

	/* an absolute deadline, so an EINTR restart does not sleep too long */
	until.tv_sec = (time_t) (end / NS_PER_SEC);
	until.tv_nsec = (long) (end % NS_PER_SEC);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

/*
 * Set a bucket to bytes_per_sec (0 = off), full to its base burst at now_ns.
 * The mutex is not touched: callers initialize it (statically or with
 * pthread_mutex_init) once.
 */
void
ap_bucket_set(ApBucket *b, uint64_t bytes_per_sec, uint64_t now_ns)
{
	b->rate = (double) bytes_per_sec;
	b->burst = b->rate * BUCKET_BURST_MS / 1000.0;
	if (b->burst < BUCKET_BURST_MIN_BYTES)
		b->burst = BUCKET_BURST_MIN_BYTES;
	b->tokens = b->burst;
	b->last_ns = now_ns;
}

/*
 * Charge bytes delivered at now_ns; returns the microseconds the caller must
 * wait before using them (0 when the bucket is off or had the tokens).
 */
uint64_t
ap_bucket_charge(ApBucket *b, uint64_t bytes, uint64_t now_ns)
{
	double		depth;
	double		wait_s = 0.0;

	if (b->rate <= 0.0 || bytes == 0)
		return 0;
	pthread_mutex_lock(&b->lock);
	/* one unit of read-ahead (see the file header), at most a second's worth */
	depth = (double) bytes;
	if (depth > b->rate * BUCKET_DEPTH_MAX_MS / 1000.0)
		depth = b->rate * BUCKET_DEPTH_MAX_MS / 1000.0;
	if (depth < b->burst)
		depth = b->burst;
	/* a racing thread may have read its clock later than ours: no refill then */
	if (now_ns > b->last_ns)
	{
		double		refill = b->rate * (double) (now_ns - b->last_ns) / NS_PER_SEC;

		if (b->tokens < depth)
		{
			b->tokens += refill;
			if (b->tokens > depth)
				b->tokens = depth;
		}
		b->last_ns = now_ns;
	}
	b->tokens -= (double) bytes;
	if (b->tokens < 0.0)
		wait_s = -b->tokens / b->rate;
	pthread_mutex_unlock(&b->lock);
	return (uint64_t) (wait_s * 1e6 + 0.5);
}

/*
 * Extra wall time owed after cpu_ns of work on a disk CPU running at ratio
 * of the host's speed: cpu_ns * (1/ratio - 1), in microseconds.  Ratios of 0
 * (off) and >= 1 (as fast as the host) owe nothing.
 */
uint64_t
ap_cpu_wait_us(double ratio, uint64_t cpu_ns)
{
	if (ratio <= 0.0 || ratio >= 1.0 || cpu_ns == 0)
		return 0;
	return (uint64_t) ((double) cpu_ns * (1.0 / ratio - 1.0) / 1000.0 + 0.5);
}

/* Configure the daemon's drive: media rate in MB/s (0 = off) and CPU ratio (0 = off). */
void
ap_throttle_configure(uint32_t media_mbps, double ratio)
{
	pthread_mutex_lock(&media_bucket.lock);
	ap_bucket_set(&media_bucket, (uint64_t) media_mbps << 20, ap_mono_ns());
	pthread_mutex_unlock(&media_bucket.lock);
	cpu_ratio = ratio;
}

/* Charge the daemon's media bucket for bytes just read; microseconds to wait. */
uint64_t
ap_media_throttle_us(uint64_t bytes)
{
	if (media_bucket.rate <= 0.0)
		return 0;
	return ap_bucket_charge(&media_bucket, bytes, ap_mono_ns());
}

/* Microseconds to wait after cpu_ns of this thread's work on the emulated disk CPU. */
uint64_t
ap_cpu_throttle_us(uint64_t cpu_ns)
{
	return ap_cpu_wait_us(cpu_ratio, cpu_ns);
}

/* True if the disk CPU is emulated (scan.c then measures each chunk's CPU time). */
bool
ap_cpu_throttle_on(void)
{
	return cpu_ratio > 0.0 && cpu_ratio < 1.0;
}
