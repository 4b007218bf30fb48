/*
 * scan.c
 *	  One scan: read this disk's stripe units, decide visibility, filter,
 *	  project, and ship rows, fallbacks and statistics (scan_setup.c checks
 *	  the request and prepares the scan first).
 *
 * Rules of this file:
 *   - Every field of the request is checked before anything is allocated for
 *     it; a bad field is Error AP_ERR_BAD_REQUEST naming the field.  The
 *     client never sends a path: ap_relpath builds it from oids.
 *   - The disk only ever ships what it decided exactly.  A tuple whose
 *     visibility stays undecided, whose header or attributes cannot be
 *     decoded, or whose filter cannot be evaluated goes to the host as a TID;
 *     a page failing structural or checksum checks goes as a whole block.
 *   - Xids the hint bits and snapshot cannot decide are asked per page, all
 *     at once, deduplicated (one XidStatusRequest, one reply); answers are
 *     cached for the rest of the scan.  While waiting, Cancel or EOF ends the
 *     scan.  The reply is checked against the question.
 *   - A scan ends with exactly one Done or Error frame (unless the connection
 *     is gone), after all rows and fallbacks have been flushed.  All per-scan
 *     memory is released at the single cleanup label, whatever the exit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefilter.h"
#include "scan_state.h"


/* Record why the scan stops (first reason wins); always returns -1. */
int
scan_fail(Scan *s, uint32_t code, const char *fmt,...)
{
	va_list		ap;

	if (s->err_code != AP_ERR_NONE)
		return -1;
	s->err_code = code;
	va_start(ap, fmt);
	vsnprintf(s->err_msg, sizeof(s->err_msg), fmt, ap);
	va_end(ap);
	return -1;
}

static int	flush_rows(Scan *s, uint32_t blkno, uint32_t off);

/*
 * Wall time since t0 that this thread did not run (blocked or waiting),
 * given its CPU time cpu0_ns at t0.
 */
static uint64_t
waited_since(uint64_t t0, uint64_t cpu0_ns)
{
	uint64_t	wall = ap_mono_us() - t0;
	uint64_t	cpu = (ap_thread_cpu_ns() - cpu0_ns) / 1000;

	return wall > cpu ? wall - cpu : 0;
}

/* Send one frame (see scan_internal.h). */
int
scan_send(Scan *s, const ActivePg__Frame *frame)
{
	size_t		bytes = active_pg__frame__get_packed_size(frame) + AP_FRAME_HEADER_BYTES;
	uint64_t	t0 = ap_mono_us();
	uint64_t	cpu0 = ap_thread_cpu_ns();
	int			rc = ap_conn_send(s->c, frame);

	s->stats.host_wait_us += waited_since(t0, cpu0);

	if (rc < 0)
	{
		/* nothing more can reach the host; unwind without an Error frame */
		s->close_conn = true;
		return scan_fail(s, AP_ERR_INTERNAL, "send failed: %s", strerror(-rc));
	}
	s->stats.bytes_shipped += bytes;
	s->last_send_us = ap_mono_us();
	return 0;
}

/*
 * The heartbeat: a scan that reads on without anything to send (a filter
 * that passes nothing, slow emulated media) still tells the host it is
 * alive, so the host's active_pg.disk_timeout only catches a disk that
 * stopped.  An empty Fallback frame carries no work.  It is sent between
 * chunks, so a scan that ships rows flushes them with its progress instead
 * (an aggregation's groups stay in its table, unreported).
 */
int
scan_heartbeat(Scan *s)
{
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__Fallback fb = ACTIVE_PG__FALLBACK__INIT;

	if (ap_mono_us() - s->last_send_us < (uint64_t) AP_HEARTBEAT_MS * 1000)
		return 0;
	if (s->agg == NULL && !s->pages_mode)
		return flush_rows(s, SCAN_NO_BLOCK, 0);
	frame.msg_case = ACTIVE_PG__FRAME__MSG_FALLBACK;
	frame.fallback = &fb;
	return scan_send(s, &frame);
}

