/*
 * bloom_keys.c
 *	  The join keys of a Bloom filter and what the planner derives from them:
 *	  which join clauses make keys, the hash clauses of the join above, the
 *	  EXPLAIN label, the plan entry, and the share of rows a filter keeps.
 *	  Used by bloom_planner.c (see its header for when a filter is offered).
 *
 * Rules of this file:
 *   - A key is a whitelisted equality (shippable.c) of a family ap_bloom.h
 *     normalizes alike on both sides: integers in any mix, numeric, date,
 *     text/varchar and bpchar (the last two under a deterministic collation
 *     only, where equality is bytewise); the big table's side is a column,
 *     the small side any non-volatile expression without subplans.
 *   - For an outer join only the join's own clauses count.
 *   - Through an equivalence class a clause naming another member of the
 *     big side may stand for the big table's column, when the caller allows
 *     it (bloom_planner.c: inner joins all the way).
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/typcache.h"

#include "active_pg.h"
#include "bloomjoin.h"
#include "plan_memo.h"
#include "shippable.h"

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
	if (ec->ec_has_volatile || ec->ec_broken || ApEcBelowOuterJoin(ec) || ec->ec_has_const)
		return NULL;
	foreach(lc, ec->ec_members)
	{
		EquivalenceMember *em = lfirst_node(EquivalenceMember, lc);

		if (em->em_is_child || em->em_is_const || ApEmNulledByOuterJoin(em))
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
	key->type = var->vartype;
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
int
ApBloomJoinKeys(RelOptInfo *joinrel, JoinType jointype, List *restrictlist,
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
List *
ApBloomHashClauses(RelOptInfo *joinrel, JoinType jointype, List *restrictlist,
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

/*
 * A column's name, as get_attname gives it, from the relation's cache entry,
 * which the planning has built and whose relation it holds locked:
 * get_attname's catalog cache is cold in a new session, and its misses,
 * index scans of pg_attribute, were a tenth of what the extension added to
 * a new session's plan of TPC-DS 90 at SF 0.1.
 */
static char *
ap_bloom_attname(Oid relid, AttrNumber attno)
{
	Relation	rel = relation_open(relid, NoLock);
	char	   *name;

	if (attno < 1 || attno > RelationGetNumberOfAttributes(rel) ||
		TupleDescAttr(RelationGetDescr(rel), attno - 1)->attisdropped)
		name = get_attname(relid, attno, false);	/* its own error */
	else
		name = pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), attno - 1)->attname));
	relation_close(rel, NoLock);
	return name;
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
						ap_bloom_attname(rte->relid, var->varattno));
	return psprintf("%s.%s", rte->eref->aliasname,
					strVal(list_nth(rte->eref->colnames, var->varattno - 1)));
}

/*
 * EXPLAIN label: "l_partkey IN part.p_partkey", "(a, b) IN (t.x, t.y)",
 * "l_orderkey IN orders.o_orderkey of (orders JOIN customer)", from a
 * filter's entry (ApBloomPrivate: its key columns and small expressions).
 * Built when the plan is made, for the filters it keeps: the names are
 * catalog lookups, which every chain offered would pay otherwise.
 */
