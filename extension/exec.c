/*
 * exec.c
 *	  Executor of ActiveScan: ship the scan to the disks, multiplex their
 *	  streams, answer their questions and finish their leftovers.
 *
 * Rules of this file:
 *   - BeginCustomScan never contacts a disk: plain EXPLAIN (EXEC_FLAG_EXPLAIN_ONLY)
 *     must work with the disks down.  Disks are contacted at the first
 *     ExecCustomScan call, when Params have their values, and again after
 *     every rescan (Params may have changed: prepared statements, generic
 *     plans, the inner side of a nested loop).
 *   - Pushdown runs only under an MVCC snapshot, outside SERIALIZABLE (the
 *     disks take no predicate locks) and outside recovery (a standby's files
 *     can be behind its snapshot).  Otherwise the node runs a plain heap scan
 *     on the host ("host mode"): same rows, no pushdown.
 *   - Before shipping, the relation's dirty shared buffers are written to
 *     the kernel (FlushRelationBuffers) and nblocks is fixed; everything
 *     committed before our snapshot is then in the files the disks read.
 *     Whatever a disk cannot decide comes back as TIDs or whole blocks and is
 *     read through the buffer manager with the real snapshot (heap_fetch),
 *     as a heap scan would.
 *   - Xid status is decided exactly as HeapTupleSatisfiesMVCC does:
 *     own transaction first, then "in the snapshot" (running or not yet
 *     started for us), then the commit log.
 *   - The scan tuple slot of a CustomScanState is a fixed virtual slot, and
 *     compiled expressions rely on that (ExecComputeSlotInfo elides the
 *     deform step), so every tuple is returned in that slot: disk rows by
 *     pointing the values into the batch buffer, heap tuples by deforming
 *     them in a buffer slot and pointing at its values.
 *   - Quals always read raw_slot, a virtual tuple of the relation's shape
 *     (the scan slot itself unless the plan pushes projections): disk rows
 *     fill the shipped attributes, heap tuples all of them.  With projection
 *     pushdown the scan tuple has custom_scan_tlist's shape; disk rows fill
 *     it directly, heap tuples (fallback, host mode) are projected into it
 *     on the host by raw_proj, after the quals, as PostgreSQL would.
 *   - Host quals are evaluated here, not by ExecScan (plan.qual is empty), in
 *     PostgreSQL's order for each tuple: disk quals (on the host only for
 *     heap tuples), host quals, then the projection.  Rejections count as
 *     nfiltered1, shown as "Rows Removed by Host Filter".
 *   - A program with FuncCall/CASE/COALESCE nodes or computed projections is
 *     shipped only if every disk announces AP_CAP_EXPRESSIONS; otherwise the
 *     execution runs in host mode.
 *   - All per-execution memory and sockets live in scan_cxt, a child of the
 *     query context: reset on rescan, deleted at the end, and released with
 *     the query on ERROR (client.c closes the sockets from its callback).
 *   - Not parallel-aware: the planner never offers a partial path.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "active_pg.h"
#include "bloom.h"
#include "exec.h"
#include "model.h"

/* Stop reading sockets while this much row data waits to be decoded. */
#define AP_QUEUE_BYTES_MIN			(4 * 1024 * 1024)
#define AP_TIDS_INITIAL				256

static void ap_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ap_exec(CustomScanState *node);
static void ap_end(CustomScanState *node);
static void ap_rescan(CustomScanState *node);
static void ap_start_host_mode(ApScanState *s);

static CustomExecMethods ap_exec_methods = {
	.CustomName = AP_SCAN_NAME,
	.BeginCustomScan = ap_begin,
	.ExecCustomScan = ap_exec,
	.EndCustomScan = ap_end,
	.ReScanCustomScan = ap_rescan,
	.ExplainCustomScan = ApExplainScan,
};

/* Unique per backend and scan, for the disks' logs. */
static uint64 ap_scan_counter = 0;

/* Nothing to register: the executor is reached through ApScanPlanMethods. */
void
ApExecInit(void)
{
}

/* CreateCustomScanState callback of ApScanPlanMethods. */
Node *
ApCreateScanState(CustomScan *cscan)
{
	ApScanState *s = (ApScanState *) newNode(sizeof(ApScanState), T_CustomScanState);

	s->css.methods = &ap_exec_methods;
	s->css.flags = cscan->flags;
	return (Node *) s;
}