/* ---------------- progress (what the host may count as delivered) ---------------- */

/* Note blocks [first, end) as processed since the last report. */
static int
progress_add(Scan *s, uint32_t first, uint32_t end)
{
	if (end <= first)
		return 0;
	/* the pieces of a unit read in parts follow each other: one range */
	if (s->ndone >= 2 && s->done[s->ndone - 2] + s->done[s->ndone - 1] == first)
	{
		s->done[s->ndone - 1] += end - first;
		return 0;
	}
	if (s->ndone + 2 > s->done_cap)
	{
		uint32_t	cap = s->done_cap < 64 ? 64 : s->done_cap * 2;
		uint32_t   *p = realloc(s->done, cap * sizeof(uint32_t));

		if (p == NULL)
			return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory noting progress");
		s->done = p;
		s->done_cap = cap;
	}
	s->done[s->ndone++] = first;
	s->done[s->ndone++] = end - first;
	return 0;
}

/*
 * Fill p with what is delivered once the frame carrying it is sent: the
 * ranges processed since the last report and, when blkno is a block of the
 * current chunk, the chunk's blocks before it and blkno's tuples at offsets
 * below off.  The caller must have flushed everything those tuples gave
 * (rows, fallbacks, groups) first, and calls progress_sent after the send.
 */
static int
progress_fill(Scan *s, ActivePg__Progress *p, uint32_t blkno, uint32_t off)
{
	if (blkno != SCAN_NO_BLOCK)
	{
		if (progress_add(s, s->prog_from, blkno) < 0)
			return -1;
		s->prog_from = blkno;
		if (off > 1)
		{
			p->partial_block = blkno;
			p->partial_offset = off;
		}
	}
	p->n_ranges = s->ndone;
	p->ranges = s->done;
	return 0;
}

static inline void
progress_sent(Scan *s)
{
	s->ndone = 0;
}

/* Ship the pending TIDs and blocks as one Fallback frame (progress: NULL or to report). */
static int
send_fallback(Scan *s, ActivePg__Progress *progress)
{
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__Fallback fb = ACTIVE_PG__FALLBACK__INIT;

	fb.n_tids = s->ntids;
	fb.tids = s->tids;
	fb.n_blocks = s->nfb_blocks;
	fb.blocks = s->fb_blocks;
	fb.progress = progress;
	frame.msg_case = ACTIVE_PG__FRAME__MSG_FALLBACK;
	frame.fallback = &fb;
	if (scan_send(s, &frame) < 0)
		return -1;
	s->ntids = 0;
	s->nfb_blocks = 0;
	return 0;
}

/* Ship the pending TIDs and blocks, if any, as one Fallback frame. */
static int
flush_fallback(Scan *s)
{
	if (s->ntids == 0 && s->nfb_blocks == 0)
		return 0;
	return send_fallback(s, NULL);
}

/*
 * A scan that ships rows: ship the pending fallbacks, then the buffered rows
 * as one RowBatch with the progress up to (blkno, off) (see progress_fill);
 * with no rows buffered the progress travels in an empty Fallback frame.
 */
static int
flush_rows(Scan *s, uint32_t blkno, uint32_t off)
{
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__RowBatch batch = ACTIVE_PG__ROW_BATCH__INIT;
	ActivePg__Progress progress = ACTIVE_PG__PROGRESS__INIT;

	if (flush_fallback(s) < 0 || progress_fill(s, &progress, blkno, off) < 0)
		return -1;
	if (s->rows.nrows == 0)
	{
		if (send_fallback(s, &progress) < 0)
			return -1;
		progress_sent(s);
		return 0;
	}
	batch.nrows = s->rows.nrows;
	batch.rows.len = s->rows.len;
	batch.rows.data = s->rows.data;
	batch.progress = &progress;
	frame.msg_case = ACTIVE_PG__FRAME__MSG_ROWS;
	frame.rows = &batch;
	if (scan_send(s, &frame) < 0)
		return -1;
	progress_sent(s);
	s->stats.rows_shipped += s->rows.nrows;
	ap_rowbuf_reset(&s->rows);
	return 0;
}

