/*
 * scan_ship.c
 *	  What a scan sends to the host, and the bookkeeping that goes with it:
 *	  rows, fallbacks (TIDs and whole blocks the host must decide itself),
 *	  partial groups of an aggregation, heartbeats, and the progress that
 *	  tells the host which blocks are finished.  A scan's error is recorded
 *	  here too (scan_fail), since it ends what is shipped.
 *
 * Why progress travels with the data: the host may only count a block as
 * delivered once everything the block produced has arrived, so a frame
 * that carries rows or groups also carries the ranges they complete (see
 * scan_progress_fill).  After a disk fails the host rescans exactly the
 * blocks no progress has covered.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Wall time since t0 that this thread did not run (blocked or waiting),
 * given its CPU time cpu0_ns at t0.
 */
uint64_t
scan_waited_since(uint64_t t0, uint64_t cpu0_ns)
{
	uint64_t	wall = ap_mono_us() - t0;
	uint64_t	cpu = (ap_thread_cpu_ns() - cpu0_ns) / 1000;

	return wall > cpu ? wall - cpu : 0;
}

/* Send one frame (see scan_state.h). */
int
scan_send(Scan *s, const ActivePg__Frame *frame)
{
	size_t		bytes = active_pg__frame__get_packed_size(frame) + AP_FRAME_HEADER_BYTES;
	uint64_t	t0 = ap_mono_us();
	uint64_t	cpu0 = ap_thread_cpu_ns();
	int			rc = ap_conn_send(s->c, frame);

	s->stats.host_wait_us += scan_waited_since(t0, cpu0);

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
		return scan_flush_rows(s, SCAN_NO_BLOCK, 0);
	frame.msg_case = ACTIVE_PG__FRAME__MSG_FALLBACK;
	frame.fallback = &fb;
	return scan_send(s, &frame);
}

/* ---------------- progress (what the host may count as delivered) ---------------- */

/* Note blocks [first, end) as processed since the last report. */
int
scan_progress_add(Scan *s, uint32_t first, uint32_t end)
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
		if (scan_progress_add(s, s->prog_from, blkno) < 0)
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
int
scan_flush_fallback(Scan *s)
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
int
scan_flush_rows(Scan *s, uint32_t blkno, uint32_t off)
{
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__RowBatch batch = ACTIVE_PG__ROW_BATCH__INIT;
	ActivePg__Progress progress = ACTIVE_PG__PROGRESS__INIT;

	if (scan_flush_fallback(s) < 0 || progress_fill(s, &progress, blkno, off) < 0)
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
	ap_rowbatch_reset(&s->rows);
	return 0;
}

/* Hand one tuple to the host. */
int
scan_fallback_tid(Scan *s, uint32_t blkno, int off)
{
	s->tids[s->ntids++] = AP_TID_PACK(blkno, off);
	s->stats.tuples_fallback++;
	return s->ntids == SCAN_FALLBACK_BATCH ? scan_flush_fallback(s) : 0;
}

/* Hand a whole block to the host. */
int
scan_fallback_block(Scan *s, uint32_t blkno)
{
	s->fb_blocks[s->nfb_blocks++] = blkno;
	s->stats.pages_fallback++;
	return s->nfb_blocks == SCAN_FALLBACK_BATCH ? scan_flush_fallback(s) : 0;
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
int
scan_flush_groups(Scan *s, bool memory_flush, uint32_t blkno, uint32_t off)
{
	ActivePg__Progress progress = ACTIVE_PG__PROGRESS__INIT;
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__AggPartial end = ACTIVE_PG__AGG_PARTIAL__INIT;

	if (scan_flush_fallback(s) < 0)
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
