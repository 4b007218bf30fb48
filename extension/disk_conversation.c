/*
 * disk_conversation.c
 *	  One pushed-down scan's conversation with the disks (see disk_conversation.h),
 *	  the one place that ships, multiplexes, answers and falls back for both
 *	  ActiveScan (activescan.c) and ActiveAgg (agg_exec.c).
 *
 * Rules of this file:
 *   - Before shipping, the relation's dirty buffers are written to the kernel
 *     and nblocks is fixed under the scan's lock: everything committed before
 *     the snapshot is in the files the disks read.
 *   - Xid questions are answered at once, exactly as HeapTupleSatisfiesMVCC
 *     decides: own transaction, then "in the snapshot", then the commit log.
 *   - Fallback TIDs and blocks are checked against nblocks before they are
 *     queued and read through the buffer manager with the real snapshot.
 *   - A disk that cannot be reached, refuses, fails or stops is taken over:
 *     the host reads what it has not delivered (its Progress reports say
 *     what it has) through the buffer manager.  Protocol violations and
 *     errors another reader would meet too fail the query (transport.c).
 *   - Sockets are read only after the interconnect throttle allows it
 *     (ApInterconnectWait), and every byte read is charged to it.
 *   - Every allocation lives in the caller's per-execution context.
 */
#include "postgres.h"

#include <unistd.h>

#include "access/heapam.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "ap_stripe.h"
#include "disk_conversation.h"
#include "model.h"
#include "shippable.h"

#define AP_FALLBACK_INITIAL			256

/* Unique per backend and scan, for the disks' logs. */
static uint64 ap_diskscan_counter = 0;

static void ap_claim_items(ApDiskScan *ds);

/* Prepare ds for one execution (no disk contact). */
void
ApDiskScanInit(ApDiskScan *ds, Relation rel, Snapshot snapshot,
			   MemoryContext cxt, ApDiskFrameFn on_data, void *arg,
			   ActivePg__ScanStats *disk_stats, bool *disk_stats_valid,
			   int *stats_ndisks, ApHostStats *host)
{
	memset(ds, 0, sizeof(*ds));
	ds->rel = rel;
	ds->snapshot = snapshot;
	ds->cxt = cxt;
	ds->on_data = on_data;
	ds->arg = arg;
	ds->disk_stats = disk_stats;
	ds->disk_stats_valid = disk_stats_valid;
	ds->stats_ndisks = stats_ndisks;
	ds->host = host;
}

/* Pushdown needs an MVCC snapshot, no predicate locks, a primary, and disks. */
bool
ApDiskScanPossible(Snapshot snapshot)
{
	return IsMVCCSnapshot(snapshot) && !IsolationIsSerializable() &&
		!RecoveryInProgress() && ApDisksConfigured();
}

/* ---------------- init-plan values ---------------- */

/* ap_params_pending's walker: an init-plan Param whose value is not computed yet? */
static bool
ap_params_pending_walker(Node *node, ExprContext *econtext)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC &&
		econtext->ecxt_param_exec_vals[((Param *) node)->paramid].execPlan != NULL)
		return true;
	return expression_tree_walker(node, ap_params_pending_walker, (void *) econtext);
}

static bool
ap_params_pending(Node *node, ExprContext *econtext)
{
	return econtext->ecxt_param_exec_vals != NULL &&
		ap_params_pending_walker(node, econtext);
}

/*
 * May the scan ship init-plan values now?  PostgreSQL runs an init-plan when
 * a row first needs its value, so a scan none of whose rows reaches the qual
 * never runs it nor raises its errors, where computing the value to ship it
 * would.  quals are the scan's quals in PostgreSQL's order, disk_quals those
 * the disks evaluate, shipped the other expressions computed for the disks
 * (projections, aggregate arguments; the host's own quals and projections
 * stay lazy).  Yes when nothing shipped waits for a value; when the pending
 * values are all in the first qual, a plain comparison the disks evaluate,
 * PostgreSQL computes them at the first visible tuple, and so yes if the
 * relation has one (a probe of its first tuples).  Otherwise the scan runs on
 * the host.  Under Gather the leader computed every value before the workers
 * started.
 */
bool
ApInitPlansAllowPushdown(Relation rel, Snapshot snapshot, List *quals, List *disk_quals,
						 Node *shipped, ExprContext *econtext)
{
	TableScanDesc scan;
	TupleTableSlot *slot;
	bool		found;
	ApCmp		cmp;
	ListCell   *lc;

	if (ap_params_pending(shipped, econtext))
		return false;
	if (!ap_params_pending((Node *) disk_quals, econtext))
		return true;
	if (!ApPlainComparison(linitial(quals), true, &cmp) ||
		!list_member_ptr(disk_quals, linitial(quals)))
		return false;
	foreach(lc, disk_quals)
	{
		if (lfirst(lc) != linitial(quals) && ap_params_pending(lfirst(lc), econtext))
			return false;
	}
	slot = table_slot_create(rel, NULL);
	scan = table_beginscan(rel, snapshot, 0, NULL);
	found = table_scan_getnextslot(scan, ForwardScanDirection, slot);
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return found;
}

/* ---------------- fallback queues ---------------- */

/* Grow a FIFO array of elemsize-byte items to hold one more. */
static void *
ap_fifo_grow(MemoryContext cxt, void *arr, int *cap, size_t elemsize)
{
	int			newcap = Max(AP_FALLBACK_INITIAL, *cap * 2);

	arr = arr == NULL ? MemoryContextAlloc(cxt, elemsize * newcap) :
		repalloc(arr, elemsize * newcap);
	*cap = newcap;
	return arr;
}

/* Queue a fallback TID. */
void
ApDiskScanPushTid(ApDiskScan *ds, uint64 tid)
{
	if (ds->ntids == ds->tids_cap)
		ds->tids = ap_fifo_grow(ds->cxt, ds->tids, &ds->tids_cap, sizeof(uint64));
	ds->tids[ds->ntids++] = tid;
}

/* Queue a fallback block. */
void
ApDiskScanPushBlock(ApDiskScan *ds, uint32 blk)
{
	if (ds->nblocks_fb == ds->blocks_cap)
		ds->blocks = ap_fifo_grow(ds->cxt, ds->blocks, &ds->blocks_cap, sizeof(uint32));
	ds->blocks[ds->nblocks_fb++] = blk;
}

/* Is fallback work queued? */
bool
ApDiskScanFallbackPending(ApDiskScan *ds)
{
	return ds->tids_head < ds->ntids || ds->blocks_head < ds->nblocks_fb;
}

/* ---------------- frames ---------------- */

/*
 * Status of xid for snapshot, in the order HeapTupleSatisfiesMVCC asks:
 * our own transaction, then XidInMVCCSnapshot (covers xid >= xmax, xip and
 * subxip/pg_subtrans), then the commit log.  An xid below xmax that is not in
 * the snapshot had finished when the snapshot was taken, so the commit log
 * is final for it.
 */
