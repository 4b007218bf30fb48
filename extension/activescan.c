/*
 * activescan.c
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
 *   - Before shipping, nblocks is fixed and the relation's dirty shared
 *     buffers are written to the kernel (ap_flush_relation in
 *     disk_conversation.c); everything committed before our snapshot is then
 *     in the files the disks read.
 *     Whatever a disk cannot decide comes back as TIDs or whole blocks and is
 *     read through the buffer manager with the real snapshot (heap_fetch),
 *     as a heap scan would.
 *   - The conversation with the disks (connect, ship, multiplex, xid
 *     answers, fallback queues, interconnect throttle, statistics) is
 *     disk_conversation.c's, shared with ActiveAgg; this file decodes RowBatches,
 *     hands PageBatches to the pages mode (at the end of this file) and turns everything into scan tuples.
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
 *     execution runs in host mode (a parallel participant reads the blocks
 *     of that disk's work items on the host instead).
 *   - All per-execution memory and sockets live in scan_cxt, a child of the
 *     query context: reset on rescan, deleted at the end, and released with
 *     the query on ERROR (transport.c closes the sockets from its callback).
 *   - Parallel-aware plans (a partial path under Gather): each participant
 *     runs this same conversation with the work items it claims from the
 *     shared state (parallel.c, disk_conversation.h); the leader decided once for
 *     all whether the scan is pushed down or is a parallel heap scan.
 *     Without shared state (a parallel-aware plan run without workers) the
 *     node scans everything itself.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "storage/bufpage.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "active_pg.h"
#include "ap_stripe.h"
#include "ap_visibility.h"
#include "bloomjoin.h"
#include "activescan.h"
#include "model.h"

/* the distributed-device mode (active_pg.scan_mode = 'pages'), at the end of this file */
static void ap_pages_begin(ApScanState *s);
static void ap_pages_queue(ApScanState *s, ApDiskConn *conn, ActivePg__Frame *f);
static void ap_pages_fallback_block(ApScanState *s, ApDiskConn *conn, uint32 blk);
static bool ap_pages_next(ApScanState *s);
static uint64 ap_pages_take_over(ApScanState *s, ApDiskConn *conn);
static void ap_pages_check_complete(ApScanState *s);

/* Stop reading sockets while this much row data waits to be decoded. */
#define AP_QUEUE_BYTES_MIN			(4 * 1024 * 1024)

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
	.EstimateDSMCustomScan = ApScanEstimateDSM,
	.InitializeDSMCustomScan = ApScanInitializeDSM,
	.ReInitializeDSMCustomScan = ApScanReInitializeDSM,
	.InitializeWorkerCustomScan = ApScanInitializeWorker,
	.ShutdownCustomScan = ApScanShutdown,
	.ExplainCustomScan = ApExplainScan,
};

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

/*
 * How many leading attributes of a heap tuple (host mode, a tuple the disks
 * handed back) anything reads: the shipped columns and the columns of the
 * quals and of the expressions computed from raw_slot.  A sequential scan
 * deforms a tuple only up to the last column its expressions read; so does
 * host mode, whose copy of every attribute took a scan of store_sales 1.7
 * times as long as PostgreSQL's.  A whole-row reference reads them all.
 */
static int
ap_raw_natts(ApScanState *s, CustomScan *cscan, int natts)
{
	Index		scanrelid = cscan->scan.scanrelid;
	Bitmapset  *attrs = NULL;
	int			n = 0;
	int			x = -1;

	for (int i = 0; i < s->nproject; i++)
		n = Max(n, s->project_attnos[i]);
	pull_varattnos((Node *) cscan->custom_exprs, scanrelid, &attrs);
	pull_varattnos((Node *) cscan->custom_scan_tlist, scanrelid, &attrs);
	if (!s->proj_mode)
	{
		pull_varattnos((Node *) cscan->scan.plan.targetlist, scanrelid, &attrs);
		pull_varattnos((Node *) cscan->scan.plan.qual, scanrelid, &attrs);
	}
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		int			attno = x + FirstLowInvalidHeapAttributeNumber;

		if (attno == InvalidAttrNumber)
			return natts;
		n = Max(n, attno);
	}
	return Min(n, natts);
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
	/* the disk's quals in its evaluation order (planner.c), the host's in the plan's */
	foreach(lc, disk_pos)
		s->disk_quals = lappend(s->disk_quals,
								list_nth(cscan->custom_exprs, lfirst_int(lc)));
	foreach(lc, cscan->custom_exprs)
	{
		if (!list_member_int(disk_pos, foreach_current_index(lc)))
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

	s->raw_natts = ap_raw_natts(s, cscan, desc->natts);
	s->bloom = ApBloomBegin(node, (List *) list_nth(cscan->custom_private, AP_PRIV_BLOOMS),
							estate, eflags);
	s->heap_slot = ExecAllocTableSlot(&estate->es_tupleTable, desc,
									  table_slot_callbacks(rel));
	s->scan_cxt = AllocSetContextCreate(estate->es_query_cxt, "active_pg scan",
										ALLOCSET_DEFAULT_SIZES);
	if (eflags & EXEC_FLAG_BACKWARD)
	{
		TupleDesc	sdesc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
		TupleDesc	kdesc = CreateTemplateTupleDesc(sdesc->natts + 1);

		for (int a = 0; a < sdesc->natts; a++)
			TupleDescCopyEntry(kdesc, a + 1, sdesc, a + 1);
		TupleDescInitEntry(kdesc, sdesc->natts + 1, "tid", INT8OID, -1, 0);
		s->kept_slot = ExecAllocTableSlot(&estate->es_tupleTable, kdesc, &TTSOpsMinimalTuple);
		s->kept = tuplestore_begin_heap(true, false, work_mem);
	}
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
	/* closes the sockets through transport.c's reset callback */
	MemoryContextReset(s->scan_cxt);
	memset(&s->ds, 0, sizeof(s->ds));
	s->batches = NIL;
	s->queued_bytes = 0;
	s->cur = NULL;
	s->cur_off = 0;
	s->cur_row = 0;
	s->pages = NULL;
	s->started = false;
	s->finished = false;
	s->host_mode = false;
	if (s->kept != NULL)
	{
		ExecClearTuple(s->kept_slot);
		tuplestore_clear(s->kept);
		s->kept_all = false;
	}
}

