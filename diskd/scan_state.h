/*
 * scan_state.h
 *	  What the scan's files share: the per-scan state (struct Scan), its
 *	  limits, and each file's entry points.  scan.c runs a scan over
 *	  scan_setup.c (the request checked, the scan prepared), scan_page.c
 *	  (one page decided), scan_raw.c (raw pages shipped) and failpoint.c;
 *	  all of them send through scan_ship.c.
 */
#ifndef DISKD_SCAN_STATE_H
#define DISKD_SCAN_STATE_H

#include <stdint.h>

#include "agg.h"
#include "bloom.h"
#include "diskd.h"

#define SCAN_FALLBACK_BATCH		8192	/* TIDs or blocks per Fallback frame */
#define SCAN_XID_ROUNDS_MAX		4		/* xmin, then xmax, then slack */
#define SCAN_XIDCACHE_INIT		1024
#define SCAN_MAX_ITEMS			((AP_BLCKSZ - AP_PAGE_HEADER_BYTES) / AP_ITEMID_BYTES)
#define SCAN_DEFAULT_TABLESPACE	1663
#define SCAN_GLOBAL_TABLESPACE	1664
#define SCAN_TBLSPC_PREFIX		"PG_15_"
#define SCAN_HOLD_SLICE_US		20000	/* a throttled scan checks for Cancel this often */
#define SCAN_CPU_HOLD_MIN_US	2000	/* shortest CPU-throttle sleep (see hold_cpu) */

/* A test's failpoint (failpoint.c) */
typedef enum ApFpAction
{
	AP_FP_NONE = 0,
	AP_FP_KILL,
	AP_FP_STOP,
	AP_FP_CLOSE,
	AP_FP_IO_ERROR,
	AP_FP_BUSY,
	AP_FP_HANG,
	AP_FP_CHECKSUM
} ApFpAction;

typedef struct ScanFailpoint
{
	ApFpAction	action;
	bool		at_start;		/* before the first page */
	bool		at_end;			/* after the last frame, before Done */
	uint64_t	page;			/* at the scan's page-th page (0: not) */
} ScanFailpoint;

/* No block in progress: between chunks (progress), at a scan's start or end */
#define SCAN_NO_BLOCK			UINT32_MAX

/* vis[] value of an item whose header could not be read */
#define SCAN_VIS_BAD_HEADER		0xFF

typedef struct Scan
{
	ApConn	   *c;
	const ActivePg__ScanRequest *req;
	uint32_t	batch_bytes;
	uint32_t	queue_depth;	/* reads in flight (fitted to the memory budget) */
	uint64_t	committed_bytes;	/* read buffers, batch and Bloom filters */
	char		relpath[1024];

	ApTupleDesc desc;
	ApSnapshot	snap;
	ApXidCache	cache;
	bool		cache_ok;
	ApProgram	prog;
	bool		prog_ok;
	struct ApPrefilter *pre;	/* prog's range checks on raw tuples, or NULL */
	uint32_t	pre_seen;		/* tuples of the current window (prefilter_rejects) */
	uint32_t	pre_rejected;
	uint32_t	pre_rest;		/* windows left without the prefilter */
	ApBloomSet	blooms;			/* Program.blooms, probed right after visibility */
	bool		blooms_ok;
	ApAgg	   *agg;			/* Program.agg: aggregate instead of shipping rows */
	ApReader   *reader;
	bool		prefetch;		/* pages come by O_DIRECT: prefetch tuples (scan_page.c) */
	ApRowBatchBuf rows;
	bool		rows_ok;
	/* AP_SCAN_MODE_PAGES: raw pages waiting for the next PageBatch */
	bool		pages_mode;
	unsigned char *pages;
	uint32_t   *page_blocks;
	uint32_t	npages;
	uint32_t	max_pages;		/* pages per PageBatch: batch_bytes, at least one */
	uint64_t	cpu_mark;		/* thread CPU time already stretched by --cpu-ratio */
	uint64_t	last_send_us;	/* when a frame last left (scan_heartbeat) */
	int64_t		cpu_balance_us; /* emulated CPU time owed (< 0: overslept, credit) */
	ApValue    *values;			/* max(prog.max_attno, blooms.max_attno, 1) entries:
								 * the current tuple's, a slot of value_slots */
	ApValue    *value_slots;	/* nbatch_max slots of nvalues (one without batches) */
	uint32_t	nvalues;
	/* an aggregation's batch: tuples of the current page (ap_agg_eval_batch) */
	uint32_t	nbatch_max;		/* ap_agg_batch_size, 0: no batches (or no aggregation) */
	uint32_t	nbatch;
	const ApValue *batch_rows[AP_AGG_BATCH_MAX];
	int			batch_offs[AP_AGG_BATCH_MAX];
	ApValue    *evals;			/* max(prog.nexprs, 1) computed projections */

	uint64_t   *tids;			/* pending Fallback.tids */
	uint32_t	ntids;
	uint32_t   *fb_blocks;		/* pending Fallback.blocks */
	uint32_t	nfb_blocks;

	/*
	 * Progress (what was delivered, for the host's takeover): ranges of
	 * blocks processed since the last report, as (first, count) pairs, and
	 * the first block of the current chunk not yet reported.
	 */
	uint32_t   *done;
	uint32_t	ndone;			/* uint32s used (two per range) */
	uint32_t	done_cap;
	uint32_t	prog_from;

	uint32_t	need[SCAN_MAX_ITEMS * 2];	/* this page's unresolved xids */
	uint32_t	nneed;
	uint32_t	need_sorted[SCAN_MAX_ITEMS * 2];
	uint8_t		need_seen[SCAN_MAX_ITEMS * 2];
	uint8_t		vis[SCAN_MAX_ITEMS + 1];	/* ApVis per offset number */
	ApTupleHeader hdrs[SCAN_MAX_ITEMS + 1]; /* headers read deciding vis[] */
	/* with blooms.fixed: the first filter's verdict per offset number (AP_BLOOM_*) */
	uint8_t		bloom_first[SCAN_MAX_ITEMS + 1];

	ActivePg__ScanStats stats;
	ScanFailpoint fp;			/* tests only: see failpoint.c */

	/* how the scan ends: err_code != 0 sends Error instead of Done */
	uint32_t	err_code;
	char		err_msg[512];
	bool		close_conn;		/* protocol violation: close after the Error */
} Scan;