uint32
ApXidStatusOf(TransactionId xid, Snapshot snapshot)
{
	if (!TransactionIdIsNormal(xid))
		return xid == InvalidTransactionId ? AP_XID_NOT_COMMITTED : AP_XID_COMMITTED;
	if (TransactionIdIsCurrentTransactionId(xid))
		return AP_XID_CURRENT;
	if (!TransactionIdPrecedes(xid, snapshot->xmax) || XidInMVCCSnapshot(xid, snapshot))
		return AP_XID_NOT_COMMITTED;
	if (TransactionIdDidCommit(xid))
		return AP_XID_COMMITTED;
	return AP_XID_NOT_COMMITTED;
}

/* Answer one XidStatusRequest at once: the disk is waiting for it. */
static void
ap_answer_xids(ApDiskScan *ds, ApDiskConn *conn, ActivePg__XidStatusRequest *req)
{
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__XidStatusReply reply = ACTIVE_PG__XID_STATUS_REPLY__INIT;

	reply.n_xids = req->n_xids;
	reply.xids = req->xids;
	reply.n_status = req->n_xids;
	reply.status = palloc(sizeof(uint32) * Max(req->n_xids, 1));
	for (size_t i = 0; i < req->n_xids; i++)
		reply.status[i] = ApXidStatusOf((TransactionId) req->xids[i], ds->snapshot);
	f.msg_case = ACTIVE_PG__FRAME__MSG_XID_REPLY;
	f.xid_reply = &reply;
	ApSendFrame(ds->conns, conn, &f);
	pfree(reply.status);
	ds->host->xid_requests++;
	ds->host->xids_answered += req->n_xids;
}

/* ---------------- progress: what a disk has delivered ---------------- */

#define AP_COVERED(ds, blk)		(((ds)->covered[(blk) >> 3] >> ((blk) & 7)) & 1)

/* Has conn delivered everything of tid's tuple (a Progress report)? */
static inline bool
ap_tid_covered(ApDiskScan *ds, ApDiskConn *conn, uint64 tid)
{
	BlockNumber blk = AP_TID_BLOCK(tid);

	return AP_COVERED(ds, blk) ||
		(conn->partial_offset > 0 && blk == conn->partial_block &&
		 AP_TID_OFFSET(tid) < conn->partial_offset);
}

/*
 * Forget the fallback work conn handed back that its reports now cover: a
 * takeover need only skip what lies beyond them.  Amortized: the lists are
 * compacted when they have doubled since the last time.
 */
static void
ap_prune_open(ApDiskScan *ds, ApDiskConn *conn, bool force)
{
	int			n = 0;

	if (force || conn->nopen_tids >= 1024)
	{
		for (int i = 0; i < conn->nopen_tids; i++)
		{
			if (!ap_tid_covered(ds, conn, conn->open_tids[i]))
				conn->open_tids[n++] = conn->open_tids[i];
		}
		conn->nopen_tids = n;
		n = 0;
	}
	for (int i = 0; i < conn->nopen_blocks; i++)
	{
		if (!AP_COVERED(ds, conn->open_blocks[i]))
			conn->open_blocks[n++] = conn->open_blocks[i];
	}
	conn->nopen_blocks = n;
}

/*
 * A disk's Progress report: mark what it delivered (checked against the
 * relation; a disk may only report blocks of its own stripe units).
 */
static void
ap_apply_progress(ApDiskScan *ds, ApDiskConn *conn, const ActivePg__Progress *p)
{
	if (p->n_ranges % 2 != 0)
		ApProtocolError(conn, "A progress report lists an odd number of block range bounds.");
	for (size_t i = 0; i < p->n_ranges; i += 2)
	{
		uint64		first = p->ranges[i];
		uint64		end = first + p->ranges[i + 1];

		/* one of its stripe units, or a run of them when it has them all */
		if (end > ds->nblocks ||
			(end > first && ((first / ds->stripe_pages) % conn->nvdisks != conn->vdisk ||
							 (conn->nvdisks > 1 &&
							  (end - 1) / ds->stripe_pages != first / ds->stripe_pages))))
			ApProtocolError(conn, psprintf("A progress report names blocks [%llu, %llu), not its own of the relation's %u.",
										   (unsigned long long) first,
										   (unsigned long long) end, ds->nblocks));
		for (uint64 blk = first; blk < end; blk++)
			ds->covered[blk >> 3] |= (uint8) (1 << (blk & 7));
	}
	if (p->partial_offset > 0)
	{
		if (p->partial_block >= ds->nblocks)
			ApProtocolError(conn, psprintf("A progress report names block %u of the relation's %u.",
										   p->partial_block, ds->nblocks));
		conn->partial_block = p->partial_block;
		conn->partial_offset = p->partial_offset;
	}
	if (conn->nopen_tids > 0 || conn->nopen_blocks > 0)
		ap_prune_open(ds, conn, false);
}

/* Queue a Fallback frame's TIDs and blocks after checking them. */
static void
ap_queue_fallback(ApDiskScan *ds, ApDiskConn *conn, const ActivePg__Fallback *fb)
{
	/* the report covers this frame's own work */
	if (fb->progress != NULL)
		ap_apply_progress(ds, conn, fb->progress);
	for (size_t i = 0; i < fb->n_tids; i++)
	{
		uint64		tid = fb->tids[i];
		uint32		off = AP_TID_OFFSET(tid);

		if ((tid >> 48) != 0 || AP_TID_BLOCK(tid) >= ds->nblocks ||
			off < FirstOffsetNumber || off > MaxHeapTuplesPerPage)
			ApProtocolError(conn, psprintf("Fallback TID (%u,%u) is outside the relation's %u blocks.",
										   AP_TID_BLOCK(tid), off, ds->nblocks));
		ApDiskScanPushTid(ds, tid);
		/* delivered beyond the reports: a takeover must not read it again */
		if (!ap_tid_covered(ds, conn, tid))
		{
			if (conn->nopen_tids == conn->open_tids_cap)
				conn->open_tids = ap_fifo_grow(ds->cxt, conn->open_tids,
											   &conn->open_tids_cap, sizeof(uint64));
			conn->open_tids[conn->nopen_tids++] = tid;
		}
	}
	for (size_t i = 0; i < fb->n_blocks; i++)
	{
		if (fb->blocks[i] >= ds->nblocks)
			ApProtocolError(conn, psprintf("Fallback block %u is outside the relation's %u blocks.",
										   fb->blocks[i], ds->nblocks));
		if (ds->on_block != NULL)
			ds->on_block(ds->arg, conn, fb->blocks[i]);
		ApDiskScanPushBlock(ds, fb->blocks[i]);
		if (!AP_COVERED(ds, fb->blocks[i]))
		{
			if (conn->nopen_blocks == conn->open_blocks_cap)
				conn->open_blocks = ap_fifo_grow(ds->cxt, conn->open_blocks,
												 &conn->open_blocks_cap, sizeof(uint32));
			conn->open_blocks[conn->nopen_blocks++] = fb->blocks[i];
		}
	}
	ds->host->fallback_tids += fb->n_tids;
	ds->host->fallback_blocks += fb->n_blocks;
	ApStatsCountFallback(AP_FALLBACK_HANDED_BACK, 1, fb->n_blocks, fb->n_tids);
}

