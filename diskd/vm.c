/*
 * vm.c
 *	  The expression VM: compile a protobuf Program, evaluate it per tuple.
 *
 * Rules of this file:
 *  - Compilation is where everything is checked: attribute numbers against
 *    the descriptor, operators, comparison families and function signatures
 *    against the argument type kinds, constant sizes, tree depth and size.
 *    A program that compiles can be evaluated on any tuple without further
 *    checks beyond the datum contents themselves.
 *  - Boolean positions use SQL's three-valued logic plus a fourth value,
 *    AP_TRI_FALLBACK, for "cannot reproduce exactly": an external TOAST
 *    value, an lz4 or oversized compressed value, a corrupt datum, or any
 *    case where PostgreSQL would raise an error (overflow, division by zero).
 *    AND/OR decide in argument order as PostgreSQL's executor does: a FALSE
 *    (TRUE) decides only if no FALLBACK came before it, because PostgreSQL
 *    would have raised the error of that earlier argument.
 *  - Value positions evaluate to an ApVal (vm_internal.h); arithmetic,
 *    dates and strings live in vm_num.c, vm_date.c and vm_str.c.  Functions
 *    are strict: all arguments are evaluated first (as PostgreSQL does), a
 *    FALLBACK among them wins over a NULL.  CASE and COALESCE evaluate
 *    lazily, as PostgreSQL does, so only the branches taken can fall back.
 *  - Comparisons reproduce PostgreSQL's comparison functions bit for bit:
 *    float NaN = NaN and above everything, -0 = 0; numeric via numeric.c;
 *    text byte-wise (the host ships ordering only under C collation); bpchar
 *    ignoring trailing spaces; date vs timestamp by converting the date.
 *  - Evaluation never mallocs: decompressed and computed values go to the
 *    program's arena, reset at the start of each filter or projection call.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm_internal.h"

/* Arena per program: decompressed operands and computed values of one tuple. */
#define AP_VM_ARENA_BYTES		(1024u * 1024u)
#define AP_MAX_FUNC_ARGS		3

typedef enum ApNodeKind
{
	N_VAR,
	N_CONST,
	N_OP,
	N_AND,
	N_OR,
	N_NOT,
	N_NULLTEST,
	N_BOOLTEST,
	N_FUNC,
	N_CASE,
	N_COALESCE
} ApNodeKind;

/*
 * Comparisons of a column with a non-null constant, specialised at compile
 * time so the hot filter path skips the generic value machinery.
 */
typedef enum ApFastCmp
{
	FC_NONE = 0,
	FC_INT,						/* int/date/timestamp/bool column vs integer constant */
	FC_DATE_TS,					/* date column vs timestamp constant */
	FC_FLOAT,					/* float column vs float constant */
	FC_NUMERIC					/* numeric column vs finite fixed-point constant */
} ApFastCmp;

/* One node of a compiled expression. */
typedef struct ApNode
{
	ApNodeKind	kind;
	uint8_t		type_kind;		/* result kind; BOOL for logic nodes */
	uint8_t		op;				/* N_OP: ApOp */
	uint8_t		cmp;			/* N_OP: ApCmp */
	uint8_t		test;			/* N_BOOLTEST: ApBoolTest */
	uint8_t		fn;				/* N_FUNC: ApFunc */
	uint8_t		field;			/* N_FUNC: ApDateField */
	bool		is_not_null;	/* N_NULLTEST */
	bool		has_default;	/* N_CASE: last arg is the ELSE result */
	int32_t		typmod;			/* N_FUNC: result_typmod */
	int			attno;			/* N_VAR */
	int			memo;			/* memo slot (ApArena) or -1 */
	ApValue		konst;			/* N_CONST: points into its own copy */
	ApVal		kval;			/* N_CONST: its value, decoded once at compile */
	uint8_t		kev;			/* N_CONST: ApEv of kval */
	uint8_t		fast;			/* N_OP: ApFastCmp, Var vs Const specialisation */
	uint8_t		fmask;			/* N_OP fast: result bits for c < 0, = 0, > 0 */
	int64_t		fconst;			/* N_OP fast integer-like: the constant, converted */
	const struct ApNode *fvar;	/* N_OP fast: the Var argument */
	const struct ApNode *fkonst;	/* N_OP fast: the Const argument */
	int			nargs;			/* N_CASE: cond, result pairs [+ default] */
	uint32_t	hash;			/* structural hash (common subexpressions) */
	struct ApNode **args;
} ApNode;

/* The opaque compiled expression. */
struct ApExpr
{
	ApNode	   *root;
};

/* Compilation context: error reporting and limits. */
typedef struct CompileCtx
{
	const ApTupleDesc *desc;
	ApProgram  *prog;
	int			nnodes;
	int			max_attno;
	int			nmemo;			/* memo slots assigned */
	int		   *var_memo;		/* per attno: slot of its decoded numeric, or -1 */
	ApNode	  **funcs;			/* every N_FUNC node: candidates for sharing */
	int			nfuncs;
	int			funcs_cap;
} CompileCtx;

/* Record why compilation failed (first error wins) and return its code. */
static int
compile_error(CompileCtx *cx, int code, const char *fmt,...)
{
	va_list		ap;

	if (cx->prog->error[0] == '\0')
	{
		va_start(ap, fmt);
		vsnprintf(cx->prog->error, sizeof(cx->prog->error), fmt, ap);
		va_end(ap);
	}
	return code;
}

/* Free a node tree (partial trees from failed compiles included). */
static void
node_free(ApNode *n)
{
	if (n == NULL)
		return;
	for (int i = 0; i < n->nargs; i++)
		node_free(n->args[i]);
	free(n->args);
	if (n->kind == N_CONST)
		free((void *) n->konst.ptr);
	free(n);
}

/* True if type kind k is stored as a varlena. */
static bool
kind_is_varlena(int k)
{
	return k == AP_TYPE_NUMERIC || k == AP_TYPE_TEXT ||
		k == AP_TYPE_VARCHAR || k == AP_TYPE_BPCHAR;
}

/* Stored byte size of a fixed-length kind; 0 for varlena kinds. */
static uint32_t
kind_fixed_size(int k)
{
	int			len = AP_KIND_ATTLEN(k);

	return len > 0 ? (uint32_t) len : 0;
}

/* A kind the VM can hold as a value. */
static bool
kind_valid(uint32_t k)
{
	return k > AP_TYPE_OTHER && k < AP_TYPE_KIND_COUNT;
}

/* The type kind an expression yields. */
static int
node_result_kind(const ApNode *n)
{
	return n->type_kind;
}

/* Is the (a, b) pair of kinds acceptable for comparison family cmp? */
static bool
cmp_accepts(int cmp, int a, int b)
{
	switch (cmp)
	{
		case AP_CMP_INT:
			return AP_IS_INT_KIND(a) && AP_IS_INT_KIND(b);
		case AP_CMP_FLOAT:
			return AP_IS_FLT_KIND(a) && AP_IS_FLT_KIND(b);
		case AP_CMP_NUMERIC:
			return a == AP_TYPE_NUMERIC && b == AP_TYPE_NUMERIC;
		case AP_CMP_DATE:
			return a == AP_TYPE_DATE && b == AP_TYPE_DATE;
		case AP_CMP_DATE_TS:
			return (a == AP_TYPE_DATE && b == AP_TYPE_TIMESTAMP) ||
				(a == AP_TYPE_TIMESTAMP && b == AP_TYPE_DATE);
		case AP_CMP_TS:
			return (a == AP_TYPE_TIMESTAMP && b == AP_TYPE_TIMESTAMP) ||
				(a == AP_TYPE_TIMESTAMPTZ && b == AP_TYPE_TIMESTAMPTZ);
		case AP_CMP_BOOL:
			return a == AP_TYPE_BOOL && b == AP_TYPE_BOOL;
		case AP_CMP_TEXT:
			return AP_IS_TXT_KIND(a) && AP_IS_TXT_KIND(b);
		case AP_CMP_BPCHAR:
			return a == AP_TYPE_BPCHAR && b == AP_TYPE_BPCHAR;
		default:
			return false;
	}
}

/* A branch of kind k may deliver a CASE/COALESCE result of kind rk. */
static bool
kind_delivers(int rk, int k)
{
	return k == rk || (AP_IS_TXT_KIND(rk) && AP_IS_TXT_KIND(k));
}

