/*
 * shippable_quals.c
 *	  The classification of a base relation's restriction clauses into the
 *	  quals the disks evaluate and those that stay on the host (whether one
 *	  qual can run on a disk at all is shippable.c's walker).
 *
 * Evaluation order.  PostgreSQL evaluates a scan's quals in the order of
 * order_qual_clauses (security level, then cost; stable) and stops at the
 * first that is not true, so a row some early qual rejects never raises an
 * error in a later one.  The disk filters with its quals before the host
 * sees a row, so only the leading run of shippable quals in that order goes
 * to the disk; the first qual that must stay on the host and could raise a
 * data-dependent error (one that is not leakproof) keeps every later one on
 * the host as well; leakproof host quals can be overtaken.  The disk evaluates its AND left to right and
 * hands the row back at the first argument it cannot compute (diskd/vm_compile.c),
 * and the host re-checks handed-back rows against all quals in the original
 * order: errors are then PostgreSQL's own, on the same rows.
 *
 * Within that run the disk may use its own order where no error can depend on
 * it: a maximal stretch of disk quals that cannot fail (whitelisted
 * comparisons, NULL and boolean tests, AND/OR/NOT, over columns, constants
 * and query parameters) is sorted by cost / (1 - selectivity), the order that
 * evaluates least on average for independent quals, so the cheap selective
 * date range of TPC-H Q12 runs before the string test of l_shipmode.  A row
 * reaches the qual after such a stretch exactly when every qual of the
 * stretch is true, whatever their order, so the host and the disk still
 * raise errors on the same rows (and the host re-checks handed-back rows in
 * PostgreSQL's order).
 *
 * Row-level security and security-barrier views.  order_qual_clauses puts
 * quals of lower security levels first (leakproof ones anywhere), and the
 * rule above never lets a disk qual overtake a host qual, so a leaky qual
 * never sees a row that a qual of a lower security level rejects.
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "active_pg.h"
#include "shippable.h"

/* One qual and its sort keys: a group (ascending), then a key within it. */
typedef struct ApQualItem
{
	RestrictInfo *ri;
	Index		group;
	double		key;
} ApQualItem;

/*
 * A column, a constant or a Param (PARAM_EXEC ones only with exec_params: an
 * init-plan's value is computed when first needed, and that may fail),
 * under relabelings.
 */
static bool
ap_plain_leaf(Node *node, bool exec_params)
{
	while (IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (IsA(node, Param))
		return exec_params || ((Param *) node)->paramkind == PARAM_EXTERN;
	return IsA(node, Var) || IsA(node, Const);
}

bool
ApPlainComparison(Node *node, bool exec_params, ApCmp *cmp)
{
	ApOp		op;
	ListCell   *lc;

	if (!IsA(node, OpExpr))
		return false;
	set_opfuncid((OpExpr *) node);
	/* whitelisted comparisons are strict and cannot fail (shippable.c) */
	if (!ApLookupOperator(((OpExpr *) node)->opfuncid, &op, cmp))
		return false;
	foreach(lc, ((OpExpr *) node)->args)
	{
		if (!ap_plain_leaf(lfirst(lc), exec_params))
			return false;
	}
	return true;
}

/* The disk's relative cost of one comparison of family cmp. */
static double
ap_comparison_cost(ApCmp cmp)
{
	if (cmp == AP_CMP_NUMERIC)
		return 2;
	if (cmp == AP_CMP_TEXT || cmp == AP_CMP_BPCHAR)
		return 3;
	return 1;
}

/*
 * The disk's relative cost of a qual that cannot fail, or -1 when it might
 * fail or is not one of the simple shapes: a plain comparison costs by its
 * family (integers, dates, floats 1; numerics 2; strings 3), x op ANY/ALL of
 * a constant array one comparison per element, NULL and boolean tests of a
 * plain value 1, AND/OR/NOT the sum of their arguments.
 */
static double
ap_qual_cost(Node *node)
{
	ApOp		op;
	ApCmp		cmp;
	double		cost = 0;
	ListCell   *lc;

	switch (nodeTag(node))
	{
		case T_NullTest:
			return ap_plain_leaf((Node *) ((NullTest *) node)->arg, false) ? 1 : -1;
		case T_BooleanTest:
			return ap_plain_leaf((Node *) ((BooleanTest *) node)->arg, false) ? 1 : -1;
		case T_BoolExpr:
			foreach(lc, ((BoolExpr *) node)->args)
			{
				double		c = ap_qual_cost(lfirst(lc));

				if (c < 0)
					return -1;
				cost += c;
			}
			return cost;
		case T_OpExpr:
			return ApPlainComparison(node, false, &cmp) ? ap_comparison_cost(cmp) : -1;
		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) node;
				Node	   *arr = lsecond(saop->args);
				double		n = 1;

				set_sa_opfuncid(saop);
				if (!ApLookupOperator(saop->opfuncid, &op, &cmp) ||
					!ap_plain_leaf(linitial(saop->args), false) || !IsA(arr, Const))
					return -1;
				if (!((Const *) arr)->constisnull)
				{
					ArrayType  *a = DatumGetArrayTypeP(((Const *) arr)->constvalue);

					n = Max(ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)), 1);
				}
				return n * ap_comparison_cost(cmp);
			}
		default:
			/* a bare boolean column or constant */
			return ap_plain_leaf(node, false) ? 0 : -1;
	}
}