/* qsort/bsearch comparator for xids by raw value. */
static inline int
scan_cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* Record why the scan stops (first reason wins); always returns -1. */
int			scan_fail(Scan *s, uint32_t code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/*
 * Send one frame, counting its bytes and the time blocked because the host
 * has not taken the earlier ones; -1 if the connection is gone.
 */
int			scan_send(Scan *s, const ActivePg__Frame *frame);
/* An empty Fallback frame if nothing was sent for AP_HEARTBEAT_MS; 0 or -1. */
int			scan_heartbeat(Scan *s);
/* Wall time since t0 that this thread did not run, given its CPU time then. */
uint64_t	scan_waited_since(uint64_t t0, uint64_t cpu0_ns);
/* Note blocks [first, end) as processed since the last progress report. */
int			scan_progress_add(Scan *s, uint32_t first, uint32_t end);
/* Ship the pending TIDs and blocks, if any, as one Fallback frame. */
int			scan_flush_fallback(Scan *s);
/*
 * Ship the pending fallbacks, then the buffered rows with the progress up
 * to tuple (blkno, off); SCAN_NO_BLOCK: up to the last finished range.
 */
int			scan_flush_rows(Scan *s, uint32_t blkno, uint32_t off);
/* Hand one tuple, or a whole block, to the host (batched). */
int			scan_fallback_tid(Scan *s, uint32_t blkno, int off);
int			scan_fallback_block(Scan *s, uint32_t blkno);
/*
 * An aggregation's groups, all of them, as AggPartial frames, then the
 * progress up to (blkno, off); memory_flush says the table was full.
 */
int			scan_flush_groups(Scan *s, bool memory_flush, uint32_t blkno, uint32_t off);

/* One page of an active-mode scan (scan_page.c); 0 or -1 with the error set. */
int			scan_page(Scan *s, const unsigned char *page, uint32_t blkno);

/* Distributed-device mode (scan_raw.c): its buffers, one page, the batch. */
int			scan_prepare_pages(Scan *s);
int			scan_ship_page(Scan *s, const unsigned char *page, uint32_t blkno);
int			scan_flush_pages(Scan *s);

/* Test failpoints (failpoint.c): this disk's, read at the scan's start; fire one. */
void		scan_failpoint_load(Scan *s);
int			scan_failpoint(Scan *s, uint32_t blkno);

/* Check the request's geometry and limits; 0 or -1 with the error set. */
int			scan_check_request(Scan *s);

/*
 * Compile the columns, snapshot, program, Bloom filters and aggregation of
 * an active-mode scan and allocate its buffers; 0 or -1 with the error set.
 */
int			scan_prepare(Scan *s);

#endif							/* DISKD_SCAN_STATE_H */
