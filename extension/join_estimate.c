/*
 * join_estimate.c
 *	  PostgreSQL's estimate of an equi-join into a table whose key domain
 *	  reaches far beyond the column that joins it, corrected where the join
 *	  clause is made.
 *
 * PostgreSQL's equality join selectivity divides by the larger of the two
 * columns' distinct counts (eqjoinsel, without most common values).  A
 * dimension's key often spans a far wider domain than the fact column that
 * refers to it holds: TPC-DS's date_dim has 73,049 days (1900 to 2100),
 * store_sales sold on 1,823 of them.  A year of dates joined to store_sales
 * is then estimated to keep 0.5% of its rows where it keeps 19%, 40 times
 * too few, and every join above inherits the error: TPC-DS query 67 sorted
 * 541,160 rows planned for 12,951 (an external merge of 54 MB), query 26
 * probed customer_demographics 285,956 times planned for 7,114.
 *
 * The rule.  For a base relation B (one the disks may scan: planner.c
 * calls ApCorrectDomainJoins from its set_rel_pathlist hook, before any
 * join is planned) and each equivalence class joining a column of B to a
 * key of another base relation S: the key's values within the range B's
 * column holds (the least and greatest of its histogram and most common
 * values) are found by PostgreSQL's own selectivity of "key >= least AND
 * key <= greatest" over S unrestricted (ApKeyDomain).  Where less than
 * half of the domain lies there, the clause's selectivity is PostgreSQL's
 * times max(nd_B, nd_S) / max(nd_B, nd_S within the range), and it is
 * stored in the clause (RestrictInfo.norm_selec, where clause_selectivity
 * caches it), so that every join relation holding the clause, whichever
 * order builds it, and every plan of it, stock shapes included, is sized
 * from the corrected figure.  Only where S's key is a key (distinct count
 * at least half its rows) and B's column is not: a fact's reference into a
 * dimension, one direction per clause.  Only inner-join clauses (those of
 * equivalence classes); an outer join keeps PostgreSQL's estimate.  Keys
 * whose domain lies within the fact column's range (TPC-H's, the adhoc
 * set's) are left alone.
 *
 * Bloom filters use the same domain (bloom_keys.c): a filter of S's keys
 * keeps the share of B's rows its keys make of the part of the domain B
 * can hold.
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/typcache.h"

#include "active_pg.h"

/* Below this share of a key domain within the big column's range, the rest is left out. */
#define AP_DOMAIN_OVERLAP_PART	0.5
/* A column whose distinct values are at least this share of its rows is a key. */
#define AP_DOMAIN_KEY_SHARE		0.5

/*
 * The share of small_expr's values, its table unrestricted, that lie within
 * the range b's column attno (of type type) holds, by PostgreSQL's
 * selectivity of small_expr >= least AND small_expr <= greatest; 1 where
 * that cannot be told (no statistics, a collatable type, the two sides of
 * different types).
 */
