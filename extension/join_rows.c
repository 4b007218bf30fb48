/*-------------------------------------------------------------------------
 *
 * join_rows.c
 *	  PostgreSQL's estimate of an equijoin's rows, corrected where the small
 *	  side's key domain reaches far beyond the big table's column.
 *
 * PostgreSQL's equality join selectivity divides by the larger of the two
 * columns' distinct counts.  Where one side is a dimension whose keys span
 * far more values than the other side's column holds (TPC-DS's date_dim
 * holds 73,049 days, its fact tables were sold on 1,823 of them) and the
 * dimension is restricted to part of the values that do occur (a year, a
 * quarter), that counts every join of the two about 40 times too few rows.
 * The Bloom filters' planning corrected its own joins (ap_bloom_selectivity's
 * join_factor: the share of the dimension's domain within the fact column's
 * range), but every join above them, and every plan without a filter, still
 * stood on PostgreSQL's count: TPC-DS 17, 25, 26 picked nested loops over
 * 40,000 to 290,000 rows planned as 1,000 to 7,000, and ran at half of
 * stock's speed.
 *
 * So the correction is made where PostgreSQL keeps the number: the
 * selectivity it caches in the join clause's RestrictInfo (norm_selec, the
 * inner join's), read by every join relation's size estimate
 * (calc_joinrel_size_estimate) that joins the two columns, whichever pair of
 * relations it is built from.  Before the join search, for each equality of
 * an equivalence class between a column of a big table (one the disks scan:
 * it has an ActiveScan) and a column of another table, the clause
 * PostgreSQL will use for that pair, either way round
 * (ApJoinImpliedEqualities; the class keeps it and hands the same one out
 * later) gets PostgreSQL's selectivity
 * times the factor, at most what the containment of the small side's keys
 * in the big column allows (each big row joins its key's small rows, if the
 * key is among the small side's), and never less than PostgreSQL's.
 *
 * The chains (bloom_planner.c) leave their own factor out for a key
 * corrected here (ApJoinRowsCorrected): their join relations carry it
 * already.  Parameterized scans' rows (a nested loop's inner index scan)
 * are estimated without the cache, as PostgreSQL does for them, and stay
 * PostgreSQL's.  active_pg.correct_join_rows = off leaves every estimate
 * to PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "utils/selfuncs.h"

#include "active_pg.h"
#include "bloomjoin.h"
#include "join_rows.h"
#include "plan_memo.h"

/* A key whose join rows were corrected within one planning. */
typedef struct ApRowsFix
{
	PlannerInfo *root;
	Index		big;			/* the big table's range table index */
	AttrNumber	big_attno;		/* its column */
	Index		small;			/* the other table's */
	AttrNumber	small_attno;
	double		factor;			/* the corrected selectivity over PostgreSQL's */
} ApRowsFix;

static ApMemo ap_rows_fixes;

/* The plain Var of a base table an equivalence member is, or NULL. */
static Var *
ap_member_var(PlannerInfo *root, EquivalenceMember *em)
{
	Expr	   *expr = em->em_expr;
	RelOptInfo *rel;
	Var		   *var;

	if (em->em_is_child || em->em_is_const)
		return NULL;
	while (expr && IsA(expr, RelabelType))
		expr = ((RelabelType *) expr)->arg;
	if (expr == NULL || !IsA(expr, Var))
		return NULL;
	var = (Var *) expr;
	if (var->varlevelsup != 0 || var->varattno <= 0 ||
		var->varno <= 0 || var->varno >= root->simple_rel_array_size)
		return NULL;
	rel = root->simple_rel_array[var->varno];
	if (rel == NULL || rel->reloptkind != RELOPT_BASEREL || rel->rtekind != RTE_RELATION)
		return NULL;
	return var;
}

/*
 * The clause of ec PostgreSQL joins outer and inner by, or NULL.  15 keeps
 * one clause per orientation (it reuses a derived clause only for the same
 * left and right members; 16 takes the commuted one too), so each pair is
 * asked for both ways.
 */
static RestrictInfo *
ap_ec_clause(PlannerInfo *root, EquivalenceClass *ec, RelOptInfo *outer, RelOptInfo *inner)
{
	List	   *clauses;
	ListCell   *lc;

	clauses = ApJoinImpliedEqualities(root, bms_union(outer->relids, inner->relids),
									  outer->relids, inner);
	foreach(lc, clauses)
	{
		RestrictInfo *rinfo = lfirst(lc);

		if (rinfo->parent_ec == ec)
			return rinfo;
	}
	return NULL;
}

/*
 * Correct the clause joining big's column bvar and small's svar, if the
 * small side's key domain reaches far beyond bvar (ApBloomSelectivity's
 * join_factor).  Returns the factor applied, 1 if none.
 */
