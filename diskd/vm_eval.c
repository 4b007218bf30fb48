/*
 * vm_eval.c
 *	  The expression VM, evaluation: run a compiled program on one tuple.
 *
 * Rules of this file:
 *  - Programs reaching here compiled (vm_compile.c), so attribute numbers, kinds and
 *    signatures are not checked again; only the datum contents are.
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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numeric_i64.h"
#include "vm_internal.h"

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

/* A float value widened to double, as the float48 operators do. */
static inline double
val_double(const ApVal *v)
{
	return v->kind == AP_TYPE_FLOAT4 ? (double) v->u.f4 : v->u.f8;
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
static ApTri eval_op(const ApNode *n, ApEvalCtx *cx);

static inline ApTri
eval_fast(const ApNode *n, ApEvalCtx *cx)
{
	const ApNode *var = n->fvar;
	const ApValue *v;
	int			c;

	if (n->fast == FC_STR)
	{
		const unsigned char *p;
		uint32_t	len;

		v = &cx->values[var->attno - 1];
		if (v->isnull)
			return AP_NULL;
		/* a short inline value; anything else (compressed, 4-byte header) the generic way */
		if ((v->ptr[0] & 0x01) == 0 || v->ptr[0] == 0x01)
			return eval_op(n, cx);
		p = v->ptr + 1;
		len = ((uint32_t) v->ptr[0] >> 1) - 1;
		if (n->fbpchar)
			len = bpchar_len(p, len);
		/* = and <> need no bytes when the lengths differ; most others differ in the first */
		if ((n->fmask == 2 || n->fmask == 5) && len != (uint32_t) n->fconst)
			c = 1;
		else if (len > 0 && n->fconst > 0 && p[0] != n->fkonst->kval.u.s.p[0])
			c = p[0] < n->fkonst->kval.u.s.p[0] ? -1 : 1;
		else
			c = cmp_bytes(p, len, n->fkonst->kval.u.s.p, (uint32_t) n->fconst);
	}
	else if (n->fast == FC_INT_COLS)
	{
		const ApValue *w = &cx->values[n->fvar2->attno - 1];

		v = &cx->values[var->attno - 1];
		if (v->isnull || w->isnull)
			return AP_NULL;
		c = cmp_i64(ap_int_datum(var->type_kind, v->ptr),
					ap_int_datum(var->type_kind, w->ptr));
	}
	else if (n->fast == FC_NUMERIC)
	{
		ApVal		a;
		ApEv		r;
		int64_t		coef;
		int			ds;

		v = &cx->values[var->attno - 1];
		if (v->isnull)
			return AP_NULL;
		/*
		 * A short stored numeric of up to 16 digits against a constant whose
		 * coefficient fits 64 bits (fnum64): both below 10^18, so scaling
		 * either by up to 10^18 stays inside 128 bits.
		 */
		if (n->fnum64 && (v->ptr[0] & 0x01) != 0 && v->ptr[0] != 0x01 &&
			ap_numeric_payload_i64(v->ptr + 1, ((uint32_t) v->ptr[0] >> 1) - 1, &coef, &ds) &&
			ds - n->fkonst->kval.u.fx.dscale <= 18 && n->fkonst->kval.u.fx.dscale - ds <= 18)
		{
			ap_i128		x = coef;
			ap_i128		k = n->fconst;
			int			d = ds - n->fkonst->kval.u.fx.dscale;

			if (d > 0)
				k *= ap_pow10_i64[d];
			else if (d < 0)
				x *= ap_pow10_i64[-d];
			c = x < k ? -1 : x > k;
			goto decided;
		}
		r = eval_value(var, cx, &a);

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
			c = ap_vm_cmp_double(x, val_double(&n->fkonst->kval));
		}
		else
		{
			int64_t		x = ap_int_datum(var->type_kind, v->ptr);

			if (n->fast == FC_DATE_TS && !ap_vm_date_to_ts((int32_t) x, &x))
				return AP_TRI_FALLBACK;
			c = cmp_i64(x, n->fconst);
		}
	}
decided:
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
			c = ap_vm_cmp_double(val_double(&a), val_double(&b));
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
		case AP_CMP_TEXT:
			c = ap_vm_cmp_set_member(n->cmp, &a, &b);
			break;

		default:
			return AP_TRI_FALLBACK;
	}
	return apply_op(n->op, c);
}