/* ---------------- frames ---------------- */

/* Data frame callback of the disk scan: queue a RowBatch or a PageBatch. */
static ApFrameUse
ap_on_frame(void *arg, ApDiskConn *conn, ActivePg__Frame *f)
{
	ApScanState *s = (ApScanState *) arg;
	ActivePg__RowBatch *rb;
	ApRowBatch    *b;

	if (f->msg_case == ACTIVE_PG__FRAME__MSG_PAGE_BATCH)
	{
		/* the pages mode owns the frame now */
		ap_pages_queue(s, conn, f);
		return AP_FRAME_KEPT;
	}
	if (f->msg_case != ACTIVE_PG__FRAME__MSG_ROWS)
		return AP_FRAME_UNEXPECTED;
	rb = f->rows;
	if (rb->nrows == 0 && rb->rows.len == 0)
		return AP_FRAME_FREE;
	if (rb->nrows == 0 || rb->rows.len < (size_t) rb->nrows * AP_ROW_HEADER_BYTES)
		ApProtocolError(conn, psprintf("A row batch claims %u rows in %zu bytes.",
									   rb->nrows, rb->rows.len));
	b = MemoryContextAlloc(s->scan_cxt, sizeof(ApRowBatch));
	b->frame = f;
	b->nrows = rb->nrows;
	b->len = rb->rows.len;
	b->conn = conn;
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
	ApDiskScanBacklog(&s->ds, list_length(s->batches));
	s->queued_bytes += b->len;
	s->host.batches++;
	s->host.bytes_received += b->len;
	/* the batch owns the frame now */
	return AP_FRAME_KEPT;
}

/* Fallback block callback of the disk scan: pages mode counts it as received. */
static void
ap_on_block(void *arg, ApDiskConn *conn, uint32 blk)
{
	ap_pages_fallback_block((ApScanState *) arg, conn, blk);
}

/* Takeover callback of the disk scan: pages mode knows which pages arrived. */
static uint64
ap_on_take_over(void *arg, ApDiskConn *conn)
{
	return ap_pages_take_over((ApScanState *) arg, conn);
}

/* Done statistics callback of the disk scan: the Bloom filters' own counters. */
static void
ap_on_stats(void *arg, ApDiskConn *conn, const ActivePg__ScanStats *st)
{
	ApScanState *s = (ApScanState *) arg;

	if (s->bloom != NULL)
		ApBloomDiskStats(s->bloom, conn->disk, st);
}

/*
 * Take what the disks already sent, unless enough rows wait to be decoded:
 * xid requests are answered while the host works, rows are not hoarded.
 */
static void
ap_poll_some(ApScanState *s)
{
	size_t		limit = Max(AP_QUEUE_BYTES_MIN,
							(size_t) s->ds.nstreams * active_pg_batch_kb * 1024 * 2);

	if (!ApDiskScanDisksDone(&s->ds) && s->queued_bytes < limit)
		ApDiskScanPoll(&s->ds, false);
}

/* ---------------- start ---------------- */

/*
 * Ship the scan to every disk (or, in a parallel participant, to the disks of
 * the work items it claims), or fall back to host mode if one cannot run it.
 */
