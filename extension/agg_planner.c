/*
 * agg_planner.c
 *	  create_upper_paths_hook: the ActiveAgg path, its cost, its plan.
 *
 * When ActiveAgg is offered (on UPPERREL_GROUP_AGG, and on UPPERREL_DISTINCT
 * for a SELECT DISTINCT without aggregates, after PostgreSQL's own
 * paths; modelled on postgres_fdw's foreign_grouping_ok):
 *	- the input is one plain base relation for which the planner offers an
 *	  ActiveScan path (ApScanEligible: every eligibility rule of planner.c
 *	  holds, whether or not that path survived add_path) and all of whose
 *	  restriction clauses run on the disks (a host qual must filter before
 *	  aggregating, which the disks cannot wait for);
 *	- no grouping sets, no set-returning functions, no SubPlans in the
 *	  grouped target or HAVING, no partitionwise aggregation;
 *	- every GROUP BY expression is one the disk evaluates exactly and is
 *	  hashable; every Var the target or HAVING uses outside an aggregate is a
 *	  GROUP BY expression;
 *	- every aggregate is in the supported set (ap_agg_map) with no DISTINCT,
 *	  ORDER BY or ordered-set/hypothetical semantics, and its argument and
 *	  FILTER are disk-evaluable;
 * Otherwise nothing is added and PostgreSQL's Agg runs over whichever scan
 * wins (ActiveScan or the host's own).
 *
 * Cost: Riedel's Active Disks throughput model (model.c, AP_MODEL_OP_AGG), as for
 * ActiveScan: the disks read and aggregate (their measured cycles per byte of
 * aggregation), ship their partial groups when they finish (or when their
 * table fills), and the host merges and finalizes them after the scan; see
 * ap_agg_cost for the exchange rate into cost units.  Rows come only once
 * every disk is done, so startup cost = total cost.
 * active_pg.force_pushdown makes ActiveAgg the only path of the grouped rel.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_aggregate_d.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"

#include "activeagg.h"
#include "transport.h"
#include "model.h"
#include "shippable.h"

/* Host bytes per group and per state beyond the keys (hash entry, states). */
#define AP_AGG_GROUP_OVERHEAD		32

/* Path private list (CustomPath.custom_private). */
typedef enum ApAggPathIndex
{
	AP_AGG_PATH_KEYS = 0,		/* List of group key Exprs */
	AP_AGG_PATH_AGGREFS,		/* List of Aggrefs */
	AP_AGG_PATH_HAVING,			/* List: HAVING, implicitly ANDed */
	AP_AGG_PATH_DISK_QUALS,		/* List of Expr */
	AP_AGG_PATH_EQOPS,			/* OidList */
	AP_AGG_PATH_NGROUPS,		/* Integer */
	AP_AGG_PATH_RELID,			/* Integer: the input relation */
	AP_AGG_PATH_MODEL,			/* List of Float: the cost model's prediction */
	AP_AGG_PATH_COUNT
} ApAggPathIndex;

static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;


static Plan *ap_agg_plan_path(PlannerInfo *root, RelOptInfo *rel,
							  CustomPath *best_path, List *tlist,
							  List *clauses, List *custom_plans);

static const CustomPathMethods ap_agg_path_methods = {
	.CustomName = AP_AGG_NAME,
	.PlanCustomPath = ap_agg_plan_path,
};

CustomScanMethods ApAggPlanMethods = {
	.CustomName = AP_AGG_NAME,
	.CreateCustomScanState = ApAggCreateScanState,
};

/* ---------------- what the disk evaluates ---------------- */

/* Can the disk compute this value exactly (the expression language's walker)? */
bool
ApAggValueShippable(PlannerInfo *root, RelOptInfo *rel, Expr *expr, ApTypeKind *kind)
{
	return ApIsShippableValue(rel->relid, expr, kind);
}

/*
 * Map an Aggref's function onto the disk's aggregate states (see ApAggFn),
 * without looking at shippability.  False if the function or its argument
 * type is not supported.
 */