/* Hand one tuple to the host. */
static int
fallback_tid(Scan *s, uint32_t blkno, int off)
{
	s->tids[s->ntids++] = AP_TID_PACK(blkno, off);
	s->stats.tuples_fallback++;
	return s->ntids == SCAN_FALLBACK_BATCH ? flush_fallback(s) : 0;
}

/* Hand a whole block to the host. */
static int
fallback_block(Scan *s, uint32_t blkno)
{
	s->fb_blocks[s->nfb_blocks++] = blkno;
	s->stats.pages_fallback++;
	return s->nfb_blocks == SCAN_FALLBACK_BATCH ? flush_fallback(s) : 0;
}


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
	s->stats.host_wait_us += waited_since(t0, cpu0);
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

/* Ship one AggPartial frame (ApAggSendFn). */
static int
send_partial(void *arg, const unsigned char *rows, uint32_t len, uint32_t ngroups,
			 bool memory_flush)
{
	Scan	   *s = (Scan *) arg;
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__AggPartial ap = ACTIVE_PG__AGG_PARTIAL__INIT;

	ap.ngroups = ngroups;
	ap.groups.len = len;
	ap.groups.data = (uint8_t *) rows;
	ap.memory_flush = memory_flush;
	frame.msg_case = ACTIVE_PG__FRAME__MSG_AGG_PARTIAL;
	frame.agg_partial = &ap;
	return scan_send(s, &frame);
}

/*
 * Ship the pending fallbacks and then every partial group, and forget them;
 * an empty AggPartial frame ends the flush with the progress up to (blkno,
 * off) (see progress_fill): the table held every tuple aggregated so far.
 * -1 with the error set.
 */
static int
flush_groups(Scan *s, bool memory_flush, uint32_t blkno, uint32_t off)
{
	ActivePg__Progress progress = ACTIVE_PG__PROGRESS__INIT;
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__AggPartial end = ACTIVE_PG__AGG_PARTIAL__INIT;

	if (flush_fallback(s) < 0)
		return -1;
	if (ap_agg_flush(s->agg, memory_flush, s->batch_bytes, send_partial, s) < 0)
		return s->err_code != AP_ERR_NONE ? -1 :
			scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory shipping partial groups");
	if (progress_fill(s, &progress, blkno, off) < 0)
		return -1;
	end.memory_flush = memory_flush;
	end.progress = &progress;
	frame.msg_case = ACTIVE_PG__FRAME__MSG_AGG_PARTIAL;
	frame.agg_partial = &end;
	if (scan_send(s, &frame) < 0)
		return -1;
	progress_sent(s);
	return 0;
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
		if (flush_groups(s, true, blkno, (uint32_t) off) < 0)
			return -1;
		res = agg_add(s, r, values);
	}
	if (res != AP_AGG_ADDED)
		return fallback_tid(s, blkno, off);
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

	s->nbatch = 0;
	s->values = s->value_slots;
	if (n == 0)
		return 0;
	ap_agg_eval_batch(s->agg, s->batch_rows, (int) n);
	for (uint32_t r = 0; r < n; r++)
	{
		if (aggregate_tuple(s, blkno, s->batch_offs[r], (int) r, s->batch_rows[r]) < 0)
			return -1;
	}
	return 0;
}

/* Items ahead of the current one whose tuples scan_page prefetches. */
#define SCAN_PREFETCH_AHEAD		4

/*
 * Start loading the tuple at line pointer off into the cache: the scan is
 * bound by the first touch of each tuple's header and data, and the lines
 * of the next few tuples load while this one is evaluated.  Only a hint:
 * any offset within the page is harmless, page_tuple still validates.
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
 * filter's false-positive rate.
 */