char *
ApBloomLabel(PlannerInfo *root, RelOptInfo *big, RelOptInfo *small, List *entry)
{
	RangeTblEntry *rte = planner_rt_fetch(big->relid, root);
	List	   *attnos = list_nth(entry, AP_BLOOM_PRIV_ATTNOS);
	List	   *small_exprs = llast(entry);
	StringInfoData big_str;
	StringInfoData small_str;
	char	   *label;
	ListCell   *la;
	ListCell   *le;

	initStringInfo(&big_str);
	initStringInfo(&small_str);
	forboth(la, attnos, le, small_exprs)
	{
		bool		first = foreach_current_index(la) == 0;

		appendStringInfo(&big_str, "%s%s", first ? "" : ", ",
						 ap_bloom_attname(rte->relid, lfirst_int(la)));
		appendStringInfo(&small_str, "%s%s", first ? "" : ", ",
						 ap_bloom_small_name(root, lfirst(le)));
	}
	if (list_length(attnos) == 1)
		label = psprintf("%s IN %s", big_str.data, small_str.data);
	else
		label = psprintf("(%s) IN (%s)", big_str.data, small_str.data);
	/* a join result: name its tables */
	if (bms_membership(small->relids) == BMS_MULTIPLE)
	{
		StringInfoData rels;
		int			relid = -1;
		Relids		base_relids = ApBaseRelids(root, small->relids);

		initStringInfo(&rels);
		while ((relid = bms_next_member(base_relids, relid)) >= 0)
			appendStringInfo(&rels, "%s%s", rels.len > 0 ? " JOIN " : "",
							 planner_rt_fetch(relid, root)->eref->aliasname);
		label = psprintf("%s of (%s)", label, rels.data);
	}
	return label;
}

/*
 * Plan-time entry of one filter (bloomjoin.h: ApBloomPrivIndex), then the small
 * side's key expressions (the child's target list; see ap_bloom_plan_path).
 */
List *
ApBloomPrivate(ApBloomKey *keys, int nkeys)
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
	/*
	 * The label and the estimated keys are made with the plan
	 * (ap_bloom_plan_path): every chain priced carries an entry, few make
	 * the plan, and printing a number was a tenth of a first plan's
	 * pricing of chains.
	 */
	entry = list_make5(NULL, attnos, kinds, host_kinds, NULL);
	entry = lappend(entry, makeInteger(active_pg_bloom_max_bytes));
	return lappend(entry, small_exprs);
}

/*
 * The size in bytes of the filter the planner expects nkeys distinct keys
 * to fill at active_pg.bloom_max_bytes, and its false-positive rate *fpr.
 * Both are pure functions of the two, and every join a table takes part in
 * asks again (serial and partial paths, each level of a chain): the last
 * few answers are kept (sizing a filter tries every number of hash
 * functions over a Poisson sum, a few percent of planning TPC-H Q5).
 */
#define AP_BLOOM_MEMO 16

static double
ap_bloom_planned_size(double nkeys, double *fpr)
{
	static struct
	{
		double		nkeys;
		int			max_bytes;
		double		bytes;
		double		fpr;
	}			memo[AP_BLOOM_MEMO];
	static int	nmemo = 0;
	static int	next = 0;
	uint32		len;
	uint32		k;

	for (int i = 0; i < nmemo; i++)
	{
		if (memo[i].nkeys == nkeys && memo[i].max_bytes == active_pg_bloom_max_bytes)
		{
			*fpr = memo[i].fpr;
			return memo[i].bytes;
		}
	}
	ApBloomGeometry(nkeys, active_pg_bloom_max_bytes, 0, &len, &k, fpr);
	memo[next].nkeys = nkeys;
	memo[next].max_bytes = active_pg_bloom_max_bytes;
	memo[next].bytes = len;
	memo[next].fpr = *fpr;
	next = (next + 1) % AP_BLOOM_MEMO;
	if (nmemo < AP_BLOOM_MEMO)
		nmemo++;
	return len;
}

/* Below this share of a key domain within the big column's range, the rest is left out. */
#define AP_BLOOM_OVERLAP_PART	0.5

/* Above this share ap_bloom_overlap_surely_large answers without the selectivity. */
#define AP_BLOOM_OVERLAP_SURE	0.75

/*
 * Is sslot, a histogram, in ascending order of the type's comparison?
 * ANALYZE sorts a histogram by the "<" its statistics slot names (staop);
 * where that is the type's default btree "<" (tc: TYPECACHE_LT_OPR), whose
 * family's comparison tc->cmp_proc is, its ends are its least and greatest
 * values and a bound is found by bisection, with the answers a pass over
 * every entry gives.  A histogram sorted otherwise gets that pass.
 */
