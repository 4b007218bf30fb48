/*
 * bloom_planner.c
 *	  set_join_pathlist_hook: joins whose big side's ActiveScan carries a
 *	  Bloom filter of the small side's join keys (seeds/000 section 3.3.3).
 *
 * Shape (brief section 7 (a)): the big side's ActiveScan gets a child plan
 * (custom_plans) producing the small side's keys; at its first execution it
 * runs the child, builds the filter and ships it with the scan.  PostgreSQL's
 * own Hash Join above does the exact join, so the filter only has to be
 * conservative: a row it drops must be one that cannot join.
 *
 * When a filter is offered.  For an equi-join between a base relation with an
 * ActiveScan path (big) and another base relation (small):
 *	- the join type lets the big side lose its non-joining rows: INNER, SEMI
 *	  (either side), the nullable side of LEFT/RIGHT.  Never the preserved
 *	  side of an outer join, never either side of an anti or full join;
 *	  for outer joins only the join's own clauses count (not WHERE clauses
 *	  pushed down to it);
 *	- key clauses are whitelisted equalities (shippable.c) of the families
 *	  ap_bloom.h normalizes: integers in any mix, numeric, date, text/varchar
 *	  and bpchar, the latter two only under a deterministic collation; the big
 *	  side of each is a column, the small side any non-volatile expression;
 *	- the small side is a table (not a subquery, whose path belongs to its
 *	  own planner run and cannot be planned twice) whose rows are the ones
 *	  the join sees: no volatile restriction, no lateral reference, an
 *	  unparameterized path.
 * The child runs the small side's cheapest path a second time (the join reads
 * it too): cheap when it is small, and costed.
 *
 * Cost.  With n_s distinct keys on the small side and n_b on the big side,
 * a fraction min(1, n_s / n_b) of the big side's rows can join (containment
 * of value sets); with the filter's expected false-positive rate f the disks
 * return (frac + (1 - frac) f) of the rows they returned before.  The path
 * pays the child's cost and the hashing of its keys at startup and a probe
 * per tuple at the disks, and saves the host's work on the dropped rows; the
 * join above is costed by PostgreSQL with the smaller row count, which is
 * where most of the saving shows.  active_pg.force_bloom (testing) makes the
 * path win wherever it is possible.
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "active_pg.h"
#include "bloom.h"
#include "client.h"
#include "shippable.h"

/* Smallest disk CPU ratio the cost model divides by (as planner.c). */
#define AP_BLOOM_CPU_RATIO_MIN		0.001
/* active_pg.force_bloom scales the cost of filtered joins by this. */
#define AP_BLOOM_FORCE_COST_FACTOR	1e-6
/* Do not bother with a filter expected to keep more than this share of rows. */
#define AP_BLOOM_USEFUL_SEL			0.9

/* One key column pair of a candidate filter. */
typedef struct ApBloomKey
{
	AttrNumber	attno;			/* big side column */
	ApTypeKind	kind;			/* its kind */
	Expr	   *small_expr;		/* small side expression */
	ApTypeKind	small_kind;
} ApBloomKey;

static set_join_pathlist_hook_type prev_set_join_pathlist_hook = NULL;

/* The ActiveScan path methods (planner.c's), captured from the first path seen. */
static const CustomPathMethods *ap_scan_path_methods = NULL;

static Plan *ap_bloom_plan_path(PlannerInfo *root, RelOptInfo *rel,
								CustomPath *best_path, List *tlist,
								List *clauses, List *custom_plans);

static const CustomPathMethods ap_bloom_path_methods = {
	.CustomName = AP_SCAN_NAME,
	.PlanCustomPath = ap_bloom_plan_path,
};

/* The unparameterized ActiveScan path of a base relation, or NULL. */
static CustomPath *
ap_bloom_scan_path(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);
		CustomPath *cpath;

		if (!IsA(path, CustomPath) || path->param_info != NULL)
			continue;
		cpath = (CustomPath *) path;
		if (cpath->methods == &ap_bloom_path_methods ||
			strcmp(cpath->methods->CustomName, AP_SCAN_NAME) != 0)
			continue;
		/* already carrying filters (not produced today) */
		if (list_nth(cpath->custom_private, AP_PATH_PRIV_BLOOMS) != NIL)
			continue;
		ap_scan_path_methods = cpath->methods;
		return cpath;
	}
	return NULL;
}