/* Add one set of disk statistics to another, every field. */
void
ApAddScanStats(ActivePg__ScanStats *d, const ActivePg__ScanStats *st)
{
	d->pages_read += st->pages_read;
	d->bytes_read += st->bytes_read;
	d->tuples_seen += st->tuples_seen;
	d->tuples_visible += st->tuples_visible;
	d->tuples_passed += st->tuples_passed;
	d->tuples_filtered += st->tuples_filtered;
	d->tuples_fallback += st->tuples_fallback;
	d->pages_fallback += st->pages_fallback;
	d->xids_resolved += st->xids_resolved;
	d->rows_shipped += st->rows_shipped;
	d->bytes_shipped += st->bytes_shipped;
	d->io_us += st->io_us;
	d->compute_us += st->compute_us;
	d->cpu_us += st->cpu_us;
	d->host_wait_us += st->host_wait_us;
	d->wall_us += st->wall_us;
	d->units_done += st->units_done;
	d->groups_shipped += st->groups_shipped;
	d->agg_flushes += st->agg_flushes;
	d->agg_stream_flushes += st->agg_stream_flushes;
	d->bloom_tested += st->bloom_tested;
	d->bloom_dropped += st->bloom_dropped;
	d->throttle_us += st->throttle_us;
}

/* Add one node's host counters to another's, every field. */
void
ApAddHostStats(ApHostStats *d, const ApHostStats *h)
{
	d->rows_from_disks += h->rows_from_disks;
	d->batches += h->batches;
	d->bytes_received += h->bytes_received;
	d->fallback_tids += h->fallback_tids;
	d->fallback_blocks += h->fallback_blocks;
	d->fallback_fetched += h->fallback_fetched;
	d->fallback_visible += h->fallback_visible;
	d->xid_requests += h->xid_requests;
	d->xids_answered += h->xids_answered;
	d->host_mode_scans += h->host_mode_scans;
	d->host_mode_tuples += h->host_mode_tuples;
	d->host_mode_no_cap += h->host_mode_no_cap;
	d->pushdown_scans += h->pushdown_scans;
	d->wait_ms += h->wait_ms;
	d->work_items += h->work_items;
	d->items_on_host += h->items_on_host;
	d->disks_taken_over += h->disks_taken_over;
	d->blocks_taken_over += h->blocks_taken_over;
	d->pages_received += h->pages_received;
	d->page_tuples += h->page_tuples;
	d->page_tuples_visible += h->page_tuples_visible;
	d->connections_opened += h->connections_opened;
	d->connections_reused += h->connections_reused;
	if (d->takeover_reason[0] == '\0')
		strlcpy(d->takeover_reason, h->takeover_reason, sizeof(d->takeover_reason));
}

/*
 * PostgreSQL's cumulative statistics of the relation see a pushed-down scan
 * as the sequential scan it replaces (pg_stat_user_tables, pg_statio_*):
 * seq_scan counts each execution (ap_build_request), seq_tup_read the
 * tuples visible to the snapshot, wherever they were decided (disks,
 * fallback fetches, page copies), and heap_blks_read the pages the disks
 * read from the relation's files, which do not pass through shared buffers.
 * Pages the host reads for fallback tuples count through the buffer manager
 * as usual (hits or reads).
 */
void
ApCountScanStats(Relation rel, uint64 tuples, uint64 blocks)
{
	if (pgstat_should_count_relation(rel))
	{
		ApPgstatCountScan(rel, tuples, blocks);
	}
}

/* Add one disk's Done statistics to the totals kept across executions. */
static void
ap_add_stats(ApDiskScan *ds, int disk, const ActivePg__ScanStats *st)
{
	ApCountScanStats(ds->rel, st->tuples_visible, st->pages_read);
	ApAddScanStats(&ds->disk_stats[disk], st);
	ds->disk_stats_valid[disk] = true;
	*ds->stats_ndisks = Max(*ds->stats_ndisks, disk + 1);
}

/* Sum per-disk statistics into *sum. */
void
ApDiskScanSumStats(const ActivePg__ScanStats *disk_stats, const bool *valid,
				   int ndisks, ActivePg__ScanStats *sum)
{
	active_pg__scan_stats__init(sum);
	for (int i = 0; i < ndisks; i++)
	{
		if (valid[i])
			ApAddScanStats(sum, &disk_stats[i]);
	}
}

/* A frame that has no place in a scan: protocol violation. */
pg_noreturn static void
ap_unexpected_frame(ApDiskConn *conn, const ActivePg__Frame *f)
{
	ApProtocolError(conn, psprintf("Unexpected message %d during a scan.", (int) f->msg_case));
}

static void ap_item_on_host(ApDiskScan *ds, uint32 item, uint32 nitems);

/* How often a waiting host looks for disks that stopped (ap_check_progress). */
#define AP_PROGRESS_CHECK_MS		1000

/* Backend-wide: did this backend warn that every disk failed? (ap_disk_failed) */
static bool ap_all_failed_warned = false;

static int
ap_cmp_tid(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y;
}

/*
 * Takeover after delivery: queue the blocks of conn's stripe units that its
 * Progress reports do not cover, and make their expansion skip the tuples
 * it delivered beyond them (the fallback TIDs it handed back, the tuples of
 * a partly reported block).  Frames of an aggregation flush that did not end
 * are dropped unmerged: the blocks they came from are read again.  Returns
 * the number of blocks queued.
 */
