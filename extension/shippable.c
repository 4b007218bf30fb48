/*
 * shippable.c
 *	  What may run on a disk: the expression walker.  The classification of
 *	  a base relation's restriction clauses into disk and host quals is in
 *	  shippable_quals.c.  The whitelist tables (type kinds,
 *	  ap_operators[], ap_datetz_operators[], ap_functions[], date fields) and
 *	  their lookups live in shippable_tables.c.
 *
 * A clause is shipped to the disks only if the disk VM (diskd/vm_compile.c) computes
 * exactly what PostgreSQL would, for every input, including NULLs.  The
 * walker below is a whitelist: any node type, function, type or collation it
 * does not know makes the whole clause stay on the host.  The rules:
 *
 *	- Columns: only user columns of the scanned relation (no system columns,
 *	  no outer references) whose type maps to an ApTypeKind (domains map to
 *	  their base type).  Other types may be projected but never evaluated.
 *	- Constants and Params of those kinds.  Params (PARAM_EXTERN, PARAM_EXEC)
 *	  are evaluated by the host when the scan starts and shipped as constants.
 *	- Comparison operators, recognized by their implementation function
 *	  (OpExpr.opfuncid), mapped to an (ApOp, ApCmp) pair in ap_operators[].
 *	  All of them are immutable, strict and cannot fail, so the disk may
 *	  evaluate them in any order without changing results or errors.  Volatile
 *	  or stable functions are excluded by construction: they are not listed.
 *	  timestamptz-vs-date comparisons are never shipped: their result depends
 *	  on the session's TimeZone, which the disk does not know.
 *	- Collations: text/bpchar equality is bytewise only under a deterministic
 *	  collation; ordering is bytewise only under C/POSIX (lc_collate_is_c).
 *	  An invalid (indeterminate) collation is never shipped: the host raises
 *	  an error for it, which the disk could not reproduce.
 *	- AND/OR/NOT, IS [NOT] NULL on scalars, IS [NOT] TRUE/FALSE/UNKNOWN, a bare
 *	  boolean column/constant, binary-compatible relabeling within one kind
 *	  family (varchar -> text), and "x op ANY/ALL (array)" whose array is a
 *	  constant of at most AP_SAOP_ELEMENTS_MAX elements or an ARRAY[...] of
 *	  shippable elements (the encoder expands it into OR/AND of comparisons,
 *	  which has the same three-valued result).
 *	- Value-producing functions (arithmetic, casts, dates, strings), recognized
 *	  by function OID in ap_functions[] and sent as FuncCall (proto/ap_types.h
 *	  states each one's semantics).  Unlike comparisons they can fail
 *	  (overflow, division by zero, bad substring length): the disk then hands
 *	  the tuple to the host, whose evaluation raises PostgreSQL's own error,
 *	  so errors stay identical.  Functions that count characters ship only
 *	  under UTF8 or SQL_ASCII; ILIKE/upper/lower under a C ctype or a
 *	  collation whose case mapping of the 26 ASCII letters is probed to be
 *	  ASCII's (ap_ctype_folds_ascii: C.UTF-8, English, not Turkish), the disk
 *	  deciding only all-ASCII values, and ILIKE not with a constant pattern
 *	  of other bytes; LIKE only under a deterministic collation
 *	  (PostgreSQL refuses the others).
 *	  Field names of extract/date_part/date_trunc and numeric typmods must be
 *	  constants, and only fields PostgreSQL accepts for the argument type.
 *	- CASE (the simple form is shipped as the searched form, its CaseTestExpr
 *	  replaced by the tested expression), COALESCE, NULLIF (as CASE WHEN a = b
 *	  THEN NULL ELSE a) and IS DISTINCT FROM (as a CASE over NULL tests and
 *	  equality), with every branch of the result's kind family.
 *	- Var-free subtrees of stable or immutable functions (current_date,
 *	  now()::date, $1 + 1) are evaluated by the host when the scan starts and
 *	  shipped as constants, like Params: within one statement a stable
 *	  function returns the same value for every row.
 *	- Pseudoconstant clauses (no Vars) are never shipped: the planner turns
 *	  them into a gating Result above the scan.
 *	- Programs the disk would refuse are never built: the encoded tree stays
 *	  within AP_MAX_EXPR_DEPTH and AP_MAX_EXPR_NODES (proto/ap_wire.h); quals
 *	  beyond the budget stay on the host.
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_collation_d.h"
#include "catalog/pg_proc_d.h"
#include "catalog/pg_type_d.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"

#include "active_pg.h"
#include "shippable.h"

/* What the walker needs to know about the scan. */
typedef struct ApShipContext
{
	Index		relid;			/* the scanned relation's range table index */
	int			depth;			/* depth of the current node once encoded */
	int64		nodes;			/* protobuf Expr nodes the encoding will have */
	ApTypeKind	casetest_kind;	/* kind of a simple CASE's tested value, or OTHER */
	int64		casetest_nodes;	/* its encoded size (copied per CaseTestExpr) */
} ApShipContext;