static bool
ap_agg_map(Aggref *aggref, ApAggInfo *info)
{
	Oid			argtype = InvalidOid;
	ApTypeKind	k = AP_TYPE_OTHER;
	bool		is_int;
	bool		is_float;

	memset(info, 0, sizeof(*info));
	if (aggref->args != NIL)
	{
		if (list_length(aggref->args) != 1)
			return false;
		info->arg = linitial_node(TargetEntry, aggref->args)->expr;
		argtype = exprType((Node *) info->arg);
		k = ApTypeKindOf(argtype);
	}
	info->filter = aggref->aggfilter;
	info->arg_kind = k;
	is_int = (k == AP_TYPE_INT2 || k == AP_TYPE_INT4 || k == AP_TYPE_INT8);
	is_float = (k == AP_TYPE_FLOAT4 || k == AP_TYPE_FLOAT8);

	switch (aggref->aggfnoid)
	{
		case F_COUNT_:
			info->fn = AP_AGG_COUNT_STAR;
			info->final = AP_FINAL_COUNT;
			info->arg_kind = AP_TYPE_OTHER;
			return aggref->args == NIL;
		case F_COUNT_ANY:
			info->fn = AP_AGG_COUNT;
			info->final = AP_FINAL_COUNT;
			return k != AP_TYPE_OTHER;
		case F_SUM_INT2:
		case F_SUM_INT4:
			info->fn = AP_AGG_SUM;
			info->final = AP_FINAL_SUM_INT8;
			return is_int;
		case F_SUM_INT8:
		case F_SUM_NUMERIC:
			info->fn = AP_AGG_SUM;
			info->final = AP_FINAL_SUM_NUMERIC;
			return is_int || k == AP_TYPE_NUMERIC;
		case F_SUM_FLOAT4:
		case F_SUM_FLOAT8:
			info->fn = AP_AGG_SUM;
			info->final = AP_FINAL_SUM_FLOAT;
			return is_float;
		case F_AVG_INT2:
		case F_AVG_INT4:
		case F_AVG_INT8:
		case F_AVG_NUMERIC:
			info->fn = AP_AGG_SUM;
			info->final = AP_FINAL_AVG_NUMERIC;
			return is_int || k == AP_TYPE_NUMERIC;
		case F_AVG_FLOAT4:
		case F_AVG_FLOAT8:
			/* float4_accum sums in double: so does the disk */
			info->fn = AP_AGG_SUM;
			info->final = AP_FINAL_AVG_FLOAT;
			info->widen_float4 = (k == AP_TYPE_FLOAT4);
			info->arg_kind = AP_TYPE_FLOAT8;
			return is_float;
		case F_MIN_INT2:
		case F_MIN_INT4:
		case F_MIN_INT8:
		case F_MIN_FLOAT4:
		case F_MIN_FLOAT8:
		case F_MIN_NUMERIC:
		case F_MIN_DATE:
		case F_MIN_TIMESTAMP:
		case F_MIN_TIMESTAMPTZ:
		case F_MIN_TEXT:
		case F_MIN_BPCHAR:
			info->fn = AP_AGG_MIN;
			info->final = AP_FINAL_STATE;
			return k != AP_TYPE_OTHER && k != AP_TYPE_BOOL;
		case F_MAX_INT2:
		case F_MAX_INT4:
		case F_MAX_INT8:
		case F_MAX_FLOAT4:
		case F_MAX_FLOAT8:
		case F_MAX_NUMERIC:
		case F_MAX_DATE:
		case F_MAX_TIMESTAMP:
		case F_MAX_TIMESTAMPTZ:
		case F_MAX_TEXT:
		case F_MAX_BPCHAR:
			info->fn = AP_AGG_MAX;
			info->final = AP_FINAL_STATE;
			return k != AP_TYPE_OTHER && k != AP_TYPE_BOOL;
		case F_BOOL_AND:
		case F_EVERY:
			info->fn = AP_AGG_BOOL_AND;
			info->final = AP_FINAL_STATE;
			return k == AP_TYPE_BOOL;
		case F_BOOL_OR:
			info->fn = AP_AGG_BOOL_OR;
			info->final = AP_FINAL_STATE;
			return k == AP_TYPE_BOOL;
		default:
			return false;
	}
}