static void
ap_ship(ApScanState *s)
{
	ScanState  *ss = &s->css.ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	MemoryContext oldcxt;
	ActivePg__Program *prog;
	bool		pages = active_pg_scan_mode == AP_SCAN_MODE_PAGES;
	uint32		mode = pages ? AP_SCAN_MODE_PAGES : AP_SCAN_MODE_ACTIVE;
	uint32		caps = 0;
	bool		connected;

	/* the small side first: without a key no row can join */
	if (s->bloom != NULL && !ApBloomBuild(s->bloom))
	{
		s->finished = true;
		return;
	}

	ApDiskScanInit(&s->ds, ss->ss_currentRelation, ss->ps.state->es_snapshot,
				   s->scan_cxt, ap_on_frame, s, s->disk_stats, s->disk_stats_valid,
				   &s->stats_ndisks, &s->host);
	s->ds.on_block = ap_on_block;
	s->ds.on_stats = ap_on_stats;
	s->ds.flushed = &s->rel_flushed;
	s->ds.on_take_over = ap_on_take_over;
	if (s->pshared != NULL)
		connected = ApDiskScanConnectParallel(&s->ds, &s->pshared->work);
	else
		connected = ApDiskScanConnect(&s->ds);
	if (!connected)
	{
		s->finished = true;
		return;
	}

	/* Params get their values now, in the node's expression context */
	oldcxt = MemoryContextSwitchTo(s->scan_cxt);
	ResetExprContext(econtext);
	/* later work items of a parallel participant are shipped with it too */
	prog = palloc(sizeof(ActivePg__Program));
	active_pg__program__init(prog);
	prog->filter = ApEncodeQuals(s->disk_quals, econtext);
	prog->n_project = s->nproject;
	prog->project = palloc(sizeof(int32) * Max(s->nproject, 1));
	for (int i = 0; i < s->nproject; i++)
		prog->project[i] = s->project_attnos[i];
	prog->project_exprs = ApEncodeValues(s->value_exprs, econtext,
										 &prog->n_project_exprs);
	MemoryContextSwitchTo(oldcxt);

	/*
	 * A disk that does not know the expression language gets nothing; in the
	 * distributed-device mode every disk must ship pages.  Else the host scans
	 * (a parallel participant: the blocks of that disk's work items).
	 */
	if (prog->n_project_exprs > 0 || ApExprNeedsExpressions(prog->filter))
		caps |= AP_CAP_EXPRESSIONS;
	if (pages)
		caps |= AP_CAP_PAGES;
	if (s->pshared == NULL && !ApDiskScanCapable(&s->ds, caps))
	{
		ApDiskScanClose(&s->ds);
		s->host.host_mode_no_cap++;
		ap_start_host_mode(s);
		return;
	}
	if (pages)
		ap_pages_begin(s);
	/* Bloom filters only save work: without the capability, ship none */
	else if (s->bloom != NULL && ApDiskScanCapable(&s->ds, AP_CAP_BLOOM))
	{
		oldcxt = MemoryContextSwitchTo(s->scan_cxt);
		ApBloomEncode(s->bloom, prog);
		MemoryContextSwitchTo(oldcxt);
	}
	if (s->pshared != NULL)
		ApDiskScanSendParallel(&s->ds, prog, mode, caps);
	else
		ApDiskScanSend(&s->ds, prog, mode);
}

/*
 * Run this execution as a plain heap scan on the host: of the whole relation,
 * or of the blocks this participant takes from a parallel heap scan.
 */
static void
ap_start_host_mode(ApScanState *s)
{
	ScanState  *ss = &s->css.ss;

	s->host_mode = true;
	s->host.host_mode_scans++;
	if (s->pshared != NULL)
		s->host_scan = table_beginscan_parallel(ss->ss_currentRelation,
												ApParallelHeapScan(s->pshared));
	else
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
	/* under Gather the leader decided for every participant */
	if (s->pshared != NULL ? s->pshared->host_mode :
		(!ApDiskScanPossible(snapshot) ||
		 !ApInitPlansAllowPushdown(ss->ss_currentRelation, snapshot,
								   ((CustomScan *) ss->ps.plan)->custom_exprs, s->disk_quals,
								   (Node *) s->value_exprs, ss->ps.ps_ExprContext)))
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
 * The tuple's identity, as a sequential scan's slot carries it: WHERE
 * CURRENT OF reads the TID (and table OID) of the scan slot (execCurrent.c).
 * Set on raw_slot and, in projection mode, on the scan slot, which are
 * virtual slots whose clearing forgets the TID.
 */
static inline void
ap_set_tid(ApScanState *s, BlockNumber blk, OffsetNumber off)
{
	TupleTableSlot *scan = s->css.ss.ss_ScanTupleSlot;
	Oid			relid = RelationGetRelid(s->css.ss.ss_currentRelation);

	ItemPointerSet(&s->raw_slot->tts_tid, blk, off);
	s->raw_slot->tts_tableOid = relid;
	if (scan != s->raw_slot)
	{
		scan->tts_tid = s->raw_slot->tts_tid;
		scan->tts_tableOid = relid;
	}
}

/*
 * Point raw_slot at the heap tuple in heap_slot, apply the disk quals and
 * the host quals, and in projection mode compute the scan tuple from it.
 * False if the quals reject it.
 */
static bool
ap_heap_to_scan_slot(ApScanState *s, TupleTableSlot *heap)
{
	TupleTableSlot *raw = s->raw_slot;
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	int			natts = raw->tts_tupleDescriptor->natts;
	int			n = s->raw_natts;

	/* the attributes nothing reads stay NULL, as in a row the disks ship */
	if (n > 0)
		slot_getsomeattrs(heap, n);
	ExecClearTuple(raw);
	memcpy(raw->tts_values, heap->tts_values, sizeof(Datum) * n);
	memcpy(raw->tts_isnull, heap->tts_isnull, sizeof(bool) * n);
	if (n < natts)
		memset(raw->tts_isnull + n, true, sizeof(bool) * (natts - n));
	ExecStoreVirtualTuple(raw);
	ap_set_tid(s, ItemPointerGetBlockNumberNoCheck(&heap->tts_tid),
			   ItemPointerGetOffsetNumberNoCheck(&heap->tts_tid));

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
		s->css.ss.ss_ScanTupleSlot->tts_tid = raw->tts_tid;
		s->css.ss.ss_ScanTupleSlot->tts_tableOid = raw->tts_tableOid;
	}
	return true;
}

