/*
 * vm_num.c
 *	  The VM's arithmetic: integers, floats and exact numerics, and casts.
 *
 * Rules of this file:
 *  - Integer results are computed exactly in 64 bits and must fit the
 *    result kind's width; PostgreSQL's cross-type operators compute in the
 *    result width and raise "out of range" exactly when the true result does
 *    not fit it, so this is the same test.  Division by zero, overflow and
 *    MIN / -1 are AP_EV_FALLBACK: the host raises PostgreSQL's own error.
 *  - float4 results are computed in float and float8 results in double (x86-64
 *    evaluates float expressions in their own precision, FLT_EVAL_METHOD 0).
 *    PostgreSQL's overflow rule (an infinite result from finite inputs), its
 *    underflow rule for * and / (zero from nonzero inputs) and division by
 *    zero are AP_EV_FALLBACK; NaN results are ordinary values.
 *  - Numerics compute exactly in 128-bit fixed point (numeric.c) with
 *    PostgreSQL's result scales; NaN and infinities follow numeric.c's
 *    special-value rules of PostgreSQL 14+; anything beyond 38 digits falls
 *    back.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "vm_internal.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "float4 arithmetic must be evaluated in float precision"
#endif

/* Does v fit the integer kind k? */
static bool
int_fits(int k, int64_t v)
{
	switch (k)
	{
		case AP_TYPE_INT2:
			return v >= INT16_MIN && v <= INT16_MAX;
		case AP_TYPE_INT4:
			return v >= INT32_MIN && v <= INT32_MAX;
		default:
			return true;
	}
}

/* Integer + - * / % in the result kind's width. */
static ApEv
int_arith(int fn, int rkind, int64_t x, int64_t y, ApVal *out)
{
	int64_t		r;

	switch (fn)
	{
		case AP_FN_ADD:
			if (__builtin_add_overflow(x, y, &r))
				return AP_EV_FALLBACK;
			break;
		case AP_FN_SUB:
			if (__builtin_sub_overflow(x, y, &r))
				return AP_EV_FALLBACK;
			break;
		case AP_FN_MUL:
			if (__builtin_mul_overflow(x, y, &r))
				return AP_EV_FALLBACK;
			break;
		case AP_FN_DIV:
			if (y == 0 || (y == -1 && x == INT64_MIN))
				return AP_EV_FALLBACK;
			r = x / y;			/* C truncates toward zero, as PostgreSQL */
			break;
		default:
			if (y == 0)
				return AP_EV_FALLBACK;
			/* x % -1 is 0 for every x (PostgreSQL avoids the MIN % -1 trap) */
			r = y == -1 ? 0 : x % y;
			break;
	}
	if (!int_fits(rkind, r))
		return AP_EV_FALLBACK;
	out->u.i = r;
	return AP_EV_VALUE;
}

/*
 * float4 and float8 + - * / with float4_pl/mi/mul/div's and float8's error
 * rules.  float4 operands are exact in double, and the double result of one
 * of these operations rounded to float is the float operation's own result
 * (a double holds more than twice a float's precision), so both widths are
 * computed in double; the checks then look at the value of the result's
 * width, as PostgreSQL's do.
 */
static ApEv
float_arith(int fn, bool single, double x, double y, ApVal *out)
{
	double		r;
	bool		divide = false;
	bool		overflow;
	bool		underflow;

	switch (fn)
	{
		case AP_FN_ADD:
			r = x + y;
			break;
		case AP_FN_SUB:
			r = x - y;
			break;
		case AP_FN_MUL:
			r = x * y;
			break;
		default:
			if (y == 0.0 && !isnan(x))
				return AP_EV_FALLBACK;
			r = x / y;
			divide = true;
			break;
	}
	if (single)
		r = (float) r;
	if (divide)
	{
		overflow = isinf(r) && !isinf(x);
		underflow = r == 0.0 && x != 0.0 && !isinf(y);
	}
	else
	{
		overflow = isinf(r) && !isinf(x) && !isinf(y);
		underflow = fn == AP_FN_MUL && r == 0.0 && x != 0.0 && y != 0.0;
	}
	if (overflow || underflow)
		return AP_EV_FALLBACK;
	if (single)
		out->u.f4 = (float) r;
	else
		out->u.f8 = r;
	return AP_EV_VALUE;
}