/* BeginCustomScan: prepare expressions and slots; no disk contact. */
static void
ap_begin(CustomScanState *node, EState *estate, int eflags)
{
	ApScanState *s = (ApScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;
	int			i = 0;
	List	   *disk_pos;

	if (list_length(cscan->custom_private) != AP_PRIV_COUNT)
		elog(ERROR, "ActiveScan plan has %d private items, expected %d",
			 list_length(cscan->custom_private), AP_PRIV_COUNT);

	disk_pos = (List *) list_nth(cscan->custom_private, AP_PRIV_DISK_QUALS);
	s->nvalues = intVal(list_nth(cscan->custom_private, AP_PRIV_NEXPRS));
	foreach(lc, cscan->custom_exprs)
	{
		if (list_member_int(disk_pos, foreach_current_index(lc)))
			s->disk_quals = lappend(s->disk_quals, lfirst(lc));
		else
			s->host_quals = lappend(s->host_quals, lfirst(lc));
	}
	s->host_qual_state = ExecInitQual(s->host_quals, &node->ss.ps);
	s->all_qual_state = ExecInitQual(cscan->custom_exprs, &node->ss.ps);
	s->project = (List *) list_nth(cscan->custom_private, AP_PRIV_PROJECT);
	s->nproject = list_length(s->project);
	s->project_attnos = palloc(sizeof(AttrNumber) * Max(s->nproject, 1));
	foreach(lc, s->project)
	{
		int			attno = lfirst_int(lc);

		if (attno < 1 || attno > desc->natts || TupleDescAttr(desc, attno - 1)->attisdropped)
			elog(ERROR, "ActiveScan projects invalid attribute %d of \"%s\"",
				 attno, RelationGetRelationName(rel));
		s->project_attnos[i++] = (AttrNumber) attno;
	}

	s->proj_mode = cscan->custom_scan_tlist != NIL;
	if (s->proj_mode)
	{
		if (list_length(cscan->custom_scan_tlist) != s->nproject + s->nvalues)
			elog(ERROR, "ActiveScan scan tuple has %d entries, expected %d",
				 list_length(cscan->custom_scan_tlist), s->nproject + s->nvalues);
		foreach(lc, list_copy_tail(cscan->custom_scan_tlist, s->nproject))
			s->value_exprs = lappend(s->value_exprs, lfirst_node(TargetEntry, lc)->expr);
		s->raw_slot = ExecAllocTableSlot(&estate->es_tupleTable, desc, &TTSOpsVirtual);
		s->raw_proj = ExecBuildProjectionInfo(cscan->custom_scan_tlist,
											  node->ss.ps.ps_ExprContext,
											  node->ss.ss_ScanTupleSlot,
											  &node->ss.ps, desc);
	}
	else
	{
		if (s->nvalues != 0)
			elog(ERROR, "ActiveScan plan computes %d values without a scan tuple list",
				 s->nvalues);
		s->raw_slot = node->ss.ss_ScanTupleSlot;
	}

	s->bloom = ApBloomBegin(node, (List *) list_nth(cscan->custom_private, AP_PRIV_BLOOMS),
							estate, eflags);
	s->heap_slot = ExecAllocTableSlot(&estate->es_tupleTable, desc,
									  table_slot_callbacks(rel));
	s->scan_cxt = AllocSetContextCreate(estate->es_query_cxt, "active_pg scan",
										ALLOCSET_DEFAULT_SIZES);
	s->disk_stats = palloc0(sizeof(ActivePg__ScanStats) * AP_NDISKS_MAX);
	s->disk_stats_valid = palloc0(sizeof(bool) * AP_NDISKS_MAX);
	s->started = false;
}

/* ---------------- per-execution state ---------------- */

/* Forget the current execution: slots, heap scan, sockets and queued work. */
static void
ap_reset(ApScanState *s)
{
	/* the scan slot may point into a batch about to be freed */
	ExecClearTuple(s->css.ss.ss_ScanTupleSlot);
	ExecClearTuple(s->raw_slot);
	ExecClearTuple(s->heap_slot);
	if (s->host_scan != NULL)
	{
		table_endscan(s->host_scan);
		s->host_scan = NULL;
	}
	/* closes the sockets through client.c's reset callback */
	MemoryContextReset(s->scan_cxt);
	s->conns = NULL;
	s->batches = NIL;
	s->queued_bytes = 0;
	s->cur = NULL;
	s->cur_off = 0;
	s->cur_row = 0;
	s->tids = NULL;
	s->ntids = s->tids_head = s->tids_cap = 0;
	s->blocks = NULL;
	s->nblocks_fb = s->blocks_head = s->blocks_cap = 0;
	s->ndisks_done = 0;
	s->nblocks = 0;
	s->pages = NULL;
	s->started = false;
	s->finished = false;
	s->host_mode = false;
}

/* Append a fallback TID. */
static void
ap_push_tid(ApScanState *s, uint64 tid)
{
	if (s->ntids == s->tids_cap)
	{
		int			newcap = Max(AP_TIDS_INITIAL, s->tids_cap * 2);

		if (s->tids == NULL)
			s->tids = MemoryContextAlloc(s->scan_cxt, sizeof(uint64) * newcap);
		else
			s->tids = repalloc(s->tids, sizeof(uint64) * newcap);
		s->tids_cap = newcap;
	}
	s->tids[s->ntids++] = tid;
}

/* Append a fallback block. */
static void
ap_push_block(ApScanState *s, uint32 blk)
{
	if (s->nblocks_fb == s->blocks_cap)
	{
		int			newcap = Max(AP_TIDS_INITIAL, s->blocks_cap * 2);

		if (s->blocks == NULL)
			s->blocks = MemoryContextAlloc(s->scan_cxt, sizeof(uint32) * newcap);
		else
			s->blocks = repalloc(s->blocks, sizeof(uint32) * newcap);
		s->blocks_cap = newcap;
	}
	s->blocks[s->nblocks_fb++] = blk;
}

/* ---------------- xid status ---------------- */

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

/* Answer one XidStatusRequest at once: the disk may be waiting for it. */
static void
ap_answer_xids(ApScanState *s, ApDiskConn *conn, ActivePg__XidStatusRequest *req)
{
	Snapshot	snapshot = s->css.ss.ps.state->es_snapshot;
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__XidStatusReply reply = ACTIVE_PG__XID_STATUS_REPLY__INIT;
	size_t		i;

	reply.n_xids = req->n_xids;
	reply.xids = req->xids;
	reply.n_status = req->n_xids;
	reply.status = palloc(sizeof(uint32) * Max(req->n_xids, 1));
	for (i = 0; i < req->n_xids; i++)
		reply.status[i] = ApXidStatusOf((TransactionId) req->xids[i], snapshot);
	f.msg_case = ACTIVE_PG__FRAME__MSG_XID_REPLY;
	f.xid_reply = &reply;
	ApSendFrame(s->conns, conn, &f);
	pfree(reply.status);
	s->host.xid_requests++;
	s->host.xids_answered += req->n_xids;
}

/* ---------------- frames ---------------- */

/* Add one disk's Done statistics to the totals kept across executions. */
static void
ap_add_stats(ApScanState *s, int disk, const ActivePg__ScanStats *st)
{
	ApAddScanStats(&s->disk_stats[disk], st);
	s->disk_stats_valid[disk] = true;
	/* the disks' cycles per byte feed the cost model of later plans */
	if (s->pages == NULL)
		ApModelObserve(s->bloom != NULL ? AP_MODEL_OP_BLOOM : AP_MODEL_OP_SCAN, st);
	s->stats_ndisks = Max(s->stats_ndisks, disk + 1);
}

/* Dispatch one frame from a scanning disk. */
static void
ap_handle_frame(ApScanState *s, ApDiskConn *conn, ActivePg__Frame *f)
{
	size_t		i;

	switch (f->msg_case)
	{
		case ACTIVE_PG__FRAME__MSG_ROWS:
			{
				ActivePg__RowBatch *rb = f->rows;
				ApBatch    *b;

				if (rb->nrows == 0 && rb->rows.len == 0)
					break;
				if (rb->nrows == 0 || rb->rows.len < (size_t) rb->nrows * AP_ROW_HEADER_BYTES)
					ApProtocolError(conn, psprintf("A row batch claims %u rows in %zu bytes.",
												   rb->nrows, rb->rows.len));
				b = MemoryContextAlloc(s->scan_cxt, sizeof(ApBatch));
				b->frame = f;
				b->nrows = rb->nrows;
				b->len = rb->rows.len;
				b->disk = conn->disk;
				/* slots point into the rows: they need MAXALIGN'd memory */
				if (((uintptr_t) rb->rows.data) % MAXIMUM_ALIGNOF == 0)
					b->data = (const char *) rb->rows.data;
				else
				{
					char	   *copy = MemoryContextAlloc(s->scan_cxt, b->len);

					memcpy(copy, rb->rows.data, b->len);
					b->data = copy;
				}
				s->batches = lappend(s->batches, b);
				s->queued_bytes += b->len;
				s->host.batches++;
				s->host.bytes_received += b->len;
				/* the batch owns the frame now */
				return;
			}
		case ACTIVE_PG__FRAME__MSG_PAGE_BATCH:
			/* pages.c owns the frame now */
			ApPagesQueue(s, conn, f);
			return;
		case ACTIVE_PG__FRAME__MSG_XID_REQUEST:
			ap_answer_xids(s, conn, f->xid_request);
			break;
		case ACTIVE_PG__FRAME__MSG_FALLBACK:
			for (i = 0; i < f->fallback->n_tids; i++)
			{
				uint64		tid = f->fallback->tids[i];
				uint32		off = AP_TID_OFFSET(tid);

				if ((tid >> 48) != 0 || AP_TID_BLOCK(tid) >= s->nblocks ||
					off < FirstOffsetNumber || off > MaxHeapTuplesPerPage)
					ApProtocolError(conn, psprintf("Fallback TID (%u,%u) is outside the relation's %u blocks.",
												   AP_TID_BLOCK(tid), off, s->nblocks));
				ap_push_tid(s, tid);
			}
			for (i = 0; i < f->fallback->n_blocks; i++)
			{
				if (f->fallback->blocks[i] >= s->nblocks)
					ApProtocolError(conn, psprintf("Fallback block %u is outside the relation's %u blocks.",
												   f->fallback->blocks[i], s->nblocks));
				ApPagesFallbackBlock(s, conn, f->fallback->blocks[i]);
				ap_push_block(s, f->fallback->blocks[i]);
			}
			s->host.fallback_tids += f->fallback->n_tids;
			s->host.fallback_blocks += f->fallback->n_blocks;
			break;
		case ACTIVE_PG__FRAME__MSG_DONE:
			if (f->done->stats != NULL)
				ap_add_stats(s, conn->disk, f->done->stats);
			conn->done = true;
			conn->scanning = false;
			s->ndisks_done++;
			/* the conversation is over; closing also drops it from the epoll set */
			closesocket(conn->sock);
			conn->sock = PGINVALID_SOCKET;
			break;
		case ACTIVE_PG__FRAME__MSG_ERROR:
			ApReportDiskError(conn, f->error);
			break;
		default:
			ApProtocolError(conn, psprintf("Unexpected message %d during a scan.",
										   (int) f->msg_case));
	}
	ApFreeFrame(s->conns, f);
}

/*
 * Read from the disks.  wait: block until something arrives (the queue is
 * empty); otherwise only take what is already there, so that xid requests
 * are answered while the host is busy decoding.
 */
static void
ap_poll(ApScanState *s, bool wait)
{
	ApConnSet  *set = s->conns;
	WaitEvent	events[AP_NDISKS_MAX + 2];
	instr_time	start;
	instr_time	elapsed;
	int			n;
	int			i;

	if (wait)
		INSTR_TIME_SET_CURRENT(start);
	n = WaitEventSetWait(set->wes, wait ? -1 : 0, events, lengthof(events),
						 PG_WAIT_EXTENSION);
	if (wait)
	{
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);
		s->host.wait_ms += INSTR_TIME_GET_MILLISEC(elapsed);
	}

	for (i = 0; i < n; i++)
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
		/* active_pg.interconnect_mbps: read no faster than the emulated link */
		ApInterconnectWait();
		{
			size_t		before = conn->rend - conn->rstart;

			(void) ApConnFill(conn);
			ApInterconnectCharge((conn->rend - conn->rstart) - before);
		}
		for (;;)
		{
			ActivePg__Frame *f = ApConnNextFrame(set, conn);

			if (f == NULL)
				break;
			ap_handle_frame(s, conn, f);
			if (conn->done)
				break;
		}
	}
}

