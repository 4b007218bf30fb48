/*
 * bloom_planner.c
 *	  set_join_pathlist_hook: joins whose big side's ActiveScan carries Bloom
 *	  filters of the small sides' join keys (seeds/000 section 3.3.3).
 *
 * Shape (brief section 7 (a)): the big side's ActiveScan gets one child plan
 * per filter (custom_plans) producing a small side's keys; at its first
 * execution it runs the children, builds the filters and ships them with the
 * scan.  PostgreSQL's own Hash Joins above do the exact joins, so a filter
 * only has to be conservative: a row it drops must be one that cannot join.
 *
 * When a filter is offered.  For an equi-join between a big side holding a
 * base relation B with an ActiveScan path and a base relation S (small):
 *	- the join type lets the big side lose its non-joining rows: INNER, SEMI
 *	  (either side), the nullable side of LEFT/RIGHT.  Never the preserved
 *	  side of an outer join, never either side of an anti or full join;
 *	  for outer joins only the join's own clauses count (not WHERE clauses
 *	  pushed down to it);
 *	- key clauses are whitelisted equalities (shippable.c) of the families
 *	  ap_bloom.h normalizes: integers in any mix, numeric, date, text/varchar
 *	  and bpchar, the latter two only under a deterministic collation; the B
 *	  side of each is a column, the small side any non-volatile expression;
 *	- the small side is a table (not a subquery, whose path belongs to its
 *	  own planner run and cannot be planned twice) whose rows are the ones
 *	  the join sees: no volatile restriction, no lateral reference, an
 *	  unparameterized path.
 * The child runs the small side's cheapest path a second time (the join reads
 * it too): cheap when it is small, and costed.
 *
 * Several filters on one scan (a chain).  The big side is either B itself
 * (the first filter: B join S_0) or a join relation X holding one of our own
 * filtered joins: a left-deep stack of Hash Joins, level l joining S_l, with
 * B's filtered scan at the bottom.  Joining X with S_n, the chain is rebuilt
 * with one more filter on B's scan (S_n's keys) and every level's Hash Join
 * made again over it; S_n's join goes on top.  This is sound because S_n's
 * join removes every row derived from a B row whose key is not among S_n's
 * keys: such a row leaves the levels below either with that key or, where B
 * is the nullable side of a lower outer join, null-extended, and both fail
 * the strict equality at S_n's join; rows not derived from it are the same.
 * The levels below are all joins where B may lose rows (each carried its own
 * filter under the rules above).  The key may also come through an
 * equivalence class: S_n's clause names another member (l_partkey =
 * p_partkey = ps_partkey joined as p_partkey = ps_partkey) whose equality
 * with B's column X already enforces; only when every level and S_n's join
 * are inner joins (or S_n's a semi join), so that no outer join nulls it.
 * Each filter must pay on its own (AP_BLOOM_USEFUL_SEL); add_path decides
 * between one filter, several, and none.  At most AP_BLOOM_FILTERS_MAX.
 *
 * Cost.  With n_s distinct keys on the small side and n_b on the big side,
 * a fraction min(1, n_s / n_b) of B's rows can join (containment of value
 * sets).  n_b is at least the small table's unrestricted distinct count:
 * sampled distinct counts of a big table's foreign key fall far short of the
 * truth (l_orderkey at SF 1: 0.4 of 1.5 million), and eqjoinsel takes the
 * larger of the two columns' counts for the join too.  With the filter's expected false-positive rate f the disks return
 * (frac + (1 - frac) f) of the rows they returned before, filters taken as
 * independent.  The path pays the children's cost and the hashing of their
 * keys at startup and a probe per tuple reaching each filter at the disks,
 * and saves the host's work on the dropped rows; the joins above are costed
 * by PostgreSQL with the smaller row counts, which is where most of the
 * saving shows (a rebuilt level's rows are its join's estimate times the
 * filters added above it).  active_pg.force_bloom (testing) makes the path
 * win wherever it is possible.
 */
#include "postgres.h"

#include "miscadmin.h"
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

/*
 * One level of a chain: the filter of S_l's keys on B's scan and the Hash
 * Join of S_l above the level below.
 */
