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
#include "catalog/pg_type.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "active_pg.h"
#include "bloomjoin.h"
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
char *
ApBloomLabel(PlannerInfo *root, RelOptInfo *big, RelOptInfo *small, ApBloomKey *keys,
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
ApBloomPrivate(char *label, ApBloomKey *keys, int nkeys, double est_keys)
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
	ApBloomGeometry(nkeys, active_pg_bloom_max_bytes, 0, &len, &k);
	*fpr = ap_bloom_fpr_len(nkeys, len, k);
	memo[next].nkeys = nkeys;
	memo[next].max_bytes = active_pg_bloom_max_bytes;
	memo[next].bytes = len;
	memo[next].fpr = *fpr;
	next = (next + 1) % AP_BLOOM_MEMO;
	if (nmemo < AP_BLOOM_MEMO)
		nmemo++;
	return len;
}

/*
 * Did join_estimate.c correct PostgreSQL's selectivity of the join of b's
 * column with key's small side (a base relation's expression)?
 */
static bool
ap_bloom_clause_corrected(PlannerInfo *root, RelOptInfo *b, const ApBloomKey *key)
{
	Relids		rels = pull_varnos(root, (Node *) key->small_expr);
	int			relid;
	Selectivity sel;

	if (!bms_get_singleton_member(rels, &relid) || relid >= root->simple_rel_array_size ||
		root->simple_rel_array[relid] == NULL)
		return false;
	return ApDomainJoinSelectivity(root, b,
								   makeVar(b->relid, key->attno, key->type, -1, InvalidOid, 0),
								   root->simple_rel_array[relid], key->small_expr, &sel);
}

/*
 * Share of B's rows a filter of small's keys keeps (see the file header);
 * *nd_small gets the small side's estimated distinct keys, *bytes the size
 * of the filter they will fill.  *join_factor: how many times more rows the
 * join of B and small returns than PostgreSQL's estimate of it, where the
 * small side's domain reaches far beyond B's column (ApKeyDomain) and
 * join_estimate.c did not already correct the join's clause; 1 elsewhere.
 * PostgreSQL's equality selectivity divides by the larger of the two
 * columns' distinct counts, the whole domain's, where the share kept here
 * divides by the domain's part within B's range.
 */
double
ApBloomSelectivity(PlannerInfo *root, RelOptInfo *b, RelOptInfo *small,
				   ApBloomKey *keys, int nkeys, double *nd_small, double *bytes,
				   double *join_factor)
{
	List	   *big_exprs = NIL;
	List	   *small_exprs = NIL;
	double		nd_big;
	double		frac;
	double		fpr;

	*join_factor = 1.0;
	for (int i = 0; i < nkeys; i++)
	{
		big_exprs = lappend(big_exprs, makeVar(b->relid, keys[i].attno, keys[i].type,
											   -1, InvalidOid, 0));
		small_exprs = lappend(small_exprs, keys[i].small_expr);
	}
	*nd_small = Min(estimate_num_groups(root, small_exprs, small->rows, NULL, NULL),
					small->rows);
	nd_big = estimate_num_groups(root, big_exprs, Max(b->rows, 1.0), NULL, NULL);

	/*
	 * The small table's unrestricted distinct count is a floor (file
	 * header), of the part of its domain B can hold (join_estimate.c).
	 * PostgreSQL's estimate of the join counts that part where
	 * join_estimate.c corrected its clause; elsewhere the chain does.
	 */
	if (nkeys == 1)
	{
		double		nd_all;
		double		nd_met = ApKeyDomain(root, b, keys[0].attno, keys[0].type,
										 keys[0].small_expr, &nd_all);

		if (nd_all > 0)
		{
			if (nd_met < nd_all && !ap_bloom_clause_corrected(root, b, &keys[0]))
				*join_factor = Max(nd_big, nd_all) / Max(Max(nd_big, nd_met), 1.0);
			nd_big = Max(nd_big, nd_met);
		}
	}
	frac = Min(1.0, *nd_small / Max(nd_big, 1.0));
	*bytes = ap_bloom_planned_size(*nd_small, &fpr);
	return frac + (1.0 - frac) * fpr;
}