/*
 * PostgreSQL's executor order (createplan.c's order_qual_clauses, static
 * there): by security level, leakproof quals counting as level 0, then by
 * per-tuple cost.
 */
static void
ap_executor_keys(PlannerInfo *root, RestrictInfo *ri, ApQualItem *item)
{
	QualCost	qcost;

	cost_qual_eval_node(&qcost, (Node *) ri, root);
	item->group = ri->leakproof ? 0 : ri->security_level;
	item->key = qcost.per_tuple;
}

/*
 * The disk's order (see the file header): in each maximal stretch of quals
 * that cannot fail, cost / (1 - selectivity); a qual that can fail is a
 * group of its own and the quals after it a new group, so nothing moves
 * past it.  *stretch counts the groups so far.
 */
static void
ap_disk_keys(PlannerInfo *root, RestrictInfo *ri, ApQualItem *item, Index *stretch)
{
	double		cost = ap_qual_cost((Node *) ri->clause);
	Selectivity sel;

	item->key = 0;
	if (cost < 0)
	{
		item->group = ++(*stretch);
		(*stretch)++;
		return;
	}
	sel = clause_selectivity(root, (Node *) ri, 0, JOIN_INNER, NULL);
	sel = Min(Max(sel, 0.0), 1.0);
	item->key = cost / Max(1.0 - sel, 0.001);
	item->group = *stretch;
}

/*
 * The quals sorted stably by (group, key), with the insertion sort the
 * planner uses: in the executor's order, or in the disk's (disk_order).
 */
static List *
ap_sort_quals(PlannerInfo *root, List *restrictinfos, bool disk_order)
{
	int			n = list_length(restrictinfos);
	ApQualItem *items;
	List	   *result = NIL;
	ListCell   *lc;
	Index		stretch = 0;
	int			i = 0;

	if (n <= 1)
		return list_copy(restrictinfos);
	items = palloc(sizeof(ApQualItem) * n);
	foreach(lc, restrictinfos)
	{
		items[i].ri = lfirst_node(RestrictInfo, lc);
		if (disk_order)
			ap_disk_keys(root, items[i].ri, &items[i], &stretch);
		else
			ap_executor_keys(root, items[i].ri, &items[i]);
		i++;
	}
	for (i = 1; i < n; i++)
	{
		ApQualItem	newitem = items[i];
		int			j;

		for (j = i; j > 0; j--)
		{
			ApQualItem *old = &items[j - 1];

			if (newitem.group > old->group ||
				(newitem.group == old->group && newitem.key >= old->key))
				break;
			items[j] = *old;
		}
		items[j] = newitem;
	}
	for (i = 0; i < n; i++)
		result = lappend(result, items[i].ri);
	pfree(items);
	return result;
}

/*
 * Split RestrictInfos into disk and host lists, both in evaluation order:
 * the disk gets the leading run of shippable quals (see the file header).
 */
void
ApClassifyRestrictInfos(PlannerInfo *root, RelOptInfo *baserel, List *restrictinfos,
						List **disk, List **host)
{
	int64		program_nodes = 1;	/* the AND joining the disk quals */
	bool		on_disk = true;
	bool		secured = false;
	ListCell   *lc;

	*disk = NIL;
	*host = NIL;

	foreach(lc, restrictinfos)
	{
		if (lfirst_node(RestrictInfo, lc)->security_level > 0)
			secured = true;
	}

	foreach(lc, ap_sort_quals(root, restrictinfos, false))
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		int64		nodes;

		if (ri->pseudoconstant)
			continue;
		/*
		 * Since no disk qual overtakes a host qual, a leaky qual can never
		 * run before a qual of a lower security level: row-level security
		 * needs no further rule.
		 */
		if (on_disk && ApQualShippable(root, baserel, ri->clause, &nodes) &&
			program_nodes + nodes <= AP_MAX_EXPR_NODES)
		{
			program_nodes += nodes;
			*disk = lappend(*disk, ri);
		}
		else
		{
			/*
			 * A host qual that cannot raise a data-dependent error (only
			 * leakproof functions over the row) may be overtaken: a row it
			 * would reject can make no later qual fail on the host, and rows
			 * the disk hands back are re-checked in the original order.  Under
			 * row-level security keep the strict prefix rule.
			 */
			if (secured || contain_leaked_vars((Node *) ri->clause))
				on_disk = false;
			*host = lappend(*host, ri);
		}
	}
	*disk = ap_sort_quals(root, *disk, true);
}

/* Split RestrictInfos into bare disk and host clause lists. */
void
ApClassifyQuals(PlannerInfo *root, RelOptInfo *baserel, List *restrictinfos,
				List **disk, List **host)
{
	List	   *disk_ri;
	List	   *host_ri;

	ApClassifyRestrictInfos(root, baserel, restrictinfos, &disk_ri, &host_ri);
	*disk = extract_actual_clauses(disk_ri, false);
	*host = extract_actual_clauses(host_ri, false);
}
