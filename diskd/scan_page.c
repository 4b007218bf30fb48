/*
 * scan_page.c
 *	  One page of an active-mode scan: the visibility of its tuples decided
 *	  (asking the host about xids the hints and snapshot cannot decide), the
 *	  Bloom filters and prefilter applied, the program's filter evaluated,
 *	  and each passing tuple projected into the row buffer or added to the
 *	  aggregation.  What cannot be decided exactly goes to the host as a TID
 *	  (scan_ship.c); scan.c's rules hold here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefilter.h"
#include "scan_state.h"


/* Check the host's answer is exactly about the xids we asked; 0 or -1 (protocol error). */
static int
check_xid_reply(Scan *s, const ActivePg__XidStatusReply *reply)
{
	size_t		i;

	if (reply->n_xids != s->nneed || reply->n_status != s->nneed)
		return scan_fail(s, AP_ERR_PROTOCOL,
						 "XidStatusReply answers %zu xids with %zu statuses, %u were asked",
						 reply->n_xids, reply->n_status, s->nneed);
	memcpy(s->need_sorted, s->need, s->nneed * sizeof(uint32_t));
	qsort(s->need_sorted, s->nneed, sizeof(uint32_t), scan_cmp_u32);
	memset(s->need_seen, 0, s->nneed);
	for (i = 0; i < reply->n_xids; i++)
	{
		uint32_t   *hit = bsearch(&reply->xids[i], s->need_sorted, s->nneed,
								  sizeof(uint32_t), scan_cmp_u32);

		if (hit == NULL || s->need_seen[hit - s->need_sorted]++)
			return scan_fail(s, AP_ERR_PROTOCOL,
							 "XidStatusReply: xid %u was not asked or is answered twice",
							 reply->xids[i]);
		if (reply->status[i] < AP_XID_COMMITTED || reply->status[i] > AP_XID_CURRENT)
			return scan_fail(s, AP_ERR_PROTOCOL, "XidStatusReply: invalid status %u for xid %u",
							 reply->status[i], reply->xids[i]);
	}
	return 0;
}

/* Ask the host about s->need[], wait for the answer, and cache it. */
static int
resolve_xids(Scan *s)
{
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__XidStatusRequest xr = ACTIVE_PG__XID_STATUS_REQUEST__INIT;
	ActivePg__Frame *f;
	uint64_t	t0;
	uint64_t	cpu0;
	int			rc;
	size_t		i;

	xr.n_xids = s->nneed;
	xr.xids = s->need;
	frame.msg_case = ACTIVE_PG__FRAME__MSG_XID_REQUEST;
	frame.xid_request = &xr;
	if (scan_send(s, &frame) < 0)
		return -1;

	t0 = ap_mono_us();
	cpu0 = ap_thread_cpu_ns();
	rc = ap_conn_recv(s->c, &f, -1);
	s->stats.host_wait_us += scan_waited_since(t0, cpu0);
	if (rc < 0)
	{
		/* EOF or a malformed frame: conn.c already answered if it could */
		s->close_conn = true;
		return scan_fail(s, AP_ERR_PROTOCOL, "connection lost waiting for XidStatusReply");
	}
	switch (f->msg_case)
	{
		case ACTIVE_PG__FRAME__MSG_XID_REPLY:
			rc = check_xid_reply(s, f->xid_reply);
			if (rc < 0)
			{
				s->close_conn = true;
				break;
			}
			for (i = 0; i < f->xid_reply->n_xids && rc == 0; i++)
			{
				if (ap_xidcache_put(&s->cache, f->xid_reply->xids[i],
									(int) f->xid_reply->status[i]) < 0)
					rc = scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory caching xid statuses");
			}
			s->stats.xids_resolved += s->nneed;
			break;
		case ACTIVE_PG__FRAME__MSG_CANCEL:
			rc = scan_fail(s, AP_ERR_CANCELED, "scan canceled by the host");
			break;
		default:
			s->close_conn = true;
			rc = scan_fail(s, AP_ERR_PROTOCOL,
						   "unexpected frame (type %d) while waiting for XidStatusReply",
						   (int) f->msg_case);
			break;
	}
	active_pg__frame__free_unpacked(f, NULL);
	return rc;
}

/* Add xid to this page's question unless it is already there. */
static void
need_xid(Scan *s, uint32_t xid)
{
	uint32_t	i;

	/* pages usually share one or two xids, so a linear probe is cheapest */
	for (i = 0; i < s->nneed; i++)
	{
		if (s->need[i] == xid)
			return;
	}
	s->need[s->nneed++] = xid;
}