static uint64
ap_take_over_rest(ApDiskScan *ds, ApDiskConn *conn)
{
	uint64		nunits = ((uint64) ds->nblocks + ds->stripe_pages - 1) / ds->stripe_pages;
	uint64		queued = 0;
	int			nskip;
	ListCell   *lc;

	foreach(lc, conn->held)
		ApFreeFrame(ds->conns, (ActivePg__Frame *) lfirst(lc));
	conn->held = NIL;
	ap_prune_open(ds, conn, true);

	for (uint64 u = conn->vdisk; u < nunits; u += conn->nvdisks)
	{
		BlockNumber first = (BlockNumber) (u * ds->stripe_pages);
		BlockNumber last = (BlockNumber) Min((uint64) ds->nblocks, (u + 1) * ds->stripe_pages);

		for (BlockNumber blk = first; blk < last; blk++)
		{
			bool		handed_back = false;

			if (AP_COVERED(ds, blk))
				continue;
			for (int i = 0; i < conn->nopen_blocks && !handed_back; i++)
				handed_back = (conn->open_blocks[i] == blk);
			if (handed_back)
				continue;
			ApDiskScanPushBlock(ds, blk);
			queued++;
		}
	}

	/* the skip set: earlier takeovers' entries, then this one's */
	nskip = ds->nskip + conn->nopen_tids +
		(conn->partial_offset > 0 ? (int) conn->partial_offset : 0);
	if (nskip > ds->nskip)
	{
		ds->skip = ds->skip == NULL ?
			MemoryContextAlloc(ds->cxt, sizeof(uint64) * nskip) :
			repalloc(ds->skip, sizeof(uint64) * nskip);
		for (int i = 0; i < conn->nopen_tids; i++)
			ds->skip[ds->nskip++] = conn->open_tids[i];
		if (conn->partial_offset > 0 && !AP_COVERED(ds, conn->partial_block))
		{
			for (uint32 off = FirstOffsetNumber; off < conn->partial_offset; off++)
				ds->skip[ds->nskip++] = AP_TID_PACK(conn->partial_block, off);
		}
		qsort(ds->skip, ds->nskip, sizeof(uint64), ap_cmp_tid);
	}
	return queued;
}

/*
 * Takeover: conn's disk could not be reached, refused, failed or stopped
 * making progress (why).  The host reads what the disk has not delivered
 * through the buffer manager with the query's snapshot, as fallback blocks:
 * all of its stripe units if it delivered nothing, otherwise those blocks
 * its Progress reports do not cover, skipping the tuples it delivered
 * beyond them.  In the distributed-device mode the consumer knows which
 * pages arrived (on_take_over): the host reads the others.  The result is
 * the same; the query only takes longer.
 */
static void
ap_disk_failed(ApDiskScan *ds, ApDiskConn *conn, const char *why)
{
	uint64		blocks;
	bool		all_failed;
	bool		pages = ds->on_take_over != NULL && ds->req != NULL &&
		ds->req->mode == AP_SCAN_MODE_PAGES;

	ApConnClose(conn);
	/* a disk skipped for an earlier failure stays in its quarantine's term */
	if (!conn->quarantined)
		ApStatsDiskFailed(conn->disk, why, ApDiskQuarantine(conn->disk));
	conn->scanning = false;
	conn->done = true;
	if (!conn->failed)
	{
		conn->failed = true;
		conn->failure = MemoryContextStrdup(ds->cxt, why);
	}
	if (conn->delivered)
	{
		blocks = pages ? ds->on_take_over(ds->arg, conn) : ap_take_over_rest(ds, conn);
		ereport(LOG,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("active_pg disk %d failed during a scan of \"%s\" after sending part of it (%s); the host reads the %llu blocks it had not delivered",
						conn->disk, RelationGetRelationName(ds->rel), why,
						(unsigned long long) blocks),
				 errdetail("The disk's address is %s.", conn->address),
				 errhint("SELECT * FROM active_pg.disks() shows which disks answer; the launcher restarts disks that died.")));
	}
	else
	{
		blocks = ApStripeBlocks(ds->nblocks, ds->stripe_pages, conn->nvdisks, conn->vdisk);
		/* never reached: 08001, as postgres_fdw reports a failed connect */
		ereport(LOG,
				(errcode(strncmp(why, "could not connect", 17) == 0 ?
						 ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION :
						 ERRCODE_CONNECTION_FAILURE),
				 errmsg("active_pg disk %d failed before sending rows of \"%s\" (%s); the host reads its %llu blocks",
						conn->disk, RelationGetRelationName(ds->rel), why,
						(unsigned long long) blocks),
				 errdetail("The disk's address is %s.", conn->address),
				 errhint("SELECT * FROM active_pg.disks() shows which disks answer; the launcher restarts disks that died.")));
		if (pages)
		{
			(void) ds->on_take_over(ds->arg, conn);
			ds->host->items_on_host++;
		}
		else
			ap_item_on_host(ds, conn->vdisk, conn->nvdisks);
	}
	ds->host->disks_taken_over++;
	ds->host->blocks_taken_over += blocks;
	if (ds->host->takeover_reason[0] == '\0')
		snprintf(ds->host->takeover_reason, sizeof(ds->host->takeover_reason),
				 "disk %d: %s", conn->disk, why);
	ds->ndisks_done++;
	ApStatsCountFallback(conn->delivered ? AP_FALLBACK_TAKEN_OVER :
						 conn->quarantined ? AP_FALLBACK_QUARANTINED : AP_FALLBACK_UNREACHABLE,
						 1, blocks, 0);

	/*
	 * Every disk of a scan failed: the host did all of it.  Said once per
	 * backend until a disk completes a scan again, not for every query.
	 */
	all_failed = ds->par == NULL && ds->conns != NULL;
	for (int i = 0; all_failed && i < ds->conns->nconns; i++)
		all_failed = ds->conns->conns[i].failed;
	/* counted once, with the last disk (skipped ones all failed at connect) */
	if (all_failed && ds->ndisks_done == ds->conns->nconns)
		ApStatsCountFallback(AP_FALLBACK_ALL_FAILED, 1, ds->nblocks, 0);
	if (all_failed && !ap_all_failed_warned)
	{
		ap_all_failed_warned = true;
		ereport(WARNING,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("no active_pg disk could complete a scan of \"%s\"; the host reads the relation itself",
						RelationGetRelationName(ds->rel)),
				 errdetail("Queries still answer, more slowly. This warning is not repeated until a disk completes a scan again."),
				 errhint("See the server log for why each disk failed; the launcher restarts disks that died.")));
	}
	if (ds->par != NULL)
	{
		ds->nactive--;
		ap_claim_items(ds);
	}
}

/* Hand a data frame to the scan's consumer (it frees or keeps it). */
static void
ap_consume(ApDiskScan *ds, ApDiskConn *conn, ActivePg__Frame *f)
{
	switch (ds->on_data(ds->arg, conn, f))
	{
		case AP_FRAME_KEPT:
			return;
		case AP_FRAME_FREE:
			break;
		case AP_FRAME_UNEXPECTED:
			ap_unexpected_frame(conn, f);
	}
	ApFreeFrame(ds->conns, f);
}

/*
 * conn's conversation is over (its Done, or nothing to ask it): the
 * connection is kept for the backend's next scan of this disk (or closed);
 * either way it leaves the set, and the set's wait events with it.
 */
static void
ap_conversation_over(ApDiskScan *ds, ApDiskConn *conn)
{
	conn->done = true;
	conn->scanning = false;
	ds->ndisks_done++;
	ApConnKeepIdle(ds->conns, conn);
}

