/*
 * shippable.c
 *	  What may run on a disk: type kinds, the operator whitelist, and the
 *	  classification of a base relation's restriction clauses.
 *
 * A clause is shipped to the disks only if the disk VM (diskd/vm.c) computes
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
 *	- Pseudoconstant clauses (no Vars) are never shipped: the planner turns
 *	  them into a gating Result above the scan.
 *	- Programs the disk would refuse are never built: the encoded tree stays
 *	  within AP_MAX_EXPR_DEPTH and AP_MAX_EXPR_NODES (proto/ap_wire.h); quals
 *	  beyond the budget stay on the host.
 *
 * Row-level security and security-barrier views.  The disk evaluates its
 * quals before the host quals; for tuples the disk hands back (fallback) the
 * host also re-checks the disk quals before its own.  So shipping a qual
 * moves it in front of every host qual.  That is safe unless the shipped qual
 * is leaky (could reveal values through an error or side effect) and a host
 * qual of a lower security_level would have filtered the row first.  Hence a
 * shippable qual that contains leaked Vars is shipped only if no qual of a
 * lower security level stays on the host; leakproof quals always ship.
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_collation_d.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"

#include "active_pg.h"
#include "shippable.h"

/* One whitelisted comparison function. */
typedef struct ApOperator
{
	Oid			funcid;			/* pg_proc oid of the implementation */
	ApOp		op;
	ApCmp		cmp;
} ApOperator;