/* The tuple at line pointer off, or NULL if the pointer leaves the page. */
static const unsigned char *
page_tuple(const unsigned char *page, int off, unsigned *flags, uint32_t *len)
{
	unsigned	lp_off;
	unsigned	lp_len;

	ap_page_item(page, off, flags, &lp_off, &lp_len);
	*len = lp_len;
	if (*flags != AP_LP_NORMAL)
		return NULL;
	if (lp_off < AP_PAGE_HEADER_BYTES || lp_len < AP_TUPLE_HEADER_MIN ||
		lp_off + lp_len > AP_BLCKSZ)
		return NULL;
	return page + lp_off;
}

/*
 * Decide visibility of every normal item of a not-all-visible page into
 * s->vis[], asking the host about xids until no item needs one (bounded).
 */
static int
decide_page_visibility(Scan *s, const unsigned char *page, int nitems)
{
	int			round;

	for (round = 0;; round++)
	{
		int			off;

		s->nneed = 0;
		for (off = 1; off <= nitems; off++)
		{
			const unsigned char *tup;
			ApTupleHeader *hdr = &s->hdrs[off];
			unsigned	flags;
			uint32_t	len;
			uint32_t	xid = 0;
			ApVis		v;

			tup = page_tuple(page, off, &flags, &len);
			if (flags != AP_LP_NORMAL)
				continue;
			if (tup == NULL || ap_tuple_header(tup, len, hdr) != AP_OK)
			{
				s->vis[off] = SCAN_VIS_BAD_HEADER;
				continue;
			}
			v = ap_tuple_visibility(hdr, &s->snap, &s->cache, &xid);
			s->vis[off] = (uint8_t) v;
			if (v == AP_VIS_NEED_XID)
				need_xid(s, xid);
		}
		/* after the last round, leftover NEED_XID items go to the host */
		if (s->nneed == 0 || round == SCAN_XID_ROUNDS_MAX)
			return 0;
		if (resolve_xids(s) < 0)
			return -1;
	}
}

/* Add a tuple: row r of the evaluated batch, or (r < 0) values alone. */
static inline ApAggResult
agg_add(Scan *s, int r, const ApValue *values)
{
	return r >= 0 ? ap_agg_add_evaluated(s->agg, r, values) : ap_agg_add(s->agg, values);
}

/*
 * Aggregate a tuple that passed the filter (r, values: as agg_add); a full
 * table is shipped first.
 */
static int
aggregate_tuple(Scan *s, uint32_t blkno, int off, int r, const ApValue *values)
{
	ApAggResult res = agg_add(s, r, values);

	if (res == AP_AGG_FULL)
	{
		/* the tuples before this one are in the table */
		if (scan_flush_groups(s, true, blkno, (uint32_t) off) < 0)
			return -1;
		res = agg_add(s, r, values);
	}
	if (res != AP_AGG_ADDED)
		return scan_fallback_tid(s, blkno, off);
	s->stats.tuples_passed++;
	return 0;
}

/*
 * Aggregate the page's batched tuples (blkno), their projections evaluated
 * together; the next tuple is decoded into the first slot again.
 */
static int
aggregate_batch(Scan *s, uint32_t blkno)
{
	uint32_t	n = s->nbatch;
	uint32_t	r0;

	s->nbatch = 0;
	s->values = s->value_slots;
	if (n == 0)
		return 0;
	ap_agg_eval_batch(s->agg, s->batch_rows, (int) n);
	r0 = (uint32_t) ap_agg_add_batch(s->agg, (int) n);
	s->stats.tuples_passed += r0;
	for (uint32_t r = r0; r < n; r++)
	{
		if (aggregate_tuple(s, blkno, s->batch_offs[r], (int) r, s->batch_rows[r]) < 0)
			return -1;
	}
	return 0;
}

/* Items ahead of the current one whose tuples scan_page prefetches. */
#define SCAN_PREFETCH_AHEAD		4

/*
 * Start loading the tuple at line pointer off into the cache.  A page read
 * with O_DIRECT reaches memory by DMA, outside the CPU's caches: the first
 * touch of each tuple's header and data then bounds the scan, and the
 * lines of the next few tuples load while this one is evaluated.  A
 * buffered read has just been copied by the kernel, through the cache, and
 * prefetching it again only costs instructions (TPC-H Q1 and Q6 at SF 1:
 * 2-4% less disk CPU without), so only s->prefetch scans do it.  Only a
 * hint: any offset within the page is harmless, page_tuple still validates.
 */