static double
ap_key_overlap(PlannerInfo *root, RelOptInfo *b, AttrNumber attno, Oid type, Expr *small_expr)
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

	if (exprType((Node *) small_expr) != type || type_is_collatable(type))
		return 1.0;
	tc = lookup_type_cache(type, TYPECACHE_BTREE_OPFAMILY | TYPECACHE_CMP_PROC_FINFO);
	if (!OidIsValid(tc->btree_opf) || !OidIsValid(tc->cmp_proc))
		return 1.0;
	ge_op = get_opfamily_member(tc->btree_opf, type, type, BTGreaterEqualStrategyNumber);
	le_op = get_opfamily_member(tc->btree_opf, type, type, BTLessEqualStrategyNumber);
	if (!OidIsValid(ge_op) || !OidIsValid(le_op))
		return 1.0;

	examine_variable(root, (Node *) makeVar(b->relid, attno, type, -1, InvalidOid, 0), 0, &vd);
	for (int k = 0; k < lengthof(kinds) && HeapTupleIsValid(vd.statsTuple); k++)
	{
		AttStatsSlot sslot;

		if (!get_attstatsslot(&sslot, vd.statsTuple, kinds[k], InvalidOid, ATTSTATSSLOT_VALUES))
			continue;
		for (int i = 0; i < sslot.nvalues; i++)
		{
			Datum		v = sslot.values[i];

			if (!have || DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo, v, lo)) < 0)
				lo = datumCopy(v, tc->typbyval, tc->typlen);
			if (!have || DatumGetInt32(FunctionCall2(&tc->cmp_proc_finfo, v, hi)) > 0)
				hi = datumCopy(v, tc->typbyval, tc->typlen);
			have = true;
		}
		free_attstatsslot(&sslot);
	}
	ReleaseVariableStats(vd);
	if (!have)
		return 1.0;
	range = list_make2(make_opclause(ge_op, BOOLOID, false, small_expr,
									 (Expr *) makeConst(type, -1, InvalidOid, tc->typlen,
														lo, false, tc->typbyval),
									 InvalidOid, InvalidOid),
					   make_opclause(le_op, BOOLOID, false, small_expr,
									 (Expr *) makeConst(type, -1, InvalidOid, tc->typlen,
														hi, false, tc->typbyval),
									 InvalidOid, InvalidOid));
	sel = clauselist_selectivity(root, range, 0, JOIN_INNER, NULL);
	return Min(Max(sel, 0.0), 1.0);
}

/*
 * The distinct values of small_expr (its table unrestricted) that a join
 * with b's column attno can meet: the part of its domain within the range
 * of b's column where most of the domain lies beyond it, all of it
 * elsewhere; *nd_all gets the whole domain's count.  0 when PostgreSQL has
 * only a default to tell.
 */
double
ApKeyDomain(PlannerInfo *root, RelOptInfo *b, AttrNumber attno, Oid type, Expr *small_expr,
			double *nd_all)
{
	VariableStatData vardata;
	bool		isdefault;
	double		overlap;

	examine_variable(root, (Node *) small_expr, 0, &vardata);
	*nd_all = get_variable_numdistinct(&vardata, &isdefault);
	ReleaseVariableStats(vardata);
	if (isdefault)
	{
		*nd_all = 0;
		return 0;
	}
	overlap = ap_key_overlap(root, b, attno, type, small_expr);
	return overlap < AP_DOMAIN_OVERLAP_PART ? *nd_all * overlap : *nd_all;
}

/* A plain Var of relation relid (through binary-compatible relabels), or NULL. */
static Var *
ap_rel_var(Expr *expr, Index relid)
{
	while (expr != NULL && IsA(expr, RelabelType))
		expr = ((RelabelType *) expr)->arg;
	if (expr == NULL || !IsA(expr, Var))
		return NULL;
	if (((Var *) expr)->varno != relid || ((Var *) expr)->varlevelsup != 0 ||
		((Var *) expr)->varattno <= 0)
		return NULL;
	return (Var *) expr;
}

/*
 * Distinct values and share of NULLs of expr, as PostgreSQL's equality join
 * selectivity reads them; false when it has only a default.
 */
static bool
ap_expr_stats(PlannerInfo *root, Node *expr, double *nd, double *nullfrac)
{
	VariableStatData vardata;
	bool		isdefault;

	examine_variable(root, expr, 0, &vardata);
	*nd = get_variable_numdistinct(&vardata, &isdefault);
	*nullfrac = HeapTupleIsValid(vardata.statsTuple) ?
		((Form_pg_statistic) GETSTRUCT(vardata.statsTuple))->stanullfrac : 0.0;
	ReleaseVariableStats(vardata);
	return !isdefault;
}

/*
 * The selectivity of the equality join of b's column var with small's key
 * small_expr counted over the part of the key's domain b's column can meet
 * (see the file header), into *sel; false where the rule does not apply.
 * It is PostgreSQL's own formula where one side has no most common values
 * (a key has none): the shares of non-NULL values over the larger distinct
 * count, the key's counted within the range only.
 */