/* ---------------- start ---------------- */

/* Ship the scan to every disk. */
static void
ap_ship(ApScanState *s)
{
	ScanState  *ss = &s->css.ss;
	EState	   *estate = ss->ps.state;
	Relation	rel = ss->ss_currentRelation;
	Snapshot	snapshot = estate->es_snapshot;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	MemoryContext oldcxt;
	ActivePg__RelLocator loc = ACTIVE_PG__REL_LOCATOR__INIT;
	ActivePg__Snapshot snap = ACTIVE_PG__SNAPSHOT__INIT;
	ActivePg__Program prog = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__ScanRequest req = ACTIVE_PG__SCAN_REQUEST__INIT;
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	size_t		ncols = 0;
	int			i;

	/* the small side first: without a key no row can join */
	if (s->bloom != NULL && !ApBloomBuild(s->bloom))
	{
		s->finished = true;
		return;
	}

	/* everything committed before our snapshot must be in the files */
	FlushRelationBuffers(rel);
	s->nblocks = RelationGetNumberOfBlocks(rel);
	s->host.pushdown_scans++;
	if (s->nblocks == 0)
	{
		s->finished = true;
		return;
	}

	oldcxt = MemoryContextSwitchTo(s->scan_cxt);
	s->conns = ApConnectAll(s->scan_cxt);

	loc.spc_oid = rel->rd_node.spcNode;
	loc.db_oid = rel->rd_node.dbNode;
	loc.rel_number = rel->rd_node.relNode;

	snap.xmin = snapshot->xmin;
	snap.xmax = snapshot->xmax;
	snap.n_xip = snapshot->xcnt;
	snap.xip = (uint32 *) snapshot->xip;
	snap.n_subxip = snapshot->subxcnt > 0 ? snapshot->subxcnt : 0;
	snap.subxip = (uint32 *) snapshot->subxip;
	snap.suboverflowed = snapshot->suboverflowed;

	/* Params get their values now, in the node's expression context */
	ResetExprContext(econtext);
	prog.filter = ApEncodeQuals(s->disk_quals, &ss->ps, econtext);
	prog.n_project = s->nproject;
	prog.project = palloc(sizeof(int32) * Max(s->nproject, 1));
	for (i = 0; i < s->nproject; i++)
		prog.project[i] = s->project_attnos[i];
	prog.project_exprs = ApEncodeValues(s->value_exprs, &ss->ps, econtext,
										&prog.n_project_exprs);

	/* a disk that does not know the expression language gets nothing */
	if (prog.n_project_exprs > 0 || ApExprNeedsExpressions(prog.filter))
	{
		for (i = 0; i < s->conns->nconns; i++)
		{
			if ((s->conns->conns[i].capabilities & AP_CAP_EXPRESSIONS) == 0)
			{
				MemoryContextSwitchTo(oldcxt);
				ApCloseAll(s->conns);
				s->conns = NULL;
				s->host.pushdown_scans--;
				s->host.host_mode_no_cap++;
				ap_start_host_mode(s);
				return;
			}
		}
	}

	/* distributed-device mode: every disk must ship pages, else the host scans */
	if (active_pg_scan_mode == AP_SCAN_MODE_PAGES)
	{
		for (i = 0; i < s->conns->nconns; i++)
		{
			if ((s->conns->conns[i].capabilities & AP_CAP_PAGES) == 0)
			{
				MemoryContextSwitchTo(oldcxt);
				ApCloseAll(s->conns);
				s->conns = NULL;
				s->host.pushdown_scans--;
				s->host.host_mode_no_cap++;
				ap_start_host_mode(s);
				return;
			}
		}
		req.mode = AP_SCAN_MODE_PAGES;
		ApPagesBegin(s, s->conns->nconns);
	}

	/* Bloom filters only save work: without the capability, ship none */
	if (s->bloom != NULL && s->pages == NULL)
	{
		bool		all_bloom = true;

		for (i = 0; i < s->conns->nconns; i++)
			all_bloom &= (s->conns->conns[i].capabilities & AP_CAP_BLOOM) != 0;
		if (all_bloom)
			ApBloomEncode(s->bloom, &prog);
	}

	req.scan_id = ((uint64) MyProcPid << 32) | (++ap_scan_counter & 0xFFFFFFFF);
	req.rel = &loc;
	req.nblocks = s->nblocks;
	req.ndisks = s->conns->nconns;
	req.stripe_pages = active_pg_stripe_pages;
	req.columns = ApEncodeColumns(RelationGetDescr(rel), &ncols);
	req.n_columns = ncols;
	req.snapshot = &snap;
	req.program = &prog;
	req.batch_bytes = (uint32) Min((uint64) active_pg_batch_kb * 1024, AP_BATCH_BYTES_MAX);
	req.data_checksums = DataChecksumsEnabled();
	req.direct_io = active_pg_direct_io;
	req.queue_depth = active_pg_queue_depth;
	/* SQL_ASCII is single-byte: characters are bytes there */
	req.encoding_utf8 = GetDatabaseEncoding() == PG_UTF8;
	f.msg_case = ACTIVE_PG__FRAME__MSG_SCAN;
	f.scan = &req;

	for (i = 0; i < s->conns->nconns; i++)
	{
		ApDiskConn *conn = &s->conns->conns[i];

		req.disk_id = i;
		/* from here on, closing the socket must also cancel the disk's scan */
		conn->scanning = true;
		ApSendFrame(s->conns, conn, &f);
	}
	MemoryContextSwitchTo(oldcxt);
}