static bool
ap_histogram_in_cmp_order(const AttStatsSlot *sslot, TypeCacheEntry *tc)
{
	return OidIsValid(tc->lt_opr) && sslot->staop == tc->lt_opr;
}

/*
 * How many of values[0..n), ascending, lie below bound (at or below it
 * with or_equal): the index of the first at or above it (above it).
 */
static int
ap_count_below(TypeCacheEntry *tc, const Datum *values, int n, Datum bound, bool or_equal)
{
	int			l = 0;
	int			h = n;

	while (l < h)
	{
		int			m = l + (h - l) / 2;
		int			c = DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo, values[m], bound));

		if (c < 0 || (or_equal && c == 0))
			l = m + 1;
		else
			h = m;
	}
	return l;
}

/*
 * Would PostgreSQL's selectivity of small_expr >= lo AND small_expr <= hi
 * (clauselist_selectivity, below) surely come out at AP_BLOOM_OVERLAP_SURE
 * or more, well above AP_BLOOM_OVERLAP_PART, where its value is not used?
 * Told from the small expression's own statistics, without that machinery,
 * whose inequalities descend the column's index at the histogram's ends
 * (get_actual_variable_range) for every key: 40% of pricing the chains of
 * TPC-DS's query 37 in a new session, where most keys' domains match the
 * fact table's.  PostgreSQL's range selectivity is the common values within
 * the range plus the histogram's share within it times the rest
 * (scalarineqsel for each bound, summed less one, the nulls added back); the
 * histogram's bins from the first bound at or above lo to the last at or
 * below hi, less one bin at each end (the interpolation there, and the
 * actual least and greatest values standing in for the outer bounds),
 * bound that share from below.
 */
static bool
ap_bloom_overlap_surely_large(PlannerInfo *root, const ApBloomKey *key, TypeCacheEntry *tc,
							  Datum lo, Datum hi)
{
	VariableStatData vd;
	AttStatsSlot sslot;
	double		nullfrac;
	double		mcv_all = 0.0;
	double		mcv_in = 0.0;
	double		inside = 0.0;
	bool		sure;

	examine_variable(root, (Node *) key->small_expr, 0, &vd);
	if (!HeapTupleIsValid(vd.statsTuple))
	{
		ReleaseVariableStats(vd);
		return false;
	}
	nullfrac = ((Form_pg_statistic) GETSTRUCT(vd.statsTuple))->stanullfrac;
	if (get_attstatsslot(&sslot, vd.statsTuple, STATISTIC_KIND_MCV, InvalidOid,
						 ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS))
	{
		for (int i = 0; i < sslot.nvalues && i < sslot.nnumbers; i++)
		{
			Datum		v = sslot.values[i];

			mcv_all += sslot.numbers[i];
			if (DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo, v, lo)) >= 0 &&
				DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo, v, hi)) <= 0)
				mcv_in += sslot.numbers[i];
		}
		free_attstatsslot(&sslot);
	}
	if (get_attstatsslot(&sslot, vd.statsTuple, STATISTIC_KIND_HISTOGRAM, InvalidOid,
						 ATTSTATSSLOT_VALUES))
	{
		int			first = -1;
		int			last = -1;

		if (ap_histogram_in_cmp_order(&sslot, tc))
		{
			first = ap_count_below(tc, sslot.values, sslot.nvalues, lo, false);
			if (first == sslot.nvalues)
				first = -1;
			last = ap_count_below(tc, sslot.values, sslot.nvalues, hi, true) - 1;
		}
		else
		{
			for (int i = 0; i < sslot.nvalues; i++)
			{
				if (first < 0 && DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo,
															 sslot.values[i], lo)) >= 0)
					first = i;
				if (DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo, sslot.values[i], hi)) <= 0)
					last = i;
			}
		}
		if (sslot.nvalues >= 3 && first >= 0 && last - first > 2)
			inside = (double) (last - first - 2) / (sslot.nvalues - 1);
		free_attstatsslot(&sslot);
	}
	sure = mcv_in + Max(1.0 - nullfrac - mcv_all, 0.0) * inside >= AP_BLOOM_OVERLAP_SURE;
	ReleaseVariableStats(vd);
	return sure;
}