/* Decode row cur_row of the current batch into the scan slot. */
static void
ap_decode_row(ApScanState *s)
{
	ApRowBatch    *b = s->cur;
	TupleTableSlot *scan = s->css.ss.ss_ScanTupleSlot;
	TupleTableSlot *raw = s->raw_slot;
	TupleDesc	desc = raw->tts_tupleDescriptor;
	TupleDesc	scan_desc = scan->tts_tupleDescriptor;
	ApDiskConn *conn = b->conn;
	ApRowView	row;
	const char *why;
	size_t		off = 0;
	int			i;

	why = ApRowOpen(b->data, b->len, s->cur_off, s->nproject + s->nvalues, true, &row);
	if (why != NULL)
		ApProtocolError(conn, psprintf("Row %u of a batch does not fit: %s.", s->cur_row, why));
	if (AP_TID_BLOCK(row.tid) >= s->ds.nblocks || AP_TID_OFFSET(row.tid) == 0 ||
		AP_TID_OFFSET(row.tid) > MaxHeapTuplesPerPage)
		ApProtocolError(conn, psprintf("Row %u names tuple (%u,%u), outside the relation's %u blocks.",
									   s->cur_row, AP_TID_BLOCK(row.tid), AP_TID_OFFSET(row.tid),
									   s->ds.nblocks));

	ExecClearTuple(raw);
	if (s->proj_mode)
		ExecClearTuple(scan);
	/* columns the disks do not ship are NULL; no expression above reads them */
	memset(raw->tts_isnull, true, sizeof(bool) * desc->natts);

	for (i = 0; i < row.hdr.natts; i++)
	{
		/* attributes go to raw_slot (and the scan tuple), values to the scan tuple */
		bool		is_value = i >= s->nproject;
		int			attno = is_value ? 0 : s->project_attnos[i];
		Form_pg_attribute att = is_value ? TupleDescAttr(scan_desc, i) :
			TupleDescAttr(desc, attno - 1);
		Datum		value;

		if (ApRowIsNull(&row, i))
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

		if (!ApRowFetchValue(att, row.data, row.datalen, &off, &value))
			goto bad;
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
	}
	if (off != row.datalen)
		goto bad;

	ExecStoreVirtualTuple(raw);
	ap_set_tid(s, AP_TID_BLOCK(row.tid), AP_TID_OFFSET(row.tid));
	if (s->proj_mode)
		ExecStoreVirtualTuple(scan);
	s->cur_off += AP_ROW_ALIGN_UP(row.hdr.row_bytes);
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
	ApRowBatch    *b = s->cur;

	if (s->cur_off < b->len)
		ApProtocolError(b->conn,
						psprintf("A batch of %u rows has %zu trailing bytes.",
								 b->nrows, b->len - s->cur_off));
	ExecClearTuple(s->css.ss.ss_ScanTupleSlot);
	s->queued_bytes -= b->len;
	if ((const char *) b->frame->rows->rows.data != b->data)
		pfree((void *) b->data);
	ApFreeFrame(s->ds.conns, b->frame);
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
		if (ap_heap_to_scan_slot(s, s->heap_slot))
			return s->css.ss.ss_ScanTupleSlot;
	}
}

/* Keep the scan tuple just returned for a later backward fetch. */
static void
ap_keep(ApScanState *s, TupleTableSlot *scan)
{
	TupleTableSlot *k = s->kept_slot;
	int			natts = scan->tts_tupleDescriptor->natts;

	slot_getallattrs(scan);
	ExecClearTuple(k);
	memcpy(k->tts_values, scan->tts_values, sizeof(Datum) * natts);
	memcpy(k->tts_isnull, scan->tts_isnull, sizeof(bool) * natts);
	k->tts_values[natts] = Int64GetDatum((int64)
										 AP_TID_PACK(ItemPointerGetBlockNumberNoCheck(&scan->tts_tid),
													 ItemPointerGetOffsetNumberNoCheck(&scan->tts_tid)));
	k->tts_isnull[natts] = false;
	ExecStoreVirtualTuple(k);
	tuplestore_puttupleslot(s->kept, k);
}

/* Put a kept tuple back into the scan slot, TID included. */
static TupleTableSlot *
ap_restore(ApScanState *s)
{
	TupleTableSlot *scan = s->css.ss.ss_ScanTupleSlot;
	TupleTableSlot *k = s->kept_slot;
	int			natts = scan->tts_tupleDescriptor->natts;
	uint64		tid;

	slot_getallattrs(k);
	ExecClearTuple(scan);
	memcpy(scan->tts_values, k->tts_values, sizeof(Datum) * natts);
	memcpy(scan->tts_isnull, k->tts_isnull, sizeof(bool) * natts);
	ExecStoreVirtualTuple(scan);
	tid = (uint64) DatumGetInt64(k->tts_values[natts]);
	ItemPointerSet(&scan->tts_tid, AP_TID_BLOCK(tid), AP_TID_OFFSET(tid));
	scan->tts_tableOid = RelationGetRelid(s->css.ss.ss_currentRelation);
	return scan;
}