static inline void
prefetch_tuple(const unsigned char *page, int off, int nitems)
{
	unsigned	flags;
	unsigned	lp_off;
	unsigned	lp_len;

	if (off > nitems)
		return;
	ap_page_item(page, off, &flags, &lp_off, &lp_len);
	if (flags != AP_LP_NORMAL || lp_off >= AP_BLCKSZ)
		return;
	if (lp_len > AP_BLCKSZ - lp_off)
		lp_len = AP_BLCKSZ - lp_off;
	for (unsigned o = 0; o < lp_len; o += 64)
		__builtin_prefetch(page + lp_off + o);
}

/*
 * EXPLAIN ANALYZE (Program.bloom_measure): a tuple a Bloom filter dropped
 * counts as dropped by that filter alone if no other filter rejects it and
 * the disk filter passes it: without that filter it would have been shipped.
 * The host sets these against the rows it received to measure each
 * filter's false-positive rate.  That costs a deform to the disk filter's
 * last column and the filter on every dropped tuple, which made the scans
 * of EXPLAIN ANALYZE two to three times as long as the query's (a lineitem
 * scan at SF 1 keeping 1% of its rows: 450-500 ms against 205).  So a scan
 * measures every drop up to its AP_MEASURE_EXACT_DROPS-th, then one in
 * AP_MEASURE_SAMPLE_EVERY, counted that many times (ScanStats.
 * bloom_alone_sampled tells the host the count is an estimate).
 */
#define AP_MEASURE_EXACT_DROPS	65536
#define AP_MEASURE_SAMPLE_EVERY	16

static void
measure_bloom_drop(Scan *s, const unsigned char *tup, uint32_t len,
				   const ApTupleHeader *hdr, bool keys_deformed)
{
	uint64_t	drops = s->stats.bloom_dropped;
	uint64_t	weight = 1;
	int			i;

	if (drops > AP_MEASURE_EXACT_DROPS)
	{
		if (drops % AP_MEASURE_SAMPLE_EVERY != 0)
			return;
		weight = AP_MEASURE_SAMPLE_EVERY;
		s->blooms.sampled = true;
	}
	/* whether it alone drops the tuple needs every filter's key */
	if (!keys_deformed &&
		ap_tuple_deform(&s->desc, tup, len, hdr, s->blooms.max_attno, s->values) != AP_OK)
		return;
	i = ap_bloom_sole_rejection(&s->blooms, s->values);
	if (i < 0)
		return;
	if (s->prog.max_attno > s->blooms.max_attno &&
		ap_tuple_deform_more(&s->desc, tup, len, hdr, s->blooms.max_attno,
							 s->prog.max_attno, s->values) != AP_OK)
		return;
	if (s->prog.filter == NULL || ap_program_filter(&s->prog, s->values) == AP_TRUE)
		s->blooms.filters[i].alone += weight;
}

/*
 * A page whose tuples are all visible, with filters whose keys lie at fixed
 * offsets: every tuple's header into s->hdrs[] and s->vis[] (as
 * decide_page_visibility leaves them for other pages), and the first
 * filter's verdicts into s->bloom_first[], the keys of all hashed before any
 * is probed (ap_bloom_first_batch).
 */
static void
bloom_page_verdicts(Scan *s, const unsigned char *page, int nitems)
{
	const unsigned char *data[SCAN_MAX_ITEMS];

	for (int off = 1; off <= nitems; off++)
	{
		unsigned	flags;
		uint32_t	len;
		const unsigned char *tup = page_tuple(page, off, &flags, &len);

		data[off - 1] = NULL;
		if (flags != AP_LP_NORMAL)
			continue;
		if (tup == NULL || ap_tuple_header(tup, len, &s->hdrs[off]) != AP_OK)
		{
			s->vis[off] = SCAN_VIS_BAD_HEADER;
			continue;
		}
		s->vis[off] = AP_VIS_VISIBLE;
		data[off - 1] = ap_tuple_fixed_data(&s->desc, tup, len, &s->hdrs[off],
											s->blooms.max_attno);
	}
	ap_bloom_first_batch(&s->blooms, data, nitems, s->bloom_first + 1);
}

/*
 * The prefilter in windows of SCAN_PRE_WINDOW tuples: one that rejected
 * fewer than a quarter of a window's tuples only walks each passing tuple
 * twice (Q1's l_shipdate passes 98%), so it rests for SCAN_PRE_REST windows
 * and is then tried again, the table's later pages may differ.
 */
#define SCAN_PRE_WINDOW			4096
#define SCAN_PRE_REST			16

