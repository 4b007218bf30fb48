/*
 * shippable.h
 *	  Planner-side helpers shared by shippable.c, planner.c and encode.c.
 *
 * The operator whitelist lives in shippable.c only; encode.c looks operators
 * up through ApLookupOperator so that the planner's decision and the encoded
 * program can never disagree about an operator's (op, cmp) pair.
 */
#ifndef AP_SHIPPABLE_H
#define AP_SHIPPABLE_H

#include "active_pg.h"

/*
 * Most elements of a constant IN list / = ANY(array) shipped to the disks; the
 * list becomes one comparison per element, so this bounds the program's size
 * well below AP_MAX_EXPR_NODES.
 */
#define AP_SAOP_ELEMENTS_MAX		1000

/* (op, cmp) of a whitelisted comparison function; false if not whitelisted. */
bool		ApLookupOperator(Oid funcid, ApOp *op, ApCmp *cmp);

/*
 * As ApClassifyQuals, but both outputs stay RestrictInfo lists (the planner
 * needs them for selectivity and cost estimation).  Pseudoconstant clauses
 * appear in neither list.
 */
void		ApClassifyRestrictInfos(PlannerInfo *root, RelOptInfo *baserel,
									List *restrictinfos,
									List **disk, List **host);

#endif							/* AP_SHIPPABLE_H */