static TupleTableSlot *ap_next_forward(ScanState *ss);

/*
 * ExecScan access method.  A plan that may run backward (a scrollable
 * cursor: PostgreSQL makes a cursor scrollable when its plan supports
 * backward scans, as a sequential scan does) walks the kept tuples as
 * nodeMaterial.c walks its tuplestore, and reads on from the scan when it
 * runs forward past the last one.
 */
static TupleTableSlot *
ap_next(ScanState *ss)
{
	ApScanState *s = (ApScanState *) ss;
	bool		forward = ScanDirectionIsForward(ss->ps.state->es_direction);
	bool		at_end;
	TupleTableSlot *slot;

	if (s->kept == NULL)
	{
		if (!forward)
			elog(ERROR, "ActiveScan was not prepared for a backward scan");
		return ap_next_forward(ss);
	}

	at_end = tuplestore_ateof(s->kept);
	if (!forward && at_end)
	{
		/*
		 * Turning back at the end of the kept tuples: the first read would
		 * return the last tuple kept, which is the current one unless the
		 * scan ran past its end.
		 */
		if (!s->kept_all && !tuplestore_advance(s->kept, false))
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		at_end = false;
	}
	if (!at_end)
	{
		if (tuplestore_gettupleslot(s->kept, forward, false, s->kept_slot))
			return ap_restore(s);
		if (!forward)
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		at_end = true;
	}
	if (s->kept_all)
		return ExecClearTuple(ss->ss_ScanTupleSlot);

	slot = ap_next_forward(ss);
	if (TupIsNull(slot))
		s->kept_all = true;
	else
		ap_keep(s, slot);	/* at EOF, the read position moves past it */
	return slot;
}

/* The next tuple from disks, fallbacks or the host scan. */
static TupleTableSlot *
ap_next_forward(ScanState *ss)
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
				/* EXPLAIN ANALYZE: true match or false positive of each filter */
				if (s->bloom != NULL && s->bloom->measure)
					ApBloomMeasureRow(s->bloom, s->raw_slot,
									  ss->ps.ps_ExprContext->ecxt_per_tuple_memory);
				if (ap_host_quals_pass(s))
					return slot;
				continue;
			}
			ap_release_batch(s);
			continue;
		}
		if (ApDiskScanNextFallback(&s->ds, s->heap_slot))
		{
			if (ap_heap_to_scan_slot(s, s->heap_slot))
				return slot;
			continue;
		}
		if (s->pages != NULL)
		{
			if (ap_pages_next(s))
			{
				/* keep answering and reading while the host works through pages */
				ap_poll_some(s);
				return slot;
			}
			/* the pages left fallback work behind */
			if (ApDiskScanFallbackPending(&s->ds))
				continue;
		}
		if (s->batches != NIL)
		{
			s->cur = (ApRowBatch *) linitial(s->batches);
			s->batches = list_delete_first(s->batches);
			s->cur_off = 0;
			s->cur_row = 0;
			ApDiskScanBacklog(&s->ds, list_length(s->batches));
			ap_poll_some(s);
			continue;
		}
		if (ApDiskScanDisksDone(&s->ds))
		{
			/* every disk is done and every queue is empty */
			ap_pages_check_complete(s);
			s->finished = true;
			ApDiskScanClose(&s->ds);
			return ExecClearTuple(slot);
		}
		ApDiskScanPoll(&s->ds, true);
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
	if (s->kept != NULL)
		tuplestore_end(s->kept);
	s->kept = NULL;
	MemoryContextDelete(s->scan_cxt);
	s->scan_cxt = NULL;
}

/* ---------------- distributed-device mode ---------------- */

/*
 * Distributed-device mode of ActiveScan (active_pg.scan_mode = 'pages'):
 *	  the disks ship raw pages of their stripes (PageBatch) and the host
 *	  does all the work, as Rauch and Stricker's striped network disks (FNBD) and Riedel's
 *	  "traditional system" would.  The baseline of the scaling experiment:
 *	  same drives, same media rate and interconnect, no disk computation.
 *
 * Rules of this file:
 *   - A page is checked as PostgreSQL checks a page it reads
 *     (PageIsVerified: header sanity and checksum), and every line
 *     pointer and tuple header is checked to lie inside it, before any tuple
 *     of the page is returned.  A page that fails goes through the buffer
 *     manager as a fallback block: PostgreSQL then reports (or zeroes) it
 *     exactly as a Seq Scan would.
 *   - Visibility on a page copy cannot use HeapTupleSatisfiesVisibility (it
 *     sets hint bits in a shared buffer).  The host applies the disks' own
 *     rules (common/visibility.c, compiled into both programs), answering the
 *     xids they ask about with the disk scan's xid logic (ApXidStatusOf); what
 *     they leave undecided (our own transaction's rows, multixacts, moved or
 *     speculative tuples) is fetched with heap_fetch and the real snapshot,
 *     as fallback TIDs of an active scan are.
 *   - Every block of [0, nblocks) must arrive exactly once, from the disk
 *     that owns its stripe unit, as a page or as a fallback block: a missing
 *     or duplicated page would silently lose or duplicate rows, so either is
 *     a protocol violation.  A parallel participant checks the same for the
 *     stripe units of the work items it shipped (disk_conversation.h).
 *   - Pages are copied into an aligned buffer before use: tuples are
 *     MAXALIGNed relative to the page, and the frame's bytes need not be.
 */

