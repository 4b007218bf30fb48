/*
 * join_rows.h
 *	  Join row estimates corrected where a dimension's key domain reaches far
 *	  beyond the big table's column (join_rows.c).
 */
#ifndef AP_JOIN_ROWS_H
#define AP_JOIN_ROWS_H

#include "active_pg.h"

#include "nodes/pathnodes.h"

extern bool active_pg_correct_join_rows;	/* active_pg.correct_join_rows */

/*
 * Before the join search: correct the cached selectivity of the join
 * clauses between a column of a table in bigs and another table's.
 */
void		ApJoinRowsCorrect(PlannerInfo *root, Relids bigs);

/* Were the joins of big's column attno and small_expr corrected here? */
bool		ApJoinRowsCorrected(PlannerInfo *root, Index big, AttrNumber attno,
								Expr *small_expr);

#endif							/* AP_JOIN_ROWS_H */