static void
measure_bloom_drop(Scan *s, const unsigned char *tup, uint32_t len,
				   const ApTupleHeader *hdr)
{
	int			i = ap_bloom_sole_rejection(&s->blooms, s->values);

	if (i < 0)
		return;
	if (s->prog.max_attno > s->blooms.max_attno &&
		ap_tuple_deform_more(&s->desc, tup, len, hdr, s->blooms.max_attno,
							 s->prog.max_attno, s->values) != AP_OK)
		return;
	if (s->prog.filter == NULL || ap_program_filter(&s->prog, s->values) == AP_TRUE)
		s->blooms.filters[i].alone++;
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

/* Visibility, decoding, filter and projection of one page. */
static int
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
		return fallback_block(s, blkno);

	nitems = ap_page_nitems(page);
	if (nitems > (int) SCAN_MAX_ITEMS)
		return fallback_block(s, blkno);	/* ap_page_check should have said so */
	all_visible = ap_page_all_visible(page);
	if (!all_visible && decide_page_visibility(s, page, nitems) < 0)
		return -1;

	batched = all_visible && s->blooms.fixed;
	if (batched)
		bloom_page_verdicts(s, page, nitems);
	for (off = 1; off <= SCAN_PREFETCH_AHEAD; off++)
		prefetch_tuple(page, off, nitems);
	for (off = 1; off <= nitems; off++)
	{
		const unsigned char *tup;
		ApTupleHeader hdrbuf;
		const ApTupleHeader *hdr;
		unsigned	flags;
		uint32_t	len;
		ApTri		pass;
		int			v;

		prefetch_tuple(page, off + SCAN_PREFETCH_AHEAD, nitems);
		tup = page_tuple(page, off, &flags, &len);
		if (flags != AP_LP_NORMAL)
			continue;
		s->stats.tuples_seen++;
		/* PD_ALL_VISIBLE: every tuple is visible to every snapshot still running */
		if (all_visible && !batched)
		{
			hdr = &hdrbuf;
			v = (tup == NULL || ap_tuple_header(tup, len, &hdrbuf) != AP_OK) ?
				SCAN_VIS_BAD_HEADER : AP_VIS_VISIBLE;
		}
		else
		{
			/* decide_page_visibility or bloom_page_verdicts read this header already */
			hdr = &s->hdrs[off];
			v = s->vis[off];
		}
		if (v == SCAN_VIS_BAD_HEADER)
		{
			if (fallback_tid(s, blkno, off) < 0)
				return -1;
			continue;
		}
		if (v == AP_VIS_INVISIBLE)
			continue;
		if (v != AP_VIS_VISIBLE)
		{
			if (fallback_tid(s, blkno, off) < 0)
				return -1;
			continue;
		}
		s->stats.tuples_visible++;

		/* the join's filter first: most rows of a selective join end here */
		if (s->blooms.nfilters > 0)
		{
			uint8_t		first = batched ? s->bloom_first[off] : AP_BLOOM_UNKNOWN;
			bool		passes;

			/* decided with the page: its keys decode at their fixed offsets */
			if (first == AP_BLOOM_DROPS)
			{
				s->stats.bloom_tested++;
				s->stats.bloom_dropped++;
				ap_bloom_count_first(&s->blooms, false);
				/* EXPLAIN ANALYZE: whether it alone drops the tuple needs every key */
				if (s->blooms.measure &&
					ap_tuple_deform(&s->desc, tup, len, hdr, s->blooms.max_attno,
									s->values) == AP_OK)
					measure_bloom_drop(s, tup, len, hdr);
				continue;
			}
			if (ap_tuple_deform(&s->desc, tup, len, hdr, s->blooms.max_attno,
								s->values) != AP_OK)
			{
				if (fallback_tid(s, blkno, off) < 0)
					return -1;
				continue;
			}
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
					measure_bloom_drop(s, tup, len, hdr);
				continue;
			}
		}
		/* most rows of a selective filter end at its range checks */
		if (s->pre != NULL && prefilter_rejects(s, tup, len, hdr))
		{
			s->stats.tuples_filtered++;
			continue;
		}
		if (s->prog.max_attno > (s->blooms.nfilters > 0 ? s->blooms.max_attno : 0) &&
			ap_tuple_deform_more(&s->desc, tup, len, hdr,
								 s->blooms.nfilters > 0 ? s->blooms.max_attno : 0,
								 s->prog.max_attno, s->values) != AP_OK)
		{
			if (fallback_tid(s, blkno, off) < 0)
				return -1;
			continue;
		}
		pass = s->prog.filter ? ap_program_filter(&s->prog, s->values) : AP_TRUE;
		if (pass == AP_TRI_FALLBACK)
		{
			if (fallback_tid(s, blkno, off) < 0)
				return -1;
			continue;
		}
		if (pass != AP_TRUE)
		{
			s->stats.tuples_filtered++;
			continue;
		}
		if (s->nbatch_max > 0)
		{
			/* keep the values (they point into the page); decode the next into a new slot */
			s->batch_rows[s->nbatch] = s->values;
			s->batch_offs[s->nbatch++] = off;
			s->values = s->value_slots + (size_t) s->nbatch * s->nvalues;
			if (s->nbatch == s->nbatch_max && aggregate_batch(s, blkno) < 0)
				return -1;
			continue;
		}
		if (s->agg != NULL)
		{
			if (aggregate_tuple(s, blkno, off, -1, s->values) < 0)
				return -1;
			continue;
		}
		/* a computed projection that cannot be reproduced sends the tuple home */
		if (s->prog.nexprs > 0 &&
			ap_program_project(&s->prog, s->values, s->evals) != AP_OK)
		{
			if (fallback_tid(s, blkno, off) < 0)
				return -1;
			continue;
		}
		s->stats.tuples_passed++;
		if (ap_rowbuf_append_exprs(&s->rows, &s->desc, s->prog.project, s->prog.nproject,
								   s->values, s->prog.expr_cols, s->prog.nexprs,
								   s->evals, (int64_t) AP_TID_PACK(blkno, off)) < 0)
			return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory encoding rows");
		if (s->rows.len >= s->batch_bytes && flush_rows(s, blkno, (uint32_t) off + 1) < 0)
			return -1;
	}
	return aggregate_batch(s, blkno);
}