/*
 * A numeric payload in the form arithmetic and comparisons use: fixed point
 * when exact, NaN/infinity as special; a value beyond 38 digits (or corrupt)
 * stays a datum, so every later use decides exactly as before.
 */
static inline void
numeric_settle(ApVal *v)
{
	ApFixed		fx;
	ApNumSpecial sp;

	if (ap_numeric_payload_fixed(v->u.s.p, v->u.s.len, &fx, &sp) != AP_OK)
		return;
	if (sp == AP_NUM_FINITE)
	{
		v->nform = AP_NF_FIXED;
		v->u.fx = fx;
	}
	else
	{
		v->nform = AP_NF_SPECIAL;
		v->special = (uint8_t) sp;
	}
}

/*
 * Decode a (validated, non-null) constant once: evaluation then copies kval
 * instead of reading the datum for every tuple.  Constants are never
 * compressed or external (compile_const refuses them).
 */
static void
const_value(ApNode *n)
{
	const unsigned char *p = n->konst.ptr;
	ApVal	   *v = &n->kval;

	memset(v, 0, sizeof(*v));
	v->kind = n->type_kind;
	n->kev = AP_EV_VALUE;
	switch (n->type_kind)
	{
		case AP_TYPE_BOOL:
			v->u.i = p[0] != 0;
			break;
		case AP_TYPE_INT2:
			{
				int16_t		x;

				memcpy(&x, p, sizeof(x));
				v->u.i = x;
				break;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		x;

				memcpy(&x, p, sizeof(x));
				v->u.i = x;
				break;
			}
		case AP_TYPE_INT8:
		case AP_TYPE_TIMESTAMP:
		case AP_TYPE_TIMESTAMPTZ:
			memcpy(&v->u.i, p, sizeof(int64_t));
			break;
		case AP_TYPE_FLOAT4:
			memcpy(&v->u.f4, p, sizeof(float));
			break;
		case AP_TYPE_FLOAT8:
			memcpy(&v->u.f8, p, sizeof(double));
			break;
		default:
			if (ap_varlena_payload(p, NULL, 0, &v->u.s.p, &v->u.s.len) != AP_OK)
			{
				n->kev = AP_EV_FALLBACK;
				break;
			}
			v->nform = AP_NF_DATUM;
			if (n->type_kind == AP_TYPE_NUMERIC)
				numeric_settle(v);
			break;
	}
}

/* Validate a constant's bytes against its kind and keep a private copy. */
static int
compile_const(CompileCtx *cx, const ActivePg__Datum *d, ApNode *n)
{
	size_t		len = d->value.len;
	unsigned char *copy;

	if (d->type_kind == AP_TYPE_OTHER || d->type_kind >= AP_TYPE_KIND_COUNT)
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "constant of unsupported type kind %u", d->type_kind);
	n->type_kind = (uint8_t) d->type_kind;
	if (d->isnull)
	{
		n->konst.isnull = true;
		return 0;
	}

	if (kind_is_varlena(d->type_kind))
	{
		const unsigned char *p = d->value.data;

		if (len == 0 || p == NULL)
			return compile_error(cx, AP_ERR_BAD_REQUEST, "empty varlena constant");
		if (ap_varlena_is_external(p) || (!ap_varlena_is_1b(p) && ap_varlena_is_compressed(p)))
			return compile_error(cx, AP_ERR_BAD_REQUEST,
								 "varlena constant is external or compressed");
		if (!ap_varlena_is_1b(p) && len < 4)
			return compile_error(cx, AP_ERR_BAD_REQUEST, "truncated varlena constant");
		if (ap_varlena_size_any(p) != len)
			return compile_error(cx, AP_ERR_BAD_REQUEST,
								 "varlena constant header says %u bytes, has %zu",
								 ap_varlena_size_any(p), len);
		
		if (d->type_kind == AP_TYPE_NUMERIC)
		{
			ApNumeric	num;
			uint32_t	hdr = ap_varlena_is_1b(p) ? 1 : 4;

			if (ap_numeric_decode(p + hdr, (uint32_t) len - hdr, &num) != AP_OK)
				return compile_error(cx, AP_ERR_BAD_REQUEST, "invalid numeric constant");
		}
	}
	else if (len != kind_fixed_size(d->type_kind))
		return compile_error(cx, AP_ERR_BAD_REQUEST,
							 "constant of type kind %u has %zu bytes, expected %u",
							 d->type_kind, len, kind_fixed_size(d->type_kind));

	copy = malloc(len);
	if (copy == NULL)
		return compile_error(cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
	memcpy(copy, d->value.data, len);
	n->konst.ptr = copy;
	n->konst.len = (uint32_t) len;
	n->konst.isnull = false;
	const_value(n);
	return 0;
}

/*
 * Check a function's signature: argument kinds k[0..nargs-1], result kind
 * rk, field and typmod, as documented for ApFunc in ap_types.h.  Returns 0
 * or AP_ERR_UNSUPPORTED with the error set.
 */
static int
check_func(CompileCtx *cx, const ApNode *n, const int *k)
{
	int			rk = n->type_kind;
	int			na = n->nargs;
	bool		ok = false;

	switch (n->fn)
	{
		case AP_FN_ADD:
		case AP_FN_SUB:
		case AP_FN_MUL:
		case AP_FN_DIV:
			if (na != 2)
				break;
			if (AP_IS_INT_KIND(k[0]) && AP_IS_INT_KIND(k[1]))
				ok = AP_IS_INT_KIND(rk);
			else if (AP_IS_FLT_KIND(k[0]) && AP_IS_FLT_KIND(k[1]))
				ok = rk == AP_TYPE_FLOAT8 ||
					(rk == AP_TYPE_FLOAT4 && k[0] == AP_TYPE_FLOAT4 && k[1] == AP_TYPE_FLOAT4);
			else if (k[0] == AP_TYPE_NUMERIC && k[1] == AP_TYPE_NUMERIC)
				ok = rk == AP_TYPE_NUMERIC;
			else if (n->fn == AP_FN_ADD)
				ok = rk == AP_TYPE_DATE &&
					((k[0] == AP_TYPE_DATE && AP_IS_INT_KIND(k[1]) && k[1] != AP_TYPE_INT8) ||
					 (k[1] == AP_TYPE_DATE && AP_IS_INT_KIND(k[0]) && k[0] != AP_TYPE_INT8));
			else if (n->fn == AP_FN_SUB && k[0] == AP_TYPE_DATE)
				ok = (k[1] == AP_TYPE_DATE && rk == AP_TYPE_INT4) ||
					(rk == AP_TYPE_DATE && (k[1] == AP_TYPE_INT2 || k[1] == AP_TYPE_INT4));
			break;
		case AP_FN_MOD:
			ok = na == 2 && AP_IS_INT_KIND(k[0]) && AP_IS_INT_KIND(k[1]) && AP_IS_INT_KIND(rk);
			break;
		case AP_FN_NEG:
			ok = na == 1 && ((AP_IS_INT_KIND(k[0]) && AP_IS_INT_KIND(rk)) ||
							 (AP_IS_FLT_KIND(k[0]) && rk == k[0]) ||
							 (k[0] == AP_TYPE_NUMERIC && rk == AP_TYPE_NUMERIC));
			break;
		case AP_FN_CAST:
			ok = na == 1 && ap_vm_cast_ok(k[0], rk);
			break;
		case AP_FN_NUMERIC_TYPMOD:
			ok = na == 1 && k[0] == AP_TYPE_NUMERIC && rk == AP_TYPE_NUMERIC;
			break;
		case AP_FN_EXTRACT:
			ok = na == 1 && (k[0] == AP_TYPE_DATE || k[0] == AP_TYPE_TIMESTAMP) &&
				(rk == AP_TYPE_NUMERIC || rk == AP_TYPE_FLOAT8) &&
				n->field >= AP_FIELD_YEAR && n->field <= AP_FIELD_WEEK;
			break;
		case AP_FN_DATE_TRUNC:
			ok = na == 1 && k[0] == AP_TYPE_TIMESTAMP && rk == AP_TYPE_TIMESTAMP &&
				n->field != AP_FIELD_DOW && n->field != AP_FIELD_DOY &&
				n->field != AP_FIELD_EPOCH &&
				n->field >= AP_FIELD_YEAR && n->field <= AP_FIELD_WEEK;
			break;
		case AP_FN_LIKE:
		case AP_FN_NOT_LIKE:
		case AP_FN_ILIKE:
		case AP_FN_NOT_ILIKE:
			ok = na == 2 && AP_IS_STR_KIND(k[0]) && AP_IS_STR_KIND(k[1]) && rk == AP_TYPE_BOOL;
			break;
		case AP_FN_SUBSTR:
			ok = (na == 2 || na == 3) && AP_IS_STR_KIND(k[0]) && AP_IS_TXT_KIND(rk) &&
				(k[1] == AP_TYPE_INT2 || k[1] == AP_TYPE_INT4) &&
				(na == 2 || k[2] == AP_TYPE_INT2 || k[2] == AP_TYPE_INT4);
			break;
		case AP_FN_LENGTH:
		case AP_FN_OCTET_LENGTH:
			ok = na == 1 && AP_IS_STR_KIND(k[0]) && rk == AP_TYPE_INT4;
			break;
		case AP_FN_UPPER:
		case AP_FN_LOWER:
			ok = na == 1 && AP_IS_STR_KIND(k[0]) && AP_IS_TXT_KIND(rk);
			break;
		case AP_FN_TEXTCAT:
			ok = na == 2 && AP_IS_STR_KIND(k[0]) && AP_IS_STR_KIND(k[1]) && AP_IS_TXT_KIND(rk);
			break;
		default:
			return compile_error(cx, AP_ERR_UNSUPPORTED, "unknown function %u", n->fn);
	}
	if (!ok)
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "function %u (field %u) does not take %d arguments of kinds %d, %d, %d to kind %d",
							 n->fn, n->field, na, na > 0 ? k[0] : 0, na > 1 ? k[1] : 0,
							 na > 2 ? k[2] : 0, rk);
	return 0;
}