/* A float value widened to double. */
static inline double
as_double(const ApVal *v)
{
	return v->kind == AP_TYPE_FLOAT4 ? (double) v->u.f4 : v->u.f8;
}

/* Split a numeric value into special or exact fixed; FALLBACK if too big/corrupt. */
static inline ApEv
num_get(const ApVal *v, ApNumSpecial *sp, ApFixed *fx)
{
	*sp = AP_NUM_FINITE;
	if (v->nform == AP_NF_FIXED)
	{
		*fx = v->u.fx;
		return AP_EV_VALUE;
	}
	if (v->nform == AP_NF_SPECIAL)
	{
		*sp = (ApNumSpecial) v->special;
		return AP_EV_VALUE;
	}
	return ap_numeric_payload_fixed(v->u.s.p, v->u.s.len, fx, sp) == AP_OK ?
		AP_EV_VALUE : AP_EV_FALLBACK;
}

/* Result: a special numeric. */
static ApEv
num_special(ApVal *out, ApNumSpecial sp)
{
	out->kind = AP_TYPE_NUMERIC;
	out->nform = AP_NF_SPECIAL;
	out->special = (uint8_t) sp;
	return AP_EV_VALUE;
}

/* Result: a finite numeric, or FALLBACK when the operation overflowed. */
static ApEv
num_fixed(ApVal *out, ApStatus st, const ApFixed *fx)
{
	if (st != AP_OK)
		return AP_EV_FALLBACK;
	out->kind = AP_TYPE_NUMERIC;
	out->nform = AP_NF_FIXED;
	out->u.fx = *fx;
	return AP_EV_VALUE;
}

/* Sign of a numeric operand: infinities +-1, finite by coefficient. */
static int
num_sign(ApNumSpecial sp, const ApFixed *fx)
{
	if (sp == AP_NUM_PINF)
		return 1;
	if (sp == AP_NUM_NINF)
		return -1;
	return fx->coef > 0 ? 1 : (fx->coef < 0 ? -1 : 0);
}

/*
 * numeric + - * / when an operand is NaN or infinite (PostgreSQL 14+):
 * NaN wins; inf - inf and inf * 0 and inf / inf are NaN; x / 0 is an error;
 * finite / inf is 0.
 */
static ApEv
num_special_arith(int fn, ApNumSpecial sa, const ApFixed *fa, ApNumSpecial sb,
				  const ApFixed *fb, ApVal *out)
{
	int			ga = num_sign(sa, fa),
				gb = num_sign(sb, fb);

	if (sa == AP_NUM_NAN || sb == AP_NUM_NAN)
		return num_special(out, AP_NUM_NAN);
	switch (fn)
	{
		case AP_FN_ADD:
		case AP_FN_SUB:
			{
				/* each infinity contributes its sign (b's flipped for -) */
				int			ia = sa != AP_NUM_FINITE ? ga : 0;
				int			ib = sb != AP_NUM_FINITE ? (fn == AP_FN_SUB ? -gb : gb) : 0;

				if (ia != 0 && ib != 0 && ia != ib)
					return num_special(out, AP_NUM_NAN);
				return num_special(out, (ia != 0 ? ia : ib) > 0 ? AP_NUM_PINF : AP_NUM_NINF);
			}
		case AP_FN_MUL:
			if (ga * gb == 0)
				return num_special(out, AP_NUM_NAN);
			return num_special(out, ga * gb > 0 ? AP_NUM_PINF : AP_NUM_NINF);
		default:
			if (sa != AP_NUM_FINITE)
			{
				if (sb != AP_NUM_FINITE)
					return num_special(out, AP_NUM_NAN);
				if (gb == 0)
					return AP_EV_FALLBACK;	/* division by zero */
				return num_special(out, ga * gb > 0 ? AP_NUM_PINF : AP_NUM_NINF);
			}
			else
			{
				/* finite / infinity = 0 (numeric's zero constant: dscale 0) */
				ApFixed		zero = {0, 0};

				return num_fixed(out, AP_OK, &zero);
			}
	}
}