static bool ap_shippable(Node *node, ApShipContext *ctx, ApTypeKind *kind);

/* Check a child that the encoding places levels below the current node. */
static bool
ap_arg_shippable(Node *node, ApShipContext *ctx, ApTypeKind *kind, int levels)
{
	bool		ok;

	ctx->depth += levels;
	ok = ap_shippable(node, ctx, kind);
	ctx->depth -= levels;
	return ok;
}

/* check_functions_in_node callback: is the function volatile? */
static bool
ap_volatile_func(Oid func_id, void *context)
{
	return func_volatile(func_id) == PROVOLATILE_VOLATILE;
}

/* True if the subtree holds anything the host cannot evaluate at scan start. */
static bool
ap_not_constant_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_Var:
		case T_PlaceHolderVar:
		case T_CaseTestExpr:
		case T_CoerceToDomainValue:
		case T_SetToDefault:
		case T_CurrentOfExpr:
		case T_NextValueExpr:
		case T_SubLink:
		case T_SubPlan:
		case T_AlternativeSubPlan:
		case T_Aggref:
		case T_WindowFunc:
		case T_GroupingFunc:
			return true;
		case T_Param:
			return ((Param *) node)->paramkind != PARAM_EXTERN &&
				((Param *) node)->paramkind != PARAM_EXEC;
		case T_FuncExpr:
			if (((FuncExpr *) node)->funcretset)
				return true;
			break;
		default:
			break;
	}
	if (check_functions_in_node(node, ap_volatile_func, NULL))
		return true;
	return expression_tree_walker(node, ap_not_constant_walker, context);
}

/*
 * Does the subtree take inputs (constants or parameters)?  A function applied
 * only to argument-less functions, like now()::date, computes the same value
 * for every row of every query: it is evaluated once without changing which
 * errors a plain scan raises.
 */
static bool
ap_has_inputs_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Const) || IsA(node, Param))
		return true;
	return expression_tree_walker(node, ap_has_inputs_walker, context);
}

/*
 * Could evaluating this Var-free subtree raise a data-dependent error?
 * Stock PostgreSQL evaluates such a subtree only for rows that reach it, so
 * evaluating it once at scan start would raise errors (e.g. `$1 - date
 * 'infinity'`, `$1 / 0`) where a plain scan raises none.  Leakproof
 * functions cannot raise data-dependent errors, argument-less ones
 * (now(), current_date) do not depend on data; anything else may.
 */
static bool
ap_may_raise_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_Const:
		case T_Param:
		case T_SQLValueFunction:
		case T_RelabelType:
		case T_List:
			break;
		case T_FuncExpr:
			{
				FuncExpr   *fe = (FuncExpr *) node;

				if (fe->args != NIL && !get_func_leakproof(fe->funcid) &&
					ap_has_inputs_walker((Node *) fe->args, NULL))
					return true;
				break;
			}
		case T_OpExpr:
			set_opfuncid((OpExpr *) node);
			if (!get_func_leakproof(((OpExpr *) node)->opfuncid) &&
				ap_has_inputs_walker((Node *) ((OpExpr *) node)->args, NULL))
				return true;
			break;
		default:
			return true;		/* I/O conversions, CASE, ...: be safe */
	}
	return expression_tree_walker(node, ap_may_raise_walker, context);
}

/*
 * Var-free stable/immutable computation the host evaluates once per scan.
 * Only subtrees that cannot raise data-dependent errors qualify; the others
 * are shipped as expressions over the Params (or stay on the host), so that
 * errors happen exactly for the rows where stock PostgreSQL raises them.
 */
bool
ApIsHostConstant(Node *node)
{
	if (node == NULL)
		return false;
	if (!IsA(node, FuncExpr) && !IsA(node, OpExpr) &&
		!IsA(node, SQLValueFunction) && !IsA(node, CoerceViaIO))
		return false;
	if (ap_not_constant_walker(node, NULL))
		return false;
	return !ap_may_raise_walker(node, NULL);
}

/* The kind family a relabeling must stay within (varchar and text are one). */
static ApTypeKind
ap_kind_family(ApTypeKind kind)
{
	return kind == AP_TYPE_VARCHAR ? AP_TYPE_TEXT : kind;
}

/*
 * Is the comparison's collation one under which PostgreSQL compares bytes?
 * Only string comparisons depend on it.
 */
