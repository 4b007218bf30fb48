/*
 * vm_opt.c
 *	  The expression VM's compile-time passes over checked node trees:
 *	  comparisons specialised for eval_fast, and common subexpressions given
 *	  a shared memo slot.  Both only choose how a value is computed, never
 *	  what it is (vm_compile.c checks the trees, vm_eval.c evaluates them).
 */
#include <stdlib.h>
#include <string.h>

#include "numeric_i64.h"
#include "vm_internal.h"

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
void
ap_vm_specialise_op(ApNode *n)
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
	/* two integer-like columns (l_commitdate < l_receiptdate) */
	if (var->kind == N_VAR && k->kind == N_VAR &&
		(n->cmp == AP_CMP_INT || n->cmp == AP_CMP_DATE || n->cmp == AP_CMP_TS ||
		 n->cmp == AP_CMP_BOOL) &&
		var->type_kind == k->type_kind)
	{
		n->fast = FC_INT_COLS;
		n->fmask = mask;
		n->fvar = var;
		n->fvar2 = k;
		return;
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
			/* a coefficient within 10^18 also compares in 64-bit form (eval_fast) */
			if (k->kval.u.fx.coef < (ap_i128) INT64_C(1000000000000000000) &&
				k->kval.u.fx.coef > -(ap_i128) INT64_C(1000000000000000000))
			{
				n->fnum64 = true;
				n->fconst = (int64_t) k->kval.u.fx.coef;
			}
			break;
		case AP_CMP_BPCHAR:
		case AP_CMP_TEXT:
			{
				uint32_t	len = k->kval.u.s.len;

				if (!AP_IS_STR_KIND(var->type_kind))
					return;
				n->fbpchar = n->cmp == AP_CMP_BPCHAR;
				/* bpchar: trailing spaces are padding on both sides */
				while (n->fbpchar && len > 0 && k->kval.u.s.p[len - 1] == ' ')
					len--;
				n->fast = FC_STR;
				n->fconst = len;
				break;
			}
		default:
			return;
	}
	n->fmask = mask;
	n->fvar = var;
	n->fkonst = k;
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
int
ap_vm_share_subexpressions(const ApProgram *prog, ApNode **funcs, int nfuncs, int nmemo)
{
	if (nfuncs < 2)
		return nmemo;
	if (prog->filter != NULL)
		node_hash(prog->filter->root);
	for (int i = 0; i < prog->nexprs; i++)
		node_hash(prog->exprs[i]->root);
	qsort(funcs, (size_t) nfuncs, sizeof(ApNode *), cmp_node_hash);
	for (int i = 0; i < nfuncs; i++)
	{
		ApNode	   *a = funcs[i];

		if (a->memo >= 0)
			continue;
		/* a run of equal hashes; bounded so a hostile program compiles quickly */
		for (int j = i + 1, tries = 0;
			 j < nfuncs && funcs[j]->hash == a->hash && tries < 64; j++, tries++)
		{
			ApNode	   *b = funcs[j];

			if (b->memo >= 0 || !node_equal(a, b))
				continue;
			if (a->memo < 0)
				a->memo = nmemo++;
			b->memo = a->memo;
		}
	}
	return nmemo;
}

/* Fewer comparisons than this stay a chain (PostgreSQL hashes from 9). */
#define AP_SET_MIN_ITEMS		8

/* Merge sort of set values (deterministic, any size, no qsort context). */
static void
sort_set(ApVal *v, ApVal *tmp, int n, int cmp)
{
	int			mid = n / 2,
				i = 0,
				j,
				k = 0;

	if (n < 2)
		return;
	sort_set(v, tmp, mid, cmp);
	sort_set(v + mid, tmp, n - mid, cmp);
	j = mid;
	while (i < mid && j < n)
		tmp[k++] = ap_vm_cmp_set_member(cmp, &v[j], &v[i]) < 0 ? v[j++] : v[i++];
	while (i < mid)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, sizeof(ApVal) * (size_t) n);
}

/*
 * An OR of x = c_i (x IN (...)) or an AND of x <> c_i (x NOT IN (...)), as
 * the host encodes a ScalarArrayOpExpr: the same x everywhere, non-null
 * constants, a comparison family that never falls back.  The chain is
 * evaluated as a set lookup; its arguments stay (freed with the node).
 * False (no set) if it is anything else or memory runs out.
 */