/* Map an Aggref and, at plan time (root set), check that the disks can compute it. */
bool
ApAggClassify(PlannerInfo *root, RelOptInfo *rel, Aggref *aggref, ApAggInfo *info)
{
	ApTypeKind	k;

	if (!ap_agg_map(aggref, info))
		return false;
	if (root == NULL)
		return true;

	/* plain aggregation of one level only */
	if (aggref->aggkind != AGGKIND_NORMAL || aggref->agglevelsup != 0 ||
		aggref->aggsplit != AGGSPLIT_SIMPLE || aggref->aggdistinct != NIL ||
		aggref->aggorder != NIL || aggref->aggdirectargs != NIL ||
		aggref->aggvariadic || aggref->aggstar != (info->fn == AP_AGG_COUNT_STAR))
		return false;
	if (info->arg != NULL &&
		(!ApAggValueShippable(root, rel, info->arg, &k) || k == AP_TYPE_OTHER))
		return false;
	if (info->filter != NULL && !ApIsShippableExpr(root, rel, info->filter))
		return false;
	/* the disk orders strings bytewise: only where PostgreSQL does too */
	if ((info->fn == AP_AGG_MIN || info->fn == AP_AGG_MAX) &&
		(info->arg_kind == AP_TYPE_TEXT || info->arg_kind == AP_TYPE_VARCHAR ||
		 info->arg_kind == AP_TYPE_BPCHAR) &&
		(!OidIsValid(aggref->inputcollid) || !ApCollateIsC(aggref->inputcollid)))
		return false;
	return true;
}

/* ---------------- the path ---------------- */

/* Index of expr in keys (equal()), or -1. */
static int
ap_key_index(List *keys, Node *expr)
{
	ListCell   *lc;

	foreach(lc, keys)
	{
		if (equal(lfirst(lc), expr))
			return foreach_current_index(lc);
	}
	return -1;
}

/*
 * Collect the Aggrefs of one target or HAVING expression into *aggrefs
 * (deduplicated) after checking them; every Var outside them must be a key.
 */
static bool
ap_collect_aggrefs(PlannerInfo *root, RelOptInfo *rel, Node *expr, List *keys,
				   List **aggrefs)
{
	List	   *items;
	ListCell   *lc;

	/* a whole key expression (e.g. a computed GROUP BY item) needs nothing */
	if (ap_key_index(keys, expr) >= 0)
		return true;
	if (contain_subplans(expr))
		return false;
	items = pull_var_clause(expr, PVC_INCLUDE_AGGREGATES | PVC_INCLUDE_WINDOWFUNCS |
							PVC_INCLUDE_PLACEHOLDERS);
	foreach(lc, items)
	{
		Node	   *item = (Node *) lfirst(lc);

		if (IsA(item, Var))
		{
			if (ap_key_index(keys, item) < 0)
				return false;
		}
		else if (IsA(item, Aggref))
		{
			ApAggInfo	info;

			if (!ApAggClassify(root, rel, (Aggref *) item, &info))
				return false;
			if (!list_member(*aggrefs, item))
				*aggrefs = lappend(*aggrefs, item);
		}
		else
			return false;
	}
	return true;
}

/* Estimated bytes of one value of expr (a column's statistics, else its type's). */
static int
ap_expr_width(RelOptInfo *rel, Expr *expr)
{
	if (IsA(expr, Var))
	{
		Var		   *v = (Var *) expr;

		if (v->varno == rel->relid && v->varattno >= rel->min_attr &&
			v->varattno <= rel->max_attr &&
			rel->attr_widths[v->varattno - rel->min_attr] > 0)
			return rel->attr_widths[v->varattno - rel->min_attr];
	}
	return get_typavgwidth(exprType((Node *) expr), exprTypmod((Node *) expr));
}

/*
 * The disk states of one Aggref: how many (avg has a sum and a count) and
 * their bytes on the wire (proto/ap_rows.h: counts int8, numeric sums a
 * short numeric, float sums their width, min/max the value).
 */