typedef struct ApBloomLevel
{
	/* the filter */
	List	   *entry;			/* custom_private entry: ApBloomPrivIndex, then small exprs */
	Path	   *child;			/* S_l's cheapest path: builds the filter */
	int			nkeys;
	double		sel;			/* share of B's rows it keeps */
	/* the join */
	RelOptInfo *joinrel;
	RelOptInfo *small;
	JoinType	jointype;
	JoinPathExtraData extra;	/* a copy: the hook's lives on the caller's stack */
	bool		big_is_outer;
	HashPath   *hpath;			/* built over this scan path */
} ApBloomLevel;

/*
 * The filtered ActiveScan path of B.  Only this file creates paths with
 * ap_bloom_path_methods, always of this size, so such a CustomPath may be
 * read as an ApBloomPath.
 */
typedef struct ApBloomPath
{
	CustomPath	cpath;			/* first: this is the path */
	RelOptInfo *big;			/* B */
	CustomPath *base;			/* B's unfiltered ActiveScan path */
	int			nlevels;
	ApBloomLevel levels[AP_BLOOM_FILTERS_MAX];
} ApBloomPath;

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

/*
 * The chain whose top Hash Join is path, or NULL.  The filtered scan is
 * found by descending through Hash Joins; it is the chain's only if its
 * record of the top level is this very path.
 */