/* Key families: which kinds may meet under which comparison. */
static bool
ap_bloom_kind_fits(ApCmp cmp, ApTypeKind kind)
{
	switch (cmp)
	{
		case AP_CMP_INT:
			return kind == AP_TYPE_INT2 || kind == AP_TYPE_INT4 || kind == AP_TYPE_INT8;
		case AP_CMP_NUMERIC:
			return kind == AP_TYPE_NUMERIC;
		case AP_CMP_DATE:
			return kind == AP_TYPE_DATE;
		case AP_CMP_TEXT:
			return kind == AP_TYPE_TEXT || kind == AP_TYPE_VARCHAR;
		case AP_CMP_BPCHAR:
			return kind == AP_TYPE_BPCHAR;
		default:
			return false;
	}
}

/* The column under binary-compatible relabelings, or NULL. */
static Var *
ap_bloom_column(Expr *expr)
{
	while (expr && IsA(expr, RelabelType))
		expr = ((RelabelType *) expr)->arg;
	if (expr && IsA(expr, Var) && ((Var *) expr)->varattno > 0 &&
		((Var *) expr)->varlevelsup == 0)
		return (Var *) expr;
	return NULL;
}

/*
 * Is rinfo an equality the filter can use between big and small?  Fills key
 * on success.
 */
static bool
ap_bloom_clause_key(RestrictInfo *rinfo, RelOptInfo *big, RelOptInfo *small,
					ApBloomKey *key)
{
	OpExpr	   *op;
	Expr	   *big_expr;
	Var		   *var;
	ApOp		apop;
	ApCmp		cmp;

	if (!rinfo->can_join || !IsA(rinfo->clause, OpExpr))
		return false;
	op = (OpExpr *) rinfo->clause;
	if (list_length(op->args) != 2 || op->opretset)
		return false;
	if (bms_is_subset(rinfo->left_relids, big->relids) &&
		bms_is_subset(rinfo->right_relids, small->relids) &&
		!bms_is_empty(rinfo->right_relids))
	{
		big_expr = linitial(op->args);
		key->small_expr = lsecond(op->args);
	}
	else if (bms_is_subset(rinfo->right_relids, big->relids) &&
			 bms_is_subset(rinfo->left_relids, small->relids) &&
			 !bms_is_empty(rinfo->left_relids))
	{
		big_expr = lsecond(op->args);
		key->small_expr = linitial(op->args);
	}
	else
		return false;

	set_opfuncid(op);
	if (!ApLookupOperator(op->opfuncid, &apop, &cmp) || apop != AP_OP_EQ)
		return false;
	/* text and bpchar equality are bytewise only under deterministic collations */
	if ((cmp == AP_CMP_TEXT || cmp == AP_CMP_BPCHAR) &&
		(!OidIsValid(op->inputcollid) || !get_collation_isdeterministic(op->inputcollid)))
		return false;

	var = ap_bloom_column(big_expr);
	if (var == NULL || !bms_is_member(var->varno, big->relids))
		return false;
	key->attno = var->varattno;
	key->kind = ApTypeKindOf(var->vartype);
	key->small_kind = ApTypeKindOf(exprType((Node *) key->small_expr));
	if (!ap_bloom_kind_fits(cmp, key->kind) || !ap_bloom_kind_fits(cmp, key->small_kind))
		return false;
	if (contain_volatile_functions((Node *) key->small_expr) ||
		contain_subplans((Node *) key->small_expr))
		return false;
	return true;
}

/* Collect the filter's keys from the join clauses; returns how many. */
static int
ap_bloom_keys(RelOptInfo *joinrel, JoinType jointype, List *restrictlist,
			  RelOptInfo *big, RelOptInfo *small, ApBloomKey *keys)
{
	int			nkeys = 0;
	ListCell   *lc;

	foreach(lc, restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		ApBloomKey	key;
		bool		dup = false;

		/* an outer join's WHERE clauses do not decide what joins */
		if (IS_OUTER_JOIN(jointype) && RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids))
			continue;
		if (nkeys == AP_BLOOM_KEYS_MAX || !ap_bloom_clause_key(rinfo, big, small, &key))
			continue;
		for (int i = 0; i < nkeys; i++)
		{
			if (keys[i].attno == key.attno && equal(keys[i].small_expr, key.small_expr))
				dup = true;
		}
		if (!dup)
			keys[nkeys++] = key;
	}
	return nkeys;
}

