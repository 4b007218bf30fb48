/*
 * vm.c
 *	  The expression VM: compile a protobuf Program, evaluate it in 3VL.
 *
 * Rules of this file:
 *  - Compilation is where everything is checked: attribute numbers against
 *    the descriptor, operators, comparison families against the argument
 *    type kinds, constant sizes, tree depth and size.  A program that
 *    compiles can be evaluated on any tuple without further checks beyond
 *    the datum contents themselves.
 *  - Evaluation is SQL's three-valued logic plus a fourth value,
 *    AP_TRI_FALLBACK, for "cannot reproduce exactly": an external TOAST
 *    value, an lz4 or oversized compressed value, a corrupt datum, a date
 *    outside timestamp range.  FALLBACK propagates unless SQL has already
 *    decided the result (a FALSE in an AND, a TRUE in an OR).
 *  - Comparisons reproduce PostgreSQL's comparison functions bit for bit:
 *    float NaN = NaN and above everything, -0 = 0; numeric via numeric.c;
 *    text byte-wise (the host ships ordering only under C collation); bpchar
 *    ignoring trailing spaces; date vs timestamp by converting the date.
 *  - Evaluation never allocates: decompression scratch belongs to the
 *    compiled program (two buffers, one per comparison operand; operands of
 *    a comparison are leaves or complete before the other is fetched).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskd.h"

/* Decompression scratch per comparison operand. */
#define AP_VM_SCRATCH_BYTES		(64u * 1024u)

/* Date/timestamp facts (datatype/timestamp.h). */
#define USECS_PER_DAY			INT64_C(86400000000)
#define DATE_TS_MAX_DAYS		106751983	/* TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE */
#define DATE_TS_MIN_DAYS		(-2451545)	/* Julian day 0 relative to 2000-01-01 */

typedef enum ApNodeKind
{
	N_VAR,
	N_CONST,
	N_OP,
	N_AND,
	N_OR,
	N_NOT,
	N_NULLTEST,
	N_BOOLTEST
} ApNodeKind;

/* One node of a compiled expression. */
typedef struct ApNode
{
	ApNodeKind	kind;
	uint8_t		type_kind;		/* N_VAR/N_CONST: ApTypeKind; others yield bool */
	uint8_t		op;				/* N_OP: ApOp */
	uint8_t		cmp;			/* N_OP: ApCmp */
	uint8_t		test;			/* N_BOOLTEST: ApBoolTest */
	bool		is_not_null;	/* N_NULLTEST */
	int			attno;			/* N_VAR */
	ApValue		konst;			/* N_CONST: points into its own copy */
	int			nargs;
	struct ApNode **args;
} ApNode;

/* Mutable evaluation state, reached through the const program. */
typedef struct ApScratch
{
	unsigned char *buf[2];
	uint32_t	cap;
} ApScratch;

/* The opaque compiled expression: root plus per-program scratch. */
struct ApExpr
{
	ApNode	   *root;
	ApScratch  *scratch;
};

/* Compilation context: error reporting and limits. */
typedef struct CompileCtx
{
	const ApTupleDesc *desc;
	ApProgram  *prog;
	int			nnodes;
	int			max_attno;
	bool		need_scratch;
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
	switch (k)
	{
		case AP_TYPE_BOOL:
			return 1;
		case AP_TYPE_INT2:
			return 2;
		case AP_TYPE_INT4:
		case AP_TYPE_FLOAT4:
		case AP_TYPE_DATE:
			return 4;
		case AP_TYPE_INT8:
		case AP_TYPE_FLOAT8:
		case AP_TYPE_TIMESTAMP:
		case AP_TYPE_TIMESTAMPTZ:
			return 8;
		default:
			return 0;
	}
}

/* The type kind an expression yields: leaves their own, others bool. */
static int
node_result_kind(const ApNode *n)
{
	if (n->kind == N_VAR || n->kind == N_CONST)
		return n->type_kind;
	return AP_TYPE_BOOL;
}