static int	compile_node(CompileCtx *cx, const ActivePg__Expr *e, int depth,
						 ApNode **out);

/* Compile nmsgs children from msgs into n->args. */
static int
compile_args(CompileCtx *cx, ApNode *n, ActivePg__Expr **msgs, size_t nmsgs,
			 int depth)
{
	if (nmsgs > AP_MAX_EXPR_NODES)
		return compile_error(cx, AP_ERR_UNSUPPORTED, "expression has too many nodes");
	n->args = calloc(nmsgs > 0 ? nmsgs : 1, sizeof(ApNode *));
	if (n->args == NULL)
		return compile_error(cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
	for (size_t i = 0; i < nmsgs; i++)
	{
		int			rc = compile_node(cx, msgs[i], depth + 1, &n->args[i]);

		n->nargs = (int) i + 1;
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A position that needs a boolean: the result must be of kind BOOL. */
static int
require_bool(CompileCtx *cx, const ApNode *n, const char *where)
{
	if (node_result_kind(n) != AP_TYPE_BOOL)
		return compile_error(cx, AP_ERR_BAD_REQUEST,
							 "%s needs a boolean expression, got type kind %d",
							 where, node_result_kind(n));
	return 0;
}

/* FuncCall: arguments first, then the signature check. */
static int
compile_func(CompileCtx *cx, const ActivePg__FuncCall *fc, ApNode *n, int depth)
{
	int			kinds[AP_MAX_FUNC_ARGS];
	int			rc;

	n->kind = N_FUNC;
	if (fc == NULL)
		return compile_error(cx, AP_ERR_BAD_REQUEST, "missing function call");
	if (!kind_valid(fc->result_kind))
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "function %u: result kind %u", fc->fn, fc->result_kind);
	if (fc->n_args < 1 || fc->n_args > AP_MAX_FUNC_ARGS)
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "function %u with %zu arguments", fc->fn, fc->n_args);
	if (fc->fn > 255 || fc->field > 255)
		return compile_error(cx, AP_ERR_UNSUPPORTED, "unknown function %u", fc->fn);
	n->fn = (uint8_t) fc->fn;
	n->field = (uint8_t) fc->field;
	n->typmod = fc->result_typmod;
	n->type_kind = (uint8_t) fc->result_kind;
	if ((rc = compile_args(cx, n, fc->args, fc->n_args, depth)) != 0)
		return rc;
	for (int i = 0; i < n->nargs; i++)
		kinds[i] = node_result_kind(n->args[i]);
	if ((rc = check_func(cx, n, kinds)) != 0)
		return rc;
	/* remember it: an identical call elsewhere in the program shares its value */
	if (cx->nfuncs == cx->funcs_cap)
	{
		int			ncap = cx->funcs_cap ? cx->funcs_cap * 2 : 16;
		ApNode	  **nf = realloc(cx->funcs, sizeof(ApNode *) * (size_t) ncap);

		if (nf == NULL)
			return compile_error(cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
		cx->funcs = nf;
		cx->funcs_cap = ncap;
	}
	cx->funcs[cx->nfuncs++] = n;
	return 0;
}

/* CaseExpr: args are cond1, result1, ..., [default]. */
static int
compile_case(CompileCtx *cx, const ActivePg__CaseExpr *ce, ApNode *n, int depth)
{
	ActivePg__Expr **msgs;
	size_t		nmsgs;
	int			rc;

	n->kind = N_CASE;
	if (ce == NULL || ce->n_whens == 0)
		return compile_error(cx, AP_ERR_BAD_REQUEST, "CASE without WHEN");
	if (!kind_valid(ce->result_kind))
		return compile_error(cx, AP_ERR_UNSUPPORTED, "CASE of result kind %u", ce->result_kind);
	if (ce->n_whens > AP_MAX_EXPR_NODES)
		return compile_error(cx, AP_ERR_UNSUPPORTED, "expression has too many nodes");
	n->type_kind = (uint8_t) ce->result_kind;
	n->has_default = ce->default_result != NULL;
	nmsgs = 2 * ce->n_whens + (n->has_default ? 1 : 0);
	msgs = calloc(nmsgs, sizeof(ActivePg__Expr *));
	if (msgs == NULL)
		return compile_error(cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
	for (size_t i = 0; i < ce->n_whens; i++)
	{
		if (ce->whens[i] == NULL)
		{
			free(msgs);
			return compile_error(cx, AP_ERR_BAD_REQUEST, "CASE with an empty WHEN");
		}
		msgs[2 * i] = ce->whens[i]->cond;
		msgs[2 * i + 1] = ce->whens[i]->result;
	}
	if (n->has_default)
		msgs[nmsgs - 1] = ce->default_result;
	rc = compile_args(cx, n, msgs, nmsgs, depth);
	free(msgs);
	if (rc != 0)
		return rc;
	for (int i = 0; i < n->nargs; i++)
	{
		bool		is_cond = (i % 2 == 0) && !(n->has_default && i == n->nargs - 1);

		if (is_cond)
		{
			if ((rc = require_bool(cx, n->args[i], "CASE WHEN")) != 0)
				return rc;
		}
		else if (!kind_delivers(n->type_kind, node_result_kind(n->args[i])))
			return compile_error(cx, AP_ERR_BAD_REQUEST,
								 "CASE of kind %d has a result of kind %d",
								 n->type_kind, node_result_kind(n->args[i]));
	}
	return 0;
}

/* CoalesceExpr: every argument delivers the result kind. */
static int
compile_coalesce(CompileCtx *cx, const ActivePg__CoalesceExpr *ce, ApNode *n, int depth)
{
	int			rc;

	n->kind = N_COALESCE;
	if (ce == NULL || ce->n_args == 0)
		return compile_error(cx, AP_ERR_BAD_REQUEST, "COALESCE without arguments");
	if (!kind_valid(ce->result_kind))
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "COALESCE of result kind %u", ce->result_kind);
	n->type_kind = (uint8_t) ce->result_kind;
	if ((rc = compile_args(cx, n, ce->args, ce->n_args, depth)) != 0)
		return rc;
	for (int i = 0; i < n->nargs; i++)
		if (!kind_delivers(n->type_kind, node_result_kind(n->args[i])))
			return compile_error(cx, AP_ERR_BAD_REQUEST,
								 "COALESCE of kind %d has an argument of kind %d",
								 n->type_kind, node_result_kind(n->args[i]));
	return 0;
}

/* Result bits of an operator for c < 0, c = 0, c > 0 (bits 0, 1, 2). */
static uint8_t
op_mask(int op)
{
	switch (op)
	{
		case AP_OP_EQ:
			return 2;
		case AP_OP_NE:
			return 5;
		case AP_OP_LT:
			return 1;
		case AP_OP_LE:
			return 3;
		case AP_OP_GT:
			return 4;
		default:
			return 6;
	}
}

/*
 * Mark a comparison of a column with a non-null constant for eval_fast.  The
 * constant evaluates to a value without side effects, so reading only the
 * column (the operator mirrored when the constant came first) gives
 * eval_op's result; a constant that would fall back keeps the generic path.
 */
static void
specialise_op(ApNode *n)
{
	const ApNode *var = n->args[0];
	const ApNode *k = n->args[1];
	uint8_t		mask = op_mask(n->op);

	if (var->kind == N_CONST && k->kind == N_VAR)
	{
		const ApNode *t = var;

		var = k;
		k = t;
		/* cmp(const, var) = -cmp(var, const): swap the < and > bits */
		mask = (uint8_t) ((mask & 2) | ((mask & 1) << 2) | ((mask & 4) >> 2));
	}
	if (var->kind != N_VAR || k->kind != N_CONST || k->konst.isnull ||
		k->kev != AP_EV_VALUE)
		return;

	switch (n->cmp)
	{
		case AP_CMP_INT:
		case AP_CMP_DATE:
		case AP_CMP_TS:
		case AP_CMP_BOOL:
			n->fast = FC_INT;
			n->fconst = k->kval.u.i;
			break;
		case AP_CMP_DATE_TS:
			if (var->type_kind == AP_TYPE_DATE)
			{
				/* the column's date converts per tuple (it may fall back) */
				n->fast = FC_DATE_TS;
				n->fconst = k->kval.u.i;
			}
			else
			{
				int64_t		ts;

				if (!ap_vm_date_to_ts((int32_t) k->kval.u.i, &ts))
					return;
				n->fast = FC_INT;
				n->fconst = ts;
			}
			break;
		case AP_CMP_FLOAT:
			n->fast = FC_FLOAT;
			break;
		case AP_CMP_NUMERIC:
			if (k->kval.nform != AP_NF_FIXED)
				return;
			n->fast = FC_NUMERIC;
			break;
		default:
			return;
	}
	n->fmask = mask;
	n->fvar = var;
	n->fkonst = k;
}

/* Compile one protobuf Expr (recursively) into *out. */
static int
compile_node(CompileCtx *cx, const ActivePg__Expr *e, int depth, ApNode **out)
{
	ApNode	   *n;
	int			rc = 0;

	*out = NULL;
	if (e == NULL)
		return compile_error(cx, AP_ERR_BAD_REQUEST, "missing expression");
	if (depth > AP_MAX_EXPR_DEPTH)
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "expression deeper than %d", AP_MAX_EXPR_DEPTH);
	if (++cx->nnodes > AP_MAX_EXPR_NODES)
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "expression has more than %d nodes", AP_MAX_EXPR_NODES);

	n = calloc(1, sizeof(ApNode));
	if (n == NULL)
		return compile_error(cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
	*out = n;
	n->type_kind = AP_TYPE_BOOL;
	n->memo = -1;

	switch (e->node_case)
	{
		case ACTIVE_PG__EXPR__NODE_VAR:
			{
				const ApColumn *col;

				n->kind = N_VAR;
				if (e->var < 1 || e->var > cx->desc->natts)
					return compile_error(cx, AP_ERR_BAD_REQUEST,
										 "attribute %d out of range 1..%d",
										 e->var, cx->desc->natts);
				col = &cx->desc->cols[e->var - 1];
				if (col->attisdropped)
					return compile_error(cx, AP_ERR_BAD_REQUEST,
										 "attribute %d is dropped", e->var);
				if (!kind_valid(col->type_kind))
					return compile_error(cx, AP_ERR_UNSUPPORTED,
										 "attribute %d has a type the disk cannot evaluate",
										 e->var);
				/* the descriptor must store the kind the way we will read it */
				if (kind_is_varlena(col->type_kind) ? col->attlen != -1 :
					(uint32_t) col->attlen != kind_fixed_size(col->type_kind))
					return compile_error(cx, AP_ERR_BAD_REQUEST,
										 "attribute %d: attlen %d does not match type kind %u",
										 e->var, col->attlen, col->type_kind);
				n->attno = e->var;
				n->type_kind = col->type_kind;
				if (e->var > cx->max_attno)
					cx->max_attno = e->var;
				/* a numeric column is decoded once per evaluation, however often read */
				if (col->type_kind == AP_TYPE_NUMERIC)
				{
					if (cx->var_memo == NULL)
					{
						cx->var_memo = malloc(sizeof(int) * ((size_t) cx->desc->natts + 1));
						if (cx->var_memo == NULL)
							return compile_error(cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
						for (int i = 0; i <= cx->desc->natts; i++)
							cx->var_memo[i] = -1;
					}
					if (cx->var_memo[e->var] < 0)
						cx->var_memo[e->var] = cx->nmemo++;
					n->memo = cx->var_memo[e->var];
				}
				return 0;
			}

		case ACTIVE_PG__EXPR__NODE_KONST:
			n->kind = N_CONST;
			if (e->konst == NULL)
				return compile_error(cx, AP_ERR_BAD_REQUEST, "missing constant");
			return compile_const(cx, e->konst, n);

		case ACTIVE_PG__EXPR__NODE_OP:
			{
				const ActivePg__OpExpr *op = e->op;
				int			ka,
							kb;

				n->kind = N_OP;
				if (op == NULL)
					return compile_error(cx, AP_ERR_BAD_REQUEST, "missing operator");
				if (op->op < AP_OP_EQ || op->op > AP_OP_GE)
					return compile_error(cx, AP_ERR_UNSUPPORTED, "unknown operator %u", op->op);
				if (op->cmp < AP_CMP_INT || op->cmp > AP_CMP_BPCHAR)
					return compile_error(cx, AP_ERR_UNSUPPORTED,
										 "unknown comparison %u", op->cmp);
				if (op->n_args != 2)
					return compile_error(cx, AP_ERR_BAD_REQUEST,
										 "operator needs 2 arguments, has %zu", op->n_args);
				n->op = (uint8_t) op->op;
				n->cmp = (uint8_t) op->cmp;
				if ((rc = compile_args(cx, n, op->args, op->n_args, depth)) != 0)
					return rc;
				ka = node_result_kind(n->args[0]);
				kb = node_result_kind(n->args[1]);
				if (!cmp_accepts(n->cmp, ka, kb))
					return compile_error(cx, AP_ERR_BAD_REQUEST,
										 "comparison %u does not accept type kinds %d and %d",
										 op->cmp, ka, kb);
				specialise_op(n);
				return 0;
			}

		case ACTIVE_PG__EXPR__NODE_BOOL_EXPR:
			{
				const ActivePg__BoolExpr *be = e->bool_expr;

				if (be == NULL)
					return compile_error(cx, AP_ERR_BAD_REQUEST, "missing boolean expression");
				switch (be->kind)
				{
					case AP_BOOL_AND:
						n->kind = N_AND;
						break;
					case AP_BOOL_OR:
						n->kind = N_OR;
						break;
					case AP_BOOL_NOT:
						n->kind = N_NOT;
						break;
					default:
						return compile_error(cx, AP_ERR_UNSUPPORTED,
											 "unknown boolean expression kind %u", be->kind);
				}
				if (n->kind == N_NOT ? be->n_args != 1 : be->n_args < 1)
					return compile_error(cx, AP_ERR_BAD_REQUEST,
										 "boolean expression kind %u with %zu arguments",
										 be->kind, be->n_args);
				if ((rc = compile_args(cx, n, be->args, be->n_args, depth)) != 0)
					return rc;
				for (int i = 0; i < n->nargs; i++)
					if ((rc = require_bool(cx, n->args[i], "AND/OR/NOT")) != 0)
						return rc;
				return 0;
			}

		case ACTIVE_PG__EXPR__NODE_NULL_TEST:
			n->kind = N_NULLTEST;
			if (e->null_test == NULL || e->null_test->arg == NULL)
				return compile_error(cx, AP_ERR_BAD_REQUEST, "NullTest without argument");
			n->is_not_null = e->null_test->is_not_null;
			return compile_args(cx, n, &e->null_test->arg, 1, depth);

		case ACTIVE_PG__EXPR__NODE_BOOL_TEST:
			n->kind = N_BOOLTEST;
			if (e->bool_test == NULL || e->bool_test->arg == NULL)
				return compile_error(cx, AP_ERR_BAD_REQUEST, "BooleanTest without argument");
			if (e->bool_test->kind < AP_IS_TRUE || e->bool_test->kind > AP_IS_NOT_UNKNOWN)
				return compile_error(cx, AP_ERR_UNSUPPORTED,
									 "unknown boolean test %u", e->bool_test->kind);
			n->test = (uint8_t) e->bool_test->kind;
			if ((rc = compile_args(cx, n, &e->bool_test->arg, 1, depth)) != 0)
				return rc;
			return require_bool(cx, n->args[0], "BooleanTest");

		case ACTIVE_PG__EXPR__NODE_FUNC:
			return compile_func(cx, e->func, n, depth);

		case ACTIVE_PG__EXPR__NODE_CASE_EXPR:
			return compile_case(cx, e->case_expr, n, depth);

		case ACTIVE_PG__EXPR__NODE_COALESCE:
			return compile_coalesce(cx, e->coalesce, n, depth);

		default:
			return compile_error(cx, AP_ERR_BAD_REQUEST,
								 "expression node %d not set or unknown", (int) e->node_case);
	}
}

/* Structural hash of a subtree, stored in every node (equal trees, equal hashes). */
static uint32_t
node_hash(ApNode *n)
{
	uint32_t	h = 2166136261u;
	uint32_t	f[10] = {n->kind, n->type_kind, n->op, n->cmp, n->test, n->fn, n->field,
		(uint32_t) n->is_not_null | ((uint32_t) n->has_default << 1),
	(uint32_t) n->typmod, (uint32_t) n->attno};

	for (int i = 0; i < 10; i++)
		h = (h ^ f[i]) * 16777619u;
	if (n->kind == N_CONST)
	{
		h = (h ^ (uint32_t) n->konst.isnull) * 16777619u;
		for (uint32_t i = 0; !n->konst.isnull && i < n->konst.len; i++)
			h = (h ^ n->konst.ptr[i]) * 16777619u;
	}
	for (int i = 0; i < n->nargs; i++)
		h = (h ^ node_hash(n->args[i])) * 16777619u;
	n->hash = h;
	return h;
}

/* Do two subtrees compute the same thing (same nodes, same constants)? */
static bool
node_equal(const ApNode *a, const ApNode *b)
{
	if (a == b)
		return true;
	if (a->hash != b->hash || a->kind != b->kind || a->type_kind != b->type_kind ||
		a->op != b->op || a->cmp != b->cmp || a->test != b->test || a->fn != b->fn ||
		a->field != b->field || a->is_not_null != b->is_not_null ||
		a->has_default != b->has_default || a->typmod != b->typmod ||
		a->attno != b->attno || a->nargs != b->nargs)
		return false;
	if (a->kind == N_CONST &&
		(a->konst.isnull != b->konst.isnull ||
		 (!a->konst.isnull &&
		  (a->konst.len != b->konst.len ||
		   memcmp(a->konst.ptr, b->konst.ptr, a->konst.len) != 0))))
		return false;
	for (int i = 0; i < a->nargs; i++)
		if (!node_equal(a->args[i], b->args[i]))
			return false;
	return true;
}

/* qsort comparator: function nodes by structural hash. */
static int
cmp_node_hash(const void *x, const void *y)
{
	uint32_t	a = (*(ApNode *const *) x)->hash;
	uint32_t	b = (*(ApNode *const *) y)->hash;

	return a < b ? -1 : a > b;
}

/*
 * Common subexpressions: function calls that occur more than once in the
 * program (Q1's l_extendedprice * (1 - l_discount) in two sums) share a memo
 * slot, so each is computed once per evaluation.  Functions are pure and
 * deterministic, so the shared value (or fallback) is what every occurrence
 * would have computed; CASE laziness is kept because a slot is only filled
 * where an occurrence is actually evaluated.
 */
static void
share_subexpressions(CompileCtx *cx)
{
	ApProgram  *prog = cx->prog;

	if (cx->nfuncs < 2)
		return;
	if (prog->filter != NULL)
		node_hash(prog->filter->root);
	for (int i = 0; i < prog->nexprs; i++)
		node_hash(prog->exprs[i]->root);
	qsort(cx->funcs, (size_t) cx->nfuncs, sizeof(ApNode *), cmp_node_hash);
	for (int i = 0; i < cx->nfuncs; i++)
	{
		ApNode	   *a = cx->funcs[i];

		if (a->memo >= 0)
			continue;
		/* a run of equal hashes; bounded so a hostile program compiles quickly */
		for (int j = i + 1, tries = 0;
			 j < cx->nfuncs && cx->funcs[j]->hash == a->hash && tries < 64; j++, tries++)
		{
			ApNode	   *b = cx->funcs[j];

			if (b->memo >= 0 || !node_equal(a, b))
				continue;
			if (a->memo < 0)
				a->memo = cx->nmemo++;
			b->memo = a->memo;
		}
	}
}

/* Compile one expression tree into a fresh ApExpr (*out set even on failure). */
static int
compile_expr(CompileCtx *cx, const ActivePg__Expr *e, ApExpr **out)
{
	*out = calloc(1, sizeof(ApExpr));
	if (*out == NULL)
		return compile_error(cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
	return compile_node(cx, e, 1, &(*out)->root);
}

/* Free one compiled expression. */
static void
expr_free(ApExpr *e)
{
	if (e == NULL)
		return;
	node_free(e->root);
	free(e);
}

/* Compile the program; see diskd.h.  On failure prog holds nothing to free. */
int
ap_program_compile(const ActivePg__Program *msg, const ApTupleDesc *desc,
				   ApProgram *prog)
{
	CompileCtx	cx;
	int			rc;

	memset(prog, 0, sizeof(*prog));
	memset(&cx, 0, sizeof(cx));
	cx.desc = desc;
	cx.prog = prog;

	if (msg == NULL)
	{
		rc = compile_error(&cx, AP_ERR_BAD_REQUEST, "missing program");
		goto fail;
	}

	prog->project = calloc(msg->n_project > 0 ? msg->n_project : 1, sizeof(int));
	if (prog->project == NULL)
	{
		rc = compile_error(&cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
		goto fail;
	}
	if (msg->n_project + msg->n_project_exprs > AP_MAX_COLUMNS)
	{
		rc = compile_error(&cx, AP_ERR_BAD_REQUEST, "too many projected values");
		goto fail;
	}
	for (size_t i = 0; i < msg->n_project; i++)
	{
		int			a = msg->project[i];

		if (a < 1 || a > desc->natts)
		{
			rc = compile_error(&cx, AP_ERR_BAD_REQUEST,
							   "projected attribute %d out of range 1..%d", a, desc->natts);
			goto fail;
		}
		if (desc->cols[a - 1].attisdropped)
		{
			rc = compile_error(&cx, AP_ERR_BAD_REQUEST, "projected attribute %d is dropped", a);
			goto fail;
		}
		prog->project[i] = a;
		if (a > cx.max_attno)
			cx.max_attno = a;
	}
	prog->nproject = (int) msg->n_project;

	if (msg->filter != NULL)
	{
		rc = compile_expr(&cx, msg->filter, &prog->filter);
		if (rc == 0)
			rc = require_bool(&cx, prog->filter->root, "filter");
		if (rc != 0)
			goto fail;
	}

	if (msg->n_project_exprs > 0)
	{
		prog->exprs = calloc(msg->n_project_exprs, sizeof(ApExpr *));
		prog->expr_cols = calloc(msg->n_project_exprs, sizeof(ApColumn));
		if (prog->exprs == NULL || prog->expr_cols == NULL)
		{
			rc = compile_error(&cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
			goto fail;
		}
		for (size_t i = 0; i < msg->n_project_exprs; i++)
		{
			int			k;

			rc = compile_expr(&cx, msg->project_exprs[i], &prog->exprs[i]);
			prog->nexprs = (int) i + 1;
			if (rc != 0)
				goto fail;
			/* the row carries the datum of the result kind (ap_types.h) */
			k = node_result_kind(prog->exprs[i]->root);
			prog->expr_cols[i].attlen = (int16_t) AP_KIND_ATTLEN(k);
			prog->expr_cols[i].attalign = (char) AP_KIND_ALIGN(k);
			prog->expr_cols[i].attbyval = AP_KIND_ATTLEN(k) > 0;
			prog->expr_cols[i].type_kind = (uint8_t) k;
		}
	}

	share_subexpressions(&cx);
	if (prog->filter != NULL || prog->nexprs > 0)
	{
		int			nm = cx.nmemo > 0 ? cx.nmemo : 1;

		prog->arena = calloc(1, sizeof(ApArena));
		if (prog->arena == NULL ||
			(prog->arena->buf = malloc(AP_VM_ARENA_BYTES)) == NULL ||
			(prog->arena->memo_epoch = calloc((size_t) nm, sizeof(uint32_t))) == NULL ||
			(prog->arena->memo_ev = calloc((size_t) nm, 1)) == NULL ||
			(prog->arena->memo_val = calloc((size_t) nm, sizeof(ApVal))) == NULL)
		{
			rc = compile_error(&cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
			goto fail;
		}
		prog->arena->cap = AP_VM_ARENA_BYTES;
		prog->arena->nmemo = cx.nmemo;
	}
	prog->max_attno = cx.max_attno;
	free(cx.var_memo);
	free(cx.funcs);
	return 0;

fail:
	free(cx.var_memo);
	free(cx.funcs);
	ap_program_free(prog);
	return rc;
}

/* Release everything compile allocated; the error text survives. */
void
ap_program_free(ApProgram *prog)
{
	expr_free(prog->filter);
	for (int i = 0; i < prog->nexprs; i++)
		expr_free(prog->exprs[i]);
	free(prog->exprs);
	free(prog->expr_cols);
	if (prog->arena != NULL)
	{
		free(prog->arena->buf);
		free(prog->arena->memo_epoch);
		free(prog->arena->memo_ev);
		free(prog->arena->memo_val);
	}
	free(prog->arena);
	free(prog->project);
	prog->filter = NULL;
	prog->exprs = NULL;
	prog->expr_cols = NULL;
	prog->arena = NULL;
	prog->nexprs = 0;
	prog->project = NULL;
	prog->nproject = 0;
	prog->max_attno = 0;
}

/* ---------------- evaluation ---------------- */

/* Bump-allocate n bytes, 8-aligned; NULL when the arena is full (fallback). */
void *
ap_arena_alloc(ApArena *a, uint32_t n)
{
	uint32_t	off = (a->used + 7u) & ~7u;

	if (off > a->cap || n > a->cap - off)
		return NULL;
	a->used = off + n;
	return a->buf + off;
}

static ApEv eval_value(const ApNode *n, ApEvalCtx *cx, ApVal *out);
static ApTri eval_bool(const ApNode *n, ApEvalCtx *cx);

/* Payload of a stored varlena; compressed ones are expanded into the arena. */
static ApEv
varlena_payload(const ApValue *v, ApEvalCtx *cx, ApVal *out)
{
	ApArena    *a = cx->arena;
	uint32_t	off = (a->used + 7u) & ~7u;
	const unsigned char *data;
	uint32_t	len;

	if (off > a->cap)
		return AP_EV_FALLBACK;
	if (ap_varlena_payload(v->ptr, a->buf + off, a->cap - off, &data, &len) != AP_OK)
		return AP_EV_FALLBACK;
	if (data == a->buf + off)
		a->used = off + len;	/* keep the decompressed bytes for this tuple */
	out->u.s.p = data;
	out->u.s.len = len;
	return AP_EV_VALUE;
}

/* A leaf (attribute or constant) as a value of its kind. */
static inline ApEv
eval_leaf(const ApNode *n, ApEvalCtx *cx, ApVal *out)
{
	const ApValue *v;

	/* constants were decoded at compile time */
	if (n->kind == N_CONST)
	{
		if (n->konst.isnull)
		{
			out->kind = n->type_kind;
			return AP_EV_NULL;
		}
		*out = n->kval;
		return (ApEv) n->kev;
	}
	v = &cx->values[n->attno - 1];
	out->kind = n->type_kind;
	if (v->isnull)
		return AP_EV_NULL;
	switch (n->type_kind)
	{
		case AP_TYPE_BOOL:
			out->u.i = v->ptr[0] != 0;
			return AP_EV_VALUE;
		case AP_TYPE_INT2:
			{
				int16_t		x;

				memcpy(&x, v->ptr, sizeof(x));
				out->u.i = x;
				return AP_EV_VALUE;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		x;

				memcpy(&x, v->ptr, sizeof(x));
				out->u.i = x;
				return AP_EV_VALUE;
			}
		case AP_TYPE_INT8:
		case AP_TYPE_TIMESTAMP:
		case AP_TYPE_TIMESTAMPTZ:
			memcpy(&out->u.i, v->ptr, sizeof(int64_t));
			return AP_EV_VALUE;
		case AP_TYPE_FLOAT4:
			memcpy(&out->u.f4, v->ptr, sizeof(float));
			return AP_EV_VALUE;
		case AP_TYPE_FLOAT8:
			memcpy(&out->u.f8, v->ptr, sizeof(double));
			return AP_EV_VALUE;
		case AP_TYPE_NUMERIC:
			{
				ApEv		r;

				out->nform = AP_NF_DATUM;
				r = varlena_payload(v, cx, out);
				if (r == AP_EV_VALUE)
					numeric_settle(out);
				return r;
			}
		default:
			return varlena_payload(v, cx, out);
	}
}

/* A strict function: all arguments, then FALLBACK before NULL, then compute. */
static ApEv
eval_func(const ApNode *n, ApEvalCtx *cx, ApVal *out)
{
	ApVal		a[AP_MAX_FUNC_ARGS];
	bool		sawnull = false;

	for (int i = 0; i < n->nargs; i++)
	{
		ApEv		r = eval_value(n->args[i], cx, &a[i]);

		if (r == AP_EV_FALLBACK)
			return AP_EV_FALLBACK;
		if (r == AP_EV_NULL)
			sawnull = true;
	}
	out->kind = n->type_kind;
	out->nform = AP_NF_DATUM;
	out->special = 0;
	if (sawnull)
		return AP_EV_NULL;

	switch (n->fn)
	{
		case AP_FN_ADD:
		case AP_FN_SUB:
			if (a[0].kind == AP_TYPE_DATE || a[1].kind == AP_TYPE_DATE)
				return ap_vm_date_arith(n->fn, n->type_kind, &a[0], &a[1], out);
			return ap_vm_arith(n->fn, n->type_kind, &a[0], &a[1], out);
		case AP_FN_MUL:
		case AP_FN_DIV:
		case AP_FN_MOD:
			return ap_vm_arith(n->fn, n->type_kind, &a[0], &a[1], out);
		case AP_FN_NEG:
			return ap_vm_neg(n->type_kind, &a[0], out);
		case AP_FN_CAST:
			return ap_vm_cast(n->type_kind, &a[0], out);
		case AP_FN_NUMERIC_TYPMOD:
			return ap_vm_numeric_typmod(n->typmod, &a[0], out);
		case AP_FN_EXTRACT:
			return ap_vm_extract(n->field, n->type_kind, &a[0], out);
		case AP_FN_DATE_TRUNC:
			return ap_vm_date_trunc(n->field, &a[0], out);
		default:
			return ap_vm_string(n->fn, n->nargs, a, cx, out);
	}
}

static ApEv eval_node(const ApNode *n, ApEvalCtx *cx, ApVal *out);

/*
 * Evaluate any node to a value; boolean nodes give kind BOOL.  A node with a
 * memo slot is computed once per evaluation and then copied.
 */
static ApEv
eval_value(const ApNode *n, ApEvalCtx *cx, ApVal *out)
{
	ApArena    *a;
	ApEv		r;
	int			m = n->memo;

	if (m < 0)
		return eval_node(n, cx, out);
	a = cx->arena;
	if (a->memo_epoch[m] == a->epoch)
	{
		*out = a->memo_val[m];
		return (ApEv) a->memo_ev[m];
	}
	r = eval_node(n, cx, out);
	a->memo_val[m] = *out;
	a->memo_ev[m] = (uint8_t) r;
	a->memo_epoch[m] = a->epoch;
	return r;
}

/* Evaluate a node without looking at its memo slot. */
static ApEv
eval_node(const ApNode *n, ApEvalCtx *cx, ApVal *out)
{
	switch (n->kind)
	{
		case N_VAR:
		case N_CONST:
			return eval_leaf(n, cx, out);

		case N_FUNC:
			return eval_func(n, cx, out);

		case N_CASE:
			{
				int			npairs = n->nargs / 2;
				ApEv		r = AP_EV_NULL;

				for (int i = 0; i < npairs; i++)
				{
					ApTri		t = eval_bool(n->args[2 * i], cx);

					if (t == AP_TRI_FALLBACK)
						return AP_EV_FALLBACK;
					if (t == AP_TRUE)
					{
						r = eval_value(n->args[2 * i + 1], cx, out);
						out->kind = n->type_kind;
						return r;
					}
				}
				if (n->has_default)
					r = eval_value(n->args[n->nargs - 1], cx, out);
				out->kind = n->type_kind;
				return r;
			}

		case N_COALESCE:
			for (int i = 0; i < n->nargs; i++)
			{
				ApEv		r = eval_value(n->args[i], cx, out);

				if (r != AP_EV_NULL)
				{
					out->kind = n->type_kind;
					return r;
				}
			}
			out->kind = n->type_kind;
			return AP_EV_NULL;

		default:
			{
				ApTri		t = eval_bool(n, cx);

				out->kind = AP_TYPE_BOOL;
				if (t == AP_TRI_FALLBACK)
					return AP_EV_FALLBACK;
				if (t == AP_NULL)
					return AP_EV_NULL;
				out->u.i = (t == AP_TRUE);
				return AP_EV_VALUE;
			}
	}
}

/* Three-way compare of integers. */
static inline int
cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : (a > b ? 1 : 0);
}

/* float8_cmp_internal(): NaN equals NaN and sorts above every number. */
static int
cmp_double(double a, double b)
{
	if (isnan(a))
		return isnan(b) ? 0 : 1;
	if (isnan(b))
		return -1;
	return a < b ? -1 : (a > b ? 1 : 0);
}

/* A float value widened to double, as the float48 operators do. */
static inline double
val_double(const ApVal *v)
{
	return v->kind == AP_TYPE_FLOAT4 ? (double) v->u.f4 : v->u.f8;
}

/* Byte-wise compare, shorter first on a common prefix (C collation). */
static int
cmp_bytes(const unsigned char *a, uint32_t alen, const unsigned char *b, uint32_t blen)
{
	int			c = alen == 0 || blen == 0 ? 0 : memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c < 0 ? -1 : 1;
	return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/* bpchar's significant length: trailing spaces are padding. */
static uint32_t
bpchar_len(const unsigned char *p, uint32_t len)
{
	while (len > 0 && p[len - 1] == ' ')
		len--;
	return len;
}

/* Map a three-way result through the operator. */
static inline ApTri
apply_op(int op, int c)
{
	bool		r;

	switch (op)
	{
		case AP_OP_EQ:
			r = c == 0;
			break;
		case AP_OP_NE:
			r = c != 0;
			break;
		case AP_OP_LT:
			r = c < 0;
			break;
		case AP_OP_LE:
			r = c <= 0;
			break;
		case AP_OP_GT:
			r = c > 0;
			break;
		default:
			r = c >= 0;
			break;
	}
	return r ? AP_TRUE : AP_FALSE;
}

/*
 * A comparison specialised by specialise_op: the column is read straight
 * from its datum (numeric through its memo slot, decoded once per tuple) and
 * compared with the pre-decoded constant, exactly as eval_op would.
 */
static inline ApTri
eval_fast(const ApNode *n, ApEvalCtx *cx)
{
	const ApNode *var = n->fvar;
	const ApValue *v;
	int			c;

	if (n->fast == FC_NUMERIC)
	{
		ApVal		a;
		ApEv		r = eval_value(var, cx, &a);

		if (r != AP_EV_VALUE)
			return r == AP_EV_NULL ? AP_NULL : AP_TRI_FALLBACK;
		if (a.nform == AP_NF_FIXED)
			c = ap_fixed_cmp(&a.u.fx, &n->fkonst->kval.u.fx);
		else if (ap_vm_numeric_cmp(&a, &n->fkonst->kval, &c) != AP_EV_VALUE)
			return AP_TRI_FALLBACK;
	}
	else
	{
		v = &cx->values[var->attno - 1];
		if (v->isnull)
			return AP_NULL;
		if (n->fast == FC_FLOAT)
		{
			double		x;

			if (var->type_kind == AP_TYPE_FLOAT4)
			{
				float		f;

				memcpy(&f, v->ptr, sizeof(f));
				x = f;
			}
			else
				memcpy(&x, v->ptr, sizeof(x));
			c = cmp_double(x, val_double(&n->fkonst->kval));
		}
		else
		{
			int64_t		x;

			switch (var->type_kind)
			{
				case AP_TYPE_BOOL:
					x = v->ptr[0] != 0;
					break;
				case AP_TYPE_INT2:
					{
						int16_t		y;

						memcpy(&y, v->ptr, sizeof(y));
						x = y;
						break;
					}
				case AP_TYPE_INT4:
				case AP_TYPE_DATE:
					{
						int32_t		y;

						memcpy(&y, v->ptr, sizeof(y));
						x = y;
						break;
					}
				default:
					memcpy(&x, v->ptr, sizeof(x));
					break;
			}
			if (n->fast == FC_DATE_TS && !ap_vm_date_to_ts((int32_t) x, &x))
				return AP_TRI_FALLBACK;
			c = cmp_i64(x, n->fconst);
		}
	}
	c = (c > 0) - (c < 0);
	return ((n->fmask >> (c + 1)) & 1) ? AP_TRUE : AP_FALSE;
}

/* Comparison node: strict (NULL in, NULL out), then the family's ordering. */
static ApTri
eval_op(const ApNode *n, ApEvalCtx *cx)
{
	ApVal		a,
				b;
	ApEv		ea,
				eb;
	int			c;

	ea = eval_value(n->args[0], cx, &a);
	eb = eval_value(n->args[1], cx, &b);
	if (ea == AP_EV_FALLBACK || eb == AP_EV_FALLBACK)
		return AP_TRI_FALLBACK;
	if (ea == AP_EV_NULL || eb == AP_EV_NULL)
		return AP_NULL;

	switch (n->cmp)
	{
		case AP_CMP_INT:
		case AP_CMP_DATE:
		case AP_CMP_TS:
		case AP_CMP_BOOL:
			c = cmp_i64(a.u.i, b.u.i);
			break;

		case AP_CMP_FLOAT:
			c = cmp_double(val_double(&a), val_double(&b));
			break;

		case AP_CMP_DATE_TS:
			{
				int64_t		ta = a.u.i,
							tb = b.u.i;

				if (a.kind == AP_TYPE_DATE && !ap_vm_date_to_ts((int32_t) a.u.i, &ta))
					return AP_TRI_FALLBACK;
				if (b.kind == AP_TYPE_DATE && !ap_vm_date_to_ts((int32_t) b.u.i, &tb))
					return AP_TRI_FALLBACK;
				c = cmp_i64(ta, tb);
				break;
			}

		case AP_CMP_NUMERIC:
			if (ap_vm_numeric_cmp(&a, &b, &c) != AP_EV_VALUE)
				return AP_TRI_FALLBACK;
			break;

		case AP_CMP_BPCHAR:
			c = cmp_bytes(a.u.s.p, bpchar_len(a.u.s.p, a.u.s.len),
						  b.u.s.p, bpchar_len(b.u.s.p, b.u.s.len));
			break;

		case AP_CMP_TEXT:
			c = cmp_bytes(a.u.s.p, a.u.s.len, b.u.s.p, b.u.s.len);
			break;

		default:
			return AP_TRI_FALLBACK;
	}
	return apply_op(n->op, c);
}

/* Evaluate a boolean node in three-valued logic (plus FALLBACK). */
static ApTri
eval_bool(const ApNode *n, ApEvalCtx *cx)
{
	switch (n->kind)
	{
		case N_VAR:
		case N_CONST:
		case N_FUNC:
		case N_CASE:
		case N_COALESCE:
			{
				/* only boolean value nodes reach here (checked at compile) */
				ApVal		v;
				ApEv		r = eval_value(n, cx, &v);

				if (r == AP_EV_FALLBACK)
					return AP_TRI_FALLBACK;
				if (r == AP_EV_NULL)
					return AP_NULL;
				return v.u.i ? AP_TRUE : AP_FALSE;
			}

		case N_OP:
			if (n->fast != FC_NONE)
				return eval_fast(n, cx);
			return eval_op(n, cx);

		case N_AND:
		case N_OR:
			{
				/* AND stops at FALSE, OR at TRUE -- in order, as the executor */
				ApTri		decisive = n->kind == N_AND ? AP_FALSE : AP_TRUE;
				bool		sawnull = false;

				for (int i = 0; i < n->nargs; i++)
				{
					const ApNode *arg = n->args[i];
					/* a specialised comparison skips the dispatch (only N_OP sets fast) */
					ApTri		t = arg->fast != FC_NONE ? eval_fast(arg, cx) :
						eval_bool(arg, cx);

					if (t == decisive || t == AP_TRI_FALLBACK)
						return t;
					if (t == AP_NULL)
						sawnull = true;
				}
				return sawnull ? AP_NULL : (n->kind == N_AND ? AP_TRUE : AP_FALSE);
			}

		case N_NOT:
			{
				ApTri		t = eval_bool(n->args[0], cx);

				if (t == AP_TRUE)
					return AP_FALSE;
				if (t == AP_FALSE)
					return AP_TRUE;
				return t;
			}

		case N_NULLTEST:
			{
				const ApNode *arg = n->args[0];
				bool		isnull;

				if (arg->kind == N_VAR)
					isnull = cx->values[arg->attno - 1].isnull;
				else if (arg->kind == N_CONST)
					isnull = arg->konst.isnull;
				else
				{
					ApVal		v;
					ApEv		r = eval_value(arg, cx, &v);

					if (r == AP_EV_FALLBACK)
						return AP_TRI_FALLBACK;
					isnull = (r == AP_EV_NULL);
				}
				return (isnull != n->is_not_null) ? AP_TRUE : AP_FALSE;
			}

		case N_BOOLTEST:
			{
				ApTri		t = eval_bool(n->args[0], cx);
				bool		r;

				if (t == AP_TRI_FALLBACK)
					return AP_TRI_FALLBACK;
				switch (n->test)
				{
					case AP_IS_TRUE:
						r = (t == AP_TRUE);
						break;
					case AP_IS_NOT_TRUE:
						r = (t != AP_TRUE);
						break;
					case AP_IS_FALSE:
						r = (t == AP_FALSE);
						break;
					case AP_IS_NOT_FALSE:
						r = (t != AP_FALSE);
						break;
					case AP_IS_UNKNOWN:
						r = (t == AP_NULL);
						break;
					default:
						r = (t != AP_NULL);
						break;
				}
				return r ? AP_TRUE : AP_FALSE;
			}
	}
	return AP_TRI_FALLBACK;
}

/* Set up the per-tuple evaluation context and empty the arena. */
static void
ctx_init(const ApProgram *prog, const ApValue *values, ApEvalCtx *cx)
{
	ApArena    *a = prog->arena;

	cx->values = values;
	cx->arena = a;
	cx->utf8 = prog->encoding_utf8;
	a->used = 0;
	/* a new epoch empties every memo slot without touching them */
	if (++a->epoch == 0)
	{
		memset(a->memo_epoch, 0, sizeof(uint32_t) * (size_t) (a->nmemo > 0 ? a->nmemo : 1));
		a->epoch = 1;
	}
}

/* Evaluate the filter for one tuple; no filter passes everything. */
ApTri
ap_program_filter(const ApProgram *prog, const ApValue *values)
{
	ApEvalCtx	cx;

	if (prog->filter == NULL || prog->filter->root == NULL)
		return AP_TRUE;
	ctx_init(prog, values, &cx);
	return eval_bool(prog->filter->root, &cx);
}

/* Write a varlena with a 4-byte header into the arena. */
static bool
store_varlena(ApArena *a, const unsigned char *payload, uint32_t len, ApValue *out)
{
	unsigned char *p;
	uint32_t	hdr;

	if (len > 0x3FFFFFFFu - 4 || (p = ap_arena_alloc(a, len + 4)) == NULL)
		return false;
	hdr = (len + 4) << 2;		/* SET_VARSIZE, little-endian 4-byte header */
	memcpy(p, &hdr, 4);
	if (len > 0)
		memcpy(p + 4, payload, len);
	out->ptr = p;
	out->len = len + 4;
	out->isnull = false;
	return true;
}

/* A value as PostgreSQL's datum of its kind, in the arena. */
static bool
store_datum(ApArena *a, const ApVal *v, ApValue *out)
{
	unsigned char *p;
	int			len = AP_KIND_ATTLEN(v->kind);

	if (v->kind == AP_TYPE_NUMERIC)
	{
		unsigned char buf[AP_NUMERIC_FIXED_MAX_BYTES];

		if (v->nform == AP_NF_DATUM)
			return store_varlena(a, v->u.s.p, v->u.s.len, out);
		if (v->nform == AP_NF_SPECIAL)
			return store_varlena(a, buf,
								 ap_numeric_encode_special((ApNumSpecial) v->special, buf), out);
		return store_varlena(a, buf, ap_numeric_encode_fixed(&v->u.fx, buf), out);
	}
	if (len < 0)
		return store_varlena(a, v->u.s.p, v->u.s.len, out);

	if ((p = ap_arena_alloc(a, (uint32_t) len)) == NULL)
		return false;
	switch (v->kind)
	{
		case AP_TYPE_BOOL:
			p[0] = v->u.i != 0;
			break;
		case AP_TYPE_INT2:
			{
				int16_t		x = (int16_t) v->u.i;

				memcpy(p, &x, 2);
				break;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		x = (int32_t) v->u.i;

				memcpy(p, &x, 4);
				break;
			}
		case AP_TYPE_FLOAT4:
			memcpy(p, &v->u.f4, 4);
			break;
		case AP_TYPE_FLOAT8:
			memcpy(p, &v->u.f8, 8);
			break;
		default:
			memcpy(p, &v->u.i, 8);
			break;
	}
	out->ptr = p;
	out->len = (uint32_t) len;
	out->isnull = false;
	return true;
}

/* Evaluate the computed projections of one tuple; see diskd.h. */
ApStatus
ap_program_project(const ApProgram *prog, const ApValue *values, ApValue *out)
{
	ApEvalCtx	cx;

	if (prog->nexprs == 0)
		return AP_OK;
	ctx_init(prog, values, &cx);
	for (int i = 0; i < prog->nexprs; i++)
	{
		ApVal		v;
		ApEv		r;

		r = eval_value(prog->exprs[i]->root, &cx, &v);
		if (r == AP_EV_FALLBACK)
			return AP_FALLBACK;
		out[i].ptr = NULL;
		out[i].len = 0;
		out[i].isnull = true;
		if (r == AP_EV_VALUE)
		{
			v.kind = prog->expr_cols[i].type_kind;
			if (!store_datum(cx.arena, &v, &out[i]))
				return AP_FALLBACK;
		}
	}
	return AP_OK;
}

/* Evaluate the computed projections as typed values; see vm_internal.h. */
ApStatus
ap_program_eval(const ApProgram *prog, const ApValue *values, ApVal *out, bool *isnull)
{
	ApEvalCtx	cx;

	if (prog->nexprs == 0)
		return AP_OK;
	ctx_init(prog, values, &cx);
	for (int i = 0; i < prog->nexprs; i++)
	{
		ApEv		r = eval_value(prog->exprs[i]->root, &cx, &out[i]);

		if (r == AP_EV_FALLBACK)
			return AP_FALLBACK;
		isnull[i] = (r == AP_EV_NULL);
		out[i].kind = prog->expr_cols[i].type_kind;
	}
	return AP_OK;
}