/*
 * The share of the small side's key values, its table unrestricted, that
 * lie within the range the big table's column holds (the least and
 * greatest of its histogram and most common values), by PostgreSQL's
 * selectivity of small_expr >= least AND small_expr <= greatest; 1 where
 * that cannot be told (no statistics, a collatable type, the two sides of
 * different types) and where it is surely above AP_BLOOM_OVERLAP_PART
 * (ap_bloom_overlap_surely_large), the only use of a smaller value.  A dimension's keys often reach far beyond the fact
 * table's: TPC-DS's date_dim holds 73,049 days, store_sales sold on 1,823
 * of them, and taking all 73,049 as the keys store_sales could hold made a
 * year's 366 days keep 0.5% of its rows where they keep 19%.
 */
static double
ap_bloom_key_overlap_estimate(PlannerInfo *root, RelOptInfo *b, const ApBloomKey *key)
{
	TypeCacheEntry *tc;
	VariableStatData vd;
	Datum		lo = (Datum) 0;
	Datum		hi = (Datum) 0;
	bool		have = false;
	static const int kinds[] = {STATISTIC_KIND_HISTOGRAM, STATISTIC_KIND_MCV};
	Oid			ge_op;
	Oid			le_op;
	List	   *range;
	Selectivity sel;

	if (exprType((Node *) key->small_expr) != key->type || type_is_collatable(key->type))
		return 1.0;
	tc = lookup_type_cache(key->type, TYPECACHE_BTREE_OPFAMILY | TYPECACHE_CMP_PROC_FINFO |
						   TYPECACHE_LT_OPR);
	if (!OidIsValid(tc->btree_opf) || !OidIsValid(tc->cmp_proc))
		return 1.0;
	ge_op = get_opfamily_member(tc->btree_opf, key->type, key->type, BTGreaterEqualStrategyNumber);
	le_op = get_opfamily_member(tc->btree_opf, key->type, key->type, BTLessEqualStrategyNumber);
	if (!OidIsValid(ge_op) || !OidIsValid(le_op))
		return 1.0;

	examine_variable(root, (Node *) makeVar(b->relid, key->attno, key->type, -1, InvalidOid, 0),
					 0, &vd);
	for (int k = 0; k < lengthof(kinds) && HeapTupleIsValid(vd.statsTuple); k++)
	{
		AttStatsSlot sslot;
		bool		ends_only;
		int			lo_i = -1;
		int			hi_i = -1;

		if (!get_attstatsslot(&sslot, vd.statsTuple, kinds[k], InvalidOid, ATTSTATSSLOT_VALUES))
			continue;
		/* a sorted histogram's least and greatest are its ends */
		ends_only = kinds[k] == STATISTIC_KIND_HISTOGRAM && ap_histogram_in_cmp_order(&sslot, tc);
		for (int i = 0; i < sslot.nvalues; i++)
		{
			Datum		v = sslot.values[i];

			if (ends_only && i > 0 && i < sslot.nvalues - 1)
				continue;
			if (!have || DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo, v,
													 lo_i >= 0 ? sslot.values[lo_i] : lo)) < 0)
				lo_i = i;
			if (!have || DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo, v,
													 hi_i >= 0 ? sslot.values[hi_i] : hi)) > 0)
				hi_i = i;
			have = true;
		}
		/* copied once, out of the slot about to be freed */
		if (lo_i >= 0)
			lo = datumCopy(sslot.values[lo_i], tc->typbyval, tc->typlen);
		if (hi_i >= 0)
			hi = datumCopy(sslot.values[hi_i], tc->typbyval, tc->typlen);
		free_attstatsslot(&sslot);
	}
	ReleaseVariableStats(vd);
	if (!have || ap_bloom_overlap_surely_large(root, key, tc, lo, hi))
		return 1.0;
	range = list_make2(make_opclause(ge_op, BOOLOID, false, key->small_expr,
									 (Expr *) makeConst(key->type, -1, InvalidOid, tc->typlen,
														lo, false, tc->typbyval),
									 InvalidOid, InvalidOid),
					   make_opclause(le_op, BOOLOID, false, key->small_expr,
									 (Expr *) makeConst(key->type, -1, InvalidOid, tc->typlen,
														hi, false, tc->typbyval),
									 InvalidOid, InvalidOid));
	sel = clauselist_selectivity(root, range, 0, JOIN_INNER, NULL);
	return Min(Max(sel, 0.0), 1.0);
}