/* numeric + - * / */
static ApEv
numeric_arith(int fn, const ApVal *a, const ApVal *b, ApVal *out)
{
	ApNumSpecial sa,
				sb;
	ApFixed		fa = {0, 0},
				fb = {0, 0},
				r;

	/* both finite fixed values (every numeric column decodes to one): no copies */
	if (a->nform == AP_NF_FIXED && b->nform == AP_NF_FIXED)
	{
		switch (fn)
		{
			case AP_FN_ADD:
				return num_fixed(out, ap_fixed_add(&a->u.fx, &b->u.fx, false, &r), &r);
			case AP_FN_SUB:
				return num_fixed(out, ap_fixed_add(&a->u.fx, &b->u.fx, true, &r), &r);
			case AP_FN_MUL:
				return num_fixed(out, ap_fixed_mul(&a->u.fx, &b->u.fx, &r), &r);
			default:
				break;
		}
	}
	if (num_get(a, &sa, &fa) != AP_EV_VALUE || num_get(b, &sb, &fb) != AP_EV_VALUE)
		return AP_EV_FALLBACK;
	if (sa != AP_NUM_FINITE || sb != AP_NUM_FINITE)
		return num_special_arith(fn, sa, &fa, sb, &fb, out);
	switch (fn)
	{
		case AP_FN_ADD:
			return num_fixed(out, ap_fixed_add(&fa, &fb, false, &r), &r);
		case AP_FN_SUB:
			return num_fixed(out, ap_fixed_add(&fa, &fb, true, &r), &r);
		case AP_FN_MUL:
			return num_fixed(out, ap_fixed_mul(&fa, &fb, &r), &r);
		case AP_FN_DIV:
			return num_fixed(out, ap_fixed_div(&fa, &fb, &r), &r);
		default:
			return AP_EV_FALLBACK;
	}
}

/* Binary arithmetic of ints, floats or numerics (kinds checked at compile). */
ApEv
ap_vm_arith(int fn, int rkind, const ApVal *a, const ApVal *b, ApVal *out)
{
	out->kind = (uint8_t) rkind;
	if (AP_IS_INT_KIND(a->kind))
		return int_arith(fn, rkind, a->u.i, b->u.i, out);
	if (rkind == AP_TYPE_FLOAT4)
		return float_arith(fn, true, a->u.f4, b->u.f4, out);
	if (rkind == AP_TYPE_FLOAT8)
		return float_arith(fn, false, as_double(a), as_double(b), out);
	return numeric_arith(fn, a, b, out);
}

/* Unary minus: int (MIN overflows), float (never fails), numeric. */
ApEv
ap_vm_neg(int rkind, const ApVal *a, ApVal *out)
{
	out->kind = (uint8_t) rkind;
	if (AP_IS_INT_KIND(a->kind))
	{
		if (a->u.i == INT64_MIN || !int_fits(rkind, -a->u.i))
			return AP_EV_FALLBACK;
		out->u.i = -a->u.i;
		return AP_EV_VALUE;
	}
	if (a->kind == AP_TYPE_FLOAT4)
	{
		out->u.f4 = -a->u.f4;
		return AP_EV_VALUE;
	}
	if (a->kind == AP_TYPE_FLOAT8)
	{
		out->u.f8 = -a->u.f8;
		return AP_EV_VALUE;
	}
	{
		ApNumSpecial sp;
		ApFixed		fx = {0, 0};

		if (num_get(a, &sp, &fx) != AP_EV_VALUE)
			return AP_EV_FALLBACK;
		if (sp != AP_NUM_FINITE)
			return num_special(out, sp == AP_NUM_NAN ? AP_NUM_NAN :
							   sp == AP_NUM_PINF ? AP_NUM_NINF : AP_NUM_PINF);
		fx.coef = -fx.coef;		/* the invariant is symmetric */
		return num_fixed(out, AP_OK, &fx);
	}
}

