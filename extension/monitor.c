/*
 * monitor.c
 *	  The monitoring functions: active_pg.disks() (is each disk up, what is
 *	  it) and active_pg.disk_stats (per-disk cumulative statistics).
 *
 * Rules of this file:
 *   - Each function asks every configured disk on its own short connection
 *     (no retry, bounded by active_pg.connect_timeout) and reports a disk
 *     that does not answer as a row, never as an error.
 *   - The counters live in the disks (StatsRequest/StatsReply, since each
 *     daemon started); the SRF asks every disk on its own short connection,
 *     bounded by active_pg.connect_timeout, and reports a disk that does
 *     not answer (or lacks AP_CAP_STATS) as a row with NULL counters, never
 *     as an error: the view is for monitoring a system that may be broken.
 *   - Restarts are the launcher's knowledge, not the disks' (a restarted
 *     daemon starts from zero): the launcher counts them in a small shared
 *     memory area requested at preload (shmem_request_hook).  Without
 *     preloading there is no launcher and the column is NULL.
 *   - The same area keeps what the backends saw of each disk (failures, the
 *     last one's reason and time, the latest end of a quarantine a backend
 *     put it in: active_pg.disks()) and the blocks the host read itself,
 *     unfiltered, by cause (active_pg.host_fallback_stats).  Quarantine
 *     itself is decided by each backend (transport.c); this is what the
 *     monitoring sees of it.  Without preloading these columns are NULL.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "active_pg.h"
#include "transport.h"

PG_FUNCTION_INFO_V1(active_pg_disks_info);
PG_FUNCTION_INFO_V1(active_pg_disk_stats);
PG_FUNCTION_INFO_V1(active_pg_host_fallback_stats);
PG_FUNCTION_INFO_V1(active_pg_host_fallback_stats_reset);

#define AP_STATS_NCOLS				16
#define AP_FAILURE_LEN				256

/* What the backends saw of one disk (active_pg.disks()). */
typedef struct ApDiskHealth
{
	slock_t		mutex;
	uint64		failures;
	TimestampTz quarantined_until;	/* the latest any backend set; 0: never */
	TimestampTz last_failure_at;	/* 0: never */
	char		last_failure[AP_FAILURE_LEN];
} ApDiskHealth;

/* Shared memory: restart counts per launcher disk, health, host fallbacks. */
typedef struct ApStatsShared
{
	pg_atomic_uint32 restarts[AP_NDISKS_MAX];
	ApDiskHealth health[AP_NDISKS_MAX];
	pg_atomic_uint64 fallback_events[AP_FALLBACK_NCAUSES];
	pg_atomic_uint64 fallback_blocks[AP_FALLBACK_NCAUSES];
	pg_atomic_uint64 fallback_tuples[AP_FALLBACK_NCAUSES];
	pg_atomic_uint64 fallback_reset_at;	/* TimestampTz of the last reset */
} ApStatsShared;

/* active_pg.host_fallback_stats' cause names, in ApFallbackCause's order */
static const char *const ap_fallback_causes[AP_FALLBACK_NCAUSES] = {
	"disk_failed_mid_scan",
	"disk_unreachable",
	"disk_quarantined",
	"all_disks_failed",
	"handed_back",
	"pages_mode",
};

static ApStatsShared *ap_stats_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* shmem_request_hook: reserve the restart counters. */
static void
ap_stats_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(ApStatsShared)));
}