static double
ap_correct_pair(PlannerInfo *root, EquivalenceClass *ec, RelOptInfo *big, Var *bvar,
				RelOptInfo *small, Var *svar)
{
	ApBloomKey	key;
	double		nd_small;
	double		bytes;
	double		factor;
	double		sel;
	double		pg_sel;
	double		pg_rows;
	double		cap_rows;
	double		rows;
	RestrictInfo *rinfo;
	RestrictInfo *commuted;
	SpecialJoinInfo sjinfo;

	/* a restricted small side only: unrestricted, PostgreSQL's count is exact */
	if (small->rows >= small->tuples || big->rows < 1.0 || small->rows < 1.0)
		return 1.0;
	memset(&key, 0, sizeof(key));
	key.attno = bvar->varattno;
	key.type = bvar->vartype;
	key.kind = ApTypeKindOf(bvar->vartype);
	key.small_expr = (Expr *) svar;
	key.small_kind = ApTypeKindOf(svar->vartype);
	sel = ApBloomSelectivity(root, big, small, &key, 1, &nd_small, &bytes, &factor);
	if (factor <= 1.0)
		return 1.0;

	rinfo = ap_ec_clause(root, ec, big, small);
	commuted = ap_ec_clause(root, ec, small, big);
	if (rinfo == NULL || commuted == NULL)
		return 1.0;
	ApInitInnerJoinInfo(&sjinfo, big->relids, small->relids);
	/* PostgreSQL's own, computed as its join size estimate would (and cached) */
	pg_sel = clause_selectivity(root, (Node *) rinfo, 0, JOIN_INNER, &sjinfo);
	if (rinfo->norm_selec < 0)
		return 1.0;				/* not cached: PostgreSQL will not read ours */
	pg_rows = big->rows * small->rows * pg_sel;
	/* each big row whose key the small side holds joins its key's rows */
	cap_rows = big->rows * sel * Max(1.0, small->rows / Max(nd_small, 1.0));
	rows = Min(pg_rows * factor, cap_rows);
	if (rows <= pg_rows)
		return 1.0;
	rinfo->norm_selec = Min(1.0, rows / (big->rows * small->rows));
	commuted->norm_selec = rinfo->norm_selec;
	elog(DEBUG2, "active_pg join rows: rel %u col %d = rel %u col %d: selectivity %g -> %g",
		 big->relid, bvar->varattno, small->relid, svar->varattno, pg_sel,
		 rinfo->norm_selec);
	return rinfo->norm_selec / Max(pg_sel, 1e-300);
}

/* Remember a correction for ApJoinRowsCorrected, for the rest of the planning. */
static void
ap_remember(PlannerInfo *root, Var *bvar, Var *svar, double factor)
{
	ApRowsFix  *fix = palloc(sizeof(ApRowsFix));

	fix->root = root;
	fix->big = bvar->varno;
	fix->big_attno = bvar->varattno;
	fix->small = svar->varno;
	fix->small_attno = svar->varattno;
	fix->factor = factor;
	ApMemoKeep(&ap_rows_fixes, fix);
}

void
ApJoinRowsCorrect(PlannerInfo *root, Relids bigs)
{
	ListCell   *lc;

	if (!active_pg_correct_join_rows || bms_is_empty(bigs))
		return;
	foreach(lc, root->eq_classes)
	{
		EquivalenceClass *ec = lfirst(lc);
		ListCell   *lb;

		if (ec->ec_has_const || ec->ec_has_volatile || ec->ec_broken ||
			ApEcBelowOuterJoin(ec) || list_length(ec->ec_members) < 2 ||
			!bms_overlap(ec->ec_relids, bigs))
			continue;
		foreach(lb, ec->ec_members)
		{
			EquivalenceMember *bem = lfirst(lb);
			Var		   *bvar = ap_member_var(root, bem);
			ListCell   *ls;

			if (bvar == NULL || !bms_is_member(bvar->varno, bigs) ||
				ApEmNulledByOuterJoin(bem))
				continue;
			foreach(ls, ec->ec_members)
			{
				EquivalenceMember *sem = lfirst(ls);
				Var		   *svar = ap_member_var(root, sem);
				double		factor;

				if (svar == NULL || svar->varno == bvar->varno || ApEmNulledByOuterJoin(sem))
					continue;
				factor = ap_correct_pair(root, ec, root->simple_rel_array[bvar->varno], bvar,
										 root->simple_rel_array[svar->varno], svar);
				if (factor > 1.0)
					ap_remember(root, bvar, svar, factor);
			}
		}
	}
}

bool
ApJoinRowsCorrected(PlannerInfo *root, Index big, AttrNumber attno, Expr *small_expr)
{
	ListCell   *lc;

	while (small_expr && IsA(small_expr, RelabelType))
		small_expr = ((RelabelType *) small_expr)->arg;
	if (small_expr == NULL || !IsA(small_expr, Var))
		return false;
	foreach(lc, ap_rows_fixes.entries)
	{
		ApMemoEntry *e = lfirst(lc);
		ApRowsFix  *fix = e->value;

		if (fix->root == root && fix->big == big && fix->big_attno == attno &&
			fix->small == ((Var *) small_expr)->varno &&
			fix->small_attno == ((Var *) small_expr)->varattno)
			return true;
	}
	return false;
}