/*
 * Do some of B's key columns hold a unique index of B's (no predicate,
 * checked at once), so that every row of B has a key of its own?
 * PostgreSQL's count of a multi-column key's distinct values clamps at a
 * tenth of the rows (estimate_num_groups: the columns are probably
 * correlated, by how much it cannot know); a unique index says the key is
 * as many as the rows.  TPC-DS's store_sales by (item, ticket), its primary
 * key, counted 288,056 keys of its 2.9 million rows, and a filter of 30,000
 * returns was expected to keep ten times the rows it kept.
 */
static bool
ap_bloom_keys_unique(RelOptInfo *b, const ApBloomKey *keys, int nkeys)
{
	ListCell   *lc;

	foreach(lc, b->indexlist)
	{
		IndexOptInfo *index = (IndexOptInfo *) lfirst(lc);
		bool		covered = index->unique && index->immediate && index->indpred == NIL &&
			index->nkeycolumns > 0;

		for (int c = 0; covered && c < index->nkeycolumns; c++)
		{
			bool		found = false;

			for (int i = 0; i < nkeys && !found; i++)
				found = index->indexkeys[c] == keys[i].attno;
			covered = found;
		}
		if (covered)
			return true;
	}
	return false;
}

static double ap_bloom_big_groups(PlannerInfo *root, RelOptInfo *b, const ApBloomKey *keys,
								  int nkeys);

/*
 * How many times more rows a join on several key columns returns than
 * PostgreSQL's estimate of it.  PostgreSQL multiplies one equality
 * selectivity per clause, 1 / max(nd_B(k), nd_S(k)) each, as if the columns
 * were independent; the key's columns are a key together (partsupp's
 * (ps_partkey, ps_suppkey), a sale's (ticket, item)), so the pairs that occur
 * are far fewer than the product of the columns' counts, and the product
 * makes the join return next to nothing: TPC-H Q9's lineitem joined to
 * partsupp on both columns was estimated at 122 rows where 32,160 came.  The
 * filter itself is sized from the key's distinct count taken whole
 * (estimate_num_groups, which clamps a multi-column count to a tenth of the
 * rows), and the join's rows follow the same count: 1 / max(nd_B(K),
 * nd_S(K)) against PostgreSQL's product.  Never below 1: only our chain's
 * joins take the factor (ap_bloom_join_rows), bounded there by the rows of B
 * the filters keep times the small side's rows per key.
 */
static double
ap_bloom_multikey_factor(PlannerInfo *root, RelOptInfo *b, RelOptInfo *small,
						 ApBloomKey *keys, int nkeys, double nd_big, double nd_small)
{
	double		indep = 1.0;
	double		whole;

	for (int i = 0; i < nkeys; i++)
	{
		List	   *small_expr = list_make1(keys[i].small_expr);
		double		ndb = ap_bloom_big_groups(root, b, &keys[i], 1);
		double		nds = Min(estimate_num_groups(root, small_expr, Max(small->rows, 1.0),
												  NULL, NULL),
							  small->rows);

		indep /= Max(Max(ndb, nds), 1.0);
	}
	whole = 1.0 / Max(Max(nd_big, nd_small), 1.0);

	return Max(1.0, whole / indep);
}