/*
 * Hold the scan for an emulation throttle of us microseconds, in short
 * slices so a Cancel from the host is seen while a slow drive is emulated.
 * The time actually held is added to throttle_us and, if held is not NULL,
 * returned there.
 */
static int
scan_hold(Scan *s, uint64_t us, uint64_t *held)
{
	uint64_t	start;
	uint64_t	end;
	uint64_t	now;

	if (held != NULL)
		*held = 0;
	if (us == 0)
		return 0;
	start = ap_mono_us();
	end = start + us;
	for (now = start; now < end; now = ap_mono_us())
	{
		ap_sleep_us(end - now < SCAN_HOLD_SLICE_US ? end - now : SCAN_HOLD_SLICE_US);
		if (ap_conn_cancel_requested(s->c))
		{
			s->stats.throttle_us += ap_mono_us() - start;
			return scan_fail(s, AP_ERR_CANCELED, "scan canceled by the host");
		}
		if (scan_heartbeat(s) < 0)
			return -1;
	}
	s->stats.throttle_us += now - start;
	if (held != NULL)
		*held = now - start;
	return 0;
}

/*
 * Pay owed microseconds of emulated disk CPU.  Every sleep overshoots by the
 * timer slack (tens of microseconds, more on a busy machine) and a unit owes
 * well under a millisecond at full speed, so paying each unit on its own
 * would stretch the disk far beyond 1/ratio: the debt is paid in sleeps of
 * at least SCAN_CPU_HOLD_MIN_US and an overshoot is credited to the next
 * units, keeping the total at cpu * (1/ratio - 1).
 */
static int
hold_cpu(Scan *s, uint64_t owed)
{
	uint64_t	held;

	s->cpu_balance_us += (int64_t) owed;
	if (s->cpu_balance_us < SCAN_CPU_HOLD_MIN_US)
		return 0;
	if (scan_hold(s, (uint64_t) s->cpu_balance_us, &held) < 0)
		return -1;
	s->cpu_balance_us -= (int64_t) held;
	return 0;
}