/*
 * Hash clauses for outerrel/innerrel as hash_inner_and_outer (joinpath.c)
 * picks them, with outer_is_left set.
 */
static List *
ap_bloom_hashclauses(RelOptInfo *joinrel, JoinType jointype, List *restrictlist,
					 RelOptInfo *outerrel, RelOptInfo *innerrel)
{
	List	   *hashclauses = NIL;
	ListCell   *lc;

	foreach(lc, restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (IS_OUTER_JOIN(jointype) && RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids))
			continue;
		if (!rinfo->can_join || rinfo->hashjoinoperator == InvalidOid)
			continue;
		if (bms_is_subset(rinfo->left_relids, outerrel->relids) &&
			bms_is_subset(rinfo->right_relids, innerrel->relids))
			rinfo->outer_is_left = true;
		else if (bms_is_subset(rinfo->left_relids, innerrel->relids) &&
				 bms_is_subset(rinfo->right_relids, outerrel->relids))
			rinfo->outer_is_left = false;
		else
			continue;
		hashclauses = lappend(hashclauses, rinfo);
	}
	return hashclauses;
}

/* "rel.col" for a small side expression, or a deparsed-ish fallback. */
static char *
ap_bloom_small_name(PlannerInfo *root, Expr *expr)
{
	Var		   *var = ap_bloom_column(expr);
	RangeTblEntry *rte;

	if (var == NULL)
		return pstrdup("(expression)");
	rte = planner_rt_fetch(var->varno, root);
	if (rte->rtekind == RTE_RELATION)
		return psprintf("%s.%s", rte->eref->aliasname,
						get_attname(rte->relid, var->varattno, false));
	return psprintf("%s.%s", rte->eref->aliasname,
					strVal(list_nth(rte->eref->colnames, var->varattno - 1)));
}

/* EXPLAIN label: "l_partkey IN part.p_partkey", "(a, b) IN (t.x, t.y)". */
static char *
ap_bloom_label(PlannerInfo *root, RelOptInfo *big, ApBloomKey *keys, int nkeys)
{
	RangeTblEntry *rte = planner_rt_fetch(big->relid, root);
	StringInfoData big_str;
	StringInfoData small_str;

	initStringInfo(&big_str);
	initStringInfo(&small_str);
	for (int i = 0; i < nkeys; i++)
	{
		appendStringInfo(&big_str, "%s%s", i > 0 ? ", " : "",
						 get_attname(rte->relid, keys[i].attno, false));
		appendStringInfo(&small_str, "%s%s", i > 0 ? ", " : "",
						 ap_bloom_small_name(root, keys[i].small_expr));
	}
	if (nkeys == 1)
		return psprintf("%s IN %s", big_str.data, small_str.data);
	return psprintf("(%s) IN (%s)", big_str.data, small_str.data);
}

/* Plan-time entry of one filter (bloom.h: ApBloomPrivIndex) plus the small exprs. */
static List *
ap_bloom_private(char *label, ApBloomKey *keys, int nkeys, double est_keys)
{
	List	   *attnos = NIL;
	List	   *kinds = NIL;
	List	   *host_kinds = NIL;

	for (int i = 0; i < nkeys; i++)
	{
		attnos = lappend_int(attnos, keys[i].attno);
		kinds = lappend_int(kinds, keys[i].kind);
		host_kinds = lappend_int(host_kinds, keys[i].small_kind);
	}
	return list_make5(makeString(label), attnos, kinds, host_kinds,
					  makeFloat(psprintf("%.0f", est_keys)));
}

/*
 * The bloom-carrying copy of the big side's ActiveScan, costed as in the
 * file header; its rows are those the filter is expected to keep.
 */
