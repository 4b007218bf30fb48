/*
 * activescan.h
 *	  Executor-side declarations of active_pg: the ActiveScan scan state
 *	  (activescan.c, with its distributed-device mode) and the EXPLAIN output
 *	  of the executor nodes (explain.c).
 *
 * Rules of this file: only executor files (activescan.c, explain.c,
 * agg_exec.c) include it; connections are transport.h, one scan's
 * conversation with the disks is disk_conversation.h, and the shared interface of
 * the extension stays in active_pg.h.
 */
#ifndef AP_EXEC_H
#define AP_EXEC_H

#include "active_pg.h"
#include "bloomjoin.h"
#include "disk_conversation.h"

#include "access/parallel.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "commands/explain.h"

/* ---------- ActiveScan state (activescan.c, explain.c) ---------- */

/* A RowBatch waiting to be decoded (the disk fills it as ApRowBatchBuf, rowenc.c). */
typedef struct ApRowBatch
{
	ActivePg__Frame *frame;		/* owns the bytes */
	const char *data;			/* MAXALIGN'd rows */
	size_t		len;
	uint32		nrows;
	ApDiskConn *conn;			/* the disk that sent it */
} ApRowBatch;

/* One worker's statistics in the shared state (parallel.c). */
typedef struct ApWorkerStats
{
	int			stats_ndisks;
	ApHostStats host;
	bool		disk_stats_valid[AP_NDISKS_MAX];
	ActivePg__ScanStats disk_stats[AP_NDISKS_MAX];
	ApBloomSharedStats bloom;	/* a Bloom-filtered scan's filters */
} ApWorkerStats;

/*
 * Shared state of a parallel-aware ActiveScan (parallel.c), in the parallel
 * query's dynamic shared memory; see parallel.c for its rules.
 */
typedef struct ApParallelShared
{
	ApParallelScan work;		/* work items of a pushed-down scan (disk_conversation.h) */
	bool		host_mode;		/* the leader found pushdown impossible: heap scan */
	Size		heap_offset;	/* host mode's ParallelTableScanDesc, from the start */
	Size		stats_offset;	/* nworkers ApWorkerStats, one per worker number */
	int			nworkers;
} ApParallelShared;

typedef struct ApScanState
{
	CustomScanState css;

	/* from the plan */
	List	   *disk_quals;		/* leading custom_exprs (for EXPLAIN) */
	List	   *host_quals;		/* the other custom_exprs */
	ExprState  *host_qual_state;	/* disk rows, over raw_slot */
	ExprState  *all_qual_state;	/* heap tuples: every qual in plan order */
	List	   *project;		/* IntList of shipped attnos */
	struct ApBloomState *bloom; /* Bloom filters the scan carries, or NULL */
	int			nproject;
	AttrNumber *project_attnos;
	List	   *value_exprs;	/* computed projections the disks ship */
	int			nvalues;
	bool		proj_mode;		/* scan tuple = custom_scan_tlist */
	TupleTableSlot *raw_slot;	/* relation-shaped virtual tuple: quals read it */
	int			raw_natts;		/* heap tuples: the leading attributes read */
	ProjectionInfo *raw_proj;	/* proj_mode: raw_slot -> scan tuple on the host */

	/* per execution */
	bool		started;		/* first Exec happened since Begin/ReScan */
	bool		finished;
	bool		host_mode;		/* plain heap scan on the host */
	MemoryContext scan_cxt;		/* child of the query context; reset per execution */
	ApDiskScan	ds;				/* the disks' conversation (pushdown) */
	TableScanDesc host_scan;	/* host mode */
	TupleTableSlot *heap_slot;	/* host mode and fallback tuples */
	ApParallelShared *pshared;	/* parallel-aware plan under Gather, else NULL */
	bool		stats_reported;	/* a worker added its statistics to pshared */
	bool		rel_flushed;	/* buffers flushed in this run of the plan, kept
								 * across rescans (ApDiskScan.flushed) */

	/* queued work */
	List	   *batches;		/* of ApRowBatch *, FIFO */
	size_t		queued_bytes;
	ApRowBatch *cur;			/* being decoded */
	size_t		cur_off;
	uint32		cur_row;

	/*
	 * Scrollable cursors (EXEC_FLAG_BACKWARD): the scan tuples returned so
	 * far, with their TIDs, so a backward fetch returns what a sequential
	 * scan would (the same rows under the same snapshot, in reverse).
	 */
	Tuplestorestate *kept;		/* NULL unless the plan may run backward */
	TupleTableSlot *kept_slot;	/* scan tuple + int8 packed TID */
	bool		kept_all;		/* the scan itself is exhausted */

	/* distributed-device mode (activescan.c's pages section): per execution, in scan_cxt */
	struct ApPageState *pages;
	TupleTableSlot *page_slot;	/* heap tuples on page copies */

	/* statistics for EXPLAIN ANALYZE, kept across rescans */
	int			stats_ndisks;
	ActivePg__ScanStats *disk_stats;	/* per disk, summed over executions */
	bool	   *disk_stats_valid;
	ApHostStats host;
} ApScanState;

/* explain.c */
/* ExplainCustomScan callback of ActiveScan. */
void		ApExplainScan(CustomScanState *node, List *ancestors, ExplainState *es);
/* explain_text.c: bytes as "123 B", "4.5 kB", "6.7 MB" or "8.9 GB". */
char	   *ApFormatBytes(double bytes);
/* Start a text-format line "label: " at the current indentation. */
void		ApExplainTextLine(ExplainState *es, const char *label);
/* A qual list deparsed the way EXPLAIN shows a scan's Filter, labelled. */
void		ApExplainQuals(ScanState *ss, List *quals, const char *label, List *ancestors,
						   ExplainState *es);
/* Expressions deparsed in the plan's context, as a list of strings. */
List	   *ApDeparseList(ScanState *ss, List *exprs, List *ancestors, ExplainState *es);
/* Bytes the disks read per byte they shipped; 0 if they shipped nothing. */
double		ApBytesReduction(const ActivePg__ScanStats *t);
/* ANALYZE text lines both nodes show: "Fallback:", "Interconnect:", "Disk Time:". */
void		ApExplainTextFallback(const ApHostStats *h, ExplainState *es);
void		ApExplainTextInterconnect(const ActivePg__ScanStats *t, ExplainState *es);
void		ApExplainTextDiskTime(const ActivePg__ScanStats *t, const ApHostStats *h,
								  ExplainState *es);
/* ANALYZE, structured formats: the disks' and the host's times in ms. */
void		ApExplainTimes(const ActivePg__ScanStats *t, const ApHostStats *h,
						   ExplainState *es);
/* ANALYZE: "Rows Removed by Disk Filter" per loop, as for a Filter. */
void		ApExplainDiskRemoved(PlanState *ps, List *disk_quals,
								 const ActivePg__ScanStats *t, ExplainState *es);
/* ANALYZE text line "Host Mode:", if any execution ran on the host. */
void		ApExplainTextHostMode(const ApHostStats *h, ExplainState *es);

/* parallel.c: the DSM callbacks of a parallel-aware ActiveScan */
Size		ApScanEstimateDSM(CustomScanState *node, ParallelContext *pcxt);
void		ApScanInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
void		ApScanReInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
void		ApScanInitializeWorker(CustomScanState *node, shm_toc *toc, void *coordinate);
void		ApScanShutdown(CustomScanState *node);
/* Host mode's shared heap scan descriptor. */
ParallelTableScanDesc ApParallelHeapScan(ApParallelShared *sh);

#endif							/* AP_EXEC_H */