static bool
ap_collation_ok(ApOp op, ApCmp cmp, Oid inputcollid)
{
	if (cmp != AP_CMP_TEXT && cmp != AP_CMP_BPCHAR)
		return true;
	/* the host errors out on an indeterminate collation; the disk can't */
	if (!OidIsValid(inputcollid))
		return false;
	if (op == AP_OP_EQ || op == AP_OP_NE)
	{
		/* the database default is always deterministic in PostgreSQL 15 */
		return inputcollid == DEFAULT_COLLATION_OID ||
			ApCollateIsC(inputcollid) ||
			get_collation_isdeterministic(inputcollid);
	}
	/* ordering is bytewise (memcmp, then length) only in C/POSIX */
	return ApCollateIsC(inputcollid);
}

/* Check one comparison: whitelisted function, fitting args, collation. */
static bool
ap_comparison_ok(Oid funcid, Oid inputcollid, ApTypeKind left, ApTypeKind right)
{
	ApOp		op;
	ApCmp		cmp;

	if (!ApLookupOperator(funcid, &op, &cmp))
		return false;
	if (!ap_cmp_accepts(cmp, left, right))
		return false;
	return ap_collation_ok(op, cmp, inputcollid);
}

/*
 * date op timestamptz (either order): the date side any shippable date
 * expression, the timestamptz side a value the host knows when the scan
 * starts, so that encode.c can turn it into a boundary date.  The encoding
 * is one date comparison against one constant: the same shape, depth and
 * node count as a shipped comparison.
 */
static bool
ap_datetz_shippable(OpExpr *op, bool date_left, ApShipContext *ctx)
{
	Node	   *tzarg;
	ApTypeKind	left;
	ApTypeKind	right;

	if (list_length(op->args) != 2)
		return false;
	tzarg = date_left ? lsecond(op->args) : linitial(op->args);
	if (!IsA(tzarg, Const) && !IsA(tzarg, Param) && !ApIsHostConstant(tzarg))
		return false;
	if (!ap_arg_shippable(linitial(op->args), ctx, &left, 1) ||
		!ap_arg_shippable(lsecond(op->args), ctx, &right, 1))
		return false;
	if (date_left)
		return left == AP_TYPE_DATE && right == AP_TYPE_TIMESTAMPTZ;
	return left == AP_TYPE_TIMESTAMPTZ && right == AP_TYPE_DATE;
}

/* x op ANY/ALL (array): constant array or ARRAY[...] of shippable elements. */
static bool
ap_saop_shippable(ScalarArrayOpExpr *saop, ApShipContext *ctx)
{
	Node	   *scalar;
	Node	   *array;
	ApTypeKind	left;
	ApTypeKind	elem_kind;
	Oid			elem_type;
	int64		nodes_before = ctx->nodes;
	int64		scalar_nodes;
	int			nelems = 0;

	if (list_length(saop->args) != 2)
		return false;
	scalar = linitial(saop->args);
	array = lsecond(saop->args);

	/* encoded as OR/AND (this node) -> comparison -> scalar and element */
	if (!ap_arg_shippable(scalar, ctx, &left, 2))
		return false;
	scalar_nodes = ctx->nodes - nodes_before;

	elem_type = get_element_type(exprType(array));
	if (!OidIsValid(elem_type))
		return false;
	elem_kind = ApTypeKindOf(elem_type);
	if (elem_kind == AP_TYPE_OTHER)
		return false;

	if (IsA(array, Const))
	{
		Const	   *c = (Const *) array;

		if (!c->constisnull)
		{
			ArrayType  *arr = DatumGetArrayTypeP(c->constvalue);

			nelems = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
			if (nelems > AP_SAOP_ELEMENTS_MAX)
				return false;
			/* one constant per element */
			ctx->nodes += nelems;
		}
	}
	else if (IsA(array, ArrayExpr))
	{
		ArrayExpr  *ae = (ArrayExpr *) array;
		ListCell   *lc;

		nelems = list_length(ae->elements);
		if (ae->multidims || nelems > AP_SAOP_ELEMENTS_MAX)
			return false;
		foreach(lc, ae->elements)
		{
			ApTypeKind	k;

			if (!ap_arg_shippable(lfirst(lc), ctx, &k, 2) ||
				ap_kind_family(k) != ap_kind_family(elem_kind))
				return false;
		}
	}
	else
		return false;

	/* one comparison per element, each with its own copy of the scalar */
	ctx->nodes += nelems + (nelems - 1) * scalar_nodes;
	if (ctx->nodes > AP_MAX_EXPR_NODES)
		return false;

	set_sa_opfuncid(saop);
	return ap_comparison_ok(saop->opfuncid, saop->inputcollid, left, elem_kind);
}