/* Dispatch one frame of a scanning disk. */
static void
ap_handle_frame(ApDiskScan *ds, ApDiskConn *conn, ActivePg__Frame *f)
{
	switch (f->msg_case)
	{
		case ACTIVE_PG__FRAME__MSG_ROWS:
			conn->delivered = true;
			if (f->rows->progress != NULL)
				ap_apply_progress(ds, conn, f->rows->progress);
			ap_consume(ds, conn, f);
			return;
		case ACTIVE_PG__FRAME__MSG_PAGE_BATCH:
			conn->delivered = true;
			ap_consume(ds, conn, f);
			return;
		case ACTIVE_PG__FRAME__MSG_AGG_PARTIAL:
			conn->delivered = true;

			/*
			 * A flush's groups are merged only once its last frame (the one
			 * with the progress) is here: merged groups cannot be taken back.
			 */
			if (f->agg_partial->progress == NULL)
			{
				MemoryContext oldcxt = MemoryContextSwitchTo(ds->cxt);

				conn->held = lappend(conn->held, f);
				MemoryContextSwitchTo(oldcxt);
				return;
			}
			else
			{
				List	   *held = conn->held;
				ListCell   *lc;

				conn->held = NIL;
				foreach(lc, held)
					ap_consume(ds, conn, (ActivePg__Frame *) lfirst(lc));
				list_free(held);
				ap_apply_progress(ds, conn, f->agg_partial->progress);
				ap_consume(ds, conn, f);
				return;
			}
		case ACTIVE_PG__FRAME__MSG_XID_REQUEST:
			ap_answer_xids(ds, conn, f->xid_request);
			break;
		case ACTIVE_PG__FRAME__MSG_FALLBACK:
			/* an empty one is the disk's heartbeat (AP_HEARTBEAT_MS) */
			if (f->fallback->n_tids > 0 || f->fallback->n_blocks > 0)
				conn->delivered = true;
			ap_queue_fallback(ds, conn, f->fallback);
			break;
		case ACTIVE_PG__FRAME__MSG_DONE:
			/* every flush ends with its report before Done */
			if (conn->held != NIL)
				ApProtocolError(conn, "A disk ended its scan in the middle of an aggregation flush.");
			if (f->done->stats != NULL)
			{
				ap_add_stats(ds, conn->disk, f->done->stats);
				if (ds->on_stats != NULL)
					ds->on_stats(ds->arg, conn, f->done->stats);
			}
			ap_all_failed_warned = false;
			ap_conversation_over(ds, conn);
			/* a parallel participant takes on the next work item */
			if (ds->par != NULL)
			{
				ds->nactive--;
				ap_claim_items(ds);
			}
			break;
		case ACTIVE_PG__FRAME__MSG_ERROR:
			if (ApDiskErrorRecoverable(f->error->code))
			{
				char	   *why = psprintf("%s", f->error->message ? f->error->message : "error");

				ApFreeFrame(ds->conns, f);
				ap_disk_failed(ds, conn, why);
				return;
			}
			ApReportDiskError(conn, f->error);
			break;
		default:
			ap_unexpected_frame(conn, f);
	}
	ApFreeFrame(ds->conns, f);
}

/*
 * A disk that sent nothing for active_pg.disk_timeout while the host waited
 * on it has stopped (SIGSTOP, a hung device): a scanning disk sends at
 * least a heartbeat every AP_HEARTBEAT_MS, so silence is not slowness.
 */
static void
ap_check_progress(ApDiskScan *ds)
{
	TimestampTz now;

	if (active_pg_disk_timeout_ms <= 0 || ds->conns == NULL)
		return;
	now = GetCurrentTimestamp();
	for (int i = 0; i < ds->conns->nconns; i++)
	{
		ApDiskConn *conn = &ds->conns->conns[i];

		if (conn->scanning && !conn->done &&
			TimestampDifferenceExceeds(conn->last_heard, now, active_pg_disk_timeout_ms))
			ap_disk_failed(ds, conn, psprintf("no progress for %d ms", active_pg_disk_timeout_ms));
	}
}

/*
 * Read from the disks.  wait: block until something arrives (the caller has
 * nothing else to do); otherwise only take what is already there, so that
 * xid requests are answered while the host is busy.
 */
void
ApDiskScanPoll(ApDiskScan *ds, bool wait)
{
	ApConnSet  *set = ds->conns;
	WaitEvent	events[AP_NDISKS_MAX + 2];
	instr_time	start;
	instr_time	elapsed;
	int			n;

	if (set == NULL || ApDiskScanDisksDone(ds))
		return;
	/* a participant whose backlog has shrunk takes on what is due */
	if (ds->par != NULL)
		ap_claim_items(ds);
	if (wait)
		INSTR_TIME_SET_CURRENT(start);
	/* waiting: wake up now and then to see whether a disk stopped (ap_check_progress) */
	n = WaitEventSetWait(ApConnSetWaitEvents(set), !wait ? 0 : active_pg_disk_timeout_ms > 0 ?
						 Min(active_pg_disk_timeout_ms, AP_PROGRESS_CHECK_MS) : -1,
						 events, lengthof(events), PG_WAIT_EXTENSION);
	if (wait)
	{
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);
		ds->host->wait_ms += INSTR_TIME_GET_MILLISEC(elapsed);
	}

	for (int i = 0; i < n; i++)
	{
		WaitEvent  *ev = &events[i];
		ApDiskConn *conn = (ApDiskConn *) ev->user_data;

		if (ev->events & WL_LATCH_SET)
		{
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			continue;
		}
		if (!(ev->events & WL_SOCKET_READABLE) || conn == NULL || conn->done)
			continue;
		/* active_pg.interconnect_mb_per_sec: read no faster than the emulated link */
		ApInterconnectWait();
		{
			size_t		before = conn->rend - conn->rstart;
			char	   *err = NULL;
			int			r = ApConnTryFill(conn, &err);

			if (r < 0)
			{
				ap_disk_failed(ds, conn, err != NULL ? err : "it closed the connection");
				continue;
			}
			if (r > 0)
				conn->last_heard = GetCurrentTimestamp();
			ApInterconnectCharge((conn->rend - conn->rstart) - before);
		}
		for (;;)
		{
			ActivePg__Frame *f = ApConnNextFrame(set, conn);

			if (f == NULL)
				break;
			ap_handle_frame(ds, conn, f);
			if (conn->done)
				break;
		}
	}
	if (wait)
		ap_check_progress(ds);
}

/* Every disk (every claimed item) sent Done, or nothing was shipped. */
bool
ApDiskScanDisksDone(ApDiskScan *ds)
{
	if (ds->conns == NULL)
		return true;
	if (ds->par != NULL)
		return ds->claims_done && ds->nactive == 0;
	return ds->ndisks_done == ds->conns->nconns;
}

/* Close the sockets; a disk still scanning is told to stop. */
void
ApDiskScanClose(ApDiskScan *ds)
{
	if (ds->conns != NULL)
		ApCloseAll(ds->conns);
}

/* ---------------- shipping ---------------- */