#define AP_OPS6(prefix, suffix, cmp) \
	{F_##prefix##EQ##suffix, AP_OP_EQ, cmp}, \
	{F_##prefix##NE##suffix, AP_OP_NE, cmp}, \
	{F_##prefix##LT##suffix, AP_OP_LT, cmp}, \
	{F_##prefix##LE##suffix, AP_OP_LE, cmp}, \
	{F_##prefix##GT##suffix, AP_OP_GT, cmp}, \
	{F_##prefix##GE##suffix, AP_OP_GE, cmp}

/*
 * The whitelist.  Every entry's semantics are reproduced bit for bit by the
 * disk VM for the ApCmp named (see proto/ap_types.h).
 */
static const ApOperator ap_operators[] = {
	/* integers in any mix of widths compare as int64 */
	AP_OPS6(INT2, , AP_CMP_INT),
	AP_OPS6(INT4, , AP_CMP_INT),
	AP_OPS6(INT8, , AP_CMP_INT),
	AP_OPS6(INT24, , AP_CMP_INT),
	AP_OPS6(INT42, , AP_CMP_INT),
	AP_OPS6(INT28, , AP_CMP_INT),
	AP_OPS6(INT82, , AP_CMP_INT),
	AP_OPS6(INT48, , AP_CMP_INT),
	AP_OPS6(INT84, , AP_CMP_INT),
	/* floats compare as double (float4 widens exactly) */
	AP_OPS6(FLOAT4, , AP_CMP_FLOAT),
	AP_OPS6(FLOAT8, , AP_CMP_FLOAT),
	AP_OPS6(FLOAT48, , AP_CMP_FLOAT),
	AP_OPS6(FLOAT84, , AP_CMP_FLOAT),
	AP_OPS6(NUMERIC_, , AP_CMP_NUMERIC),
	AP_OPS6(DATE_, , AP_CMP_DATE),
	/* date vs timestamp (without time zone): no TimeZone dependency */
	AP_OPS6(DATE_, _TIMESTAMP, AP_CMP_DATE_TS),
	AP_OPS6(TIMESTAMP_, _DATE, AP_CMP_DATE_TS),
	AP_OPS6(TIMESTAMP_, , AP_CMP_TS),
	AP_OPS6(TIMESTAMPTZ_, , AP_CMP_TS),
	AP_OPS6(BOOL, , AP_CMP_BOOL),
	{F_TEXTEQ, AP_OP_EQ, AP_CMP_TEXT},
	{F_TEXTNE, AP_OP_NE, AP_CMP_TEXT},
	{F_TEXT_LT, AP_OP_LT, AP_CMP_TEXT},
	{F_TEXT_LE, AP_OP_LE, AP_CMP_TEXT},
	{F_TEXT_GT, AP_OP_GT, AP_CMP_TEXT},
	{F_TEXT_GE, AP_OP_GE, AP_CMP_TEXT},
	AP_OPS6(BPCHAR, , AP_CMP_BPCHAR),
};

/* What the walker needs to know about the scan. */
typedef struct ApShipContext
{
	PlannerInfo *root;
	RelOptInfo *baserel;
	int			depth;			/* depth of the current node once encoded */
	int64		nodes;			/* protobuf Expr nodes the encoding will have */
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

/* Map a type oid to the kind the disk knows, or AP_TYPE_OTHER. */
static ApTypeKind
ap_builtin_kind(Oid typid)
{
	switch (typid)
	{
		case BOOLOID:
			return AP_TYPE_BOOL;
		case INT2OID:
			return AP_TYPE_INT2;
		case INT4OID:
			return AP_TYPE_INT4;
		case INT8OID:
			return AP_TYPE_INT8;
		case FLOAT4OID:
			return AP_TYPE_FLOAT4;
		case FLOAT8OID:
			return AP_TYPE_FLOAT8;
		case NUMERICOID:
			return AP_TYPE_NUMERIC;
		case DATEOID:
			return AP_TYPE_DATE;
		case TIMESTAMPOID:
			return AP_TYPE_TIMESTAMP;
		case TIMESTAMPTZOID:
			return AP_TYPE_TIMESTAMPTZ;
		case TEXTOID:
			return AP_TYPE_TEXT;
		case VARCHAROID:
			return AP_TYPE_VARCHAR;
		case BPCHAROID:
			return AP_TYPE_BPCHAR;
		default:
			return AP_TYPE_OTHER;
	}
}

/* ApTypeKind of a type; domains are evaluated as their base type. */
ApTypeKind
ApTypeKindOf(Oid typid)
{
	ApTypeKind	kind;

	/* dropped columns have no type */
	if (!OidIsValid(typid))
		return AP_TYPE_OTHER;
	kind = ap_builtin_kind(typid);
	if (kind != AP_TYPE_OTHER)
		return kind;
	/* only user-defined types need the catalog lookup */
	if (typid < FirstGenbkiObjectId)
		return AP_TYPE_OTHER;
	return ap_builtin_kind(getBaseType(typid));
}

/* Look up a comparison function in the whitelist. */
bool
ApLookupOperator(Oid funcid, ApOp *op, ApCmp *cmp)
{
	for (int i = 0; i < lengthof(ap_operators); i++)
	{
		if (ap_operators[i].funcid == funcid)
		{
			*op = ap_operators[i].op;
			*cmp = ap_operators[i].cmp;
			return true;
		}
	}
	return false;
}

/* The kind family a relabeling must stay within (varchar and text are one). */
static ApTypeKind
ap_kind_family(ApTypeKind kind)
{
	return kind == AP_TYPE_VARCHAR ? AP_TYPE_TEXT : kind;
}

/* Do the argument kinds fit the comparison semantics (as the VM checks)? */
static bool
ap_args_fit(ApCmp cmp, ApTypeKind a, ApTypeKind b)
{
	switch (cmp)
	{
		case AP_CMP_INT:
			return (a == AP_TYPE_INT2 || a == AP_TYPE_INT4 || a == AP_TYPE_INT8) &&
				(b == AP_TYPE_INT2 || b == AP_TYPE_INT4 || b == AP_TYPE_INT8);
		case AP_CMP_FLOAT:
			return (a == AP_TYPE_FLOAT4 || a == AP_TYPE_FLOAT8) &&
				(b == AP_TYPE_FLOAT4 || b == AP_TYPE_FLOAT8);
		case AP_CMP_NUMERIC:
			return a == AP_TYPE_NUMERIC && b == AP_TYPE_NUMERIC;
		case AP_CMP_DATE:
			return a == AP_TYPE_DATE && b == AP_TYPE_DATE;
		case AP_CMP_DATE_TS:
			return (a == AP_TYPE_DATE && b == AP_TYPE_TIMESTAMP) ||
				(a == AP_TYPE_TIMESTAMP && b == AP_TYPE_DATE);
		case AP_CMP_TS:
			return a == b && (a == AP_TYPE_TIMESTAMP || a == AP_TYPE_TIMESTAMPTZ);
		case AP_CMP_BOOL:
			return a == AP_TYPE_BOOL && b == AP_TYPE_BOOL;
		case AP_CMP_TEXT:
			return ap_kind_family(a) == AP_TYPE_TEXT &&
				ap_kind_family(b) == AP_TYPE_TEXT;
		case AP_CMP_BPCHAR:
			return a == AP_TYPE_BPCHAR && b == AP_TYPE_BPCHAR;
	}
	return false;
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
			lc_collate_is_c(inputcollid) ||
			get_collation_isdeterministic(inputcollid);
	}
	/* ordering is bytewise (memcmp, then length) only in C/POSIX */
	return lc_collate_is_c(inputcollid);
}

/* Check one comparison: whitelisted function, fitting args, collation. */
static bool
ap_comparison_ok(Oid funcid, Oid inputcollid, ApTypeKind left, ApTypeKind right)
{
	ApOp		op;
	ApCmp		cmp;

	if (!ApLookupOperator(funcid, &op, &cmp))
		return false;
	if (!ap_args_fit(cmp, left, right))
		return false;
	return ap_collation_ok(op, cmp, inputcollid);
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

/*
 * The whitelist walker.  Returns true if the disk can evaluate node exactly,
 * with *kind set to the kind of its result.  Default: not shippable.
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
			{
				Var		   *var = (Var *) node;

				/* only user columns of the scanned relation */
				if (var->varno != ctx->baserel->relid || var->varlevelsup != 0 ||
					var->varattno <= 0)
					return false;
				*kind = ApTypeKindOf(var->vartype);
				return *kind != AP_TYPE_OTHER;
			}
		case T_Const:
			{
				Const	   *c = (Const *) node;

				*kind = ApTypeKindOf(c->consttype);
				return *kind != AP_TYPE_OTHER;
			}
		case T_Param:
			{
				Param	   *p = (Param *) node;

				/* the host evaluates it when the scan starts */
				if (p->paramkind != PARAM_EXTERN && p->paramkind != PARAM_EXEC)
					return false;
				*kind = ApTypeKindOf(p->paramtype);
				return *kind != AP_TYPE_OTHER;
			}
		case T_RelabelType:
			{
				RelabelType *r = (RelabelType *) node;
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
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) node;
				ApTypeKind	left;
				ApTypeKind	right;

				if (list_length(op->args) != 2)
					return false;
				if (!ap_arg_shippable(linitial(op->args), ctx, &left, 1) ||
					!ap_arg_shippable(lsecond(op->args), ctx, &right, 1))
					return false;
				set_opfuncid(op);
				if (!ap_comparison_ok(op->opfuncid, op->inputcollid, left, right))
					return false;
				*kind = AP_TYPE_BOOL;
				return true;
			}
		case T_ScalarArrayOpExpr:
			if (!ap_saop_shippable((ScalarArrayOpExpr *) node, ctx))
				return false;
			*kind = AP_TYPE_BOOL;
			return true;
		case T_BoolExpr:
			{
				BoolExpr   *b = (BoolExpr *) node;
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
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) node;
				ApTypeKind	k;

				/* row-valued IS NULL looks at each field: not ours */
				if (nt->argisrow)
					return false;
				if (!ap_arg_shippable((Node *) nt->arg, ctx, &k, 1))
					return false;
				*kind = AP_TYPE_BOOL;
				return true;
			}
		case T_BooleanTest:
			{
				BooleanTest *bt = (BooleanTest *) node;
				ApTypeKind	k;

				if (!ap_arg_shippable((Node *) bt->arg, ctx, &k, 1) || k != AP_TYPE_BOOL)
					return false;
				*kind = AP_TYPE_BOOL;
				return true;
			}
		default:
			/* don't forget encode.c when adding a node type here */
			return false;
	}
}

/*
 * Check one qual; *nodes is the size of its encoding.  Its root is placed at
 * depth 2, below the AND that joins several disk quals.
 */
static bool
ap_qual_shippable(PlannerInfo *root, RelOptInfo *baserel, Expr *expr, int64 *nodes)
{
	ApShipContext ctx;
	ApTypeKind	kind;

	ctx.root = root;
	ctx.baserel = baserel;
	ctx.depth = 2;
	ctx.nodes = 0;
	if (!ap_shippable((Node *) expr, &ctx, &kind) || kind != AP_TYPE_BOOL)
		return false;
	*nodes = ctx.nodes;
	return true;
}

/* Can a disk evaluate this boolean expression exactly? */
bool
ApIsShippableExpr(PlannerInfo *root, RelOptInfo *baserel, Expr *expr)
{
	int64		nodes;

	return ap_qual_shippable(root, baserel, expr, &nodes);
}

/* Split RestrictInfos into disk and host lists, keeping their order. */
void
ApClassifyRestrictInfos(PlannerInfo *root, RelOptInfo *baserel, List *restrictinfos,
						List **disk, List **host)
{
	int			n = list_length(restrictinfos);
	bool	   *shippable = palloc0(sizeof(bool) * Max(n, 1));
	Index		host_level_min = UINT_MAX;
	int64		program_nodes = 1;	/* the AND joining the disk quals */
	ListCell   *lc;

	*disk = NIL;
	*host = NIL;

	/*
	 * First pass: what the walker accepts within the program's size limit,
	 * and the lowest security level left behind.
	 */
	foreach(lc, restrictinfos)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		int64		nodes;
		bool		ok;

		if (ri->pseudoconstant)
			continue;
		ok = ap_qual_shippable(root, baserel, ri->clause, &nodes) &&
			program_nodes + nodes <= AP_MAX_EXPR_NODES;
		if (ok)
			program_nodes += nodes;
		else
			host_level_min = Min(host_level_min, ri->security_level);
		shippable[foreach_current_index(lc)] = ok;
	}

	/*
	 * Second pass.  A leaky qual must not overtake a host qual of a lower
	 * security level (see the file header); moving it to the host never
	 * lowers host_level_min, since its level is above it.
	 */
	foreach(lc, restrictinfos)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (ri->pseudoconstant)
			continue;
		if (shippable[foreach_current_index(lc)] &&
			(ri->security_level <= host_level_min ||
			 !contain_leaked_vars((Node *) ri->clause)))
			*disk = lappend(*disk, ri);
		else
			*host = lappend(*host, ri);
	}
	pfree(shippable);
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