static int
ap_agg_state_bytes(RelOptInfo *rel, Aggref *aggref, int *nstates)
{
	ApAggInfo	info;

	*nstates = 1;
	if (!ap_agg_map(aggref, &info))
		return 8;
	switch (info.final)
	{
		case AP_FINAL_COUNT:
			return 8;
		case AP_FINAL_SUM_INT8:
		case AP_FINAL_SUM_NUMERIC:
			return 16;
		case AP_FINAL_SUM_FLOAT:
			return info.arg_kind == AP_TYPE_FLOAT4 ? 4 : 8;
		case AP_FINAL_AVG_NUMERIC:
			*nstates = 2;
			return 16 + 8;
		case AP_FINAL_AVG_FLOAT:
			*nstates = 2;
			return 8 + 8;
		case AP_FINAL_STATE:
			break;
	}
	return info.arg != NULL ? ap_expr_width(rel, info.arg) : 8;
}

/*
 * How far rel's rows lie in the order of one of the grouping keys: the
 * largest squared correlation PostgreSQL's statistics hold for a key that
 * is a column of rel (btcostestimate reads the same slot), 0 if none.  A
 * correlation under AP_AGG_ORDER_MIN is the noise of ANALYZE's sample of an
 * unordered column (0.002 for m_big's k = id % 1000 in 090_model), and
 * counts as none: the plan must not move with the sample.
 */
#define AP_AGG_ORDER_MIN	0.1

static double
ap_agg_key_order(PlannerInfo *root, RelOptInfo *rel, List *keys)
{
	double		best = 0.0;
	ListCell   *lc;

	foreach(lc, keys)
	{
		Node	   *key = lfirst(lc);
		VariableStatData vardata;
		AttStatsSlot sslot;

		if (!IsA(key, Var) || ((Var *) key)->varno != rel->relid)
			continue;
		examine_variable(root, key, 0, &vardata);
		if (HeapTupleIsValid(vardata.statsTuple) &&
			get_attstatsslot(&sslot, vardata.statsTuple, STATISTIC_KIND_CORRELATION,
							 InvalidOid, ATTSTATSSLOT_NUMBERS))
		{
			if (sslot.nnumbers > 0 && fabs(sslot.numbers[0]) >= AP_AGG_ORDER_MIN)
				best = Max(best, (double) sslot.numbers[0] * sslot.numbers[0]);
			free_attstatsslot(&sslot);
		}
		ReleaseVariableStats(vardata);
	}
	return Min(best, 1.0);
}

/* One group in the host's merge table: its key tuple, states and entry. */
static double
ap_agg_host_group_bytes(PathTarget *target, List *aggrefs)
{
	return MAXALIGN(SizeofMinimalTupleHeader) + target->width +
		AP_AGG_GROUP_OVERHEAD * (1 + 2 * list_length(aggrefs));
}

/*
 * Cost the path with the throughput model (model.c, AP_MODEL_OP_AGG) and keep
 * the prediction in the path for EXPLAIN.
 *
 * The exchange rate between the model's seconds and PostgreSQL's cost units
 * is, as for ActiveScan, the plan both sides know: PostgreSQL's own hashed
 * aggregation over a Seq Scan of the same input.  Its cost is cost_seqscan's
 * plus what cost_agg charges for a hashed aggregation that does not spill
 * (transition functions and one operator per key per input row, the final
 * functions and a tuple per group), and the model predicts its time (t_trad,
 * the host doing everything).  So ActiveAgg costs that plan's cost times
 * t_active / t_trad: it beats PostgreSQL's Agg over a Seq Scan exactly when
 * the model says so, and stands to an Agg over ActiveScan (whose scan is
 * costed by the same model) as the two predictions do.  That exchange rate
 * prices the host at host_scan_ns_per_byte, which serves the comparison with
 * PostgreSQL's index paths into big tables but overstates a small table's
 * Seq Scan: *host_s is the host's own best aggregation at measured speed,
 * its best scan (ApHostBestScan) under a HashAggregate or, where an index
 * returns the rows ordered by the grouping keys (group_pathkeys), that scan
 * under a GroupAggregate, and ActiveAgg is not offered where that is faster
 * (ApHostSlower; *host_sure when the HashAggregate is the faster and its
 * groups fit hash_mem).  Supplier's 10,000 rows grouped by nation took
 * 6.3 ms as ActiveAgg, 1.5 ms on the host.  Orders' 1.5 million grouped by
 * o_custkey for a count took 200 ms as ActiveAgg (its merge table spilling
 * 100,000 groups; predicted 305 ms), 127 ms as PostgreSQL's GroupAggregate
 * over the index-only scan of orders_custkey_idx (predicted 128 ms).  Not
 * sure of a GroupAggregate's win: the model's ActiveAgg of many groups errs
 * high (partsupp's 800,000 rows by ps_partkey: 105 ms, predicted 218 ms,
 * against 175 ms for the GroupAggregate over partsupp_pkey, predicted
 * 165 ms), so it must be twice as fast.  Returns the predicted seconds.
 */
