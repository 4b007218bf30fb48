/*
 * activeagg.h
 *	  ActiveAgg: aggregation at the disks.
 *
 * Files:
 *   agg_planner.c  create_upper_paths_hook: the ActiveAgg path on the grouped
 *                  rel (or the distinct rel of a SELECT DISTINCT) of a single
 *                  ActiveScan-eligible relation, and its plan
 *   agg_exec.c     the executor: ship an aggregating scan, merge the disks'
 *                  partial groups and the fallback tuples, finalize, EXPLAIN
 *   agg_merge.c    the host merge table; agg_spill.c its partitions past hash_mem
 *   disk_conversation.c
 *                  one pushed-down scan's conversation with the disks,
 *                  shared with ActiveScan (ship, poll under the interconnect
 *                  throttle, xid answers, fallback TIDs and blocks)
 *
 * Plan layout of an ActiveAgg CustomScan:
 *   scan.scanrelid     the aggregated relation (EXPLAIN names it; the executor
 *                      opens it for fallback tuples and host mode)
 *   custom_scan_tlist  [group key expressions..., Aggrefs...]: the scan tuple,
 *                      one per group, with FINAL aggregate values; setrefs maps
 *                      the grouped target list and HAVING (plan.qual) onto it
 *   plan.qual          HAVING, evaluated by ExecScan
 *   custom_exprs       every Param the disk quals, keys and aggregates use, so
 *                      that finalize_plan sees them (it assumes the scan tlist
 *                      has none) and rescans follow their changes
 *   custom_private     list indexed by ApAggPrivateIndex
 */
#ifndef AP_AGG_H
#define AP_AGG_H

#include "active_pg.h"

#define AP_AGG_NAME					"ActiveAgg"

/* active_pg.disk_agg_mem (kB): the disks' hash table budget per scan (guc.c) */
extern int	active_pg_disk_agg_mem;
extern bool active_pg_enable_agg;		/* active_pg.enable_agg */

typedef enum ApAggPrivateIndex
{
	AP_AGG_PRIV_RELID = 0,		/* Integer: the relation's RT index at plan time */
	AP_AGG_PRIV_DISK_QUALS,		/* List of Expr over that RT index (setrefs skips it) */
	AP_AGG_PRIV_NKEYS,			/* Integer: leading group-key columns of the scan tlist */
	AP_AGG_PRIV_EQOPS,			/* OidList: equality operator of each key */
	AP_AGG_PRIV_NGROUPS,		/* Integer: estimated groups (hash table size) */
	AP_AGG_PRIV_MODEL,			/* List of Float: the cost model's prediction (model.h) */
	AP_AGG_PRIV_COUNT
} ApAggPrivateIndex;

/*
 * How the host finalizes one Aggref from the disks' partial states (which
 * are ApAggFn states, proto/ap_types.h).  avg needs two states: a sum and a
 * count of the same argument.
 */
typedef enum ApAggFinal
{
	AP_FINAL_COUNT,				/* int8 count */
	AP_FINAL_SUM_INT8,			/* numeric sum -> int8 (sum of int2/int4) */
	AP_FINAL_SUM_NUMERIC,		/* numeric sum (sum of int8/numeric) */
	AP_FINAL_SUM_FLOAT,			/* float4/float8 sum */
	AP_FINAL_AVG_NUMERIC,		/* numeric_div(sum, count): avg of ints, numeric */
	AP_FINAL_AVG_FLOAT,			/* float8 sum / count: avg of float4, float8 */
	AP_FINAL_STATE				/* the state itself: min, max, bool_and, bool_or */
} ApAggFinal;

/* What an Aggref maps to; filled by ApAggClassify. */
typedef struct ApAggInfo
{
	ApAggFn		fn;				/* state of the main spec */
	ApTypeKind	arg_kind;		/* kind the disk accumulates (float4 avg: float8) */
	ApAggFinal	final;
	Expr	   *arg;			/* NULL for count(*) */
	Expr	   *filter;			/* NULL if no FILTER */
	bool		widen_float4;	/* avg(float4): the disk sums float8 of the value */
} ApAggInfo;

/*
 * Is this Aggref one the disks compute (supported function and argument
 * type, no DISTINCT/ORDER BY/ordered-set, shippable argument and FILTER)?
 * Fills *info if so.  rel: the scanned base relation.  With root NULL (the
 * executor, for a plan the planner accepted) only the mapping is done.
 */
bool		ApAggClassify(PlannerInfo *root, RelOptInfo *rel, Aggref *aggref,
						  ApAggInfo *info);

/* Can the disk compute this value expression exactly (kind != OTHER)? */
bool		ApAggValueShippable(PlannerInfo *root, RelOptInfo *rel, Expr *expr,
								ApTypeKind *kind);

/* agg_planner.c */
extern CustomScanMethods ApAggPlanMethods;
void		ApAggPlannerInit(void);

/* agg_exec.c */
Node	   *ApAggCreateScanState(CustomScan *cscan);

#endif							/* AP_AGG_H */