/* shmem_startup_hook: attach (or create and zero) the restart counters. */
static void
ap_stats_shmem_startup(void)
{
	bool		found;
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ap_stats_shared = ShmemInitStruct("active_pg disk stats", sizeof(ApStatsShared), &found);
	if (!found)
	{
		memset(ap_stats_shared, 0, sizeof(ApStatsShared));
		for (i = 0; i < AP_NDISKS_MAX; i++)
		{
			pg_atomic_init_u32(&ap_stats_shared->restarts[i], 0);
			SpinLockInit(&ap_stats_shared->health[i].mutex);
		}
		for (i = 0; i < AP_FALLBACK_NCAUSES; i++)
		{
			pg_atomic_init_u64(&ap_stats_shared->fallback_events[i], 0);
			pg_atomic_init_u64(&ap_stats_shared->fallback_blocks[i], 0);
			pg_atomic_init_u64(&ap_stats_shared->fallback_tuples[i], 0);
		}
		pg_atomic_init_u64(&ap_stats_shared->fallback_reset_at,
						   (uint64) GetCurrentTimestamp());
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Install the shared memory hooks; called from _PG_init while preloading. */
void
ApStatsShmemRequest(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ap_stats_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ap_stats_shmem_startup;
}

/* The launcher restarted disk i. */
void
ApStatsCountRestart(int disk)
{
	if (ap_stats_shared != NULL && disk >= 0 && disk < AP_NDISKS_MAX)
		pg_atomic_fetch_add_u32(&ap_stats_shared->restarts[disk], 1);
}

/* A scan saw disk fail (see active_pg.h). */
void
ApStatsDiskFailed(int disk, const char *why, TimestampTz until)
{
	ApDiskHealth *h;
	TimestampTz now = GetCurrentTimestamp();

	if (ap_stats_shared == NULL || disk < 0 || disk >= AP_NDISKS_MAX)
		return;
	h = &ap_stats_shared->health[disk];
	SpinLockAcquire(&h->mutex);
	h->failures++;
	h->last_failure_at = now;
	strlcpy(h->last_failure, why != NULL ? why : "unknown", AP_FAILURE_LEN);
	if (until > h->quarantined_until)
		h->quarantined_until = until;
	SpinLockRelease(&h->mutex);
}

/* Count blocks the host read itself (see active_pg.h). */
void
ApStatsCountFallback(ApFallbackCause cause, uint64 events, uint64 blocks, uint64 tuples)
{
	if (ap_stats_shared == NULL || cause < 0 || cause >= AP_FALLBACK_NCAUSES)
		return;
	if (events > 0)
		pg_atomic_fetch_add_u64(&ap_stats_shared->fallback_events[cause], events);
	if (blocks > 0)
		pg_atomic_fetch_add_u64(&ap_stats_shared->fallback_blocks[cause], blocks);
	if (tuples > 0)
		pg_atomic_fetch_add_u64(&ap_stats_shared->fallback_tuples[cause], tuples);
}

/*
 * active_pg.host_fallback_stats(): one row per cause: how often, how many
 * blocks (and bytes) the host read itself, how many single tuples it
 * fetched, since the counters were last reset.  NULL counters without
 * preloading (no shared memory).
 */
Datum
active_pg_host_fallback_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < AP_FALLBACK_NCAUSES; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, true, true, true, true, true};

		values[0] = CStringGetTextDatum(ap_fallback_causes[i]);
		if (ap_stats_shared != NULL)
		{
			uint64		blocks = pg_atomic_read_u64(&ap_stats_shared->fallback_blocks[i]);

			values[1] = Int64GetDatum((int64) pg_atomic_read_u64(&ap_stats_shared->fallback_events[i]));
			values[2] = Int64GetDatum((int64) blocks);
			values[3] = Int64GetDatum((int64) (blocks * BLCKSZ));
			values[4] = Int64GetDatum((int64) pg_atomic_read_u64(&ap_stats_shared->fallback_tuples[i]));
			values[5] = TimestampTzGetDatum((TimestampTz)
											pg_atomic_read_u64(&ap_stats_shared->fallback_reset_at));
			memset(nulls, false, sizeof(nulls));
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* active_pg.host_fallback_stats_reset(): zero the host fallback counters. */
Datum
active_pg_host_fallback_stats_reset(PG_FUNCTION_ARGS)
{
	if (ap_stats_shared != NULL)
	{
		for (int i = 0; i < AP_FALLBACK_NCAUSES; i++)
		{
			pg_atomic_write_u64(&ap_stats_shared->fallback_events[i], 0);
			pg_atomic_write_u64(&ap_stats_shared->fallback_blocks[i], 0);
			pg_atomic_write_u64(&ap_stats_shared->fallback_tuples[i], 0);
		}
		pg_atomic_write_u64(&ap_stats_shared->fallback_reset_at,
							(uint64) GetCurrentTimestamp());
	}
	PG_RETURN_VOID();
}

/*
 * active_pg.disks(): one row per configured disk: whether it answers the
 * handshake now, its disk id and version; then what the backends saw of it
 * (shared memory, NULL without preloading): until when some backend keeps
 * it in quarantine (NULL if none does now), its failures, the last one's
 * reason and time.  An SQL definition of 0.2 has the first five columns
 * only, and gets those.
 */
Datum
active_pg_disks_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext cxt;
	MemoryContext oldcxt;
	ApDiskAddr *addrs;
	ApConnSet  *set;

	InitMaterializedSRF(fcinfo, 0);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "active_pg disks()",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	set = ApOpenDiskSet(cxt, &addrs);

	for (int i = 0; i < set->nconns; i++)
	{
		ApDiskConn *c = &set->conns[i];
		char	   *err = NULL;
		bool		alive = ApConnectOne(set, i, &addrs[i], &err);
		Datum		values[9];
		bool		nulls[9] = {false, false, false, false, false, true, true, true, true};

		ApConnClose(c);
		values[0] = Int32GetDatum(i);
		values[1] = CStringGetTextDatum(c->address);
		values[2] = BoolGetDatum(alive);
		if (alive)
		{
			values[3] = Int32GetDatum((int32) c->disk_id);
			values[4] = CStringGetTextDatum(c->server_version);
		}
		else
		{
			nulls[3] = true;
			nulls[4] = true;
		}
		if (ap_stats_shared != NULL && i < AP_NDISKS_MAX)
		{
			ApDiskHealth *h = &ap_stats_shared->health[i];
			TimestampTz until;
			TimestampTz at;
			uint64		failures;
			char		why[AP_FAILURE_LEN];

			SpinLockAcquire(&h->mutex);
			until = h->quarantined_until;
			at = h->last_failure_at;
			failures = h->failures;
			memcpy(why, h->last_failure, AP_FAILURE_LEN);
			SpinLockRelease(&h->mutex);
			why[AP_FAILURE_LEN - 1] = '\0';
			if (until > GetCurrentTimestamp())
			{
				values[5] = TimestampTzGetDatum(until);
				nulls[5] = false;
			}
			values[6] = Int64GetDatum((int64) failures);
			nulls[6] = false;
			if (at != 0)
			{
				values[7] = CStringGetTextDatum(why);
				values[8] = TimestampTzGetDatum(at);
				nulls[7] = nulls[8] = false;
			}
		}
		/* with the 0.2 definition, the first five are taken */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return (Datum) 0;
}

/*
 * Send StatsRequest on a handshaken connection and wait for the reply until
 * deadline.  Returns the reply frame, or NULL with *err.
 */
static ActivePg__Frame *
ap_request_stats(ApConnSet *set, ApDiskConn *c, TimestampTz deadline, char **err)
{
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__StatsRequest req = ACTIVE_PG__STATS_REQUEST__INIT;

	f.msg_case = ACTIVE_PG__FRAME__MSG_STATS_REQUEST;
	f.stats_request = &req;
	ApSendFrame(set, c, &f);
	for (;;)
	{
		ActivePg__Frame *reply = NULL;
		int			r = ApConnTryNextFrame(set, c, &reply, err);
		long		ms;

		if (r < 0)
			return NULL;
		if (r > 0)
		{
			if (reply->msg_case == ACTIVE_PG__FRAME__MSG_STATS_REPLY &&
				reply->stats_reply != NULL)
				return reply;
			*err = reply->msg_case == ACTIVE_PG__FRAME__MSG_ERROR && reply->error->message ?
				pstrdup(reply->error->message) :
				psprintf("unexpected message %d instead of StatsReply", (int) reply->msg_case);
			ApFreeFrame(set, reply);
			return NULL;
		}
		r = ApConnTryFill(c, err);
		if (r < 0)
		{
			if (*err == NULL)
				*err = pstrdup("connection closed");
			return NULL;
		}
		if (r > 0)
			continue;
		ms = (long) ((deadline - GetCurrentTimestamp()) / 1000);
		if (ms <= 0)
		{
			*err = pstrdup("timed out waiting for StatsReply");
			return NULL;
		}
		(void) ApConnWait(c, WL_SOCKET_READABLE, ms);
	}
}

/*
 * active_pg.disk_stats(): one row per configured disk with its cumulative
 * counters (NULL when the disk does not answer) and the launcher's restart
 * count.
 */
Datum
active_pg_disk_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext cxt;
	MemoryContext oldcxt;
	ApDiskAddr *addrs;
	ApConnSet  *set;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "active_pg disk_stats",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	set = ApOpenDiskSet(cxt, &addrs);

	for (i = 0; i < set->nconns; i++)
	{
		ApDiskConn *c = &set->conns[i];
		char	   *err = NULL;
		ActivePg__Frame *reply = NULL;
		bool		alive;
		Datum		values[AP_STATS_NCOLS];
		bool		nulls[AP_STATS_NCOLS];
		int			k;

		memset(nulls, true, sizeof(nulls));
		alive = ApConnectOne(set, i, &addrs[i], &err);
		if (alive && (c->capabilities & AP_CAP_STATS) != 0)
			reply = ap_request_stats(set, c, TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
																		 active_pg_connect_timeout_ms),
									 &err);
		ApConnClose(c);

		values[0] = Int32GetDatum(i);
		values[1] = CStringGetTextDatum(c->address);
		values[2] = BoolGetDatum(alive);
		nulls[0] = nulls[1] = nulls[2] = false;
		if (reply != NULL)
		{
			ActivePg__StatsReply *st = reply->stats_reply;

			k = 3;
			values[k++] = Int64GetDatum((int64) st->scans);
			values[k++] = Int64GetDatum((int64) st->pages_read);
			values[k++] = Int64GetDatum((int64) st->bytes_read);
			values[k++] = Int64GetDatum((int64) st->bytes_shipped);
			values[k++] = Int64GetDatum((int64) st->tuples_seen);
			values[k++] = Int64GetDatum((int64) st->tuples_passed);
			values[k++] = Int64GetDatum((int64) (st->tuples_fallback + st->pages_fallback));
			values[k++] = Int64GetDatum((int64) st->xids_resolved);
			values[k++] = Int64GetDatum((int64) st->bloom_dropped);
			values[k++] = Float8GetDatum(st->busy_us / 1000.0);
			values[k++] = Float8GetDatum(st->throttle_us / 1000.0);
			values[k++] = Float8GetDatum(st->uptime_us / 1000000.0);
			for (k = 3; k < AP_STATS_NCOLS - 1; k++)
				nulls[k] = false;
			ApFreeFrame(set, reply);
		}
		else if (alive && err != NULL)
			ereport(DEBUG1,
					(errmsg("active_pg disk %d did not report statistics: %s", i, err)));
		/* restarts: only the launcher's own disks are counted */
		if (ap_stats_shared != NULL && (active_pg_disks == NULL || active_pg_disks[0] == '\0'))
		{
			values[AP_STATS_NCOLS - 1] =
				Int64GetDatum((int64) pg_atomic_read_u32(&ap_stats_shared->restarts[i]));
			nulls[AP_STATS_NCOLS - 1] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return (Datum) 0;
}