static double
ap_agg_cost(PlannerInfo *root, RelOptInfo *rel, List *disk_ri, List *keys,
			List *aggrefs, List *having, const AggClauseCosts *aggcosts,
			double ngroups, PathTarget *target, List *group_pathkeys,
			CustomPath *cpath, double *host_s, bool *host_sure)
{
	Path	   *path = &cpath->path;
	int			nkeys = list_length(keys);
	double		op_cost = Max(cpu_operator_cost, 1e-9);
	double		spc_seq_page_cost;
	QualCost	disk_qual;
	QualCost	having_cost;
	AggClauseCosts no_aggs;
	Selectivity sel;
	double		passed;
	double		key_bytes = 0;
	double		state_bytes = 0;
	int			nspecs = 0;
	ApModelInput in;
	ApModelResult m;
	Cost		host_cost;
	Cost		startup;
	double		t_seq;
	double		t_sorted;
	ListCell   *lc;

	if (aggcosts == NULL)
	{
		MemSet(&no_aggs, 0, sizeof(no_aggs));
		aggcosts = &no_aggs;
	}
	get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
	cost_qual_eval(&disk_qual, disk_ri, root);
	cost_qual_eval(&having_cost, having, root);
	sel = clauselist_selectivity(root, disk_ri, rel->relid, JOIN_INNER, NULL);
	passed = clamp_row_est(rel->tuples * sel);

	foreach(lc, keys)
		key_bytes += ap_expr_width(rel, (Expr *) lfirst(lc));
	foreach(lc, aggrefs)
	{
		int			n;

		state_bytes += ap_agg_state_bytes(rel, (Aggref *) lfirst(lc), &n);
		nspecs += n;
	}

	memset(&in, 0, sizeof(in));
	in.op = AP_MODEL_OP_AGG;
	in.mode = AP_SCAN_MODE_ACTIVE;
	in.ndisks = Max(ApConfiguredDiskCount(), 1);
	in.pages = rel->pages;
	in.tuples = rel->tuples;
	in.rows_passed = passed;
	in.groups = ngroups;
	in.key_order = ap_agg_key_order(root, rel, keys);
	/* hashing the keys and the transition functions with their arguments */
	in.agg_ops = nkeys + aggcosts->transCost.per_tuple / op_cost;
	in.disk_ops = disk_qual.per_tuple / op_cost + sel * in.agg_ops;
	in.merge_ops = nkeys + nspecs;
	/* a partial group on the wire: row header, null bitmap, keys, states */
	in.width_out = AP_ROW_HEADER_BYTES + (nkeys + nspecs + 7) / 8 + key_bytes + state_bytes;
	/* and in a disk's hash table (diskd/agg_table.c: header, states, key, index) */
	in.disk_group_bytes = 32 + 32 * nspecs + key_bytes;
	/* and in the host's merge table (agg_merge.c), which spills past hash_mem */
	in.host_group_bytes = ap_agg_host_group_bytes(target, aggrefs);
	in.host_mem_bytes = (double) get_hash_memory_limit();
	in.disk_mem_bytes = (double) active_pg_disk_agg_mem * 1024.0;
	if (active_pg_disk_memory_mb > 0)
		in.disk_mem_bytes = Min(in.disk_mem_bytes, active_pg_disk_memory_mb * 1024.0 * 1024.0);
	ApModelPredict(&in, &m);

	/* PostgreSQL's HashAggregate over a Seq Scan: the exchange rate */
	host_cost = spc_seq_page_cost * rel->pages +
		(cpu_tuple_cost + disk_qual.per_tuple) * rel->tuples +
		aggcosts->transCost.startup +
		(aggcosts->transCost.per_tuple + cpu_operator_cost * nkeys) * passed +
		aggcosts->finalCost.startup +
		(aggcosts->finalCost.per_tuple + cpu_tuple_cost) * ngroups;
	startup = disk_qual.startup + having_cost.startup + target->cost.startup;

	/* rows come only once every disk is done: startup cost = total cost */
	path->rows = having != NIL ?
		clamp_row_est(ngroups * clauselist_selectivity(root, having, 0, JOIN_INNER, NULL)) :
		ngroups;
	path->total_cost = startup + ApModelCost(&m, host_cost) +
		having_cost.per_tuple * ngroups + target->cost.per_tuple * path->rows;
	path->startup_cost = path->total_cost;
	cpath->custom_private = lappend(cpath->custom_private, ApModelToList(&m));

	t_seq = ApModelSeqScanSeconds(rel->tuples,
								  ApLastAttno(rel, list_concat(list_concat_copy(keys, aggrefs),
															   disk_ri)),
								  disk_qual.per_tuple / op_cost, ApPatternOps(disk_ri));
	*host_s = ApHostBestScan(rel, t_seq) + ApModelHostAggSeconds(passed, ngroups, in.agg_ops);
	*host_sure = ngroups * in.host_group_bytes <= in.host_mem_bytes;
	t_sorted = ApHostSortedScan(rel, t_seq, group_pathkeys);
	if (t_sorted >= 0)
	{
		t_sorted += ApModelHostGroupAggSeconds(passed, ngroups, in.agg_ops - nkeys);
		if (t_sorted < *host_s)
		{
			*host_s = t_sorted;
			*host_sure = false;
		}
	}
	return m.t_active;
}