static CustomPath *
ap_bloom_make_path(PlannerInfo *root, RelOptInfo *big, RelOptInfo *small,
				   CustomPath *base, ApBloomKey *keys, int nkeys, char *label)
{
	CustomPath *bp = makeNode(CustomPath);
	Path	   *child = small->cheapest_total_path;
	List	   *big_exprs = NIL;
	List	   *small_exprs = NIL;
	List	   *entry;
	List	   *priv;
	double		nd_small;
	double		nd_big;
	double		frac;
	double		fpr;
	double		sel;
	uint32		nblocks;
	uint32		k;
	int			ndisks = Max(ApConfiguredDiskCount(), 1);
	double		cpu_ratio = Max(active_pg_disk_cpu_ratio, AP_BLOOM_CPU_RATIO_MIN);
	Cost		build;
	Cost		probe;
	Cost		saved;

	for (int i = 0; i < nkeys; i++)
	{
		Oid			relid = planner_rt_fetch(big->relid, root)->relid;

		big_exprs = lappend(big_exprs, makeVar(big->relid, keys[i].attno,
											   get_atttype(relid, keys[i].attno),
											   -1, InvalidOid, 0));
		small_exprs = lappend(small_exprs, keys[i].small_expr);
	}
	nd_small = Min(estimate_num_groups(root, small_exprs, small->rows, NULL, NULL), small->rows);
	nd_big = estimate_num_groups(root, big_exprs, Max(big->rows, 1.0), NULL, NULL);
	frac = Min(1.0, nd_small / Max(nd_big, 1.0));
	ap_bloom_size(nd_small, (uint64) active_pg_bloom_max_bytes, AP_BLOOM_TARGET_FPR, &nblocks, &k);
	fpr = ap_bloom_fpr(nd_small, nblocks, k);
	sel = frac + (1.0 - frac) * fpr;

	memcpy(bp, base, sizeof(CustomPath));
	/* the filter's child runs in whichever process runs the scan: keep it in the leader */
	bp->path.parallel_safe = false;
	bp->methods = &ap_bloom_path_methods;
	bp->custom_paths = list_make1(child);
	entry = ap_bloom_private(label, keys, nkeys, nd_small);
	entry = lappend(entry, makeInteger(active_pg_bloom_max_bytes));
	/* the small side's key expressions become the child's target list */
	entry = lappend(entry, small_exprs);
	priv = list_copy(base->custom_private);
	list_nth_cell(priv, AP_PATH_PRIV_BLOOMS)->ptr_value = list_make1(entry);
	bp->custom_private = priv;

	build = child->total_cost + cpu_operator_cost * nkeys * child->rows;
	probe = cpu_operator_cost * nkeys * big->tuples / (ndisks * cpu_ratio);
	saved = (big->rows - big->rows * sel) * cpu_tuple_cost;
	bp->path.rows = clamp_row_est(big->rows * sel);
	bp->path.startup_cost = base->path.startup_cost + build;
	bp->path.total_cost = Max(base->path.total_cost + build + probe - saved,
							  bp->path.startup_cost);
	return bp;
}

/* Offer the Hash Join whose big side (outer or inner) carries a filter. */
static void
ap_bloom_try(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			 RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra,
			 bool big_is_outer)
{
	RelOptInfo *big = big_is_outer ? outerrel : innerrel;
	RelOptInfo *small = big_is_outer ? innerrel : outerrel;
	ApBloomKey	keys[AP_BLOOM_KEYS_MAX];
	int			nkeys;
	CustomPath *base;
	CustomPath *bp;
	List	   *hashclauses;
	JoinCostWorkspace workspace;
	HashPath   *hpath;
	Path	   *outer_path;
	Path	   *inner_path;

	if (big->reloptkind != RELOPT_BASEREL || small->reloptkind != RELOPT_BASEREL)
		return;
	/* a subquery's path cannot be planned twice (it owns its subroot) */
	if (planner_rt_fetch(small->relid, root)->rtekind != RTE_RELATION)
		return;
	if (!bms_is_empty(big->lateral_relids) || !bms_is_empty(small->lateral_relids))
		return;
	if (small->cheapest_total_path == NULL ||
		small->cheapest_total_path->param_info != NULL ||
		IS_DUMMY_REL(small))
		return;
	if ((base = ap_bloom_scan_path(big)) == NULL)
		return;
	/* the child must produce the rows the join sees */
	if (contain_volatile_functions((Node *) small->baserestrictinfo))
		return;
	nkeys = ap_bloom_keys(joinrel, jointype, extra->restrictlist, big, small, keys);
	if (nkeys == 0)
		return;
	hashclauses = ap_bloom_hashclauses(joinrel, jointype, extra->restrictlist,
									   outerrel, innerrel);
	if (hashclauses == NIL)
		return;

	bp = ap_bloom_make_path(root, big, small, base, keys, nkeys,
							ap_bloom_label(root, big, keys, nkeys));
	if (!active_pg_force_bloom && bp->path.rows > AP_BLOOM_USEFUL_SEL * big->rows)
		return;

	outer_path = big_is_outer ? &bp->path : small->cheapest_total_path;
	inner_path = big_is_outer ? small->cheapest_total_path : &bp->path;
	initial_cost_hashjoin(root, &workspace, jointype, hashclauses,
						  outer_path, inner_path, extra, false);
	hpath = create_hashjoin_path(root, joinrel, jointype, &workspace, extra,
								 outer_path, inner_path, false,
								 extra->restrictlist, NULL, hashclauses);
	if (active_pg_force_bloom)
	{
		/*
		 * testing: win against every other path of this join, while the
		 * cheaper of two filtered paths (which side carries the filter)
		 * still wins among themselves
		 */
		hpath->jpath.path.startup_cost *= AP_BLOOM_FORCE_COST_FACTOR;
		hpath->jpath.path.total_cost *= AP_BLOOM_FORCE_COST_FACTOR;
	}
	add_path(joinrel, &hpath->jpath.path);
}

