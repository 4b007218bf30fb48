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
 * hands the row back at the first argument it cannot compute (diskd/vm.c),
 * and the host re-checks handed-back rows against all quals in the original
 * order: errors are then PostgreSQL's own, on the same rows.
 *
 * Row-level security and security-barrier views.  order_qual_clauses puts
 * quals of lower security levels first (leakproof ones anywhere), and the
 * rule above never lets a disk qual overtake a host qual, so a leaky qual
 * never sees a row that a qual of a lower security level rejects.
 */
#include "postgres.h"

#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"

#include "active_pg.h"
#include "shippable.h"

/* One qual and its sort keys, as order_qual_clauses sees them. */
typedef struct ApQualItem
{
	RestrictInfo *ri;
	Cost		cost;
	Index		security_level;
} ApQualItem;

/*
 * The quals in the order createplan.c's order_qual_clauses gives them:
 * by security level (leakproof ones count as level 0), then per-tuple cost,
 * with a stable sort.  Repeated here because that function is static.
 */
static List *
ap_order_quals(PlannerInfo *root, List *restrictinfos)
{
	int			n = list_length(restrictinfos);
	ApQualItem *items;
	List	   *result = NIL;
	ListCell   *lc;
	int			i = 0;

	if (n <= 1)
		return list_copy(restrictinfos);
	items = palloc(sizeof(ApQualItem) * n);
	foreach(lc, restrictinfos)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		QualCost	qcost;

		cost_qual_eval_node(&qcost, (Node *) ri, root);
		items[i].ri = ri;
		items[i].cost = qcost.per_tuple;
		items[i].security_level = ri->leakproof ? 0 : ri->security_level;
		i++;
	}
	/* insertion sort: stable, as the planner's */
	for (i = 1; i < n; i++)
	{
		ApQualItem	newitem = items[i];
		int			j;

		for (j = i; j > 0; j--)
		{
			ApQualItem *old = &items[j - 1];

			if (newitem.security_level > old->security_level ||
				(newitem.security_level == old->security_level &&
				 newitem.cost >= old->cost))
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

	foreach(lc, ap_order_quals(root, restrictinfos))
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