static ApBloomPath *
ap_bloom_chain_of(Path *path)
{
	Path	   *p = path;

	for (int depth = 0; depth < AP_BLOOM_FILTERS_MAX; depth++)
	{
		HashPath   *hp;
		Path	   *sides[2];

		if (!IsA(p, HashPath))
			return NULL;
		hp = (HashPath *) p;
		sides[0] = hp->jpath.outerjoinpath;
		sides[1] = hp->jpath.innerjoinpath;
		p = NULL;
		for (int i = 0; i < 2; i++)
		{
			if (IsA(sides[i], CustomPath) &&
				((CustomPath *) sides[i])->methods == &ap_bloom_path_methods)
			{
				ApBloomPath *bp = (ApBloomPath *) sides[i];

				if (bp->nlevels > 0 && bp->levels[bp->nlevels - 1].hpath == (HashPath *) path)
					return bp;
				return NULL;
			}
			if (IsA(sides[i], HashPath) && p == NULL)
				p = sides[i];
		}
		if (p == NULL)
			return NULL;
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
 * A column of B equal to the other side of rinfo through rinfo's
 * equivalence class, or NULL.  Only plain members of an intact class that
 * no outer join nulls.
 */
static Expr *
ap_bloom_ec_member(RestrictInfo *rinfo, RelOptInfo *b)
{
	EquivalenceClass *ec = rinfo->parent_ec;
	ListCell   *lc;

	if (ec == NULL)
		return NULL;
	while (ec->ec_merged != NULL)
		ec = ec->ec_merged;
	if (ec->ec_has_volatile || ec->ec_broken || ec->ec_below_outer_join || ec->ec_has_const)
		return NULL;
	foreach(lc, ec->ec_members)
	{
		EquivalenceMember *em = lfirst_node(EquivalenceMember, lc);

		if (em->em_is_child || em->em_is_const || !bms_is_empty(em->em_nullable_relids))
			continue;
		if (!bms_equal(em->em_relids, b->relids))
			continue;
		if (ap_bloom_column(em->em_expr) != NULL)
			return em->em_expr;
	}
	return NULL;
}

/*
 * Is rinfo an equality the filter can use between B (within the big side
 * bigrel) and small?  Fills key on success.  With allow_ec, a clause naming
 * another member of bigrel may stand for B's column of its equivalence class.
 */
static bool
ap_bloom_clause_key(RestrictInfo *rinfo, RelOptInfo *bigrel, RelOptInfo *b,
					RelOptInfo *small, bool allow_ec, ApBloomKey *key)
{
	OpExpr	   *op;
	Expr	   *big_expr;
	Relids		big_side;
	Var		   *var;
	ApOp		apop;
	ApCmp		cmp;

	if (!rinfo->can_join || !IsA(rinfo->clause, OpExpr))
		return false;
	op = (OpExpr *) rinfo->clause;
	if (list_length(op->args) != 2 || op->opretset)
		return false;
	if (bms_is_subset(rinfo->right_relids, small->relids) &&
		!bms_is_empty(rinfo->right_relids) &&
		bms_is_subset(rinfo->left_relids, bigrel->relids))
	{
		big_expr = linitial(op->args);
		big_side = rinfo->left_relids;
		key->small_expr = lsecond(op->args);
	}
	else if (bms_is_subset(rinfo->left_relids, small->relids) &&
			 !bms_is_empty(rinfo->left_relids) &&
			 bms_is_subset(rinfo->right_relids, bigrel->relids))
	{
		big_expr = lsecond(op->args);
		big_side = rinfo->right_relids;
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

	var = bms_is_subset(big_side, b->relids) ? ap_bloom_column(big_expr) : NULL;
	if (var == NULL && allow_ec)
	{
		Expr	   *member = ap_bloom_ec_member(rinfo, b);

		var = member != NULL ? ap_bloom_column(member) : NULL;
	}
	if (var == NULL || !bms_is_member(var->varno, b->relids))
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
			  RelOptInfo *bigrel, RelOptInfo *b, RelOptInfo *small, bool allow_ec,
			  ApBloomKey *keys)
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
		if (nkeys == AP_BLOOM_KEYS_MAX ||
			!ap_bloom_clause_key(rinfo, bigrel, b, small, allow_ec, &key))
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

/*
 * EXPLAIN label: "l_partkey IN part.p_partkey", "(a, b) IN (t.x, t.y)",
 * "l_orderkey IN orders.o_orderkey of (orders JOIN customer)".
 */
static char *
ap_bloom_label(PlannerInfo *root, RelOptInfo *big, RelOptInfo *small, ApBloomKey *keys,
			   int nkeys)
{
	RangeTblEntry *rte = planner_rt_fetch(big->relid, root);
	StringInfoData big_str;
	StringInfoData small_str;
	char	   *label;

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
		label = psprintf("%s IN %s", big_str.data, small_str.data);
	else
		label = psprintf("(%s) IN (%s)", big_str.data, small_str.data);
	/* a join result: name its tables */
	if (bms_membership(small->relids) == BMS_MULTIPLE)
	{
		StringInfoData rels;
		int			relid = -1;

		initStringInfo(&rels);
		while ((relid = bms_next_member(small->relids, relid)) >= 0)
			appendStringInfo(&rels, "%s%s", rels.len > 0 ? " JOIN " : "",
							 planner_rt_fetch(relid, root)->eref->aliasname);
		label = psprintf("%s of (%s)", label, rels.data);
	}
	return label;
}

/*
 * Plan-time entry of one filter (bloom.h: ApBloomPrivIndex), then the small
 * side's key expressions (the child's target list; see ap_bloom_plan_path).
 */
static List *
ap_bloom_private(char *label, ApBloomKey *keys, int nkeys, double est_keys)
{
	List	   *attnos = NIL;
	List	   *kinds = NIL;
	List	   *host_kinds = NIL;
	List	   *small_exprs = NIL;
	List	   *entry;

	for (int i = 0; i < nkeys; i++)
	{
		attnos = lappend_int(attnos, keys[i].attno);
		kinds = lappend_int(kinds, keys[i].kind);
		host_kinds = lappend_int(host_kinds, keys[i].small_kind);
		small_exprs = lappend(small_exprs, keys[i].small_expr);
	}
	entry = list_make5(makeString(label), attnos, kinds, host_kinds,
					   makeFloat(psprintf("%.0f", est_keys)));
	entry = lappend(entry, makeInteger(active_pg_bloom_max_bytes));
	return lappend(entry, small_exprs);
}

/*
 * Share of B's rows a filter of small's keys keeps (see the file header);
 * *nd_small gets the small side's estimated distinct keys.
 */
static double
ap_bloom_selectivity(PlannerInfo *root, RelOptInfo *b, RelOptInfo *small,
					 ApBloomKey *keys, int nkeys, double *nd_small)
{
	Oid			relid = planner_rt_fetch(b->relid, root)->relid;
	List	   *big_exprs = NIL;
	List	   *small_exprs = NIL;
	double		nd_big;
	double		frac;
	uint32		len;
	uint32		k;

	for (int i = 0; i < nkeys; i++)
	{
		big_exprs = lappend(big_exprs, makeVar(b->relid, keys[i].attno,
											   get_atttype(relid, keys[i].attno),
											   -1, InvalidOid, 0));
		small_exprs = lappend(small_exprs, keys[i].small_expr);
	}
	*nd_small = Min(estimate_num_groups(root, small_exprs, small->rows, NULL, NULL),
					small->rows);
	nd_big = estimate_num_groups(root, big_exprs, Max(b->rows, 1.0), NULL, NULL);

	/* the small table's unrestricted distinct count is a floor (file header) */
	if (nkeys == 1)
	{
		VariableStatData vardata;
		bool		isdefault;
		double		nd_domain;

		examine_variable(root, (Node *) keys[0].small_expr, 0, &vardata);
		nd_domain = get_variable_numdistinct(&vardata, &isdefault);
		ReleaseVariableStats(vardata);
		if (!isdefault)
			nd_big = Max(nd_big, nd_domain);
	}
	frac = Min(1.0, *nd_small / Max(nd_big, 1.0));
	ApBloomGeometry(*nd_small, active_pg_bloom_max_bytes, 0, &len, &k);
	return frac + (1.0 - frac) * ap_bloom_fpr_len(*nd_small, len, k);
}

/*
 * Rows and costs of the filtered scan from the unfiltered one and its
 * filters (see the file header), and its custom_paths and custom_private.
 * The disks probe the filters in custom_private's order and stop at the
 * first that drops a row: the most selective goes first.
 */
static void
ap_bloom_cost_scan(ApBloomPath *bp)
{
	int			order[AP_BLOOM_FILTERS_MAX];
	RelOptInfo *b = bp->big;
	CustomPath *base = bp->base;
	int			ndisks = Max(ApConfiguredDiskCount(), 1);
	double		cpu_ratio = Max(active_pg_disk_cpu_ratio, AP_BLOOM_CPU_RATIO_MIN);
	double		reaching = b->tuples;
	double		sel = 1.0;
	Cost		build = 0;
	Cost		probe = 0;
	Cost		saved;
	List	   *children = NIL;
	List	   *entries = NIL;
	List	   *priv;

	/* insertion sort by selectivity; ties keep the join order */
	for (int l = 0; l < bp->nlevels; l++)
	{
		int			j = l;

		while (j > 0 && bp->levels[order[j - 1]].sel > bp->levels[l].sel)
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = l;
	}
	for (int i = 0; i < bp->nlevels; i++)
	{
		ApBloomLevel *lv = &bp->levels[order[i]];

		build += lv->child->total_cost + cpu_operator_cost * lv->nkeys * lv->child->rows;
		probe += cpu_operator_cost * lv->nkeys * reaching / (ndisks * cpu_ratio);
		reaching *= lv->sel;
		sel *= lv->sel;
		children = lappend(children, lv->child);
		entries = lappend(entries, lv->entry);
	}
	memcpy(&bp->cpath, base, sizeof(CustomPath));
	bp->cpath.methods = &ap_bloom_path_methods;
	bp->cpath.custom_paths = children;
	priv = list_copy(base->custom_private);
	list_nth_cell(priv, AP_PATH_PRIV_BLOOMS)->ptr_value = entries;
	bp->cpath.custom_private = priv;

	saved = (b->rows - b->rows * sel) * cpu_tuple_cost;
	bp->cpath.path.rows = clamp_row_est(b->rows * sel);
	bp->cpath.path.startup_cost = base->path.startup_cost + build;
	bp->cpath.path.total_cost = Max(base->path.total_cost + build + probe - saved,
									bp->cpath.path.startup_cost);
}

/*
 * The Hash Join of level l over lower (the level below, or the scan), or
 * NULL if it has no hash clause.  rows: what it is expected to return.
 */
static HashPath *
ap_bloom_join(PlannerInfo *root, ApBloomLevel *lv, Path *lower, double rows)
{
	RelOptInfo *outerrel = lv->big_is_outer ? lower->parent : lv->small;
	RelOptInfo *innerrel = lv->big_is_outer ? lv->small : lower->parent;
	Path	   *outer_path = lv->big_is_outer ? lower : lv->small->cheapest_total_path;
	Path	   *inner_path = lv->big_is_outer ? lv->small->cheapest_total_path : lower;
	List	   *hashclauses;
	JoinCostWorkspace workspace;
	HashPath   *hpath;

	hashclauses = ap_bloom_hashclauses(lv->joinrel, lv->jointype, lv->extra.restrictlist,
									   outerrel, innerrel);
	if (hashclauses == NIL)
		return NULL;
	initial_cost_hashjoin(root, &workspace, lv->jointype, hashclauses,
						  outer_path, inner_path, &lv->extra, false);
	hpath = create_hashjoin_path(root, lv->joinrel, lv->jointype, &workspace, &lv->extra,
								 outer_path, inner_path, false,
								 lv->extra.restrictlist, NULL, hashclauses);
	hpath->jpath.path.rows = clamp_row_est(rows);
	return hpath;
}

/*
 * A new chain: prev's levels (none when prev is NULL) and the new level
 * top, every join rebuilt over the scan with one more filter.  NULL if a
 * level cannot be rebuilt.
 */
static ApBloomPath *
ap_bloom_extend(PlannerInfo *root, RelOptInfo *b, CustomPath *base,
				ApBloomPath *prev, ApBloomLevel *top)
{
	ApBloomPath *bp = palloc0(sizeof(ApBloomPath));
	Path	   *lower;

	bp->big = b;
	bp->base = base;
	if (prev != NULL)
	{
		bp->nlevels = prev->nlevels;
		memcpy(bp->levels, prev->levels, sizeof(ApBloomLevel) * prev->nlevels);
	}
	bp->levels[bp->nlevels++] = *top;
	ap_bloom_cost_scan(bp);

	lower = &bp->cpath.path;
	for (int l = 0; l < bp->nlevels; l++)
	{
		ApBloomLevel *lv = &bp->levels[l];
		double		rows = lv->joinrel->rows;

		/* the filters of the levels above remove rows this join returned */
		for (int m = l + 1; m < bp->nlevels; m++)
			rows *= bp->levels[m].sel;
		lv->hpath = ap_bloom_join(root, lv, lower, rows);
		if (lv->hpath == NULL)
			return NULL;
		lower = &lv->hpath->jpath.path;
	}
	return bp;
}

/*
 * Offer the join of bigrel (B or one of our chains over B) and small in
 * which B's scan carries one more filter, of small's keys.
 */
static void
ap_bloom_offer(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *bigrel,
			   RelOptInfo *b, CustomPath *base, ApBloomPath *prev, RelOptInfo *small,
			   JoinType jointype, JoinPathExtraData *extra, bool big_is_outer)
{
	ApBloomKey	keys[AP_BLOOM_KEYS_MAX];
	int			nkeys;
	bool		allow_ec;
	double		nd_small;
	ApBloomLevel top;
	ApBloomPath *bp;
	HashPath   *hpath;

	/* a key through an equivalence class needs inner joins all the way */
	allow_ec = prev != NULL && (jointype == JOIN_INNER || jointype == JOIN_SEMI);
	for (int l = 0; prev != NULL && l < prev->nlevels; l++)
	{
		if (prev->levels[l].jointype != JOIN_INNER)
			allow_ec = false;
	}
	nkeys = ap_bloom_keys(joinrel, jointype, extra->restrictlist, bigrel, b, small,
						  allow_ec, keys);
	if (nkeys == 0)
		return;

	memset(&top, 0, sizeof(top));
	top.sel = ap_bloom_selectivity(root, b, small, keys, nkeys, &nd_small);
	if (!active_pg_force_bloom && top.sel > AP_BLOOM_USEFUL_SEL)
		return;
	top.entry = ap_bloom_private(ap_bloom_label(root, b, small, keys, nkeys), keys, nkeys,
								 nd_small);
	top.child = small->cheapest_total_path;
	top.nkeys = nkeys;
	top.joinrel = joinrel;
	top.small = small;
	top.jointype = jointype;
	top.extra = *extra;
	top.big_is_outer = big_is_outer;

	bp = ap_bloom_extend(root, b, base, prev, &top);
	if (bp == NULL)
		return;
	hpath = bp->levels[bp->nlevels - 1].hpath;
	/* the top join returns what the join relation returns, filters or not */
	hpath->jpath.path.rows = joinrel->rows;
	if (active_pg_force_bloom)
	{
		/*
		 * testing: win against every other path of this join, while the
		 * cheaper of two filtered paths (which side carries the filter, how
		 * many filters) still wins among themselves
		 */
		hpath->jpath.path.startup_cost *= AP_BLOOM_FORCE_COST_FACTOR;
		hpath->jpath.path.total_cost *= AP_BLOOM_FORCE_COST_FACTOR;
	}
	add_path(joinrel, &hpath->jpath.path);
}

/*
 * Does path (a join result's) hold what a filter's child must not: a Gather,
 * or a filter whose own small side is a join result?  Walks the join tree.
 */
static bool
ap_bloom_child_refused(Path *path)
{
	check_stack_depth();
	switch (nodeTag(path))
	{
		case T_GatherPath:
		case T_GatherMergePath:
			return true;
		case T_NestPath:
		case T_MergePath:
		case T_HashPath:
			return ap_bloom_child_refused(((JoinPath *) path)->outerjoinpath) ||
				ap_bloom_child_refused(((JoinPath *) path)->innerjoinpath);
		case T_MaterialPath:
			return ap_bloom_child_refused(((MaterialPath *) path)->subpath);
		case T_MemoizePath:
			return ap_bloom_child_refused(((MemoizePath *) path)->subpath);
		case T_UniquePath:
			return ap_bloom_child_refused(((UniquePath *) path)->subpath);
		case T_ProjectionPath:
			return ap_bloom_child_refused(((ProjectionPath *) path)->subpath);
		case T_SortPath:
		case T_IncrementalSortPath:
			return ap_bloom_child_refused(((SortPath *) path)->subpath);
		case T_CustomPath:
			if (((CustomPath *) path)->methods == &ap_bloom_path_methods)
			{
				ApBloomPath *bp = (ApBloomPath *) path;

				for (int l = 0; l < bp->nlevels; l++)
				{
					if (bp->levels[l].small->reloptkind != RELOPT_BASEREL)
						return true;
				}
			}
			return false;
		default:
			return false;
	}
}

/*
 * Can small's cheapest path run a second time, as a filter's child, and
 * produce exactly the rows its join sees?  A table, or a join of tables (a
 * join result as the small side: orders JOIN customer for Q3's lineitem),
 * with no subquery (its path belongs to its own planner run and cannot be
 * planned twice), no volatile clause (a second run could return other rows),
 * no lateral reference, no parameterization and no Gather (one plan may run
 * its parallel workers once at a time, and the child would start its own).
 * A join result's path may itself carry filters of tables, not of other join
 * results: every join result a plan runs twice doubles what lies below it,
 * and nesting them would double it again at each level.
 */
static bool
ap_bloom_small_ok(PlannerInfo *root, RelOptInfo *small)
{
	int			relid = -1;

	if (small->reloptkind != RELOPT_BASEREL &&
		!(small->reloptkind == RELOPT_JOINREL && active_pg_bloom_join_results))
		return false;
	if (!bms_is_empty(small->lateral_relids) || IS_DUMMY_REL(small))
		return false;
	if (small->cheapest_total_path == NULL || small->cheapest_total_path->param_info != NULL)
		return false;
	while ((relid = bms_next_member(small->relids, relid)) >= 0)
	{
		RelOptInfo *rel;

		if (planner_rt_fetch(relid, root)->rtekind != RTE_RELATION)
			return false;
		rel = find_base_rel(root, relid);
		if (contain_volatile_functions((Node *) rel->baserestrictinfo))
			return false;
		/* join clauses among the small side's tables decide its rows too */
		if (small->reloptkind == RELOPT_JOINREL &&
			contain_volatile_functions((Node *) rel->joininfo))
			return false;
	}
	if (small->reloptkind == RELOPT_JOINREL && ap_bloom_child_refused(small->cheapest_total_path))
		return false;
	return true;
}

/* Try the joins where the side bigrel carries filters and the other is small. */
static void
ap_bloom_try(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			 RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra,
			 bool big_is_outer)
{
	RelOptInfo *bigrel = big_is_outer ? outerrel : innerrel;
	RelOptInfo *small = big_is_outer ? innerrel : outerrel;
	CustomPath *base;
	ListCell   *lc;
	List	   *chains = NIL;

	if (!bms_is_empty(bigrel->lateral_relids) || !ap_bloom_small_ok(root, small))
		return;

	if (bigrel->reloptkind == RELOPT_BASEREL)
	{
		if ((base = ap_bloom_scan_path(bigrel)) != NULL)
			ap_bloom_offer(root, joinrel, bigrel, bigrel, base, NULL, small,
						   jointype, extra, big_is_outer);
		return;
	}
	if (bigrel->reloptkind != RELOPT_JOINREL)
		return;

	/* one more filter on each chain the big side holds (collected first: add_path may free) */
	foreach(lc, bigrel->pathlist)
	{
		ApBloomPath *prev = ap_bloom_chain_of((Path *) lfirst(lc));

		if (prev != NULL && prev->nlevels < AP_BLOOM_FILTERS_MAX &&
			!list_member_ptr(chains, prev))
			chains = lappend(chains, prev);
	}
	foreach(lc, chains)
	{
		ApBloomPath *prev = lfirst(lc);

		ap_bloom_offer(root, joinrel, bigrel, prev->big, prev->base, prev, small,
					   jointype, extra, big_is_outer);
	}
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