/* Run this execution as a plain heap scan on the host. */
static void
ap_start_host_mode(ApScanState *s)
{
	ScanState  *ss = &s->css.ss;

	s->host_mode = true;
	s->host.host_mode_scans++;
	s->host_scan = table_beginscan(ss->ss_currentRelation, ss->ps.state->es_snapshot,
								   0, NULL);
}

/* First Exec after Begin/ReScan: choose host mode or pushdown. */
static void
ap_start(ApScanState *s)
{
	ScanState  *ss = &s->css.ss;
	Snapshot	snapshot = ss->ps.state->es_snapshot;

	s->started = true;
	s->finished = false;
	if (!IsMVCCSnapshot(snapshot) || IsolationIsSerializable() ||
		RecoveryInProgress() || !ApDisksConfigured())
	{
		ap_start_host_mode(s);
		return;
	}
	ap_ship(s);
}

/* ---------------- tuples ---------------- */

/*
 * Host quals over raw_slot; a rejection counts as "Rows Removed by Host
 * Filter".  The caller has reset the expression context.
 */
static bool
ap_host_quals_pass(ApScanState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;

	if (s->host_qual_state == NULL)
		return true;
	econtext->ecxt_scantuple = s->raw_slot;
	if (ExecQual(s->host_qual_state, econtext))
		return true;
	InstrCountFiltered1(&s->css.ss.ps, 1);
	return false;
}