/*
 * Try to add the ActiveAgg path to output_rel, grouping by the expressions of
 * groupclause (GROUP BY, or the DISTINCT list) with having (a List or NULL).
 */
static void
ap_add_agg_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
				PathTarget *target, List *groupclause, List *group_pathkeys,
				Node *havingqual, const AggClauseCosts *aggcosts)
{
	Query	   *parse = root->parse;
	List	   *disk_ri;
	List	   *host_ri;
	List	   *keys = NIL;
	List	   *eqops = NIL;
	List	   *aggrefs = NIL;
	List	   *having = NIL;
	ListCell   *lc;
	CustomPath *cpath;
	RelOptInfo *parent;
	double		ngroups;
	double		t_active;
	double		host_s;
	bool		host_sure;

	if (parse->groupingSets != NIL || parse->hasTargetSRFs)
		return;
	if (input_rel->reloptkind != RELOPT_BASEREL ||
		!ApScanEligible(root, input_rel))
		return;

	/* every restriction clause must run on the disks, before aggregation */
	foreach(lc, input_rel->baserestrictinfo)
	{
		if (lfirst_node(RestrictInfo, lc)->pseudoconstant)
			return;
	}
	ApClassifyRestrictInfos(root, input_rel, input_rel->baserestrictinfo,
							&disk_ri, &host_ri);
	if (host_ri != NIL)
		return;

	/* group keys */
	foreach(lc, groupclause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Expr	   *expr = (Expr *) get_sortgroupclause_expr(sgc, root->processed_tlist);
		ApTypeKind	kind;

		if (!sgc->hashable || !OidIsValid(sgc->eqop) ||
			!ApAggValueShippable(root, input_rel, expr, &kind))
			return;
		/* GROUP BY a, a: one key is enough */
		if (ap_key_index(keys, (Node *) expr) >= 0)
			continue;
		keys = lappend(keys, expr);
		eqops = lappend_oid(eqops, sgc->eqop);
	}

	/* aggregates of the grouped target and of HAVING */
	foreach(lc, target->exprs)
	{
		if (!ap_collect_aggrefs(root, input_rel, (Node *) lfirst(lc), keys, &aggrefs))
			return;
	}
	if (havingqual != NULL)
	{
		having = (List *) havingqual;
		if (!ap_collect_aggrefs(root, input_rel, (Node *) having, keys, &aggrefs))
			return;
	}
	if (keys == NIL && aggrefs == NIL)
		return;

	/* all groups, before HAVING: the hash tables hold them all */
	if (keys == NIL)
		ngroups = 1;
	else
		ngroups = estimate_num_groups(root, keys, input_rel->rows, NULL, NULL);

	/*
	 * Past hash_mem the host's merge table spills (agg_spill.c), which pays
	 * where the disks reduce many rows to each group; with few rows per
	 * group the host merges about every row, slower than PostgreSQL's sort
	 * or index-ordered GroupAggregate.  The plan hinges on the estimate
	 * then, and an estimate over several columns, which PostgreSQL
	 * multiplies from each column's statistics as if independent, can be
	 * off tenfold (lineitem's (l_orderkey, l_linenumber): 600,000 groups
	 * estimated, 6 million real; ActiveAgg 3.9 s against 1.1 s).  So a
	 * grouping that would not fit hash_mem gets ActiveAgg only for one key,
	 * whose estimate is a column's own number of distinct values (a choice
	 * of plan, which force_pushdown overrides as it overrides costs).
	 */
	if (!active_pg_force && list_length(keys) > 1 &&
		ngroups * ap_agg_host_group_bytes(target, aggrefs) > (double) get_hash_memory_limit())
		return;

	/*
	 * create_customscan_plan sets custom_relids from the path's parent, and
	 * EXPLAIN names relations by custom_relids only: an upper rel has no
	 * relids, so the path's parent is a copy of the grouped rel that carries
	 * the aggregated relation's (as postgres_fdw's fs_relids of an upper rel).
	 */
	parent = makeNode(RelOptInfo);
	memcpy(parent, output_rel, sizeof(RelOptInfo));
	parent->relids = bms_copy(input_rel->relids);

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = parent;
	cpath->path.pathtarget = target;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.pathkeys = NIL;
	/* ExecScan projects the grouped target list over the group tuple */
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = NIL;
	cpath->custom_private = list_make5(keys, aggrefs, having,
									   extract_actual_clauses(disk_ri, false), eqops);
	cpath->custom_private = lappend(cpath->custom_private,
									makeInteger((int) Min(ngroups, (double) PG_INT32_MAX)));
	cpath->custom_private = lappend(cpath->custom_private,
									makeInteger((int) input_rel->relid));
	cpath->methods = &ap_agg_path_methods;
	t_active = ap_agg_cost(root, input_rel, disk_ri, keys, aggrefs, having, aggcosts,
						   ngroups, target, group_pathkeys, cpath, &host_s, &host_sure);
	if (ApHostSlower(t_active, host_s, host_sure, 1.0))
		return;					/* the host's own aggregation is faster */
	if ((!active_pg_force && ApPathDominated(output_rel->pathlist, &cpath->path, false)) ||
		!ApExtensionCreated())
		return;

	if (active_pg_force)
	{
		/* testing switch: the only way to aggregate this relation */
		output_rel->pathlist = list_make1(cpath);
		output_rel->partial_pathlist = NIL;
	}
	else
		add_path(output_rel, &cpath->path);
}

