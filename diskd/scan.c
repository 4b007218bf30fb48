/*
 * scan.c
 *	  One scan from request to Done: check and prepare it (scan_setup.c),
 *	  read this disk's stripe units with the emulated drive's pacing, hand
 *	  each page to the page loop (scan_page.c) or, in the raw-pages mode, to
 *	  scan_raw.c, and end with Done or Error.  Everything sent goes through
 *	  scan_ship.c.  The files call only downward in that order: scan.c,
 *	  then scan_setup.c / scan_page.c / scan_raw.c / failpoint.c, then
 *	  scan_ship.c, then the connection (conn.c).
 *
 * Rules of the scan (all the scan_*.c files keep them):
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
	s->prefetch = direct;

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
					if (scan_fallback_block(s, chunk.first_block + i) < 0)
						return -1;
					continue;
				}
			}
			if ((s->pages_mode ? scan_ship_page(s, page, chunk.first_block + i) :
				 scan_page(s, page, chunk.first_block + i)) < 0)
				return -1;
		}
		/* every tuple of the chunk is now shipped, handed back or in the table */
		if (scan_progress_add(s, s->prog_from, chunk.first_block + chunk.nblocks) < 0)
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
		if (scan_flush_groups(s, false, SCAN_NO_BLOCK, 0) < 0)
			return -1;
	}
	else if (s->pages_mode)
	{
		if (scan_flush_pages(s) < 0 || scan_flush_fallback(s) < 0)
			return -1;
	}
	else if (scan_flush_rows(s, SCAN_NO_BLOCK, 0) < 0)
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
			ap_agg_stats(s->agg, &s->stats.groups_shipped, &s->stats.agg_flushes,
						 &s->stats.agg_stream_flushes);
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
		ap_rowbatch_free(&s->rows);
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