/* Count a connection of this node: made now, or kept from an earlier scan. */
static void
ap_count_connection(ApDiskScan *ds, const ApDiskConn *conn)
{
	if (conn->failed)
		return;
	if (conn->reused)
		ds->host->connections_reused++;
	else
		ds->host->connections_opened++;
}

/*
 * A relation of fewer than NBuffers / AP_FLUSH_LOOKUP_RATIO blocks has each
 * block looked up in the buffer mapping table (about 100 ns) instead of
 * FlushRelationBuffers' walk over every shared buffer's tag (about 2 ns a
 * buffer, 70 us for 256 MB of shared buffers, 2 ms for 8 GB).
 */
#define AP_FLUSH_LOOKUP_RATIO	64

/*
 * Write rel's dirty shared buffers of blocks [0, nblocks) to the kernel,
 * where the disks read (nblocks counted before: a block a transaction
 * committed before our snapshot wrote to was in the file by then).  A
 * lookup that finds a buffer reads its state unlocked after the mapping
 * lock's barrier: a page dirtied before our snapshot shows BM_DIRTY until
 * it is written.  A dirty one is pinned (ReadRecentBuffer, which checks the
 * tag; a buffer evicted since was written out before it was reused), share
 * locked and written as FlushRelationBuffers writes it (FlushOneBuffer
 * waits for a write in progress; EXPLAIN's BUFFERS counts the pin as a hit).
 */
static void
ap_flush_relation(Relation rel, BlockNumber nblocks)
{
	if (RelationUsesLocalBuffers(rel) ||
		(uint64) nblocks * AP_FLUSH_LOOKUP_RATIO >= (uint64) NBuffers)
	{
		FlushRelationBuffers(rel);
		return;
	}
	for (BlockNumber blk = 0; blk < nblocks; blk++)
	{
		BufferTag	tag;
		uint32		hash;
		LWLock	   *lock;
		int			buf_id;
		uint32		state;

		ApInitBufferTag(&tag, rel, blk);
		hash = BufTableHashCode(&tag);
		lock = BufMappingPartitionLock(hash);
		LWLockAcquire(lock, LW_SHARED);
		buf_id = BufTableLookup(&tag, hash);
		LWLockRelease(lock);
		if (buf_id < 0)
			continue;
		pg_read_barrier();
		state = pg_atomic_read_u32(&GetBufferDescriptor(buf_id)->state);
		if ((state & (BM_VALID | BM_DIRTY)) != (BM_VALID | BM_DIRTY))
			continue;
		if (!ApReadRecentBuffer(rel, blk, buf_id + 1))
			continue;
		LockBuffer(buf_id + 1, BUFFER_LOCK_SHARE);
		FlushOneBuffer(buf_id + 1);
		UnlockReleaseBuffer(buf_id + 1);
	}
}

/* Flush, fix nblocks and connect (see disk_conversation.h); false for an empty relation. */
bool
ApDiskScanConnect(ApDiskScan *ds)
{
	ds->nblocks = RelationGetNumberOfBlocks(ds->rel);
	/*
	 * Everything committed before our snapshot must be in the files.  A
	 * rescan runs with the same snapshot, and what was written since is
	 * invisible to it: once per run of the plan is enough (scanning every
	 * shared buffer's tag per outer row of a correlated subquery was a fifth
	 * of its time).
	 */
	if (ds->flushed == NULL || !*ds->flushed)
	{
		ap_flush_relation(ds->rel, ds->nblocks);
		if (ds->flushed != NULL)
			*ds->flushed = true;
	}
	if (ds->nblocks == 0)
	{
		ds->host->pushdown_scans++;
		return false;
	}
	ds->covered = MemoryContextAllocZero(ds->cxt, ds->nblocks / 8 + 1);
	ds->conns = ApConnectAll(ds->cxt);
	for (int i = 0; i < ds->conns->nconns; i++)
		ap_count_connection(ds, &ds->conns->conns[i]);
	ds->stripe_pages = (uint32) active_pg_stripe_pages;
	ds->nstreams = ds->conns->nconns;
	return true;
}

/* Every connected disk announces every bit of caps. */
bool
ApDiskScanCapable(ApDiskScan *ds, uint32 caps)
{
	for (int i = 0; i < ds->conns->nconns; i++)
	{
		/* a failed disk's units are the host's anyway */
		if (!ds->conns->conns[i].failed &&
			(ds->conns->conns[i].capabilities & caps) != caps)
			return false;
	}
	return true;
}

/*
 * Build the ScanRequest of this execution in ds->cxt (disk_id and ndisks are
 * set per connection when it is sent).
 */
static void
ap_build_request(ApDiskScan *ds, ActivePg__Program *prog, uint32 mode)
{
	Relation	rel = ds->rel;
	Snapshot	snapshot = ds->snapshot;
	MemoryContext oldcxt = MemoryContextSwitchTo(ds->cxt);
	ActivePg__RelLocator *loc = palloc(sizeof(ActivePg__RelLocator));
	ActivePg__Snapshot *snap = palloc(sizeof(ActivePg__Snapshot));
	ActivePg__ScanRequest *req = palloc(sizeof(ActivePg__ScanRequest));
	size_t		ncols = 0;

	active_pg__rel_locator__init(loc);
	active_pg__snapshot__init(snap);
	active_pg__scan_request__init(req);

	loc->spc_oid = ApRelSpcOid(rel);
	loc->db_oid = ApRelDbOid(rel);
	loc->rel_number = ApRelNumber(rel);

	snap->xmin = snapshot->xmin;
	snap->xmax = snapshot->xmax;
	snap->n_xip = snapshot->xcnt;
	snap->xip = (uint32 *) snapshot->xip;
	/*
	 * An overflowed snapshot keeps subxcnt but no subxip (CopySnapshot);
	 * PostgreSQL then ignores subxip and maps subtransactions to their top
	 * transaction through pg_subtrans, which only the host can read: the
	 * disk is told, ships no subxip and asks the host about such xids.
	 */
	if (snapshot->suboverflowed || snapshot->subxip == NULL || snapshot->subxcnt <= 0)
	{
		snap->n_subxip = 0;
		snap->subxip = NULL;
	}
	else
	{
		snap->n_subxip = snapshot->subxcnt;
		snap->subxip = (uint32 *) snapshot->subxip;
	}
	snap->suboverflowed = snapshot->suboverflowed;

	req->scan_id = ((uint64) MyProcPid << 32) | (++ap_diskscan_counter & 0xFFFFFFFF);
	req->rel = loc;
	req->mode = mode;
	req->nblocks = ds->nblocks;
	req->stripe_pages = ds->stripe_pages;
	req->columns = ApEncodeColumns(RelationGetDescr(rel), &ncols);
	req->n_columns = ncols;
	req->snapshot = snap;
	req->program = prog;
	req->batch_bytes = (uint32) Min((uint64) active_pg_batch_kb * 1024, AP_BATCH_BYTES_MAX);
	req->data_checksums = DataChecksumsEnabled();
	req->direct_io = active_pg_direct_io;
	req->queue_depth = active_pg_queue_depth;
	/* SQL_ASCII is single-byte: characters are bytes there */
	req->encoding_utf8 = (GetDatabaseEncoding() == PG_UTF8);
	ds->req = req;
	MemoryContextSwitchTo(oldcxt);
	/* one sequential scan of the relation, as heap_beginscan counts it */
	pgstat_count_heap_scan(rel);
}