/* Do character-counting functions see UTF8 or single-byte SQL_ASCII text? */
static bool
ap_encoding_ok(void)
{
	int			enc = GetDatabaseEncoding();

	return enc == PG_UTF8 || enc == PG_SQL_ASCII;
}

/* Is the collation valid and deterministic (LIKE refuses the others)? */
static bool
ap_collation_deterministic(Oid collid)
{
	if (!OidIsValid(collid))
		return false;
	return collid == DEFAULT_COLLATION_OID || ApCollateIsC(collid) ||
		get_collation_isdeterministic(collid);
}

/* Is a pattern argument a value the host ships as a constant? */
static bool
ap_pattern_ok(Node *node)
{
	while (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node != NULL &&
		(IsA(node, Const) || IsA(node, Param) || ApIsHostConstant(node));
}

/*
 * Does collation collid fold the case of ASCII text as the disk does (ASCII
 * letters to ASCII letters, nothing else)?  Under a C ctype PostgreSQL folds
 * only ASCII letters.  Under any other ctype lower() and upper() follow the
 * locale, which for text of ASCII letters alone maps each letter by itself
 * (no context: the special cases of Lithuanian, Greek and the like need
 * other characters) and agrees with ASCII except in Turkish and Azeri, whose
 * I and i are dotless and dotted.  So the probe folds the 26 letters both
 * ways with the collation itself, once per collation and backend; the disk
 * hands every value with a non-ASCII byte to the host (vm_str.c).  ILIKE
 * under a multibyte encoding lowercases both sides with lower(), so the same
 * answer holds for it.
 */
#define AP_CASE_PROBES		16

static bool
ap_ctype_folds_ascii(Oid collid)
{
	static Oid	probed[AP_CASE_PROBES];
	static bool answer[AP_CASE_PROBES];
	static int	nprobed = 0;
	text	   *lo;
	text	   *up;
	bool		ok;

	if (!OidIsValid(collid))
		return false;
	if (ApCtypeIsC(collid))
		return true;
	for (int i = 0; i < nprobed; i++)
	{
		if (probed[i] == collid)
			return answer[i];
	}
	lo = DatumGetTextPP(DirectFunctionCall1Coll(lower, collid,
												CStringGetTextDatum("ABCDEFGHIJKLMNOPQRSTUVWXYZ")));
	up = DatumGetTextPP(DirectFunctionCall1Coll(upper, collid,
												CStringGetTextDatum("abcdefghijklmnopqrstuvwxyz")));
	ok = VARSIZE_ANY_EXHDR(lo) == 26 && memcmp(VARDATA_ANY(lo), "abcdefghijklmnopqrstuvwxyz", 26) == 0 &&
		VARSIZE_ANY_EXHDR(up) == 26 && memcmp(VARDATA_ANY(up), "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 26) == 0;
	if (nprobed < AP_CASE_PROBES)
	{
		probed[nprobed] = collid;
		answer[nprobed++] = ok;
	}
	return ok;
}

/* The text of a non-null constant under RelabelTypes, or NULL for any other node. */
static text *
ap_const_text(Node *node)
{
	while (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL || !IsA(node, Const) || ((Const *) node)->constisnull)
		return NULL;
	return DatumGetTextPP(((Const *) node)->constvalue);
}

/*
 * Is node a text constant with a non-ASCII byte?  (A parameter's value is
 * not known here; the disk hands such rows to the host.)
 */
static bool
ap_non_ascii_const(Node *node)
{
	text	   *t = ap_const_text(node);
	const char *p;

	if (t == NULL)
		return false;
	p = VARDATA_ANY(t);
	for (int i = 0; i < (int) VARSIZE_ANY_EXHDR(t); i++)
	{
		if (IS_HIGHBIT_SET(p[i]))
			return true;
	}
	return false;
}

/*
 * Regular expressions as LIKE patterns.  A regular expression of
 * PostgreSQL's default flavour (ARE, no embedded options) made of literal
 * characters, '.' (any one character: LIKE's '_'), '.*' (any run: '%'), a
 * leading '^' and a trailing '$' matches exactly the strings the LIKE
 * pattern built from it matches: an unanchored end is a '%', literal '%',
 * '_' are escaped.  Without the 'n' flag '.' matches a newline too, as '_'
 * and '%' do, and '^' and '$' anchor the whole string.  Any other
 * metacharacter (a backslash, brackets, parentheses, braces, '|', '+', '?',
 * '*' after anything but '.', '^' or '$' inside) has no such equivalent
 * here, and the expression stays on the host.  Case-insensitive matching
 * (~*) is ILIKE's under the same rules (ASCII case folding, shippable
 * only under collations that fold ASCII as ASCII, non-ASCII values handed
 * back by the disks).  Used for TPC-H-like filters such as
 * o_comment ~ 'special.*requests'.
 */
static char *
ap_regex_as_like(const char *re, int len)
{
	StringInfoData like;
	int			i = 0;
	int			end = len;
	bool		anchored_end = false;

	initStringInfo(&like);
	if (end > 0 && re[0] == '^')
		i = 1;
	else
		appendStringInfoChar(&like, '%');
	if (end > i && re[end - 1] == '$')
	{
		anchored_end = true;
		end--;
	}
	while (i < end)
	{
		char		c = re[i];

		if (c == '.' && i + 1 < end && re[i + 1] == '*')
		{
			if (like.len == 0 || like.data[like.len - 1] != '%' ||
				(like.len >= 2 && like.data[like.len - 2] == '\\'))
				appendStringInfoChar(&like, '%');
			i += 2;
			continue;
		}
		if (c == '.')
			appendStringInfoChar(&like, '_');
		else if (strchr("[](){}|*+?^$\\", c) != NULL || c == '\0')
		{
			pfree(like.data);
			return NULL;
		}
		else
		{
			if (c == '%' || c == '_')
				appendStringInfoChar(&like, '\\');
			appendStringInfoChar(&like, c);
		}
		i++;
	}
	if (!anchored_end &&
		(like.len == 0 || like.data[like.len - 1] != '%' ||
		 (like.len >= 2 && like.data[like.len - 2] == '\\')))
		appendStringInfoChar(&like, '%');
	return like.data;
}

/* See shippable.h. */
char *
ApRegexConstAsLike(Node *node)
{
	text	   *t = exprType(node) == TEXTOID ? ap_const_text(node) : NULL;

	return t == NULL ? NULL : ap_regex_as_like(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

/*
 * A whitelisted value-producing function call (FuncExpr or a non-comparison
 * OpExpr): collation, encoding and constant-argument rules, then the shipped
 * arguments.
 */
static bool
ap_function_shippable(Oid funcid, List *args, Oid inputcollid, Oid resulttype,
					  ApShipContext *ctx, ApTypeKind *kind)
{
	const ApFunction *f = ApLookupFunction(funcid);
	ListCell   *lc;
	int			i = 0;

	if (f == NULL)
		return false;
	*kind = ApTypeKindOf(resulttype);
	if (*kind == AP_TYPE_OTHER)
		return false;
	if ((f->flags & AP_F_CHARS) && !ap_encoding_ok())
		return false;
	if ((f->flags & AP_F_COLL_C) && !ap_ctype_folds_ascii(inputcollid))
		return false;
	/* a pattern with other bytes would send every row to the host */
	if ((f->fn == AP_FN_ILIKE || f->fn == AP_FN_NOT_ILIKE) &&
		(list_length(args) != 2 || ap_non_ascii_const(lsecond(args))))
		return false;
	if ((f->flags & AP_F_COLL_DET) && !ap_collation_deterministic(inputcollid))
		return false;
	if ((f->fn == AP_FN_LIKE || f->fn == AP_FN_NOT_LIKE || f->fn == AP_FN_ILIKE ||
		 f->fn == AP_FN_NOT_ILIKE) &&
		(list_length(args) != 2 || !ap_pattern_ok(lsecond(args))))
		return false;
	if (f->flags & AP_F_REGEX)
	{
		char	   *like = ApRegexConstAsLike(lsecond(args));

		if (like == NULL)
			return false;
		pfree(like);
	}
	if (f->flags & AP_F_TYPMOD)
	{
		Node	   *typmod = list_length(args) == 2 ? lsecond(args) : NULL;

		if (typmod == NULL || !IsA(typmod, Const) || ((Const *) typmod)->constisnull)
			return false;
	}

	foreach(lc, args)
	{
		ApTypeKind	k;

		i++;
		/* field names and typmods are constants carried in the FuncCall */
		if ((i == 1 && (f->flags & AP_F_FIELD)) || (i == 2 && (f->flags & AP_F_TYPMOD)))
			continue;
		/* the date of date_part(text, date) travels under a CAST */
		if (!ap_arg_shippable(lfirst(lc), ctx, &k,
							  (f->flags & AP_F_DATE_AS_TS) ? 2 : 1) ||
			k == AP_TYPE_OTHER)
			return false;
		if (f->flags & AP_F_DATE_AS_TS)
			ctx->nodes++;
		if (i == 2 && (f->flags & AP_F_FIELD))
		{
			ApDateField field;

			if (!ApDateFieldOf(linitial(args), k, (f->flags & AP_F_TRUNC) != 0, &field))
				return false;
		}
	}
	return true;
}

/* Ship one argument and report its encoded size. */
static bool
ap_sized_arg(Node *node, ApShipContext *ctx, ApTypeKind *kind, int levels, int64 *nodes)
{
	int64		before = ctx->nodes;
	bool		ok = ap_arg_shippable(node, ctx, kind, levels);

	*nodes = ctx->nodes - before;
	return ok;
}

/*
 * NULLIF (CASE WHEN a = b THEN NULL ELSE a) and IS DISTINCT FROM (a CASE over
 * NULL tests and a = b): the operator must be a whitelisted equality.
 */
static bool
ap_nullif_distinct_shippable(OpExpr *op, bool distinct, ApShipContext *ctx,
							 ApTypeKind *kind)
{
	ApTypeKind	left;
	ApTypeKind	right;
	ApOp		apop;
	ApCmp		apcmp;
	int64		lnodes;
	int64		rnodes;

	if (list_length(op->args) != 2)
		return false;
	if (!ap_sized_arg(linitial(op->args), ctx, &left, 3, &lnodes) ||
		!ap_sized_arg(lsecond(op->args), ctx, &right, 3, &rnodes))
		return false;
	set_opfuncid(op);
	if (!ApLookupOperator(op->opfuncid, &apop, &apcmp) || apop != AP_OP_EQ ||
		!ap_comparison_ok(op->opfuncid, op->inputcollid, left, right))
		return false;
	if (distinct)
	{
		/* a and b appear three times; CASE, 3 WHENs, tests, NOT, constants */
		ctx->nodes += 2 * (lnodes + rnodes) + 10;
		*kind = AP_TYPE_BOOL;
	}
	else
	{
		/* a appears twice; CASE, comparison, NULL constant */
		ctx->nodes += lnodes + 3;
		*kind = ApTypeKindOf(op->opresulttype);
	}
	return ctx->nodes <= AP_MAX_EXPR_NODES && *kind != AP_TYPE_OTHER;
}

/* CASE in either form; the simple form's tested value is copied per WHEN. */
static bool
ap_case_shippable(CaseExpr *ce, ApShipContext *ctx, ApTypeKind *kind)
{
	ApTypeKind	saved_kind = ctx->casetest_kind;
	int64		saved_nodes = ctx->casetest_nodes;
	ApTypeKind	test_kind = AP_TYPE_OTHER;
	int64		test_nodes = 0;
	bool		ok = true;
	ListCell   *lc;

	*kind = ApTypeKindOf(ce->casetype);
	if (*kind == AP_TYPE_OTHER)
		return false;

	/* no CaseTestExpr of an outer CASE may appear in the arg or results */
	ctx->casetest_kind = AP_TYPE_OTHER;
	if (ce->arg != NULL)
	{
		ok = ap_sized_arg((Node *) ce->arg, ctx, &test_kind, 4, &test_nodes) &&
			test_kind != AP_TYPE_OTHER;
		/* counted once per CaseTestExpr instead */
		ctx->nodes -= test_nodes;
	}

	foreach(lc, ce->args)
	{
		CaseWhen   *w = lfirst_node(CaseWhen, lc);
		ApTypeKind	k;

		if (!ok)
			break;
		ctx->casetest_kind = test_kind;
		ctx->casetest_nodes = test_nodes;
		ok = ap_arg_shippable((Node *) w->expr, ctx, &k, 2) && k == AP_TYPE_BOOL;
		ctx->casetest_kind = AP_TYPE_OTHER;
		ok = ok && ap_arg_shippable((Node *) w->result, ctx, &k, 2) &&
			ap_kind_family(k) == ap_kind_family(*kind);
	}
	if (ok && ce->defresult != NULL)
	{
		ApTypeKind	k;

		ok = ap_arg_shippable((Node *) ce->defresult, ctx, &k, 1) &&
			ap_kind_family(k) == ap_kind_family(*kind);
	}
	ctx->casetest_kind = saved_kind;
	ctx->casetest_nodes = saved_nodes;
	return ok && ctx->nodes <= AP_MAX_EXPR_NODES;
}

/*
 * A value the host computes once when the scan starts (no Var in it) is a
 * constant to the disk: shippable if the disk knows its type.
 */
static bool
ap_host_constant_shippable(Node *node, ApTypeKind *kind)
{
	*kind = ApTypeKindOf(exprType(node));
	return *kind != AP_TYPE_OTHER;
}

/* A column, constant or parameter: shippable if the disk knows its type. */
static bool
ap_leaf_shippable(Node *node, ApShipContext *ctx, ApTypeKind *kind)
{
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		/* only user columns of the scanned relation */
		if (var->varno != ctx->relid || var->varlevelsup != 0 ||
			var->varattno <= 0)
			return false;
	}
	else if (IsA(node, Param))
	{
		Param	   *p = (Param *) node;

		/* the host evaluates it when the scan starts */
		if (p->paramkind != PARAM_EXTERN && p->paramkind != PARAM_EXEC)
			return false;
	}
	*kind = ApTypeKindOf(exprType(node));
	return *kind != AP_TYPE_OTHER;
}

/*
 * A binary-compatible cast (varchar to text, say): the disk sees the same
 * bytes, so it may only relabel within one family of kinds.
 */
static bool
ap_relabel_shippable(RelabelType *r, ApShipContext *ctx, ApTypeKind *kind)
{
	ApTypeKind	arg_kind;
	ApTypeKind	res_kind;

	if (!ap_shippable((Node *) r->arg, ctx, &arg_kind))
		return false;
	res_kind = ApTypeKindOf(r->resulttype);
	if (res_kind == AP_TYPE_OTHER ||
		ap_kind_family(res_kind) != ap_kind_family(arg_kind))
		return false;
	/* the encoder drops the relabel: the disk sees the arg's kind */
	*kind = arg_kind;
	return true;
}

/*
 * An operator: a comparison of the whitelist (both arguments shippable and
 * a pair the disk compares as PostgreSQL does), a date-vs-timestamptz
 * comparison encode.c rewrites, or an arithmetic operator, which is checked
 * as the function behind it.
 */
static bool
ap_opexpr_shippable(OpExpr *op, ApShipContext *ctx, ApTypeKind *kind)
{
	ApTypeKind	left;
	ApTypeKind	right;
	ApOp		apop;
	ApCmp		apcmp;
	bool		date_left;

	if (ApIsHostConstant((Node *) op))
		return ap_host_constant_shippable((Node *) op, kind);
	set_opfuncid(op);
	/* rewritten by encode.c into a date comparison */
	if (ApLookupDateTzOperator(op->opfuncid, &apop, &date_left))
	{
		*kind = AP_TYPE_BOOL;
		return ap_datetz_shippable(op, date_left, ctx);
	}
	if (!ApLookupOperator(op->opfuncid, &apop, &apcmp))
		return ap_function_shippable(op->opfuncid, op->args, op->inputcollid,
									 op->opresulttype, ctx, kind);
	if (list_length(op->args) != 2)
		return false;
	if (!ap_arg_shippable(linitial(op->args), ctx, &left, 1) ||
		!ap_arg_shippable(lsecond(op->args), ctx, &right, 1))
		return false;
	if (!ap_comparison_ok(op->opfuncid, op->inputcollid, left, right))
		return false;
	*kind = AP_TYPE_BOOL;
	return true;
}

/* A function call of the whitelist; set-returning and VARIADIC calls never. */
static bool
ap_funcexpr_shippable(FuncExpr *fe, ApShipContext *ctx, ApTypeKind *kind)
{
	if (ApIsHostConstant((Node *) fe))
		return ap_host_constant_shippable((Node *) fe, kind);
	if (fe->funcretset || fe->funcvariadic)
		return false;
	return ap_function_shippable(fe->funcid, fe->args, fe->inputcollid,
								 fe->funcresulttype, ctx, kind);
}

/* COALESCE: every argument shippable and of the result's family. */
static bool
ap_coalesce_shippable(CoalesceExpr *co, ApShipContext *ctx, ApTypeKind *kind)
{
	ListCell   *lc;

	*kind = ApTypeKindOf(co->coalescetype);
	if (*kind == AP_TYPE_OTHER || co->args == NIL)
		return false;
	foreach(lc, co->args)
	{
		ApTypeKind	k;

		if (!ap_arg_shippable(lfirst(lc), ctx, &k, 1) ||
			ap_kind_family(k) != ap_kind_family(*kind))
			return false;
	}
	return true;
}

/* AND, OR, NOT over boolean arguments, all shippable. */
static bool
ap_boolexpr_shippable(BoolExpr *b, ApShipContext *ctx, ApTypeKind *kind)
{
	ListCell   *lc;

	if (b->boolop != AND_EXPR && b->boolop != OR_EXPR &&
		b->boolop != NOT_EXPR)
		return false;
	foreach(lc, b->args)
	{
		ApTypeKind	k;

		if (!ap_arg_shippable(lfirst(lc), ctx, &k, 1) || k != AP_TYPE_BOOL)
			return false;
	}
	*kind = AP_TYPE_BOOL;
	return true;
}

/* IS [NOT] NULL of a scalar; IS [NOT] TRUE/FALSE/UNKNOWN of a boolean. */
static bool
ap_test_shippable(Node *node, ApShipContext *ctx, ApTypeKind *kind)
{
	ApTypeKind	k;

	if (IsA(node, NullTest))
	{
		NullTest   *nt = (NullTest *) node;

		/* row-valued IS NULL looks at each field: not ours */
		if (nt->argisrow || !ap_arg_shippable((Node *) nt->arg, ctx, &k, 1))
			return false;
	}
	else
	{
		BooleanTest *bt = (BooleanTest *) node;

		if (!ap_arg_shippable((Node *) bt->arg, ctx, &k, 1) || k != AP_TYPE_BOOL)
			return false;
	}
	*kind = AP_TYPE_BOOL;
	return true;
}

/*
 * The whitelist walker.  Returns true if the disk can evaluate node exactly,
 * with *kind set to the kind of its result.  Default: not shippable.  Each
 * kind of node has its own step above; this only bounds the program's size
 * and picks the step.
 */
static bool
ap_shippable(Node *node, ApShipContext *ctx, ApTypeKind *kind)
{
	if (node == NULL)
		return false;

	/* deep boolean trees are legal SQL; never overflow the stack on them */
	check_stack_depth();

	/* the disk refuses programs beyond these limits (proto/ap_wire.h) */
	if (!IsA(node, RelabelType) &&
		(ctx->depth > AP_MAX_EXPR_DEPTH || ++ctx->nodes > AP_MAX_EXPR_NODES))
		return false;

	switch (nodeTag(node))
	{
		case T_Var:
		case T_Const:
		case T_Param:
			return ap_leaf_shippable(node, ctx, kind);
		case T_RelabelType:
			return ap_relabel_shippable((RelabelType *) node, ctx, kind);
		case T_OpExpr:
			return ap_opexpr_shippable((OpExpr *) node, ctx, kind);
		case T_FuncExpr:
			return ap_funcexpr_shippable((FuncExpr *) node, ctx, kind);
		case T_SQLValueFunction:
		case T_CoerceViaIO:
			if (!ApIsHostConstant(node))
				return false;
			return ap_host_constant_shippable(node, kind);
		case T_CaseExpr:
			return ap_case_shippable((CaseExpr *) node, ctx, kind);
		case T_CaseTestExpr:
			/* only inside a WHEN of a simple CASE: a copy of the tested value */
			if (ctx->casetest_kind == AP_TYPE_OTHER)
				return false;
			ctx->nodes += ctx->casetest_nodes - 1;
			*kind = ctx->casetest_kind;
			return ctx->nodes <= AP_MAX_EXPR_NODES;
		case T_CoalesceExpr:
			return ap_coalesce_shippable((CoalesceExpr *) node, ctx, kind);
		case T_NullIfExpr:
			return ap_nullif_distinct_shippable((OpExpr *) node, false, ctx, kind);
		case T_DistinctExpr:
			return ap_nullif_distinct_shippable((OpExpr *) node, true, ctx, kind);
		case T_ScalarArrayOpExpr:
			if (!ap_saop_shippable((ScalarArrayOpExpr *) node, ctx))
				return false;
			*kind = AP_TYPE_BOOL;
			return true;
		case T_BoolExpr:
			return ap_boolexpr_shippable((BoolExpr *) node, ctx, kind);
		case T_NullTest:
		case T_BooleanTest:
			return ap_test_shippable(node, ctx, kind);
		default:
			/* don't forget encode.c when adding a node type here */
			return false;
	}
}

/*
 * Check one qual; *nodes is the size of its encoding.  Its root is placed at
 * depth 2, below the AND that joins several disk quals.
 */
bool
ApQualShippable(PlannerInfo *root, RelOptInfo *baserel, Expr *expr, int64 *nodes)
{
	ApShipContext ctx;
	ApTypeKind	kind;

	ctx.relid = baserel->relid;
	ctx.depth = 2;
	ctx.nodes = 0;
	ctx.casetest_kind = AP_TYPE_OTHER;
	ctx.casetest_nodes = 0;
	if (!ap_shippable((Node *) expr, &ctx, &kind) || kind != AP_TYPE_BOOL)
		return false;
	*nodes = ctx.nodes;
	return true;
}

/* Can a disk compute this projected value exactly? */
bool
ApIsShippableValue(Index relid, Expr *expr, ApTypeKind *kind)
{
	ApShipContext ctx;

	ctx.relid = relid;
	ctx.depth = 1;
	ctx.nodes = 0;
	ctx.casetest_kind = AP_TYPE_OTHER;
	ctx.casetest_nodes = 0;
	return ap_shippable((Node *) expr, &ctx, kind) && *kind != AP_TYPE_OTHER;
}

/* Can a disk evaluate this boolean expression exactly? */
bool
ApIsShippableExpr(PlannerInfo *root, RelOptInfo *baserel, Expr *expr)
{
	int64		nodes;

	return ApQualShippable(root, baserel, expr, &nodes);
}