/* set_join_pathlist_hook: offer Bloom-filtered joins where the join type allows. */
static void
ap_bloom_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
					   RelOptInfo *outerrel, RelOptInfo *innerrel,
					   JoinType jointype, JoinPathExtraData *extra)
{
	if (prev_set_join_pathlist_hook)
		prev_set_join_pathlist_hook(root, joinrel, outerrel, innerrel, jointype, extra);
	if (!active_pg_enable || !active_pg_enable_bloom)
		return;

	switch (jointype)
	{
		case JOIN_INNER:
		case JOIN_SEMI:
			/* both sides lose only rows that cannot join */
			ap_bloom_try(root, joinrel, outerrel, innerrel, jointype, extra, true);
			ap_bloom_try(root, joinrel, outerrel, innerrel, jointype, extra, false);
			break;
		case JOIN_LEFT:
			/* the inner side is the nullable one */
			ap_bloom_try(root, joinrel, outerrel, innerrel, jointype, extra, false);
			break;
		case JOIN_RIGHT:
			/* the outer side is the nullable one */
			ap_bloom_try(root, joinrel, outerrel, innerrel, jointype, extra, true);
			break;
		default:
			/* anti and full joins keep every row of both sides' relevance */
			break;
	}
}

/*
 * PlanCustomPath of the filtered scan: planner.c's plan, plus the child
 * plans with the key expressions as their target lists; the small side's
 * expressions leave custom_private (they live in the child's tlist, where
 * setrefs processes them).
 */
static Plan *
ap_bloom_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan;
	List	   *blooms;
	List	   *plan_blooms = NIL;
	List	   *children = NIL;
	ListCell   *lc;
	ListCell   *lp;

	cscan = (CustomScan *) ap_scan_path_methods->PlanCustomPath(root, rel, best_path, tlist,
																clauses, NIL);
	blooms = list_nth(cscan->custom_private, AP_PRIV_BLOOMS);
	forboth(lc, blooms, lp, custom_plans)
	{
		List	   *entry = lfirst(lc);
		List	   *small_exprs = llast(entry);
		List	   *child_tlist = NIL;
		int			resno = 1;
		ListCell   *le;

		foreach(le, small_exprs)
			child_tlist = lappend(child_tlist,
								  makeTargetEntry(lfirst(le), resno++, NULL, false));
		children = lappend(children, change_plan_targetlist(lfirst(lp), child_tlist, false));
		plan_blooms = lappend(plan_blooms, list_truncate(list_copy(entry), AP_BLOOM_PRIV_COUNT));
	}
	list_nth_cell(cscan->custom_private, AP_PRIV_BLOOMS)->ptr_value = plan_blooms;
	cscan->custom_plans = children;
	return &cscan->scan.plan;
}

/* Install the join hook (after planner.c registered the scan). */
void
ApBloomPlannerInit(void)
{
	prev_set_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = ap_bloom_join_pathlist;
}
