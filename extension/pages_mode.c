/*
 * pages_mode.c
 *	  Distributed-device mode of ActiveScan (active_pg.scan_mode = 'pages'):
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
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufpage.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "active_pg.h"
#include "ap_stripe.h"
#include "activescan.h"
#include "ap_visibility.h"

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
	int			ndisks;
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
void
ApPagesBegin(ApScanState *s)
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
	/* the requests' geometry: disks, or a parallel participant's work items */
	ps->ndisks = s->ds.nvdisks;
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
	if (ap_stripe_disk_of_block(blk, ps->stripe_pages, ps->ndisks) != conn->vdisk)
		ApProtocolError(conn, psprintf("Page %u belongs to another disk's stripe.", blk));
	if (ps->seen[blk / 8] & (1 << (blk % 8)))
		ApProtocolError(conn, psprintf("Page %u arrived twice.", blk));
	ps->seen[blk / 8] |= (1 << (blk % 8));
	ps->nseen++;
}

/* Queue a PageBatch frame (the state takes ownership). */
void
ApPagesQueue(ApScanState *s, ApDiskConn *conn, ActivePg__Frame *f)
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
void
ApPagesFallbackBlock(ApScanState *s, ApDiskConn *conn, uint32 blk)
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
uint64
ApPagesTakeOver(ApScanState *s, ApDiskConn *conn)
{
	ApPageState *ps = s->pages;
	uint64		nunits;
	uint64		queued = 0;

	if (ps == NULL)
		return 0;
	nunits = ((uint64) s->ds.nblocks + ps->stripe_pages - 1) / ps->stripe_pages;
	for (uint64 u = conn->vdisk; u < nunits; u += ps->ndisks)
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
void
ApPagesCheckComplete(ApScanState *s)
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
bool
ApPagesNext(ApScanState *s)
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
		if (ApHeapToScanSlot(s, s->page_slot))
			return true;
	}
}