/* A PageBatch waiting to be processed. */
typedef struct ApPageBatch
{
	ActivePg__Frame *frame;		/* owns the pages */
	ApDiskConn *conn;			/* the disk that sent it */
} ApPageBatch;

typedef struct ApPageState
{
	List	   *queue;			/* of ApPageBatch *, FIFO */
	ApPageBatch *cur;			/* batch being processed */
	size_t		cur_page;		/* next page of cur */
	bool		have_page;		/* page holds a checked page */
	BlockNumber blkno;
	OffsetNumber off;			/* next line pointer of page */
	OffsetNumber maxoff;
	bool		all_visible;
	PGAlignedBlock page;
	HeapTupleData tuple;		/* the page_slot's tuple (points into page) */
	ApSnapshot	snap;			/* xip and subxip sorted, as the disk's code expects */
	ApXidCache	cache;			/* the host's answers, as a disk would keep them */
	MemoryContextCallback cb;	/* frees the cache (malloc'd by visibility.c) */
	uint8	   *seen;			/* bitmap of blocks received */
	uint64		nseen;
	uint32		stripe_pages;
} ApPageState;

/* Reset callback of scan_cxt: the xid cache lives in malloc'd memory. */
static void
ap_pages_free(void *arg)
{
	ApPageState *ps = (ApPageState *) arg;

	ap_xidcache_free(&ps->cache);
}