/*
 * Point raw_slot at the heap tuple in heap_slot, apply the disk quals and
 * the host quals, and in projection mode compute the scan tuple from it.
 * False if the quals reject it.
 */
bool
ApHeapToScanSlot(ApScanState *s, TupleTableSlot *heap)
{
	TupleTableSlot *raw = s->raw_slot;
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	int			natts = raw->tts_tupleDescriptor->natts;

	slot_getallattrs(heap);
	ExecClearTuple(raw);
	memcpy(raw->tts_values, heap->tts_values, sizeof(Datum) * natts);
	memcpy(raw->tts_isnull, heap->tts_isnull, sizeof(bool) * natts);
	ExecStoreVirtualTuple(raw);

	/*
	 * Every qual in plan order, as a plain scan evaluates them: a tuple the
	 * disk handed back because a shipped expression failed raises the error
	 * only where PostgreSQL would.  Several tuples may be rejected within one
	 * call: free their garbage.
	 */
	ResetExprContext(econtext);
	if (s->all_qual_state != NULL)
	{
		econtext->ecxt_scantuple = raw;
		if (!ExecQual(s->all_qual_state, econtext))
		{
			/* host mode and fallback: whichever qual rejected it (as a Filter would) */
			if (s->host_qual_state != NULL)
				InstrCountFiltered1(&s->css.ss.ps, 1);
			return false;
		}
	}
	if (s->proj_mode)
	{
		/* the values live in per-tuple memory until the next tuple */
		econtext->ecxt_scantuple = raw;
		ExecProject(s->raw_proj);
	}
	return true;
}