static bool
make_set(ApNode *n)
{
	const ApNode *x;
	int			op = n->kind == N_OR ? AP_OP_EQ : AP_OP_NE;
	int			cmp;
	ApVal	   *tmp;

	if (n->nargs < AP_SET_MIN_ITEMS || n->args[0]->kind != N_OP)
		return false;
	x = n->args[0]->args[0];
	cmp = n->args[0]->cmp;
	if (!ap_vm_set_family(cmp) || x->kind == N_CONST)
		return false;
	for (int i = 0; i < n->nargs; i++)
	{
		const ApNode *a = n->args[i];

		if (a->kind != N_OP || a->op != op || a->cmp != cmp ||
			a->args[1]->kind != N_CONST || a->args[1]->konst.isnull ||
			a->args[1]->kev != AP_EV_VALUE ||
			!node_equal(a->args[0], x))
			return false;
	}
	n->set = malloc(sizeof(ApVal) * (size_t) n->nargs);
	tmp = malloc(sizeof(ApVal) * (size_t) n->nargs);
	if (n->set == NULL || tmp == NULL)
	{
		free(n->set);
		free(tmp);
		n->set = NULL;
		return false;
	}
	for (int i = 0; i < n->nargs; i++)
		n->set[i] = n->args[i]->args[1]->kval;
	sort_set(n->set, tmp, n->nargs, cmp);
	free(tmp);
	n->nset = n->nargs;
	n->set_cmp = (uint8_t) cmp;
	return true;
}

/* Walk a tree for IN / NOT IN chains (make_set). */
static void
find_sets(ApNode *n)
{
	if ((n->kind == N_OR || n->kind == N_AND) && make_set(n))
		return;
	for (int i = 0; i < n->nargs; i++)
		find_sets(n->args[i]);
}

/*
 * Long IN lists: x IN (c1, ..., cn) arrives as n comparisons; evaluated one
 * by one it costs n comparisons per tuple where PostgreSQL hashes the list
 * (substring(zip, 1, 5) IN (400 codes) ran 50x slower at the disks than on
 * the host).  Each such chain becomes a sorted set searched in log n.
 */
void
ap_vm_value_sets(ApProgram *prog)
{
	if (prog->filter != NULL)
	{
		node_hash(prog->filter->root);
		find_sets(prog->filter->root);
	}
	for (int i = 0; i < prog->nexprs; i++)
	{
		node_hash(prog->exprs[i]->root);
		find_sets(prog->exprs[i]->root);
	}
}