/* qsort comparator of xids by raw value (visibility.c bsearches them so). */
static int
ap_cmp_xid(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* Set up the page state of one execution (in scan_cxt) before shipping. */
static void
ap_pages_begin(ApScanState *s)
{
	Snapshot	snapshot = s->css.ss.ps.state->es_snapshot;
	MemoryContext oldcxt = MemoryContextSwitchTo(s->scan_cxt);
	ApPageState *ps = palloc0(sizeof(ApPageState));
	uint32	   *xip;
	uint32	   *subxip;
	int			subxcnt;

	xip = palloc(sizeof(uint32) * Max(snapshot->xcnt, 1));
	memcpy(xip, snapshot->xip, sizeof(uint32) * snapshot->xcnt);
	qsort(xip, snapshot->xcnt, sizeof(uint32), ap_cmp_xid);
	/* an overflowed snapshot has no subxip (see ap_build_request) */
	subxcnt = snapshot->suboverflowed || snapshot->subxip == NULL ? 0 :
		Max(snapshot->subxcnt, 0);
	subxip = palloc(sizeof(uint32) * Max(subxcnt, 1));
	if (subxcnt > 0)
	{
		memcpy(subxip, snapshot->subxip, sizeof(uint32) * subxcnt);
		qsort(subxip, subxcnt, sizeof(uint32), ap_cmp_xid);
	}
	ps->snap.xmin = snapshot->xmin;
	ps->snap.xmax = snapshot->xmax;
	ps->snap.xip = xip;
	ps->snap.xcnt = snapshot->xcnt;
	ps->snap.subxip = subxip;
	ps->snap.subxcnt = subxcnt;
	ps->snap.suboverflowed = snapshot->suboverflowed;
	if (ap_xidcache_init(&ps->cache, 64) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	ps->cb.func = ap_pages_free;
	ps->cb.arg = ps;
	MemoryContextRegisterResetCallback(s->scan_cxt, &ps->cb);
	ps->seen = palloc0((s->ds.nblocks + 7) / 8 + 1);
	ps->stripe_pages = s->ds.stripe_pages;
	s->pages = ps;

	/*
	 * The slot belongs to the executor's tuple table, which outlives scan_cxt
	 * (reset on rescan, deleted before ExecEndPlan releases the table's
	 * slots): it must live in the query context.
	 */
	if (s->page_slot == NULL)
	{
		MemoryContextSwitchTo(s->css.ss.ps.state->es_query_cxt);
		s->page_slot = ExecAllocTableSlot(&s->css.ss.ps.state->es_tupleTable,
										  RelationGetDescr(s->css.ss.ss_currentRelation),
										  &TTSOpsHeapTuple);
	}
	MemoryContextSwitchTo(oldcxt);
}

/* Check and mark one block received from disk; ERROR on a missing/duplicate/foreign page. */
static void
ap_pages_mark(ApScanState *s, ApDiskConn *conn, uint32 blk)
{
	ApPageState *ps = s->pages;

	if (blk >= s->ds.nblocks)
		ApProtocolError(conn, psprintf("Page %u is outside the relation's %u blocks.",
									   blk, s->ds.nblocks));
	if (ap_stripe_disk_of_block(blk, ps->stripe_pages, conn->nvdisks) != conn->vdisk)
		ApProtocolError(conn, psprintf("Page %u belongs to another disk's stripe.", blk));
	if (ps->seen[blk / 8] & (1 << (blk % 8)))
		ApProtocolError(conn, psprintf("Page %u arrived twice.", blk));
	ps->seen[blk / 8] |= (1 << (blk % 8));
	ps->nseen++;
}

/* Queue a PageBatch frame (the state takes ownership). */
static void
ap_pages_queue(ApScanState *s, ApDiskConn *conn, ActivePg__Frame *f)
{
	ActivePg__PageBatch *pb = f->page_batch;
	ApPageBatch *b;
	size_t		i;

	if (s->pages == NULL)
		ApProtocolError(conn, "A page batch arrived in an active scan.");
	if (pb->pages.len != pb->n_blocks * (size_t) BLCKSZ)
		ApProtocolError(conn, psprintf("A page batch has %zu block numbers and %zu bytes.",
									   pb->n_blocks, pb->pages.len));
	for (i = 0; i < pb->n_blocks; i++)
		ap_pages_mark(s, conn, pb->blocks[i]);
	s->host.pages_received += pb->n_blocks;
	if (pb->n_blocks > 0)
		ApStatsCountFallback(AP_FALLBACK_PAGES, 1, pb->n_blocks, 0);
	s->host.bytes_received += pb->pages.len;
	if (pb->n_blocks == 0)
	{
		ApFreeFrame(s->ds.conns, f);
		return;
	}
	b = MemoryContextAlloc(s->scan_cxt, sizeof(ApPageBatch));
	b->frame = f;
	b->conn = conn;
	s->pages->queue = lappend(s->pages->queue, b);
	s->queued_bytes += pb->pages.len;
}

/* A fallback block from a disk in pages mode counts as received. */
static void
ap_pages_fallback_block(ApScanState *s, ApDiskConn *conn, uint32 blk)
{
	if (s->pages != NULL)
		ap_pages_mark(s, conn, blk);
}

/*
 * conn's disk failed: the host reads the blocks of its stripe units that did
 * not arrive (as pages or fallback blocks), through the buffer manager with
 * the query's snapshot, and counts them as received.  Pages that did arrive
 * are the host's already (queued or done): none is read twice.  Returns the
 * number of blocks queued.
 */
static uint64
ap_pages_take_over(ApScanState *s, ApDiskConn *conn)
{
	ApPageState *ps = s->pages;
	uint64		nunits;
	uint64		queued = 0;

	if (ps == NULL)
		return 0;
	nunits = ((uint64) s->ds.nblocks + ps->stripe_pages - 1) / ps->stripe_pages;
	for (uint64 u = conn->vdisk; u < nunits; u += conn->nvdisks)
	{
		BlockNumber first = (BlockNumber) (u * ps->stripe_pages);
		BlockNumber last = (BlockNumber) Min((uint64) s->ds.nblocks, (u + 1) * ps->stripe_pages);

		for (BlockNumber blk = first; blk < last; blk++)
		{
			if (ps->seen[blk / 8] & (1 << (blk % 8)))
				continue;
			ps->seen[blk / 8] |= (1 << (blk % 8));
			ps->nseen++;
			ApDiskScanPushBlock(&s->ds, blk);
			queued++;
		}
	}
	return queued;
}

/*
 * At the end of the scan: did every block requested arrive (all of the
 * relation's, or a parallel participant's share)?
 */
static void
ap_pages_check_complete(ApScanState *s)
{
	if (s->pages != NULL && s->pages->nseen != s->ds.blocks_requested)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("active_pg disks shipped %llu of the %llu pages requested of the relation's %u",
						(unsigned long long) s->pages->nseen,
						(unsigned long long) s->ds.blocks_requested, s->ds.nblocks)));
}

/*
 * Load the next page of the queue into ps->page and check it; false if the
 * queue is empty.  A page that fails the checks becomes a fallback block.
 */
