/*
 * agg.h
 *	  Partial aggregation at the disk (agg_*.c): the hash table a scan with
 *	  Program.agg feeds instead of its row buffer.
 *
 * Use, from the scan (scan_setup.c, scan_page.c, scan_ship.c): ap_agg_compile once per request; for every visible tuple
 * that passes the filter, ap_agg_add; on AP_AGG_FULL ap_agg_flush(memory_flush
 * = true) and ap_agg_add again; at the end ap_agg_flush(false); Done carries
 * ap_agg_stats.  AP_AGG_FULL also comes early, while the keys come
 * clustered, so that the host merges while the disk scans (agg_table.c).  Nothing here allocates per tuple except group storage from
 * the budget, and nothing raises an SQL error: whatever cannot be done
 * exactly is AP_AGG_FALLBACK and the tuple goes to the host.
 */
#ifndef DISKD_AGG_H
#define DISKD_AGG_H

#include "diskd.h"

typedef struct ApAgg ApAgg;		/* opaque (agg_internal.h) */

typedef enum ApAggResult
{
	AP_AGG_ADDED = 0,			/* the tuple is in its group */
	AP_AGG_FALLBACK = 1,		/* hand the TID to the host */
	AP_AGG_FULL = 2				/* flush every group, then add the tuple again */
} ApAggResult;

/* Ship one AggPartial frame of ngroups rows; 0 or -1 (connection gone). */
typedef int (*ApAggSendFn) (void *arg, const unsigned char *rows, uint32_t len,
							uint32_t ngroups, bool memory_flush);

/*
 * Compile the request's AggProgram against the descriptor; the table may use
 * budget bytes.  0, or an ApErrCode with err set (*out must still be freed).
 */
int			ap_agg_compile(const ActivePg__AggProgram *msg, const ApTupleDesc *desc,
						   bool encoding_utf8, uint64_t budget, ApAgg **out,
						   char *err, size_t errlen);
void		ap_agg_free(ApAgg *a);
/* Highest attribute number the keys, arguments and filters read. */
int			ap_agg_max_attno(const ApAgg *a);
/* Aggregate one tuple's deformed values (values[i] = attnum i+1). */
ApAggResult ap_agg_add(ApAgg *a, const ApValue *values);
/*
 * Batches of tuples (of one page: the values point into it).  When
 * ap_agg_batch_size(a) > 0 (it is at most AP_AGG_BATCH_MAX),
 * ap_agg_eval_batch evaluates the projections of up to that many tuples at
 * once; ap_agg_add_evaluated(a, r, values) then
 * aggregates tuple r of the batch (values: rows[r]) exactly as
 * ap_agg_add(a, values) would, AP_AGG_FULL included (flush, and call again
 * with the same r: the batch stays valid).
 */
#define AP_AGG_BATCH_MAX	64
int			ap_agg_batch_size(const ApAgg *a);
void		ap_agg_eval_batch(ApAgg *a, const ApValue *const *rows, int n);
ApAggResult ap_agg_add_evaluated(ApAgg *a, int r, const ApValue *values);
/*
 * After ap_agg_eval_batch: add the batch's leading tuples that need no care
 * (see agg_table.c, the batch path) all at once; returns how many (0..n).
 * The caller then adds tuples from that one on by ap_agg_add_evaluated.
 */
int			ap_agg_add_batch(ApAgg *a, int n);
/* Ship and forget every group; 0 or -1. */
int			ap_agg_flush(ApAgg *a, bool memory_flush, uint32_t batch_bytes,
						 ApAggSendFn send, void *arg);
void		ap_agg_stats(const ApAgg *a, uint64_t *groups_shipped, uint64_t *flushes,
						 uint64_t *stream_flushes);

#endif							/* DISKD_AGG_H */