/* Read this disk's units and scan every page, checking for Cancel between chunks. */
static int
scan_units(Scan *s)
{
	const ActivePg__ScanRequest *req = s->req;
	/* the request asks for O_DIRECT; a daemon started with --buffered never uses it */
	bool		direct = req->direct_io && diskd_config.direct_io_default;
	char		errbuf[512];
	int			err;
	int			rc;

	s->reader = ap_reader_open(s->relpath, req->nblocks, req->ndisks, req->stripe_pages,
							   req->disk_id, s->queue_depth, direct,
							   &err, errbuf, sizeof(errbuf));
	if (s->reader == NULL)
		return scan_fail(s, (uint32_t) err, "%s", errbuf);

	for (;;)
	{
		ApChunk		chunk = {0};
		uint32_t	i;

		rc = ap_reader_next(s->reader, &chunk, errbuf, sizeof(errbuf));
		if (rc == 0)
			break;
		if (rc < 0)
		{
			diskd_log("WARNING", "scan %llu: %s", (unsigned long long) req->scan_id, errbuf);
			return scan_fail(s, AP_ERR_IO, "%s", errbuf);
		}
		s->stats.io_us += chunk.io_us;
		/* a chunk is a unit or a piece of one (ioring.c) */
		if ((chunk.first_block + chunk.nblocks) % req->stripe_pages == 0 ||
			chunk.first_block + chunk.nblocks == req->nblocks)
			s->stats.units_done++;
		/* emulated media: the drive delivers no faster than its rate */
		if (scan_hold(s, ap_media_throttle_us((uint64_t) chunk.nblocks * AP_BLCKSZ), NULL) < 0)
			return -1;
		s->prog_from = chunk.first_block;
		for (i = 0; i < chunk.nblocks; i++)
		{
			const unsigned char *page = chunk.data + (size_t) i * AP_BLCKSZ;

			s->stats.pages_read++;
			s->stats.bytes_read += AP_BLCKSZ;
			if (s->fp.page != 0 && s->stats.pages_read == s->fp.page)
			{
				/* a test's failpoint: may end the scan or the daemon */
				if (scan_failpoint(s, chunk.first_block + i) < 0)
					return -1;
				if (s->fp.action == AP_FP_CHECKSUM)
				{
					if (fallback_block(s, chunk.first_block + i) < 0)
						return -1;
					continue;
				}
			}
			if ((s->pages_mode ? scan_ship_page(s, page, chunk.first_block + i) :
				 scan_page(s, page, chunk.first_block + i)) < 0)
				return -1;
		}
		/* every tuple of the chunk is now shipped, handed back or in the table */
		if (progress_add(s, s->prog_from, chunk.first_block + chunk.nblocks) < 0)
			return -1;
		/*
		 * Emulated disk CPU: all CPU time c the scan used since the last
		 * chunk (set-up, reading, this chunk's work) takes c / ratio, so
		 * ScanStats.cpu_us / ratio is the emulated disk's time.
		 */
		if (ap_cpu_throttle_on())
		{
			uint64_t	cpu = ap_thread_cpu_ns();
			uint64_t	owed = ap_cpu_throttle_us(cpu - s->cpu_mark);

			s->cpu_mark = cpu;
			if (hold_cpu(s, owed) < 0)
				return -1;
		}
		if (ap_conn_cancel_requested(s->c))
			return scan_fail(s, AP_ERR_CANCELED, "scan canceled by the host");
		if (scan_heartbeat(s) < 0)
			return -1;
	}
	if (s->agg != NULL)
	{
		if (flush_groups(s, false, SCAN_NO_BLOCK, 0) < 0)
			return -1;
	}
	else if (s->pages_mode)
	{
		if (scan_flush_pages(s) < 0 || flush_fallback(s) < 0)
			return -1;
	}
	else if (flush_rows(s, SCAN_NO_BLOCK, 0) < 0)
		return -1;
	/* a test's failpoint after the last frame, before Done */
	if (s->fp.at_end && scan_failpoint(s, SCAN_NO_BLOCK) < 0)
		return -1;
	return 0;
}


