/*
 * vm_compile.c
 *	  The expression VM, compilation: turn a protobuf Program into node trees.
 *
 * Rules of this file:
 *  - Compilation is where everything is checked: attribute numbers against
 *    the descriptor, operators, comparison families and function signatures
 *    against the argument type kinds, constant sizes, tree depth and size.
 *    A program that compiles can be evaluated on any tuple without further
 *    checks beyond the datum contents themselves.
 *  - Constants are decoded once here (kval), and comparisons of a column
 *    with a non-null constant are marked for the fast path, so evaluation
 *    (vm_eval.c) does no per-tuple work that compile could do.
 *  - Compilation may malloc; every allocation is released by
 *    ap_program_free, also after a failed compile.
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
	free(n->set);
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

/* A branch of kind k may deliver a CASE/COALESCE result of kind rk. */
static bool
kind_delivers(int rk, int k)
{
	return k == rk || (AP_IS_TXT_KIND(rk) && AP_IS_TXT_KIND(k));
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


/*
 * A column reference: it must name a live attribute whose stored form is
 * the one its kind is read as, or the evaluator would misread the tuple.
 */
static int
compile_var(CompileCtx *cx, int32_t attno, ApNode *n)
{
	const ApColumn *col;

	n->kind = N_VAR;
	if (attno < 1 || attno > cx->desc->natts)
		return compile_error(cx, AP_ERR_BAD_REQUEST,
							 "attribute %d out of range 1..%d",
							 attno, cx->desc->natts);
	col = &cx->desc->cols[attno - 1];
	if (col->attisdropped)
		return compile_error(cx, AP_ERR_BAD_REQUEST,
							 "attribute %d is dropped", attno);
	if (!kind_valid(col->type_kind))
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "attribute %d has a type the disk cannot evaluate",
							 attno);
	/* the descriptor must store the kind the way we will read it */
	if (kind_is_varlena(col->type_kind) ? col->attlen != -1 :
		(uint32_t) col->attlen != kind_fixed_size(col->type_kind))
		return compile_error(cx, AP_ERR_BAD_REQUEST,
							 "attribute %d: attlen %d does not match type kind %u",
							 attno, col->attlen, col->type_kind);
	n->attno = attno;
	n->type_kind = col->type_kind;
	if (attno > cx->max_attno)
		cx->max_attno = attno;
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
		if (cx->var_memo[attno] < 0)
			cx->var_memo[attno] = cx->nmemo++;
		n->memo = cx->var_memo[attno];
	}
	return 0;
}

/*
 * A comparison: a known operator and comparison family over two arguments
 * whose kinds the family accepts (ap_cmp_accepts, the rule the host's
 * shippability check applies too), then specialised for the fast path.
 */
static int
compile_op(CompileCtx *cx, const ActivePg__OpExpr *op, ApNode *n, int depth)
{
	int			ka,
				kb;
	int			rc;

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
	if (!ap_cmp_accepts(n->cmp, ka, kb))
		return compile_error(cx, AP_ERR_BAD_REQUEST,
							 "comparison %u does not accept type kinds %d and %d",
							 op->cmp, ka, kb);
	ap_vm_specialise_op(n);
	return 0;
}

/* AND and OR of one or more booleans, NOT of exactly one. */
static int
compile_bool_expr(CompileCtx *cx, const ActivePg__BoolExpr *be, ApNode *n, int depth)
{
	int			rc;

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

/* IS [NOT] TRUE / FALSE / UNKNOWN of a boolean. */
static int
compile_bool_test(CompileCtx *cx, ActivePg__BooleanTest *bt, ApNode *n, int depth)
{
	int			rc;

	n->kind = N_BOOLTEST;
	if (bt == NULL || bt->arg == NULL)
		return compile_error(cx, AP_ERR_BAD_REQUEST, "BooleanTest without argument");
	if (bt->kind < AP_IS_TRUE || bt->kind > AP_IS_NOT_UNKNOWN)
		return compile_error(cx, AP_ERR_UNSUPPORTED,
							 "unknown boolean test %u", bt->kind);
	n->test = (uint8_t) bt->kind;
	if ((rc = compile_args(cx, n, &bt->arg, 1, depth)) != 0)
		return rc;
	return require_bool(cx, n->args[0], "BooleanTest");
}

/* Compile one protobuf Expr (recursively) into *out. */
static int
compile_node(CompileCtx *cx, const ActivePg__Expr *e, int depth, ApNode **out)
{
	ApNode	   *n;

	*out = NULL;
	if (e == NULL)
		return compile_error(cx, AP_ERR_BAD_REQUEST, "missing expression");
	/* the size limits bound the work and the stack of every later pass */
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
			return compile_var(cx, e->var, n);

		case ACTIVE_PG__EXPR__NODE_KONST:
			n->kind = N_CONST;
			if (e->konst == NULL)
				return compile_error(cx, AP_ERR_BAD_REQUEST, "missing constant");
			return compile_const(cx, e->konst, n);

		case ACTIVE_PG__EXPR__NODE_OP:
			return compile_op(cx, e->op, n, depth);

		case ACTIVE_PG__EXPR__NODE_BOOL_EXPR:
			return compile_bool_expr(cx, e->bool_expr, n, depth);

		case ACTIVE_PG__EXPR__NODE_NULL_TEST:
			n->kind = N_NULLTEST;
			if (e->null_test == NULL || e->null_test->arg == NULL)
				return compile_error(cx, AP_ERR_BAD_REQUEST, "NullTest without argument");
			n->is_not_null = e->null_test->is_not_null;
			return compile_args(cx, n, &e->null_test->arg, 1, depth);

		case ACTIVE_PG__EXPR__NODE_BOOL_TEST:
			return compile_bool_test(cx, e->bool_test, n, depth);

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

	cx.nmemo = ap_vm_share_subexpressions(prog, cx.funcs, cx.nfuncs, cx.nmemo);
	ap_vm_value_sets(prog);
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
	ap_vm_range_checks(prog);
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
	prog->nranges = 0;
}