/* Is the (a, b) pair of kinds acceptable for comparison family cmp? */
static bool
cmp_accepts(int cmp, int a, int b)
{
#define IS_INT(k)	((k) == AP_TYPE_INT2 || (k) == AP_TYPE_INT4 || (k) == AP_TYPE_INT8)
#define IS_FLT(k)	((k) == AP_TYPE_FLOAT4 || (k) == AP_TYPE_FLOAT8)
#define IS_TXT(k)	((k) == AP_TYPE_TEXT || (k) == AP_TYPE_VARCHAR)
	switch (cmp)
	{
		case AP_CMP_INT:
			return IS_INT(a) && IS_INT(b);
		case AP_CMP_FLOAT:
			return IS_FLT(a) && IS_FLT(b);
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
			return IS_TXT(a) && IS_TXT(b);
		case AP_CMP_BPCHAR:
			return a == AP_TYPE_BPCHAR && b == AP_TYPE_BPCHAR;
		default:
			return false;
	}
#undef IS_INT
#undef IS_FLT
#undef IS_TXT
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
		cx->need_scratch = true;
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
	return 0;
}

static int	compile_node(CompileCtx *cx, const ActivePg__Expr *e, int depth,
						 ApNode **out);

/* Compile n->nargs children from msgs into n->args. */
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
				if (col->type_kind == AP_TYPE_OTHER || col->type_kind >= AP_TYPE_KIND_COUNT)
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
				if (kind_is_varlena(col->type_kind))
					cx->need_scratch = true;
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

		default:
			return compile_error(cx, AP_ERR_BAD_REQUEST,
								 "expression node %d not set or unknown", (int) e->node_case);
	}
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
	if (msg->n_project > AP_MAX_COLUMNS)
	{
		rc = compile_error(&cx, AP_ERR_BAD_REQUEST, "too many projected attributes");
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
		ApNode	   *root = NULL;

		prog->filter = calloc(1, sizeof(ApExpr));
		if (prog->filter == NULL)
		{
			rc = compile_error(&cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
			goto fail;
		}
		rc = compile_node(&cx, msg->filter, 1, &root);
		prog->filter->root = root;
		if (rc == 0)
			rc = require_bool(&cx, root, "filter");
		if (rc != 0)
			goto fail;

		if (cx.need_scratch)
		{
			ApScratch  *s = calloc(1, sizeof(ApScratch));

			prog->filter->scratch = s;
			if (s == NULL ||
				(s->buf[0] = malloc(AP_VM_SCRATCH_BYTES)) == NULL ||
				(s->buf[1] = malloc(AP_VM_SCRATCH_BYTES)) == NULL)
			{
				rc = compile_error(&cx, AP_ERR_OUT_OF_MEMORY, "out of memory");
				goto fail;
			}
			s->cap = AP_VM_SCRATCH_BYTES;
		}
	}
	prog->max_attno = cx.max_attno;
	return 0;

fail:
	ap_program_free(prog);
	return rc;
}

/* Release everything compile allocated; the error text survives. */
void
ap_program_free(ApProgram *prog)
{
	if (prog->filter != NULL)
	{
		node_free(prog->filter->root);
		if (prog->filter->scratch != NULL)
		{
			free(prog->filter->scratch->buf[0]);
			free(prog->filter->scratch->buf[1]);
			free(prog->filter->scratch);
		}
		free(prog->filter);
	}
	free(prog->project);
	prog->filter = NULL;
	prog->project = NULL;
	prog->nproject = 0;
	prog->max_attno = 0;
}

/* ---------------- evaluation ---------------- */

/* An operand of a comparison once fetched. */
typedef struct Operand
{
	int			kind;			/* ApTypeKind */
	ApTri		tri;			/* AP_NULL, AP_TRI_FALLBACK, or AP_TRUE = has value */
	const unsigned char *ptr;	/* the stored datum (leaves) */
	uint32_t	len;
	bool		boolval;		/* bool-yielding subexpressions */
} Operand;

static ApTri eval_node(const ApNode *n, const ApValue *values, ApScratch *s);