/* Process the next fallback TID; true if it produced a tuple in the scan slot. */
static bool
ap_next_fallback_tid(ApScanState *s)
{
	ScanState  *ss = &s->css.ss;
	Relation	rel = ss->ss_currentRelation;
	uint64		tid = s->tids[s->tids_head++];
	HeapTupleData tuple;
	Buffer		buf;

	if (s->tids_head == s->ntids)
		s->tids_head = s->ntids = 0;

	ItemPointerSet(&tuple.t_self, AP_TID_BLOCK(tid), AP_TID_OFFSET(tid));
	s->host.fallback_fetched++;
	ExecClearTuple(s->heap_slot);
	if (!heap_fetch(rel, ss->ps.state->es_snapshot, &tuple, &buf, false))
		return false;
	s->host.fallback_visible++;
	ExecStoreBufferHeapTuple(&tuple, s->heap_slot, buf);
	/* the slot holds its own pin */
	ReleaseBuffer(buf);
	return ApHeapToScanSlot(s, s->heap_slot);
}

/* Turn the next fallback block into TIDs of all its line pointers. */
static void
ap_expand_fallback_block(ApScanState *s)
{
	Relation	rel = s->css.ss.ss_currentRelation;
	uint32		blk = s->blocks[s->blocks_head++];
	Buffer		buf;
	OffsetNumber maxoff;
	OffsetNumber off;

	if (s->blocks_head == s->nblocks_fb)
		s->blocks_head = s->nblocks_fb = 0;

	buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	maxoff = PageIsNew(BufferGetPage(buf)) ? 0 : PageGetMaxOffsetNumber(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	for (off = FirstOffsetNumber; off <= maxoff; off++)
		ap_push_tid(s, AP_TID_PACK(blk, off));
}

/* Decode row cur_row of the current batch into the scan slot. */
static void
ap_decode_row(ApScanState *s)
{
	ApBatch    *b = s->cur;
	TupleTableSlot *scan = s->css.ss.ss_ScanTupleSlot;
	TupleTableSlot *raw = s->raw_slot;
	TupleDesc	desc = raw->tts_tupleDescriptor;
	TupleDesc	scan_desc = scan->tts_tupleDescriptor;
	ApDiskConn *conn = &s->conns->conns[b->disk];
	ApRowHeader hdr;
	const char *row;
	const char *data;
	const bits8 *bitmap = NULL;
	size_t		dataoff;
	size_t		datalen;
	size_t		off = 0;
	int			i;

	if (s->cur_off + AP_ROW_HEADER_BYTES > b->len)
		ApProtocolError(conn, psprintf("Row %u of a batch starts beyond its %zu bytes.",
									   s->cur_row, b->len));
	row = b->data + s->cur_off;
	memcpy(&hdr, row, sizeof(hdr));
	if (hdr.natts != s->nproject + s->nvalues || (hdr.flags & ~AP_ROW_HASNULLS) != 0)
		ApProtocolError(conn, psprintf("Row %u has %u values and flags 0x%x; %d values were requested.",
									   s->cur_row, hdr.natts, hdr.flags,
									   s->nproject + s->nvalues));
	dataoff = AP_ROW_DATA_OFFSET(hdr.flags, hdr.natts);
	if (hdr.row_bytes < dataoff || s->cur_off + hdr.row_bytes > b->len)
		ApProtocolError(conn, psprintf("Row %u claims %u bytes; %zu remain in the batch.",
									   s->cur_row, hdr.row_bytes, b->len - s->cur_off));
	if (hdr.flags & AP_ROW_HASNULLS)
		bitmap = (const bits8 *) (row + AP_ROW_HEADER_BYTES);
	data = row + dataoff;
	datalen = hdr.row_bytes - dataoff;

	ExecClearTuple(raw);
	if (s->proj_mode)
		ExecClearTuple(scan);
	/* columns the disks do not ship are NULL; no expression above reads them */
	memset(raw->tts_isnull, true, sizeof(bool) * desc->natts);

	for (i = 0; i < hdr.natts; i++)
	{
		/* attributes go to raw_slot (and the scan tuple), values to the scan tuple */
		bool		is_value = i >= s->nproject;
		int			attno = is_value ? 0 : s->project_attnos[i];
		Form_pg_attribute att = is_value ? TupleDescAttr(scan_desc, i) :
			TupleDescAttr(desc, attno - 1);
		const char *p;
		Datum		value;

		if (bitmap != NULL && !(bitmap[i >> 3] & (1 << (i & 7))))
		{
			if (!is_value)
				raw->tts_values[attno - 1] = (Datum) 0;
			if (s->proj_mode)
			{
				scan->tts_values[i] = (Datum) 0;
				scan->tts_isnull[i] = true;
			}
			continue;
		}

		/* heap_fill_tuple's placement rules, as in a heap tuple's data area */
		if (att->attlen == -1)
		{
			if (off >= datalen)
				goto bad;
			off = att_align_pointer(off, att->attalign, -1, data + off);
		}
		else
			off = att_align_nominal(off, att->attalign);
		if (off >= datalen)
			goto bad;
		p = data + off;

		if (att->attlen > 0)
		{
			if (off + att->attlen > datalen)
				goto bad;
		}
		else if (att->attlen == -1)
		{
			if (!VARATT_IS_1B(p) && off + VARHDRSZ > datalen)
				goto bad;
			if (off + VARSIZE_ANY(p) > datalen || VARSIZE_ANY(p) < 1)
				goto bad;
		}
		else
		{
			if (strnlen(p, datalen - off) == datalen - off)
				goto bad;
		}
		value = fetchatt(att, p);
		if (!is_value)
		{
			raw->tts_values[attno - 1] = value;
			raw->tts_isnull[attno - 1] = false;
		}
		if (s->proj_mode)
		{
			scan->tts_values[i] = value;
			scan->tts_isnull[i] = false;
		}
		off = att_addlength_pointer(off, att->attlen, p);
	}
	if (off != datalen)
		goto bad;

	ExecStoreVirtualTuple(raw);
	if (s->proj_mode)
		ExecStoreVirtualTuple(scan);
	s->cur_off += AP_ROW_ALIGN_UP(hdr.row_bytes);
	s->cur_row++;
	return;

bad:
	ApProtocolError(conn, psprintf("Row %u of a batch does not match the projected columns' layout.",
								   s->cur_row));
}

/* Done with the current batch: free it. */
static void
ap_release_batch(ApScanState *s)
{
	ApBatch    *b = s->cur;

	if (s->cur_off < b->len)
		ApProtocolError(&s->conns->conns[b->disk],
						psprintf("A batch of %u rows has %zu trailing bytes.",
								 b->nrows, b->len - s->cur_off));
	ExecClearTuple(s->css.ss.ss_ScanTupleSlot);
	s->queued_bytes -= b->len;
	if ((const char *) b->frame->rows->rows.data != b->data)
		pfree((void *) b->data);
	ApFreeFrame(s->conns, b->frame);
	pfree(b);
	s->cur = NULL;
}

/* Host mode: the next tuple of a plain heap scan that passes the disk quals. */
static TupleTableSlot *
ap_next_host(ApScanState *s)
{
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (!table_scan_getnextslot(s->host_scan, ForwardScanDirection, s->heap_slot))
		{
			s->finished = true;
			return ExecClearTuple(s->css.ss.ss_ScanTupleSlot);
		}
		s->host.host_mode_tuples++;
		if (ApHeapToScanSlot(s, s->heap_slot))
			return s->css.ss.ss_ScanTupleSlot;
	}
}