/*
 * Send the request to conn as its disk_id (conn->vdisk); false if the disk
 * failed instead (its units are the host's, a parallel item given back).
 */
static bool
ap_send_request(ApDiskScan *ds, ApDiskConn *conn)
{
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	char	   *err = NULL;

	ds->req->disk_id = conn->vdisk;
	ds->req->ndisks = conn->nvdisks;
	f.msg_case = ACTIVE_PG__FRAME__MSG_SCAN;
	f.scan = ds->req;
	ds->blocks_requested += ApStripeBlocks(ds->nblocks, ds->stripe_pages,
										   conn->nvdisks, conn->vdisk);
	/* a disk that could not be reached or refused: the host reads its units */
	if (conn->failed)
	{
		ap_disk_failed(ds, conn, conn->failure);
		return false;
	}
	/* from here on, closing the socket must also cancel the disk's scan */
	conn->scanning = true;
	conn->last_heard = GetCurrentTimestamp();
	if (ApTrySendFrame(ds->conns, conn, &f, &err))
		return true;
	/* a kept connection whose daemon went away since: connect anew, once */
	if (conn->reused && ApConnReconnect(ds->conns, conn, &err))
	{
		ds->host->connections_reused--;
		ds->host->connections_opened++;
		if (ApTrySendFrame(ds->conns, conn, &f, &err))
			return true;
	}
	/* the request did not leave: nothing was delivered, the host reads it all */
	conn->scanning = false;
	if (ds->par != NULL)
		ds->nactive++;			/* ap_disk_failed gives the item back */
	ap_disk_failed(ds, conn, psprintf("could not send the request: %s", err));
	return false;
}

/*
 * Send the ScanRequest carrying prog in mode to every connected disk that
 * holds a block of the relation.  A table of fewer stripe units than disks
 * leaves the others nothing to read: they are not asked, and their
 * connections go back to the idle pool at once (a one-page table rescanned
 * under a correlated subquery paid four round trips for one disk's page).
 */
void
ApDiskScanSend(ApDiskScan *ds, ActivePg__Program *prog, uint32 mode)
{
	ds->host->pushdown_scans++;
	ap_build_request(ds, prog, mode);
	for (int i = 0; i < ds->conns->nconns; i++)
	{
		ApDiskConn *conn = &ds->conns->conns[i];

		if (ds->par == NULL && !conn->failed &&
			ApStripeBlocks(ds->nblocks, ds->stripe_pages, conn->nvdisks, conn->vdisk) == 0)
		{
			ap_conversation_over(ds, conn);
			continue;
		}
		ap_send_request(ds, conn);
	}
}

/* Blocks of [0, nblocks) in the stripe units of disk_id of ndisks. */
uint64
ApStripeBlocks(BlockNumber nblocks, uint32 stripe_pages, uint32 ndisks, uint32 disk_id)
{
	return ap_stripe_disk_blocks(nblocks, stripe_pages, ndisks, disk_id);
}

/* ---------------- parallel participants ---------------- */

/* Work items per disk of a parallel scan: enough to balance participants. */
#define AP_PARALLEL_ITEMS_PER_DISK	4
/* Fine pieces each of the last round of items (one item per disk) is cut into. */
#define AP_PARALLEL_TAIL_PIECES		4

/* Flush, fix nblocks and lay out the work items (see disk_conversation.h). */
void
ApDiskScanParallelInit(ApParallelScan *ps, Relation rel, int nparticipants)
{
	uint32		ndisks = (uint32) Max(ApConfiguredDiskCount(), 1);
	uint32		stripe = (uint32) active_pg_stripe_pages;
	uint64		nunits;
	uint32		per_disk;
	uint32		fine;

	/* everything committed before the leader's snapshot must be in the files */
	ps->nblocks = RelationGetNumberOfBlocks(rel);
	ap_flush_relation(rel, ps->nblocks);
	nunits = ((uint64) ps->nblocks + stripe - 1) / stripe;

	/*
	 * Items are virtual disks: a request may name at most AP_NDISKS_MAX
	 * disks, and an item costs a request, so a small relation gets one item
	 * per disk.
	 */
	per_disk = Min(AP_PARALLEL_ITEMS_PER_DISK, AP_NDISKS_MAX / ndisks);
	per_disk = Min(per_disk, (uint32) Max(nunits / ndisks, 1));
	per_disk = Max(per_disk, 1);
	ps->ndisks = ndisks;
	ps->nitems = ndisks * per_disk;

	/*
	 * The last round of items, one per disk, is claimed in pieces of at least
	 * a stripe unit each: participants end within a piece of each other where
	 * the plan above the scan is slow (the rows of a whole item can take it
	 * longer than the disks take for the rest), and the disks' bulk stays in
	 * whole items, which cost fewer requests.  Only where every disk has more
	 * than one item: with one each there is no bulk to spare the requests of.
	 */
	fine = Min(AP_PARALLEL_TAIL_PIECES, AP_NDISKS_MAX / ps->nitems);
	fine = Min(fine, (uint32) Max(nunits / ps->nitems, 1));
	ps->fine = per_disk > 1 ? fine : 1;
	ps->stripe_pages = stripe;
	/* together the participants keep every disk busy */
	nparticipants = Max(nparticipants, 1);
	ps->inflight = (ndisks + nparticipants - 1) / nparticipants;
	pg_atomic_init_u32(&ps->next_item, 0);
}

/* Items claimed whole: all but the last round (one per disk) when it is split. */
static uint32
ap_whole_items(const ApParallelScan *ps)
{
	return ps->fine > 1 ? ps->nitems - ps->ndisks : ps->nitems;
}

/* Claims in all: the whole items and the pieces of the last round. */
static uint32
ap_claims(const ApParallelScan *ps)
{
	return ap_whole_items(ps) + (ps->nitems - ap_whole_items(ps)) * ps->fine;
}

/*
 * The request geometry of claim number claim: whole items first, then the
 * pieces of the last round, a piece of each item in turn (consecutive claims
 * go to different disks).
 */
static void
ap_claim_geometry(const ApParallelScan *ps, uint32 claim, uint32 *vdisk, uint32 *nvdisks)
{
	uint32		whole = ap_whole_items(ps);
	uint32		piece;

	if (claim < whole)
	{
		*vdisk = claim;
		*nvdisks = ps->nitems;
		return;
	}
	piece = claim - whole;
	*vdisk = whole + piece % ps->ndisks + ps->nitems * (piece / ps->ndisks);
	*nvdisks = ps->nitems * ps->fine;
}