/* The hook: chain, then offer ActiveAgg on the grouped rel. */
static void
ap_create_upper_paths(PlannerInfo *root, UpperRelationKind stage,
					  RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);

	/* in the distributed-device mode the disks only ship pages */
	if (!active_pg_enable || !active_pg_enable_agg ||
		active_pg_scan_mode == AP_SCAN_MODE_PAGES)
		return;
	if (stage == UPPERREL_GROUP_AGG)
	{
		GroupPathExtraData *gextra = (GroupPathExtraData *) extra;
		AggClauseCosts aggcosts;

		/* partitionwise aggregation calls again per child: not ours */
		if (gextra == NULL || gextra->patype != PARTITIONWISE_AGGREGATE_NONE)
			return;
		/* what create_grouping_paths costs PostgreSQL's own Agg with */
		MemSet(&aggcosts, 0, sizeof(aggcosts));
		if (root->parse->hasAggs)
			get_agg_clause_costs(root, AGGSPLIT_SIMPLE, &aggcosts);
		ap_add_agg_path(root, input_rel, output_rel, output_rel->reltarget,
						root->parse->groupClause, root->group_pathkeys,
						gextra->havingQual, &aggcosts);
	}
	else if (stage == UPPERREL_DISTINCT)
	{
		Query	   *parse = root->parse;

		/*
		 * SELECT DISTINCT over a plain scan: duplicate elimination at the
		 * disks is a grouping without aggregates (Riedel et al.'s "project").  With
		 * aggregates or GROUP BY the input is already grouped; DISTINCT ON
		 * keeps one row per key, which is not a grouping.
		 */
		if (parse->hasAggs || parse->groupClause != NIL || parse->hasDistinctOn ||
			parse->hasWindowFuncs || parse->distinctClause == NIL)
			return;
		/* the distinct rel has no target of its own; the planner keeps it here */
		ap_add_agg_path(root, input_rel, output_rel, root->upper_targets[UPPERREL_DISTINCT],
						parse->distinctClause, root->distinct_pathkeys, NULL, NULL);
	}
}