/* Value of a leaf: the tuple's attribute or the constant. */
static inline const ApValue *
leaf_value(const ApNode *n, const ApValue *values)
{
	return n->kind == N_VAR ? &values[n->attno - 1] : &n->konst;
}

/* Fetch one comparison operand; subexpressions are evaluated to a bool. */
static void
fetch_operand(const ApNode *n, const ApValue *values, ApScratch *s, Operand *o)
{
	o->kind = node_result_kind(n);
	if (n->kind == N_VAR || n->kind == N_CONST)
	{
		const ApValue *v = leaf_value(n, values);

		if (v->isnull)
		{
			o->tri = AP_NULL;
			return;
		}
		o->tri = AP_TRUE;
		o->ptr = v->ptr;
		o->len = v->len;
		if (o->kind == AP_TYPE_BOOL)
			o->boolval = v->len >= 1 && v->ptr[0] != 0;
		return;
	}
	else
	{
		ApTri		t = eval_node(n, values, s);

		if (t == AP_TRUE || t == AP_FALSE)
		{
			o->boolval = (t == AP_TRUE);
			o->tri = AP_TRUE;
		}
		else
			o->tri = t;
	}
}

/* Integer operand widened to int64 (int2/int4/int8, stored little-endian). */
static int64_t
operand_int(const Operand *o)
{
	switch (o->kind)
	{
		case AP_TYPE_INT2:
			{
				int16_t		v;

				memcpy(&v, o->ptr, sizeof(v));
				return v;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		v;

				memcpy(&v, o->ptr, sizeof(v));
				return v;
			}
		default:
			{
				int64_t		v;

				memcpy(&v, o->ptr, sizeof(v));
				return v;
			}
	}
}