/* ExecScan access method: the next tuple from disks, fallbacks or the host scan. */
static TupleTableSlot *
ap_next(ScanState *ss)
{
	ApScanState *s = (ApScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;

	if (!s->started)
		ap_start(s);
	if (s->host_mode)
		return s->finished ? ExecClearTuple(slot) : ap_next_host(s);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (s->finished)
			return ExecClearTuple(slot);

		if (s->cur != NULL)
		{
			if (s->cur_row < s->cur->nrows)
			{
				ap_decode_row(s);
				s->host.rows_from_disks++;
				ResetExprContext(ss->ps.ps_ExprContext);
				if (ap_host_quals_pass(s))
					return slot;
				continue;
			}
			ap_release_batch(s);
			continue;
		}
		if (s->tids_head < s->ntids)
		{
			if (ap_next_fallback_tid(s))
				return slot;
			continue;
		}
		if (s->blocks_head < s->nblocks_fb)
		{
			ap_expand_fallback_block(s);
			continue;
		}
		if (s->pages != NULL)
		{
			if (ApPagesNext(s))
			{
				/* keep answering and reading while the host works through pages */
				if (s->ndisks_done < s->conns->nconns &&
					s->queued_bytes < Max(AP_QUEUE_BYTES_MIN,
										  (size_t) s->conns->nconns * active_pg_batch_kb * 1024 * 2))
					ap_poll(s, false);
				return slot;
			}
			/* the pages left fallback work behind */
			if (s->tids_head < s->ntids || s->blocks_head < s->nblocks_fb)
				continue;
		}
		if (s->batches != NIL)
		{
			s->cur = (ApBatch *) linitial(s->batches);
			s->batches = list_delete_first(s->batches);
			s->cur_off = 0;
			s->cur_row = 0;
			/* answer waiting xid requests, but do not hoard rows in memory */
			if (s->ndisks_done < s->conns->nconns &&
				s->queued_bytes < Max(AP_QUEUE_BYTES_MIN,
									  (size_t) s->conns->nconns * active_pg_batch_kb * 1024 * 2))
				ap_poll(s, false);
			continue;
		}
		if (s->ndisks_done == s->conns->nconns)
		{
			/* every disk is done and every queue is empty */
			ApPagesCheckComplete(s);
			s->finished = true;
			ApCloseAll(s->conns);
			return ExecClearTuple(slot);
		}
		ap_poll(s, true);
	}
}