/* Casts the VM performs (ap_types.h AP_FN_CAST plus their exact relatives). */
bool
ap_vm_cast_ok(int from, int to)
{
	if (AP_IS_INT_KIND(from))
		return AP_IS_INT_KIND(to) || AP_IS_FLT_KIND(to) || to == AP_TYPE_NUMERIC;
	if (AP_IS_FLT_KIND(from))
		return AP_IS_FLT_KIND(to) || AP_IS_INT_KIND(to);
	if (from == AP_TYPE_NUMERIC)
		return AP_IS_INT_KIND(to);
	if (from == AP_TYPE_DATE)
		return to == AP_TYPE_TIMESTAMP;
	if (from == AP_TYPE_TIMESTAMP)
		return to == AP_TYPE_DATE;
	if (AP_IS_STR_KIND(from))
		return AP_IS_TXT_KIND(to);
	return false;
}

/*
 * float -> int as dtoi2/dtoi4/dtoi8/ftoi*: round to nearest even (rint),
 * then NaN or outside the range is an error.  The range test compares in
 * double against the powers of two that bound the kind, as PostgreSQL's
 * FLOAT8_FITS_IN_INT* macros do.
 */
static ApEv
float_to_int(int rkind, double d, ApVal *out)
{
	double		lo = rkind == AP_TYPE_INT2 ? -32768.0 :
		rkind == AP_TYPE_INT4 ? -2147483648.0 : -9223372036854775808.0;

	d = rint(d);
	if (isnan(d) || !(d >= lo && d < -lo))
		return AP_EV_FALLBACK;
	out->u.i = (int64_t) d;
	return AP_EV_VALUE;
}

/* CAST between the kinds ap_vm_cast_ok accepts. */
ApEv
ap_vm_cast(int rkind, const ApVal *a, ApVal *out)
{
	out->kind = (uint8_t) rkind;
	if (AP_IS_INT_KIND(a->kind))
	{
		if (AP_IS_INT_KIND(rkind))
		{
			if (!int_fits(rkind, a->u.i))
				return AP_EV_FALLBACK;
			out->u.i = a->u.i;
		}
		else if (rkind == AP_TYPE_FLOAT8)
			out->u.f8 = (double) a->u.i;
		else if (rkind == AP_TYPE_FLOAT4)
			out->u.f4 = (float) a->u.i;	/* one rounding, as i8tof/i4tof */
		else
		{
			ApFixed		fx = {a->u.i, 0};

			return num_fixed(out, AP_OK, &fx);
		}
		return AP_EV_VALUE;
	}
	if (AP_IS_FLT_KIND(a->kind))
	{
		if (AP_IS_INT_KIND(rkind))
			return a->kind == AP_TYPE_FLOAT4 ?
				float_to_int(rkind, (double) rintf(a->u.f4), out) :
				float_to_int(rkind, a->u.f8, out);
		if (rkind == AP_TYPE_FLOAT8)
		{
			out->u.f8 = as_double(a);
			return AP_EV_VALUE;
		}
		/* dtof: overflow to inf or underflow to 0 is an error */
		if (a->kind == AP_TYPE_FLOAT4)
			out->u.f4 = a->u.f4;
		else
		{
			out->u.f4 = (float) a->u.f8;
			if ((isinf(out->u.f4) && !isinf(a->u.f8)) ||
				(out->u.f4 == 0.0f && a->u.f8 != 0.0))
				return AP_EV_FALLBACK;
		}
		return AP_EV_VALUE;
	}
	if (a->kind == AP_TYPE_NUMERIC)
	{
		/* numeric -> int: round half away from zero; NaN/inf are errors */
		ApNumSpecial sp;
		ApFixed		fx = {0, 0},
					r;

		if (num_get(a, &sp, &fx) != AP_EV_VALUE || sp != AP_NUM_FINITE ||
			ap_fixed_round(&fx, 0, &r) != AP_OK ||
			r.coef < INT64_MIN || r.coef > INT64_MAX || !int_fits(rkind, (int64_t) r.coef))
			return AP_EV_FALLBACK;
		out->u.i = (int64_t) r.coef;
		return AP_EV_VALUE;
	}
	if (a->kind == AP_TYPE_DATE)
		return ap_vm_date_to_ts((int32_t) a->u.i, &out->u.i) ? AP_EV_VALUE : AP_EV_FALLBACK;
	if (a->kind == AP_TYPE_TIMESTAMP)
	{
		int32_t		d;

		if (!ap_vm_ts_to_date(a->u.i, &d))
			return AP_EV_FALLBACK;
		out->u.i = d;
		return AP_EV_VALUE;
	}
	/* strings: bpchar -> text drops the padding (rtrim1), the rest is identity */
	out->u.s = a->u.s;
	if (a->kind == AP_TYPE_BPCHAR)
		while (out->u.s.len > 0 && out->u.s.p[out->u.s.len - 1] == ' ')
			out->u.s.len--;
	return AP_EV_VALUE;
}