static inline bool
prefilter_rejects(Scan *s, const unsigned char *tup, uint32_t len, const ApTupleHeader *hdr)
{
	bool		rejects;

	if (s->pre_rest > 0)
	{
		if (++s->pre_seen == SCAN_PRE_WINDOW)
		{
			s->pre_seen = 0;
			s->pre_rest--;
		}
		return false;
	}
	rejects = ap_prefilter_rejects(s->pre, tup, len, hdr);
	s->pre_rejected += rejects;
	if (++s->pre_seen == SCAN_PRE_WINDOW)
	{
		if (s->pre_rejected < SCAN_PRE_WINDOW / 4)
			s->pre_rest = SCAN_PRE_REST;
		s->pre_seen = 0;
		s->pre_rejected = 0;
	}
	return rejects;
}

/*
 * What becomes of one tuple after a step of the page loop: on to the next
 * step, dropped (invisible, or rejected by a filter), or handed to the host
 * because the disk cannot decide it exactly.
 */
typedef enum TupleStep
{
	STEP_GO,
	STEP_DROP,
	STEP_FALLBACK
} TupleStep;

/*
 * Is the tuple at off visible to the scan's snapshot?  On a PD_ALL_VISIBLE
 * page every tuple is visible to every snapshot still running, so only its
 * header is read; otherwise decide_page_visibility (or bloom_page_verdicts)
 * has read the header and decided already.  *hdr points at the header.
 */
static inline TupleStep
tuple_visibility(Scan *s, const unsigned char *tup, uint32_t len, int off, bool all_visible,
				 bool batched, ApTupleHeader *hdrbuf, const ApTupleHeader **hdr)
{
	int			v;

	if (all_visible && !batched)
	{
		*hdr = hdrbuf;
		v = (tup == NULL || ap_tuple_header(tup, len, hdrbuf) != AP_OK) ?
			SCAN_VIS_BAD_HEADER : AP_VIS_VISIBLE;
	}
	else
	{
		*hdr = &s->hdrs[off];
		v = s->vis[off];
	}
	if (v == AP_VIS_INVISIBLE)
		return STEP_DROP;
	/* a header that cannot be read, or visibility left undecided */
	if (v != AP_VIS_VISIBLE)
		return STEP_FALLBACK;
	return STEP_GO;
}

/*
 * The join's Bloom filters, first of all the filters: most rows of a
 * selective join end here.  first is the page's verdict of the first
 * filter, read with the page when its keys sit at fixed offsets.
 */
static inline TupleStep
bloom_step(Scan *s, const unsigned char *tup, uint32_t len, const ApTupleHeader *hdr,
		   uint8_t first)
{
	bool		passes;

	if (first == AP_BLOOM_DROPS)
	{
		s->stats.bloom_tested++;
		s->stats.bloom_dropped++;
		ap_bloom_count_first(&s->blooms, false);
		if (s->blooms.measure)
			measure_bloom_drop(s, tup, len, hdr, false);
		return STEP_DROP;
	}
	if (ap_tuple_deform(&s->desc, tup, len, hdr, s->blooms.max_attno,
						s->values) != AP_OK)
		return STEP_FALLBACK;
	s->stats.bloom_tested++;
	if (first == AP_BLOOM_PASSES)
	{
		/* the page's verdict: only the other filters are left */
		ap_bloom_count_first(&s->blooms, true);
		passes = ap_bloom_pass_rest(&s->blooms, s->values);
	}
	else
		passes = ap_bloom_pass(&s->blooms, s->values);
	if (!passes)
	{
		s->stats.bloom_dropped++;
		if (s->blooms.measure)
			measure_bloom_drop(s, tup, len, hdr, true);
		return STEP_DROP;
	}
	return STEP_GO;
}

/*
 * The request's filter: the prefilter's range checks first (most rows of a
 * selective filter end there, before the rest of the tuple is decoded),
 * then the program's filter over the columns it reads.
 */
static inline TupleStep
filter_step(Scan *s, const unsigned char *tup, uint32_t len, const ApTupleHeader *hdr)
{
	int			decoded = s->blooms.nfilters > 0 ? s->blooms.max_attno : 0;
	ApTri		pass;

	if (s->pre != NULL && prefilter_rejects(s, tup, len, hdr))
	{
		s->stats.tuples_filtered++;
		return STEP_DROP;
	}
	if (s->prog.max_attno > decoded &&
		ap_tuple_deform_more(&s->desc, tup, len, hdr, decoded,
							 s->prog.max_attno, s->values) != AP_OK)
		return STEP_FALLBACK;
	pass = s->prog.filter ? ap_program_filter(&s->prog, s->values) : AP_TRUE;
	if (pass == AP_TRI_FALLBACK)
		return STEP_FALLBACK;
	if (pass != AP_TRUE)
	{
		s->stats.tuples_filtered++;
		return STEP_DROP;
	}
	return STEP_GO;
}