/* EvalPlanQual recheck: the test tuple must pass the disk quals too. */
static bool
ap_recheck(ScanState *ss, TupleTableSlot *slot)
{
	ApScanState *s = (ApScanState *) ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;

	/* the planner never pushes projections under row marks */
	if (s->proj_mode)
		elog(ERROR, "ActiveScan with projection pushdown cannot recheck a tuple");
	/* compiled quals expect a deformed slot (see the rules above) */
	slot_getallattrs(slot);
	ResetExprContext(econtext);
	econtext->ecxt_scantuple = slot;
	return s->all_qual_state == NULL || ExecQual(s->all_qual_state, econtext);
}

/* ExecCustomScan: ExecScan applies host quals and projection. */
static TupleTableSlot *
ap_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, ap_next, ap_recheck);
}

/* ReScanCustomScan: drop this execution; the next Exec ships again. */
static void
ap_rescan(CustomScanState *node)
{
	ApScanState *s = (ApScanState *) node;

	ap_reset(s);
	if (s->bloom != NULL)
		ApBloomRescan(s->bloom, &node->ss.ps);
	ExecScanReScan(&node->ss);
}

/* EndCustomScan: release the execution (sockets close with scan_cxt). */
static void
ap_end(CustomScanState *node)
{
	ApScanState *s = (ApScanState *) node;

	ap_reset(s);
	if (s->bloom != NULL)
		ApBloomEnd(s->bloom);
	MemoryContextDelete(s->scan_cxt);
	s->scan_cxt = NULL;
}

/* Queue a fallback TID (pages.c: tuples the page copy cannot decide). */
void
ApScanPushTid(ApScanState *s, uint64 tid)
{
	ap_push_tid(s, tid);
}

/* Queue a fallback block (pages.c: pages that fail the checks). */
void
ApScanPushBlock(ApScanState *s, uint32 blk)
{
	ap_push_block(s, blk);
}