/* A participant's connect: shared geometry, no connection yet. */
bool
ApDiskScanConnectParallel(ApDiskScan *ds, ApParallelScan *ps)
{
	ds->par = ps;
	ds->nblocks = ps->nblocks;
	ds->stripe_pages = ps->stripe_pages;
	ds->nstreams = (int) ps->inflight;
	if (ds->nblocks == 0)
	{
		ds->host->pushdown_scans++;
		ds->claims_done = true;
		return false;
	}
	ds->covered = MemoryContextAllocZero(ds->cxt, ds->nblocks / 8 + 1);
	ds->conns = ApConnSetCreate(ds->cxt, (int) ap_claims(ps));
	if (ApConnSetDisks(ds->conns) != (int) ps->ndisks)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel ActiveScan participant sees %d active_pg disks, the leader %u",
						ApConnSetDisks(ds->conns), ps->ndisks),
				 errhint("Do not change active_pg.disks while parallel queries run.")));
	return true;
}

/* Queue every block of the stripe units of item of nitems as fallback blocks: the host reads them. */
static void
ap_item_on_host(ApDiskScan *ds, uint32 item, uint32 nitems)
{
	uint64		nunits = ((uint64) ds->nblocks + ds->stripe_pages - 1) / ds->stripe_pages;

	for (uint64 u = item; u < nunits; u += nitems)
	{
		BlockNumber first = (BlockNumber) (u * ds->stripe_pages);
		BlockNumber last = (BlockNumber) Min((uint64) ds->nblocks, (u + 1) * ds->stripe_pages);

		for (BlockNumber blk = first; blk < last; blk++)
			ApDiskScanPushBlock(ds, blk);
	}
	ds->host->items_on_host++;
}

/*
 * Claim items until inflight of them are shipped or none is left.  An item
 * without stripe units needs no disk; one whose disk lacks a capability the
 * program needs is read on the host.
 */
static void
ap_claim_items(ApDiskScan *ds)
{
	ApParallelScan *ps = ds->par;

	while (!ds->claims_done && ds->nactive < (int) ps->inflight && ds->backlog <= 1)
	{
		uint32		claim = pg_atomic_fetch_add_u32(&ps->next_item, 1);
		uint32		item;
		uint32		nitems;
		ApDiskConn *conn;

		if (claim >= ap_claims(ps))
		{
			ds->claims_done = true;
			break;
		}
		ds->host->work_items++;
		ap_claim_geometry(ps, claim, &item, &nitems);
		if (ApStripeBlocks(ds->nblocks, ds->stripe_pages, nitems, item) == 0)
			continue;
		conn = ApConnectNext(ds->conns, (int) (item % ps->ndisks), item, nitems);
		ap_count_connection(ds, conn);
		if (conn->failed)
		{
			/* its units are this participant's: the host reads them */
			ds->blocks_requested += ApStripeBlocks(ds->nblocks, ds->stripe_pages,
												   nitems, item);
			ds->nactive++;		/* ap_disk_failed gives it back */
			ap_disk_failed(ds, conn, conn->failure);
			continue;
		}
		if ((conn->capabilities & ds->caps) != ds->caps)
		{
			ApConnClose(conn);
			ap_item_on_host(ds, item, nitems);
			continue;
		}
		if (ap_send_request(ds, conn))
			ds->nactive++;
	}
}

/* See disk_conversation.h. */
void
ApDiskScanBacklog(ApDiskScan *ds, int batches)
{
	ds->backlog = batches;
}

/* Ship prog to the disks of claimed items (see disk_conversation.h). */
void
ApDiskScanSendParallel(ApDiskScan *ds, ActivePg__Program *prog, uint32 mode, uint32 caps)
{
	ds->host->pushdown_scans++;
	ds->caps = caps;
	ap_build_request(ds, prog, mode);
	ap_claim_items(ds);
}

/* Connect and ship prog to disks that all have caps (see disk_conversation.h). */
bool
ApDiskScanShip(ApDiskScan *ds, ActivePg__Program *prog, uint32 caps)
{
	if (!ApDiskScanConnect(ds))
		return true;
	/* an older daemon: nothing is shipped, the host does the work */
	if (!ApDiskScanCapable(ds, caps))
	{
		ApDiskScanClose(ds);
		return false;
	}
	ApDiskScanSend(ds, prog, AP_SCAN_MODE_ACTIVE);
	return true;
}

/* ---------------- fallback tuples ---------------- */

/* Turn the next fallback block into TIDs of all its line pointers. */
static void
ap_expand_block(ApDiskScan *ds)
{
	uint32		blk = ds->blocks[ds->blocks_head++];
	Buffer		buf;
	OffsetNumber maxoff;

	if (ds->blocks_head == ds->nblocks_fb)
		ds->blocks_head = ds->nblocks_fb = 0;

	buf = ReadBufferExtended(ds->rel, MAIN_FORKNUM, blk, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	maxoff = PageIsNew(BufferGetPage(buf)) ? 0 : PageGetMaxOffsetNumber(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		uint64		tid = AP_TID_PACK(blk, off);

		/* a failed disk's block: it delivered this tuple already */
		if (ds->nskip > 0 &&
			bsearch(&tid, ds->skip, ds->nskip, sizeof(uint64), ap_cmp_tid) != NULL)
			continue;
		ApDiskScanPushTid(ds, tid);
	}
}

/* Next queued fallback tuple visible to the snapshot, in heap_slot. */
bool
ApDiskScanNextFallback(ApDiskScan *ds, TupleTableSlot *heap_slot)
{
	for (;;)
	{
		ItemPointerData self;
		uint64		tid;

		CHECK_FOR_INTERRUPTS();
		if (ds->tids_head == ds->ntids && ds->blocks_head < ds->nblocks_fb)
		{
			ap_expand_block(ds);
			continue;
		}
		if (ds->tids_head == ds->ntids)
			return false;

		tid = ds->tids[ds->tids_head++];
		if (ds->tids_head == ds->ntids)
			ds->tids_head = ds->ntids = 0;
		ItemPointerSet(&self, AP_TID_BLOCK(tid), AP_TID_OFFSET(tid));
		ds->host->fallback_fetched++;
		ExecClearTuple(heap_slot);

		/*
		 * The table AM's fetch under the snapshot (heap_fetch): the slot
		 * keeps the tuple header in itself and its own pin on the buffer.
		 * (A slot stored from a HeapTupleData of this frame would point
		 * into a dead stack frame once this returns.)
		 */
		if (!table_tuple_fetch_row_version(ds->rel, &self, ds->snapshot, heap_slot))
			continue;
		ds->host->fallback_visible++;
		pgstat_count_heap_getnext(ds->rel);
		return true;
	}
}