static bool
ap_pages_load(ApScanState *s)
{
	ApPageState *ps = s->pages;

	for (;;)
	{
		ActivePg__PageBatch *pb;
		Page		page = (Page) ps->page.data;
		OffsetNumber off;
		bool		ok = true;

		if (ps->cur == NULL)
		{
			if (ps->queue == NIL)
				return false;
			ps->cur = (ApPageBatch *) linitial(ps->queue);
			ps->queue = list_delete_first(ps->queue);
			ps->cur_page = 0;
		}
		pb = ps->cur->frame->page_batch;
		if (ps->cur_page >= pb->n_blocks)
		{
			s->queued_bytes -= pb->pages.len;
			ApFreeFrame(s->ds.conns, ps->cur->frame);
			pfree(ps->cur);
			ps->cur = NULL;
			continue;
		}
		ps->blkno = pb->blocks[ps->cur_page];
		memcpy(ps->page.data, pb->pages.data + ps->cur_page * (size_t) BLCKSZ, BLCKSZ);
		ps->cur_page++;

		/* what ReadBuffer checks for every page it reads */
		if (!ApPageIsVerified(page, ps->blkno, 0))
		{
			ApDiskScanPushBlock(&s->ds, ps->blkno);
			continue;
		}
		if (PageIsNew(page))
			continue;
		ps->maxoff = PageGetMaxOffsetNumber(page);
		if (ps->maxoff > MaxHeapTuplesPerPage ||
			((PageHeader) page)->pd_lower < SizeOfPageHeaderData + ps->maxoff * sizeof(ItemIdData))
			ok = false;
		/* every tuple inside the page, before any of them is returned */
		for (off = FirstOffsetNumber; ok && off <= ps->maxoff; off++)
		{
			ItemId		lp = PageGetItemId(page, off);
			HeapTupleHeader tup;

			if (!ItemIdIsNormal(lp))
				continue;
			if (ItemIdGetOffset(lp) < SizeOfPageHeaderData ||
				ItemIdGetLength(lp) < SizeofHeapTupleHeader ||
				ItemIdGetOffset(lp) + ItemIdGetLength(lp) > BLCKSZ ||
				ItemIdGetOffset(lp) != MAXALIGN(ItemIdGetOffset(lp)))
			{
				ok = false;
				break;
			}
			tup = (HeapTupleHeader) PageGetItem(page, lp);
			if (tup->t_hoff < SizeofHeapTupleHeader || tup->t_hoff > ItemIdGetLength(lp) ||
				tup->t_hoff != MAXALIGN(tup->t_hoff))
				ok = false;
		}
		if (!ok)
		{
			ApDiskScanPushBlock(&s->ds, ps->blkno);
			continue;
		}
		ps->all_visible = PageIsAllVisible(page);
		ps->off = FirstOffsetNumber;
		ps->have_page = true;
		return true;
	}
}

/* Visibility of one tuple on the page copy: 1 visible, 0 not, -1 ask the heap. */
static int
ap_pages_visible(ApScanState *s, HeapTupleHeader tup)
{
	ApPageState *ps = s->pages;
	Snapshot	snapshot = s->css.ss.ps.state->es_snapshot;
	ApTupleHeader h;

	if (ps->all_visible)
		return 1;
	h.xmin = HeapTupleHeaderGetRawXmin(tup);
	h.xmax = HeapTupleHeaderGetRawXmax(tup);
	h.infomask = tup->t_infomask;
	h.infomask2 = tup->t_infomask2;
	h.ctid_offset = ItemPointerGetOffsetNumberNoCheck(&tup->t_ctid);
	h.hoff = tup->t_hoff;
	h.natts = HeapTupleHeaderGetNatts(tup);
	for (;;)
	{
		uint32		need = 0;

		switch (ap_tuple_visibility(&h, &ps->snap, &ps->cache, &need))
		{
			case AP_VIS_VISIBLE:
				return 1;
			case AP_VIS_INVISIBLE:
				return 0;
			case AP_VIS_NEED_XID:
				if (ap_xidcache_put(&ps->cache, need,
									(int) ApXidStatusOf((TransactionId) need, snapshot)) != 0)
					ereport(ERROR,
							(errcode(ERRCODE_OUT_OF_MEMORY),
							 errmsg("out of memory")));
				s->host.xids_answered++;
				continue;
			default:
				return -1;
		}
	}
}

/*
 * The next tuple of the queued pages that is visible and passes every qual,
 * in the scan slot: true; false when the queued pages are used up (more may
 * arrive).  Undecided tuples become fallback TIDs.
 */
static bool
ap_pages_next(ApScanState *s)
{
	ApPageState *ps = s->pages;
	Relation	rel = s->css.ss.ss_currentRelation;

	if (ps == NULL)
		return false;
	for (;;)
	{
		Page		page = (Page) ps->page.data;
		ItemId		lp;
		HeapTupleData *tuple = &ps->tuple;
		int			vis;

		CHECK_FOR_INTERRUPTS();
		if (!ps->have_page || ps->off > ps->maxoff)
		{
			ps->have_page = false;
			if (!ap_pages_load(s))
				return false;
			continue;
		}
		lp = PageGetItemId(page, ps->off);
		ItemPointerSet(&tuple->t_self, ps->blkno, ps->off);
		ps->off++;
		if (!ItemIdIsNormal(lp))
			continue;
		tuple->t_data = (HeapTupleHeader) PageGetItem(page, lp);
		tuple->t_len = ItemIdGetLength(lp);
		tuple->t_tableOid = RelationGetRelid(rel);
		s->host.page_tuples++;
		vis = ap_pages_visible(s, tuple->t_data);
		if (vis == 0)
			continue;
		if (vis < 0)
		{
			ApDiskScanPushTid(&s->ds, AP_TID_PACK(ps->blkno, ItemPointerGetOffsetNumber(&tuple->t_self)));
			s->host.fallback_tids++;
			continue;
		}
		s->host.page_tuples_visible++;
		pgstat_count_heap_getnext(rel);
		/* the page copy outlives the slot's use of it: no copy needed */
		ExecStoreHeapTuple(tuple, s->page_slot, false);
		if (ap_heap_to_scan_slot(s, s->page_slot))
			return true;
	}
}