/*
 * A tuple that passed every filter: into the aggregation's batch, into the
 * aggregation, or projected into the row buffer (shipped when full).
 * 0 or -1 with the error set.
 */
static int
deliver_tuple(Scan *s, uint32_t blkno, int off)
{
	if (s->nbatch_max > 0)
	{
		/* keep the values (they point into the page); decode the next into a new slot */
		s->batch_rows[s->nbatch] = s->values;
		s->batch_offs[s->nbatch++] = off;
		s->values = s->value_slots + (size_t) s->nbatch * s->nvalues;
		if (s->nbatch == s->nbatch_max && aggregate_batch(s, blkno) < 0)
			return -1;
		return 0;
	}
	if (s->agg != NULL)
		return aggregate_tuple(s, blkno, off, -1, s->values) < 0 ? -1 : 0;
	/* a computed projection that cannot be reproduced sends the tuple home */
	if (s->prog.nexprs > 0 &&
		ap_program_project(&s->prog, s->values, s->evals) != AP_OK)
		return scan_fallback_tid(s, blkno, off) < 0 ? -1 : 0;
	s->stats.tuples_passed++;
	if (ap_rowbatch_append_exprs(&s->rows, &s->desc, s->prog.project, s->prog.nproject,
							   s->values, s->prog.expr_cols, s->prog.nexprs,
							   s->evals, (int64_t) AP_TID_PACK(blkno, off)) < 0)
		return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory encoding rows");
	if (s->rows.len >= s->batch_bytes && scan_flush_rows(s, blkno, (uint32_t) off + 1) < 0)
		return -1;
	return 0;
}

/*
 * Visibility, decoding, filter and projection of one page.  A page that
 * fails its checks goes to the host whole; each tuple passes the steps
 * above in turn, the cheapest and most selective first.
 */
int
scan_page(Scan *s, const unsigned char *page, uint32_t blkno)
{
	ApPageStatus st;
	bool		all_visible;
	bool		batched;		/* headers and first Bloom verdicts read already */
	int			nitems;
	int			off;

	st = ap_page_check(page, blkno, s->req->data_checksums);
	if (st == AP_PAGE_NEW)
		return 0;
	if (st != AP_PAGE_OK)
		return scan_fallback_block(s, blkno);

	nitems = ap_page_nitems(page);
	if (nitems > (int) SCAN_MAX_ITEMS)
		return scan_fallback_block(s, blkno);	/* ap_page_check should have said so */
	all_visible = ap_page_all_visible(page);
	if (!all_visible && decide_page_visibility(s, page, nitems) < 0)
		return -1;

	batched = all_visible && s->blooms.fixed;
	if (batched)
		bloom_page_verdicts(s, page, nitems);
	for (off = 1; s->prefetch && off <= SCAN_PREFETCH_AHEAD; off++)
		prefetch_tuple(page, off, nitems);
	for (off = 1; off <= nitems; off++)
	{
		const unsigned char *tup;
		ApTupleHeader hdrbuf;
		const ApTupleHeader *hdr;
		unsigned	flags;
		uint32_t	len;
		TupleStep	step;

		if (s->prefetch)
			prefetch_tuple(page, off + SCAN_PREFETCH_AHEAD, nitems);
		tup = page_tuple(page, off, &flags, &len);
		if (flags != AP_LP_NORMAL)
			continue;
		s->stats.tuples_seen++;
		step = tuple_visibility(s, tup, len, off, all_visible, batched, &hdrbuf, &hdr);
		if (step == STEP_GO)
		{
			s->stats.tuples_visible++;
			if (s->blooms.nfilters > 0)
				step = bloom_step(s, tup, len, hdr,
								  batched ? s->bloom_first[off] : AP_BLOOM_UNKNOWN);
		}
		if (step == STEP_GO)
			step = filter_step(s, tup, len, hdr);
		if (step == STEP_FALLBACK)
		{
			if (scan_fallback_tid(s, blkno, off) < 0)
				return -1;
			continue;
		}
		if (step == STEP_DROP)
			continue;
		if (deliver_tuple(s, blkno, off) < 0)
			return -1;
	}
	return aggregate_batch(s, blkno);
}