/* floor(a / b) for b > 0. */
static ap_i128
floor_div128(ap_i128 a, ap_i128 b)
{
	ap_i128		q = a / b;

	return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* A column kind the checks read as a signed 2-, 4- or 8-byte integer. */
static bool
range_kind(int kind)
{
	switch (kind)
	{
		case AP_TYPE_INT2:
		case AP_TYPE_INT4:
		case AP_TYPE_INT8:
		case AP_TYPE_DATE:
		case AP_TYPE_TIMESTAMP:
		case AP_TYPE_TIMESTAMPTZ:
			return true;
		default:
			return false;
	}
}

/*
 * A numeric column against a numeric constant whose coefficient fits 64
 * bits (eval_fast's FC_NUMERIC with fnum64) as a check: the constant bounds
 * the column on one side, or on both for =, at the constant's scale;
 * strict comparisons leave their bound open.  ap_numeric_range_verdict
 * compares a value with it exactly as eval_fast compares it with the
 * constant, and leaves to eval_fast what eval_fast takes the general way.
 */
static bool
numeric_range(const ApNode *n, ApRangeCheck *rc)
{
	int64_t		k = n->fconst;

	if (!n->fnum64 || n->fvar->type_kind != AP_TYPE_NUMERIC ||
		n->fkonst->kval.u.fx.dscale < 0 || n->fkonst->kval.u.fx.dscale > INT16_MAX)
		return false;
	memset(rc, 0, sizeof(*rc));
	rc->attno = n->fvar->attno;
	rc->type_kind = AP_TYPE_NUMERIC;
	rc->nscale = (int16_t) n->fkonst->kval.u.fx.dscale;
	rc->dom_lo = INT64_MIN;
	rc->dom_hi = INT64_MAX;
	rc->lo = INT64_MIN;
	rc->hi = INT64_MAX;
	switch (n->fmask)
	{
		case 1:					/* < */
			rc->hi = k;
			rc->hi_open = true;
			break;
		case 3:					/* <= */
			rc->hi = k;
			break;
		case 4:					/* > */
			rc->lo = k;
			rc->lo_open = true;
			break;
		case 6:					/* >= */
			rc->lo = k;
			break;
		case 2:					/* = */
			rc->lo = rc->hi = k;
			break;
		default:				/* <> is not a range */
			return false;
	}
	rc->olo = rc->lo;
	rc->ohi = rc->hi;
	return true;
}

/*
 * The values of the comparison's column for which it is TRUE, as a range
 * [lo, hi] (lo > hi: none) valid on the domain [dom_lo, dom_hi] (outside it:
 * [olo, ohi], everything when it would fall back there); false if
 * the comparison is not one eval_fast decides by an integer compare.  This
 * mirrors eval_fast: FC_INT compares the column's datum as an integer with
 * the converted constant, FC_DATE_TS converts a date d inside the domain to
 * the timestamp d * USECS_PER_DAY first, so d < K is d <= floor((K - 1) / U).
 */
static bool
comparison_range(const ApNode *n, ApRangeCheck *rc)
{
	ap_i128		lo = INT64_MIN;
	ap_i128		hi = INT64_MAX;
	ap_i128		k;
	ap_i128		u = 1;

	if (n->kind == N_OP && n->fast == FC_NUMERIC)
		return numeric_range(n, rc);
	if (n->kind != N_OP || (n->fast != FC_INT && n->fast != FC_DATE_TS) ||
		!range_kind(n->fvar->type_kind))
		return false;
	memset(rc, 0, sizeof(*rc));
	rc->attno = n->fvar->attno;
	rc->type_kind = n->fvar->type_kind;
	rc->dom_lo = INT64_MIN;
	rc->dom_hi = INT64_MAX;
	k = n->fconst;
	if (n->fast == FC_DATE_TS)
	{
		if (n->fvar->type_kind != AP_TYPE_DATE)
			return false;
		u = AP_USECS_PER_DAY;
		rc->dom_lo = AP_DATE_MIN_DAYS;
		rc->dom_hi = AP_TS_END_DAYS - 1;
	}
	switch (n->fmask)
	{
		case 1:					/* < */
			hi = floor_div128(k - 1, u);
			break;
		case 3:					/* <= */
			hi = floor_div128(k, u);
			break;
		case 4:					/* > */
			lo = floor_div128(k, u) + 1;
			break;
		case 6:					/* >= */
			lo = -floor_div128(-k, u);
			break;
		case 2:					/* = */
			if (k % u != 0)
			{
				lo = 1;
				hi = 0;
			}
			else
				lo = hi = k / u;
			break;
		default:				/* <> is not a range */
			return false;
	}
	/* k +- 1 beyond int64 leaves an empty range, or a range open on that side */
	if (lo > INT64_MAX || hi < INT64_MIN)
	{
		lo = 1;
		hi = 0;
	}
	rc->lo = lo < INT64_MIN ? INT64_MIN : (int64_t) lo;
	rc->hi = hi > INT64_MAX ? INT64_MAX : (int64_t) hi;
	if (n->fast == FC_DATE_TS)
	{
		/* outside the domain the comparison falls back: it decides nothing */
		rc->olo = INT64_MIN;
		rc->ohi = INT64_MAX;
	}
	else
	{
		rc->olo = rc->lo;
		rc->ohi = rc->hi;
	}
	return true;
}

/* A comparison of two integer-like columns of one kind (FC_INT_COLS) as a check. */
static bool
comparison_pair(const ApNode *n, ApRangeCheck *rc)
{
	if (n->kind != N_OP || n->fast != FC_INT_COLS || !range_kind(n->fvar->type_kind))
		return false;
	memset(rc, 0, sizeof(*rc));
	rc->attno = n->fvar->attno;
	rc->attno2 = n->fvar2->attno;
	rc->mask = n->fmask;
	rc->type_kind = n->fvar->type_kind;
	rc->dom_lo = INT64_MIN;
	rc->dom_hi = INT64_MAX;
	return true;
}

static inline bool
full_domain(const ApRangeCheck *r)
{
	return r->dom_lo == INT64_MIN && r->dom_hi == INT64_MAX;
}

/* Narrow [*lo, *hi] to its intersection with [lo2, hi2]. */
static inline void
intersect(int64_t *lo, int64_t *hi, int64_t lo2, int64_t hi2)
{
	if (lo2 > *lo)
		*lo = lo2;
	if (hi2 < *hi)
		*hi = hi2;
}

/*
 * Fold the check r into o, a check on the same column: both must hold.
 * false if their domains differ in a way one check cannot express.
 */
static bool
merge_range(ApRangeCheck *o, const ApRangeCheck *r)
{
	if (full_domain(r) || (o->dom_lo == r->dom_lo && o->dom_hi == r->dom_hi))
	{
		intersect(&o->lo, &o->hi, r->lo, r->hi);
		intersect(&o->olo, &o->ohi, r->olo, r->ohi);
		return true;
	}
	if (full_domain(o))
	{
		/* o holds everywhere; inside r's domain r holds too */
		o->olo = o->lo;
		o->ohi = o->hi;
		o->dom_lo = r->dom_lo;
		o->dom_hi = r->dom_hi;
		intersect(&o->lo, &o->hi, r->lo, r->hi);
		intersect(&o->olo, &o->ohi, r->olo, r->ohi);
		return true;
	}
	return false;
}

/*
 * A numeric bound at a larger scale: its coefficient times 10^(to - from);
 * false if that leaves (-10^18, 10^18), where ap_numeric_range_verdict's
 * arithmetic is exact.  No bound stays none.
 */
static bool
rescale_bound(int64_t *b, int from, int to)
{
	ap_i128		v;

	if (*b == INT64_MIN || *b == INT64_MAX || to == from)
		return true;
	if (to - from > 18)
		return false;
	v = (ap_i128) *b * ap_pow10_i64[to - from];
	if (v >= ap_pow10_i64[18] || v <= -ap_pow10_i64[18])
		return false;
	*b = (int64_t) v;
	return true;
}

/*
 * Fold the numeric check r into o, one on the same column: both at the
 * larger scale, the greater lower and the smaller upper bound, a bound both
 * share open if either has it open.  false if a bound does not rescale.
 */
static bool
merge_numeric(ApRangeCheck *o, const ApRangeCheck *r)
{
	ApRangeCheck a = *o;
	ApRangeCheck b = *r;
	int			scale = a.nscale > b.nscale ? a.nscale : b.nscale;

	if (!rescale_bound(&a.lo, a.nscale, scale) || !rescale_bound(&a.hi, a.nscale, scale) ||
		!rescale_bound(&b.lo, b.nscale, scale) || !rescale_bound(&b.hi, b.nscale, scale))
		return false;
	a.nscale = (int16_t) scale;
	if (b.lo > a.lo)
	{
		a.lo = b.lo;
		a.lo_open = b.lo_open;
	}
	else if (b.lo == a.lo)
		a.lo_open |= b.lo_open;
	if (b.hi < a.hi)
	{
		a.hi = b.hi;
		a.hi_open = b.hi_open;
	}
	else if (b.hi == a.hi)
		a.hi_open |= b.hi_open;
	a.olo = a.lo;
	a.ohi = a.hi;
	*o = a;
	return true;
}

/*
 * Necessary conditions of the filter for a prefilter (prefilter.h): the
 * leading arguments of its top AND (or the filter itself) that are range
 * comparisons of an integer-like or a numeric column with a constant (two
 * on the same column merged into one range) or comparisons of two
 * integer-like columns.  Only leading
 * ones: the disk evaluates an AND in order and a tuple that an argument
 * rejects is never shown to the arguments after it, so a later argument that
 * could fall back (and raise an error on the host) is not skipped by a check
 * PostgreSQL would not have made first either.  A NULL argument rejects as
 * FALSE does (a WHERE clause passes only TRUE; PostgreSQL's qual evaluation
 * also stops at the first NULL).
 */
void
ap_vm_range_checks(ApProgram *prog)
{
	const ApNode *root;
	ApNode	   *const *args;
	int			nargs;

	prog->nranges = 0;
	prog->ranges_exact = false;
	if (prog->filter == NULL || (root = prog->filter->root) == NULL)
		return;
	if (root->kind == N_AND)
	{
		args = root->args;
		nargs = root->nargs;
	}
	else
	{
		args = (ApNode *const *) &prog->filter->root;
		nargs = 1;
	}
	for (int i = 0; i < nargs; i++)
	{
		ApRangeCheck rc;
		int			j;

		if (comparison_range(args[i], &rc))
			rc.attno2 = 0;
		else if (!comparison_pair(args[i], &rc))
			return;
		for (j = 0; j < prog->nranges; j++)
		{
			ApRangeCheck *o = &prog->ranges[j];

			if (rc.attno2 == 0 && o->attno == rc.attno && o->attno2 == 0 &&
				o->type_kind == rc.type_kind &&
				(rc.type_kind == AP_TYPE_NUMERIC ? merge_numeric(o, &rc) : merge_range(o, &rc)))
				break;
		}
		if (j == prog->nranges)
		{
			if (prog->nranges == AP_MAX_RANGE_CHECKS)
				return;
			prog->ranges[prog->nranges++] = rc;
		}
	}
	/* every argument became a check: the filter is exactly their AND */
	prog->ranges_exact = prog->nranges > 0;
}