/*
 * x = c1 OR x = c2 ... (x <> c1 AND x <> c2 ... for AND) over a sorted set of
 * the non-null constants (ap_vm_value_sets): x is evaluated once, as the
 * first comparison would, and looked up by binary search.  NULL x is NULL,
 * as every comparison would be; no comparison of these families falls back.
 */
static ApTri
eval_set(const ApNode *n, ApEvalCtx *cx)
{
	ApVal		x;
	ApEv		ev = eval_value(n->args[0]->args[0], cx, &x);
	int			lo = 0,
				hi = n->nset - 1;
	bool		found = false;

	if (ev == AP_EV_FALLBACK)
		return AP_TRI_FALLBACK;
	if (ev == AP_EV_NULL)
		return AP_NULL;
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = ap_vm_cmp_set_member(n->set_cmp, &x, &n->set[mid]);

		if (c == 0)
		{
			found = true;
			break;
		}
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	if (n->kind == N_OR)
		return found ? AP_TRUE : AP_FALSE;
	return found ? AP_FALSE : AP_TRUE;
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
			if (n->set != NULL)
				return eval_set(n, cx);
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

/*
 * The AND of n range checks over deformed values (values[i] = attnum i+1):
 * AP_FALSE if one fails, else AP_NULL if a column is NULL, else AP_TRUE;
 * AP_TRI_FALLBACK when a value lies outside its check's domain, where the
 * check does not decide (the caller evaluates the filter itself).
 */
static ApTri
range_checks_decide(const ApRangeCheck *rc, int n, const ApValue *values)
{
	ApTri		r = AP_TRUE;

	for (int i = 0; i < n; i++)
	{
		const ApValue *v = &values[rc[i].attno - 1];
		int64_t		x;

		if (v->isnull)
		{
			r = AP_NULL;
			continue;
		}
		if (rc[i].type_kind == AP_TYPE_NUMERIC)
		{
			int			verdict;

			/* a short header; any other the tree reads */
			if ((v->ptr[0] & 0x01) == 0 || v->ptr[0] == 0x01)
				return AP_TRI_FALLBACK;
			verdict = ap_numeric_range_verdict(v->ptr + 1, ((uint32_t) v->ptr[0] >> 1) - 1,
											   rc[i].lo, rc[i].hi, rc[i].nscale,
											   rc[i].lo_open, rc[i].hi_open);
			if (verdict < 0)
				return AP_TRI_FALLBACK;
			if (verdict > 0)
				return AP_FALSE;
			continue;
		}
		x = ap_int_datum(rc[i].type_kind, v->ptr);
		if (rc[i].attno2 > 0)
		{
			const ApValue *w = &values[rc[i].attno2 - 1];
			int64_t		y;
			int			c;

			if (w->isnull)
			{
				r = AP_NULL;
				continue;
			}
			y = ap_int_datum(rc[i].type_kind, w->ptr);
			c = (x > y) - (x < y);
			if (((rc[i].mask >> (c + 1)) & 1) == 0)
				return AP_FALSE;
			continue;
		}
		if (x < rc[i].dom_lo || x > rc[i].dom_hi)
			return AP_TRI_FALLBACK;
		if (x < rc[i].lo || x > rc[i].hi)
			return AP_FALSE;
	}
	return r;
}

/* Evaluate the filter for one tuple; no filter passes everything. */
ApTri
ap_program_filter(const ApProgram *prog, const ApValue *values)
{
	ApEvalCtx	cx;
	const ApNode *root;

	if (prog->filter == NULL || (root = prog->filter->root) == NULL)
		return AP_TRUE;
	/*
	 * A filter that is exactly an AND of range checks (Q1's l_shipdate <=
	 * ...): the integer compares decide it where every value is inside its
	 * check's domain; a NULL makes it NULL (a comparison with NULL is, and
	 * an AND is not TRUE with one).  Outside a domain the tree decides.
	 */
	if (prog->ranges_exact)
	{
		ApTri		t = range_checks_decide(prog->ranges, prog->nranges, values);

		if (t != AP_TRI_FALLBACK)
			return t;
	}
	ctx_init(prog, values, &cx);
	return eval_bool(root, &cx);
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