/* Params the expressions use (finalize_plan must see them: see activeagg.h). */
static bool
ap_collect_params(Node *node, List **params)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
	{
		if (!list_member(*params, node))
			*params = lappend(*params, node);
		return false;
	}
	return expression_tree_walker(node, ap_collect_params, (void *) params);
}

/* Turn the chosen ActiveAgg path into a CustomScan plan node. */
static Plan *
ap_agg_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				 List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *keys = list_nth(best_path->custom_private, AP_AGG_PATH_KEYS);
	List	   *aggrefs = list_nth(best_path->custom_private, AP_AGG_PATH_AGGREFS);
	List	   *having = list_nth(best_path->custom_private, AP_AGG_PATH_HAVING);
	List	   *disk_quals = list_nth(best_path->custom_private, AP_AGG_PATH_DISK_QUALS);
	List	   *eqops = list_nth(best_path->custom_private, AP_AGG_PATH_EQOPS);
	Node	   *ngroups = list_nth(best_path->custom_private, AP_AGG_PATH_NGROUPS);
	List	   *scan_tlist = NIL;
	List	   *params = NIL;
	Index		relid = intVal(list_nth(best_path->custom_private, AP_AGG_PATH_RELID));
	ListCell   *lc;

	foreach(lc, keys)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(lfirst(lc)),
											 list_length(scan_tlist) + 1, NULL, false));
	foreach(lc, aggrefs)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(lfirst(lc)),
											 list_length(scan_tlist) + 1, NULL, false));

	(void) ap_collect_params((Node *) disk_quals, &params);
	(void) ap_collect_params((Node *) scan_tlist, &params);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = copyObject(having);
	cscan->scan.scanrelid = relid;
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = params;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_private = list_make5(makeInteger((int) relid),
									   copyObject(disk_quals),
									   makeInteger(list_length(keys)),
									   list_copy(eqops),
									   copyObject(ngroups));
	cscan->custom_private = lappend(cscan->custom_private,
									copyObject(list_nth(best_path->custom_private,
														AP_AGG_PATH_MODEL)));
	cscan->methods = &ApAggPlanMethods;
	return &cscan->scan.plan;
}

/* Install the hook and register the plan methods (for readfuncs). */
void
ApAggPlannerInit(void)
{
	RegisterCustomScanMethods(&ApAggPlanMethods);
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = ap_create_upper_paths;
}