/* Float operand widened to double, as float48 operators do. */
static double
operand_float(const Operand *o)
{
	if (o->kind == AP_TYPE_FLOAT4)
	{
		float		f;

		memcpy(&f, o->ptr, sizeof(f));
		return f;
	}
	else
	{
		double		d;

		memcpy(&d, o->ptr, sizeof(d));
		return d;
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

/*
 * date2timestamp() for comparison: infinities map to timestamp infinities;
 * a finite date beyond timestamp range is not reproduced here.
 */
static bool
date_to_ts(int32_t days, int64_t *ts)
{
	if (days == INT32_MIN)
		*ts = INT64_MIN;
	else if (days == INT32_MAX)
		*ts = INT64_MAX;
	else if (days >= DATE_TS_MAX_DAYS || days < DATE_TS_MIN_DAYS)
		return false;
	else
		*ts = (int64_t) days * USECS_PER_DAY;
	return true;
}

/* Byte-wise compare, shorter first on a common prefix (C collation). */
static int
cmp_bytes(const unsigned char *a, uint32_t alen, const unsigned char *b, uint32_t blen)
{
	int			c = memcmp(a, b, alen < blen ? alen : blen);

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

/* Comparison node: strict (NULL in, NULL out), then the family's ordering. */
static ApTri
eval_op(const ApNode *n, const ApValue *values, ApScratch *s)
{
	Operand		a,
				b;
	int			c;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	fetch_operand(n->args[0], values, s, &a);
	fetch_operand(n->args[1], values, s, &b);
	if (a.tri == AP_TRI_FALLBACK || b.tri == AP_TRI_FALLBACK)
		return AP_TRI_FALLBACK;
	if (a.tri == AP_NULL || b.tri == AP_NULL)
		return AP_NULL;

	switch (n->cmp)
	{
		case AP_CMP_INT:
		case AP_CMP_DATE:
		case AP_CMP_TS:
			c = cmp_i64(operand_int(&a), operand_int(&b));
			break;

		case AP_CMP_FLOAT:
			c = cmp_double(operand_float(&a), operand_float(&b));
			break;

		case AP_CMP_DATE_TS:
			{
				int64_t		ta,
							tb;

				ta = operand_int(&a);
				tb = operand_int(&b);
				if (a.kind == AP_TYPE_DATE && !date_to_ts((int32_t) ta, &ta))
					return AP_TRI_FALLBACK;
				if (b.kind == AP_TYPE_DATE && !date_to_ts((int32_t) tb, &tb))
					return AP_TRI_FALLBACK;
				c = cmp_i64(ta, tb);
				break;
			}

		case AP_CMP_BOOL:
			c = (int) a.boolval - (int) b.boolval;
			break;

		case AP_CMP_NUMERIC:
		case AP_CMP_TEXT:
		case AP_CMP_BPCHAR:
			{
				const unsigned char *pa,
						   *pb;
				uint32_t	la,
							lb;

				if (s == NULL ||
					ap_varlena_payload(a.ptr, s->buf[0], s->cap, &pa, &la) != AP_OK ||
					ap_varlena_payload(b.ptr, s->buf[1], s->cap, &pb, &lb) != AP_OK)
					return AP_TRI_FALLBACK;
				if (n->cmp == AP_CMP_NUMERIC)
				{
					ApNumeric	na,
								nb;

					if (ap_numeric_decode(pa, la, &na) != AP_OK ||
						ap_numeric_decode(pb, lb, &nb) != AP_OK)
						return AP_TRI_FALLBACK;
					c = ap_numeric_cmp(&na, &nb);
				}
				else if (n->cmp == AP_CMP_BPCHAR)
					c = cmp_bytes(pa, bpchar_len(pa, la), pb, bpchar_len(pb, lb));
				else
					c = cmp_bytes(pa, la, pb, lb);
				break;
			}

		default:
			return AP_TRI_FALLBACK;
	}
	return apply_op(n->op, c);
}

/* Evaluate a node in three-valued logic (plus FALLBACK). */
static ApTri
eval_node(const ApNode *n, const ApValue *values, ApScratch *s)
{
	switch (n->kind)
	{
		case N_VAR:
		case N_CONST:
			{
				/* only boolean leaves reach here (checked at compile) */
				const ApValue *v = leaf_value(n, values);

				if (v->isnull)
					return AP_NULL;
				return (v->len >= 1 && v->ptr[0] != 0) ? AP_TRUE : AP_FALSE;
			}

		case N_OP:
			return eval_op(n, values, s);

		case N_AND:
			{
				bool		sawnull = false;
				bool		sawfb = false;

				for (int i = 0; i < n->nargs; i++)
				{
					ApTri		t = eval_node(n->args[i], values, s);

					if (t == AP_FALSE)
						return AP_FALSE;
					if (t == AP_NULL)
						sawnull = true;
					else if (t == AP_TRI_FALLBACK)
						sawfb = true;
				}
				return sawfb ? AP_TRI_FALLBACK : (sawnull ? AP_NULL : AP_TRUE);
			}

		case N_OR:
			{
				bool		sawnull = false;
				bool		sawfb = false;

				for (int i = 0; i < n->nargs; i++)
				{
					ApTri		t = eval_node(n->args[i], values, s);

					if (t == AP_TRUE)
						return AP_TRUE;
					if (t == AP_NULL)
						sawnull = true;
					else if (t == AP_TRI_FALLBACK)
						sawfb = true;
				}
				return sawfb ? AP_TRI_FALLBACK : (sawnull ? AP_NULL : AP_FALSE);
			}

		case N_NOT:
			{
				ApTri		t = eval_node(n->args[0], values, s);

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

				if (arg->kind == N_VAR || arg->kind == N_CONST)
					isnull = leaf_value(arg, values)->isnull;
				else
				{
					ApTri		t = eval_node(arg, values, s);

					if (t == AP_TRI_FALLBACK)
						return AP_TRI_FALLBACK;
					isnull = (t == AP_NULL);
				}
				return (isnull != n->is_not_null) ? AP_TRUE : AP_FALSE;
			}

		case N_BOOLTEST:
			{
				ApTri		t = eval_node(n->args[0], values, s);
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

/* Evaluate the filter for one tuple; no filter passes everything. */
ApTri
ap_program_filter(const ApProgram *prog, const ApValue *values)
{
	if (prog->filter == NULL || prog->filter->root == NULL)
		return AP_TRUE;
	return eval_node(prog->filter->root, values, prog->filter->scratch);
}