static double ap_bloom_selectivity(PlannerInfo *root, RelOptInfo *b, RelOptInfo *small,
								   ApBloomKey *keys, int nkeys, double *nd_small,
								   double *bytes, double *join_factor);

/*
 * ApBloomSelectivity's answers within one planning.  The same filter (the
 * big table, the small side, the keys) is sized again at every chain and
 * level it is offered on, and each time its estimates read the statistics
 * and, for the key overlap, make PostgreSQL probe an index for a column's
 * least and greatest values (get_actual_variable_range): a third of TPC-H
 * Q5's planning time at SF 0.1 with the extension, which doubled it.  An
 * answer depends only on those inputs and on estimates fixed for the
 * planning, so it is kept in the planner's memory until that goes
 * (plan_memo.h), where the relations and expressions it points to live.
 */
typedef enum ApSelKind
{
	AP_SEL_FILTER,				/* ApBloomSelectivity's four answers */
	AP_SEL_OVERLAP,				/* ap_bloom_key_overlap's, in sel (no small side) */
	AP_SEL_BIG_GROUPS			/* ap_bloom_big_groups's, in sel (no small side) */
} ApSelKind;

typedef struct ApSelAnswer
{
	ApSelKind	kind;
	PlannerInfo *root;
	Index		brelid;
	Relids		small_relids;	/* NULL: no small side */
	int			nkeys;
	ApBloomKey	keys[AP_BLOOM_KEYS_MAX];
	double		sel;
	double		nd_small;
	double		bytes;
	double		join_factor;
} ApSelAnswer;

/*
 * A planning's answers, by a hash of what names them (ap_sel_hash): a
 * query of many joins asks thousands of times among hundreds of answers.
 * The table lives in the planner's memory; ap_sel_tables finds the one of
 * the current context.
 */
typedef struct ApSelBucket
{
	uint32		hash;			/* the hash table's key */
	List	   *answers;		/* of ApSelAnswer *, the same hash */
} ApSelBucket;

typedef struct ApSelTable
{
	HTAB	   *buckets;
	int			nanswers;
} ApSelTable;

static ApMemo ap_sel_tables;

/* beyond this many kept answers (planner memory that lives long) none is added */
#define AP_SEL_ANSWERS_MAX		4096

