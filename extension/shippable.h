/*
 * shippable.h
 *	  Planner-side helpers shared by shippable.c, shippable_tables.c,
 *	  planner.c and encode.c.
 *
 * The operator whitelist lives in shippable_tables.c only; shippable.c and
 * encode.c look operators up through ApLookupOperator so that the planner's
 * decision and the encoded program can never disagree about an operator's
 * (op, cmp) pair.
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
 * (op, which side is the date) of a date-vs-timestamptz comparison, which
 * encode.c rewrites into a date comparison; false for any other function.
 */
bool		ApLookupDateTzOperator(Oid funcid, ApOp *op, bool *date_left);

/* Flags of a whitelisted value-producing function (ApFunction.flags). */
#define AP_F_CHARS			0x01	/* counts characters: UTF8/SQL_ASCII only */
#define AP_F_COLL_C			0x02	/* ctype folds ASCII as ASCII (C, or probed) */
#define AP_F_COLL_DET		0x04	/* collation must be deterministic (LIKE, ILIKE) */
#define AP_F_FIELD			0x08	/* arg 1 is a constant field name, not shipped */
#define AP_F_TRUNC			0x10	/* with AP_F_FIELD: date_trunc's field set */
#define AP_F_TYPMOD			0x20	/* arg 2 is a constant typmod, not shipped */
#define AP_F_DATE_AS_TS		0x40	/* the date argument is cast to timestamp first */
#define AP_F_REGEX			0x80	/* arg 2, a constant regular expression, travels
									 * as the LIKE pattern it equals (ApRegexConstAsLike) */

/* One whitelisted value-producing function: how it travels as a FuncCall. */
typedef struct ApFunction
{
	Oid			funcid;			/* pg_proc oid */
	ApFunc		fn;
	int			flags;			/* AP_F_* */
} ApFunction;

/* The whitelist entry of a function, NULL if not shippable. */
const ApFunction *ApLookupFunction(Oid funcid);

/*
 * The LIKE pattern (backslash escapes) that matches exactly the strings the
 * regular expression of PostgreSQL's default flavour in node, a text
 * constant, matches; NULL for any other node and for an expression with no
 * pattern this translation knows: literal characters, '.' and '.*', a
 * leading '^' and a trailing '$' (shippable.c).  The planner ships a regex
 * operator only where this is not NULL; encode.c sends the pattern.
 */
char	   *ApRegexConstAsLike(Node *node);

/*
 * The ApDateField named by a constant field argument of extract, date_part
 * or date_trunc over an argument of kind argkind; false if the disk must
 * not compute it (unknown name, or one PostgreSQL rejects for that type).
 */
bool		ApDateFieldOf(Node *field, ApTypeKind argkind, bool trunc,
						  ApDateField *out);

/*
 * Can the host evaluate this Var-free expression once when the scan starts
 * and ship the value as a constant (stable functions, current_date, Params)?
 */
bool		ApIsHostConstant(Node *node);

/*
 * Can a disk compute this value-producing expression over relation relid
 * exactly?  *kind is set to its result kind.  Used for projections.
 */
bool		ApIsShippableValue(Index relid, Expr *expr, ApTypeKind *kind);

/*
 * Can a disk evaluate this boolean qual exactly?  *nodes: the size of its
 * encoding, its root placed below the AND that joins several disk quals
 * (shippable.c; shippable_quals.c keeps the program within the limits).
 */
bool		ApQualShippable(PlannerInfo *root, RelOptInfo *baserel, Expr *expr,
							int64 *nodes);

/*
 * As ApClassifyQuals, but both outputs stay RestrictInfo lists (the planner
 * needs them for selectivity and cost estimation).  Pseudoconstant clauses
 * appear in neither list.
 */
void		ApClassifyRestrictInfos(PlannerInfo *root, RelOptInfo *baserel,
									List *restrictinfos,
									List **disk, List **host);

/*
 * A whitelisted comparison (which cannot fail) of columns, constants and
 * Params, PARAM_EXEC ones only with exec_params; its family in *cmp.
 */
bool		ApPlainComparison(Node *node, bool exec_params, ApCmp *cmp);

#endif							/* AP_SHIPPABLE_H */