/*
 * Run one scan for the request; sends RowBatch/Fallback/XidStatusRequest
 * frames and finally Done or Error.  Returns 0 if the connection is still
 * usable, -1 if it must be closed.
 */
int
ap_scan_run(ApConn *c, const ActivePg__ScanRequest *req)
{
	Scan	   *s;
	uint64_t	t0 = ap_mono_us();
	uint64_t	cpu0 = ap_thread_cpu_ns();
	uint64_t	waits;
	int			rc;

	s = calloc(1, sizeof(Scan));
	if (s == NULL)
	{
		rc = ap_conn_send_error(c, AP_ERR_OUT_OF_MEMORY, "out of memory starting a scan");
		return rc == 0 ? 0 : -1;
	}
	s->c = c;
	s->req = req;
	s->cpu_mark = cpu0;
	s->last_send_us = t0;
	active_pg__scan_stats__init(&s->stats);

	if (scan_check_request(s) < 0)
		goto done;
	if (ap_relpath(req->rel, s->relpath, sizeof(s->relpath)) < 0)
	{
		scan_fail(s, AP_ERR_NO_RELATION, "rel: tablespace %u has no %s* directory",
				  req->rel->spc_oid, SCAN_TBLSPC_PREFIX);
		goto done;
	}
	if ((s->pages_mode ? scan_prepare_pages(s) : scan_prepare(s)) < 0)
		goto done;
	scan_failpoint_load(s);
	if (s->fp.at_start && scan_failpoint(s, SCAN_NO_BLOCK) < 0)
		goto done;
	(void) scan_units(s);

done:
	/* release the reader's buffers before the final frame leaves */
	ap_reader_close(s->reader);
	s->reader = NULL;
	s->stats.wall_us = ap_mono_us() - t0;
	/* compute is the real work: not waiting for reads, emulation throttles or the host */
	waits = s->stats.io_us + s->stats.throttle_us + s->stats.host_wait_us;
	s->stats.compute_us = s->stats.wall_us > waits ? s->stats.wall_us - waits : 0;
	s->stats.cpu_us = (ap_thread_cpu_ns() - cpu0) / 1000;

	if (s->err_code != AP_ERR_NONE)
	{
		/* after a failed send nothing reaches the host; ap_conn_send says so */
		rc = ap_conn_send_error(c, s->err_code, "%s", s->err_msg);
	}
	else
	{
		ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
		ActivePg__Done done = ACTIVE_PG__DONE__INIT;

		if (s->agg != NULL)
			ap_agg_stats(s->agg, &s->stats.groups_shipped, &s->stats.agg_flushes);
		if (s->blooms_ok)
			ap_bloom_report(&s->blooms, &s->stats);
		done.stats = &s->stats;
		frame.msg_case = ACTIVE_PG__FRAME__MSG_DONE;
		frame.done = &done;
		rc = ap_conn_send(c, &frame);
	}
	if (s->close_conn)
		rc = -1;
	ap_stats_add_scan(&s->stats);

	if (s->rows_ok)
		ap_rowbuf_free(&s->rows);
	if (s->cache_ok)
		ap_xidcache_free(&s->cache);
	free(s->pre);
	if (s->prog_ok)
		ap_program_free(&s->prog);
	if (s->blooms_ok)
		ap_bloom_free(&s->blooms);
	ap_agg_free(s->agg);
	free(s->value_slots);
	free(s->evals);
	free(s->tids);
	free(s->fb_blocks);
	free(s->done);
	free(s->pages);
	free(s->page_blocks);
	free(s->snap.xip);
	free(s->snap.subxip);
	free(s->desc.cols);
	free(s);
	return rc == 0 ? 0 : -1;
}