static ApSelTable *
ap_sel_table(void)
{
	ApSelTable *t = ApMemoFind(&ap_sel_tables, NULL, NULL);
	HASHCTL		ctl;

	if (t != NULL)
		return t;
	t = palloc(sizeof(ApSelTable));
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(ApSelBucket);
	ctl.hcxt = CurrentMemoryContext;
	t->buckets = hash_create("active_pg Bloom filter estimates", 256, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	t->nanswers = 0;
	ApMemoKeep(&ap_sel_tables, t);
	return t;
}

/* The hash of an answer's name: all but the small side's expressions. */
static uint32
ap_sel_hash(ApSelKind kind, PlannerInfo *root, Index brelid, Relids small_relids,
			const ApBloomKey *keys, int nkeys)
{
	uint32		h = murmurhash32((uint32) kind ^ (uint32) (uintptr_t) root);

	h = murmurhash32(h ^ (uint32) brelid ^ ((uint32) nkeys << 16));
	h ^= bms_hash_value(small_relids);
	for (int i = 0; i < nkeys; i++)
		h = murmurhash32(h ^ (uint32) keys[i].attno ^ ((uint32) keys[i].type << 8));
	return h;
}

static ApSelAnswer *
ap_sel_lookup(ApSelKind kind, PlannerInfo *root, Index brelid, RelOptInfo *small,
			  const ApBloomKey *keys, int nkeys)
{
	Relids		small_relids = small != NULL ? small->relids : NULL;
	uint32		h = ap_sel_hash(kind, root, brelid, small_relids, keys, nkeys);
	ApSelBucket *bucket = hash_search(ap_sel_table()->buckets, &h, HASH_FIND, NULL);
	ListCell   *lc;

	if (bucket == NULL)
		return NULL;
	foreach(lc, bucket->answers)
	{
		ApSelAnswer *a = lfirst(lc);
		bool		same;

		if (a->kind != kind || a->root != root || a->brelid != brelid || a->nkeys != nkeys ||
			!bms_equal(a->small_relids, small_relids))
			continue;
		same = true;
		for (int i = 0; i < nkeys && same; i++)
			same = a->keys[i].attno == keys[i].attno && a->keys[i].type == keys[i].type &&
				equal(a->keys[i].small_expr, keys[i].small_expr);
		if (same)
			return a;
	}
	return NULL;
}

/* Keep an answer, in the planner's memory, for the rest of the planning. */
static void
ap_sel_remember(ApSelKind kind, PlannerInfo *root, Index brelid, RelOptInfo *small,
				const ApBloomKey *keys, int nkeys,
				double sel, double nd_small, double bytes, double join_factor)
{
	ApSelTable *t = ap_sel_table();
	ApSelAnswer *a;
	ApSelBucket *bucket;
	uint32		h;
	bool		found;

	if (nkeys > AP_BLOOM_KEYS_MAX || t->nanswers >= AP_SEL_ANSWERS_MAX)
		return;
	a = palloc(sizeof(ApSelAnswer));
	a->kind = kind;
	a->root = root;
	a->brelid = brelid;
	a->small_relids = small != NULL ? small->relids : NULL;
	a->nkeys = nkeys;
	memcpy(a->keys, keys, sizeof(ApBloomKey) * nkeys);
	a->sel = sel;
	a->nd_small = nd_small;
	a->bytes = bytes;
	a->join_factor = join_factor;
	h = ap_sel_hash(kind, root, brelid, a->small_relids, keys, nkeys);
	bucket = hash_search(t->buckets, &h, HASH_ENTER, &found);
	if (!found)
		bucket->answers = NIL;
	bucket->answers = lappend(bucket->answers, a);
	t->nanswers++;
}

/* ap_bloom_key_overlap_estimate, once per planning for a column and a key */
static double
ap_bloom_key_overlap(PlannerInfo *root, RelOptInfo *b, const ApBloomKey *key)
{
	ApSelAnswer *a = ap_sel_lookup(AP_SEL_OVERLAP, root, b->relid, NULL, key, 1);
	double		overlap;

	if (a != NULL)
		return a->sel;
	overlap = ap_bloom_key_overlap_estimate(root, b, key);
	ap_sel_remember(AP_SEL_OVERLAP, root, b->relid, NULL, key, 1, overlap, 0, 0, 0);
	return overlap;
}

/*
 * PostgreSQL's count of the distinct values of keys' columns of B, taken
 * together (estimate_num_groups), once per planning for a set of columns:
 * every small side a filter on them is offered with counts them again, and
 * a key of several columns counts each of them too
 * (ap_bloom_multikey_factor).
 */
static double
ap_bloom_big_groups(PlannerInfo *root, RelOptInfo *b, const ApBloomKey *keys, int nkeys)
{
	ApSelAnswer *a = ap_sel_lookup(AP_SEL_BIG_GROUPS, root, b->relid, NULL, keys, nkeys);
	List	   *big_exprs = NIL;
	double		groups;

	if (a != NULL)
		return a->sel;
	for (int i = 0; i < nkeys; i++)
		big_exprs = lappend(big_exprs, makeVar(b->relid, keys[i].attno, keys[i].type,
											   -1, InvalidOid, 0));
	groups = estimate_num_groups(root, big_exprs, Max(b->rows, 1.0), NULL, NULL);
	ap_sel_remember(AP_SEL_BIG_GROUPS, root, b->relid, NULL, keys, nkeys, groups, 0, 0, 0);
	return groups;
}

/* ap_bloom_selectivity, once per planning for a filter (see above) */
double
ApBloomSelectivity(PlannerInfo *root, RelOptInfo *b, RelOptInfo *small,
				   ApBloomKey *keys, int nkeys, double *nd_small, double *bytes,
				   double *join_factor)
{
	ApSelAnswer *a = ap_sel_lookup(AP_SEL_FILTER, root, b->relid, small, keys, nkeys);
	double		sel;

	if (a != NULL)
	{
		*nd_small = a->nd_small;
		*bytes = a->bytes;
		*join_factor = a->join_factor;
		return a->sel;
	}
	sel = ap_bloom_selectivity(root, b, small, keys, nkeys, nd_small, bytes, join_factor);
	ap_sel_remember(AP_SEL_FILTER, root, b->relid, small, keys, nkeys, sel, *nd_small, *bytes,
					*join_factor);
	return sel;
}

/*
 * Share of B's rows a filter of small's keys keeps (see the file header);
 * *nd_small gets the small side's estimated distinct keys, *bytes the size
 * of the filter they will fill.  *join_factor: how many times more rows the
 * join of B and small returns than PostgreSQL's estimate of it, where the
 * small side's domain reaches far beyond B's column (ap_bloom_key_overlap);
 * 1 elsewhere.  PostgreSQL's equality selectivity divides by the larger of
 * the two columns' distinct counts, the whole domain's, where the share
 * kept here divides by the domain's part within B's range.  A key of
 * several columns is counted whole, as one unique index of B's makes it
 * (ap_bloom_keys_unique), and its join's factor is the whole key's against
 * PostgreSQL's product of the columns' (ap_bloom_multikey_factor).
 */
static double
ap_bloom_selectivity(PlannerInfo *root, RelOptInfo *b, RelOptInfo *small,
					 ApBloomKey *keys, int nkeys, double *nd_small, double *bytes,
					 double *join_factor)
{
	List	   *small_exprs = NIL;
	double		nd_big;
	double		frac;
	double		fpr;

	*join_factor = 1.0;
	for (int i = 0; i < nkeys; i++)
		small_exprs = lappend(small_exprs, keys[i].small_expr);
	*nd_small = Min(estimate_num_groups(root, small_exprs, small->rows, NULL, NULL),
					small->rows);
	nd_big = ap_bloom_big_groups(root, b, keys, nkeys);
	if (nkeys > 1 && ap_bloom_keys_unique(b, keys, nkeys))
		nd_big = Max(b->rows, 1.0);

	/* the small table's unrestricted distinct count is a floor (file header) */
	if (nkeys == 1)
	{
		VariableStatData vardata;
		bool		isdefault;
		double		nd_domain;

		examine_variable(root, (Node *) keys[0].small_expr, 0, &vardata);
		nd_domain = get_variable_numdistinct(&vardata, &isdefault);
		ReleaseVariableStats(vardata);
		/*
		 * A domain no larger than B's column's count leaves nd_big and the
		 * join's factor as they are whatever the overlap: not estimated.
		 */
		if (!isdefault && (nd_domain > nd_big || nd_big < 1.0))
		{
			double		overlap = ap_bloom_key_overlap(root, b, &keys[0]);

			/* only where most of the domain lies beyond: estimates stay put elsewhere */
			if (overlap < AP_BLOOM_OVERLAP_PART)
			{
				*join_factor = Max(nd_big, nd_domain) / Max(Max(nd_big, nd_domain * overlap), 1.0);
				nd_domain *= overlap;
			}
			nd_big = Max(nd_big, nd_domain);
		}
	}
	else
		*join_factor = ap_bloom_multikey_factor(root, b, small, keys, nkeys, nd_big, *nd_small);
	frac = Min(1.0, *nd_small / Max(nd_big, 1.0));
	*bytes = ap_bloom_planned_size(*nd_small, &fpr);
	return frac + (1.0 - frac) * fpr;
}
