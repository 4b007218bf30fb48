/*
 * stats.c
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
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "active_pg.h"
#include "transport.h"

PG_FUNCTION_INFO_V1(active_pg_disks_info);
PG_FUNCTION_INFO_V1(active_pg_disk_stats);

#define AP_STATS_NCOLS				16

/* Shared memory: restart counts per launcher disk. */
typedef struct ApStatsShared
{
	pg_atomic_uint32 restarts[AP_NDISKS_MAX];
} ApStatsShared;

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
		for (i = 0; i < AP_NDISKS_MAX; i++)
			pg_atomic_init_u32(&ap_stats_shared->restarts[i], 0);
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

/*
 * active_pg.disks(): one row per configured disk: whether it answers the
 * handshake now, its disk id and version.
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
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

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