/* numeric(p,s) coercion; NaN passes, infinities cannot be stored (error). */
ApEv
ap_vm_numeric_typmod(int32_t typmod, const ApVal *a, ApVal *out)
{
	ApNumSpecial sp;
	ApFixed		fx = {0, 0},
				r;

	if (num_get(a, &sp, &fx) != AP_EV_VALUE)
		return AP_EV_FALLBACK;
	if (sp == AP_NUM_NAN)
		return num_special(out, sp);
	if (sp != AP_NUM_FINITE)
		return typmod < 4 ? num_special(out, sp) : AP_EV_FALLBACK;
	return num_fixed(out, ap_fixed_typmod(&fx, typmod, &r), &r);
}

/* A numeric value in decoded (digit) form; fixed ones are encoded into buf. */
static ApEv
num_view(const ApVal *v, unsigned char *buf, ApNumeric *n)
{
	uint32_t	len;

	if (v->nform == AP_NF_DATUM)
		return ap_numeric_decode(v->u.s.p, v->u.s.len, n) == AP_OK ?
			AP_EV_VALUE : AP_EV_FALLBACK;
	if (v->nform == AP_NF_SPECIAL)
		len = ap_numeric_encode_special((ApNumSpecial) v->special, buf);
	else
		len = ap_numeric_encode_fixed(&v->u.fx, buf);
	return ap_numeric_decode(buf, len, n) == AP_OK ? AP_EV_VALUE : AP_EV_FALLBACK;
}

/* numeric_cmp() over any forms: exact whatever the magnitudes. */
ApEv
ap_vm_numeric_cmp(const ApVal *a, const ApVal *b, int *c)
{
	unsigned char ba[AP_NUMERIC_FIXED_MAX_BYTES],
				bb[AP_NUMERIC_FIXED_MAX_BYTES];
	ApNumeric	na,
				nb;

	/* two fixed values compare exactly without the digit form */
	if (a->nform == AP_NF_FIXED && b->nform == AP_NF_FIXED)
	{
		*c = ap_fixed_cmp(&a->u.fx, &b->u.fx);
		return AP_EV_VALUE;
	}
	if (num_view(a, ba, &na) != AP_EV_VALUE || num_view(b, bb, &nb) != AP_EV_VALUE)
		return AP_EV_FALLBACK;
	*c = ap_numeric_cmp(&na, &nb);
	return AP_EV_VALUE;
}