bool
ApDomainJoinSelectivity(PlannerInfo *root, RelOptInfo *b, Var *var, RelOptInfo *small,
						Expr *small_expr, Selectivity *sel)
{
	double		nd_big;
	double		nf_big;
	double		nd_all;
	double		nf_small;
	double		nd_met;

	*sel = -1;
	if (var == NULL || small == NULL || small->reloptkind != RELOPT_BASEREL ||
		b->tuples <= 0 || small->tuples <= 0)
		return false;
	if (!ap_expr_stats(root, (Node *) var, &nd_big, &nf_big) ||
		nd_big >= AP_DOMAIN_KEY_SHARE * b->tuples)
		return false;			/* no statistics, or B's column is itself a key */
	if (!ap_expr_stats(root, (Node *) small_expr, &nd_all, &nf_small) ||
		nd_all < AP_DOMAIN_KEY_SHARE * small->tuples)
		return false;			/* no statistics, or not a key */
	nd_met = ApKeyDomain(root, b, var->varattno, var->vartype, small_expr, &nd_all);
	if (nd_met <= 0 || nd_met >= nd_all)
		return false;			/* its domain lies within B's range */
	*sel = (1.0 - nf_big) * (1.0 - nf_small) / Max(Max(nd_big, nd_met), 1.0);
	return true;
}

/*
 * The member of class ec that is a plain Var of relid alone, or NULL.
 */
static EquivalenceMember *
ap_ec_rel_member(EquivalenceClass *ec, Index relid)
{
	ListCell   *lc;

	foreach(lc, ec->ec_members)
	{
		EquivalenceMember *em = lfirst(lc);

		if (!em->em_is_const && !em->em_is_child && bms_is_member(relid, em->em_relids) &&
			bms_membership(em->em_relids) == BMS_SINGLETON &&
			ap_rel_var(em->em_expr, relid) != NULL)
			return em;
	}
	return NULL;
}

/*
 * Correct the join clauses between base relation b's columns and other
 * base relations' keys whose domains reach beyond them (file header),
 * both ways round (each order of the two sides is a clause of its own).
 */
void
ApCorrectDomainJoins(PlannerInfo *root, RelOptInfo *b)
{
	int			i;

	if (!b->has_eclass_joins || b->reloptkind != RELOPT_BASEREL)
		return;
	i = -1;
	while ((i = bms_next_member(b->eclass_indexes, i)) >= 0)
	{
		EquivalenceClass *ec = list_nth(root->eq_classes, i);
		EquivalenceMember *bem;
		ListCell   *lc;

		if (ec->ec_has_const || ec->ec_has_volatile || ApEcBelowOuterJoin(ec) ||
			list_length(ec->ec_members) < 2)
			continue;
		bem = ap_ec_rel_member(ec, b->relid);
		if (bem == NULL || ApEmNulledByOuterJoin(bem))
			continue;
		foreach(lc, ec->ec_members)
		{
			EquivalenceMember *sem = lfirst(lc);
			RelOptInfo *small;
			Selectivity sel;
			int			srelid;

			if (sem == bem || sem->em_is_const || sem->em_is_child ||
				bms_membership(sem->em_relids) != BMS_SINGLETON ||
				ApEmNulledByOuterJoin(sem))
				continue;
			srelid = bms_singleton_member(sem->em_relids);
			if (srelid == (int) b->relid || srelid >= root->simple_rel_array_size)
				continue;
			small = root->simple_rel_array[srelid];
			if (!ApDomainJoinSelectivity(root, b, ap_rel_var(bem->em_expr, b->relid), small,
										 sem->em_expr, &sel))
				continue;
			for (int side = 0; side < 2; side++)
			{
				Relids		both = bms_union(b->relids, small->relids);
				List	   *clauses = side == 0 ?
					ApJoinImpliedEqualities(root, both, b->relids, small) :
					ApJoinImpliedEqualities(root, both, small->relids, b);
				ListCell   *lc2;

				foreach(lc2, clauses)
				{
					RestrictInfo *rinfo = lfirst(lc2);

					if (rinfo->parent_ec == ec &&
						((rinfo->left_em == bem && rinfo->right_em == sem) ||
						 (rinfo->left_em == sem && rinfo->right_em == bem)))
						rinfo->norm_selec = sel;
				}
			}
		}
	}
}
