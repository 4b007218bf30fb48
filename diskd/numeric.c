/*
 * numeric.c
 *	  numeric's on-disk format and comparison.
 *
 * Rules of this file:
 *  - Input is the varlena payload (after the varlena header) exactly as
 *    stored, decoded by ap_numeric_parse (common/ap_numeric.h).
 *  - Comparison follows numeric_cmp(): NaN equals NaN and sorts above
 *    everything, +inf above all finite values, -inf below; finite values
 *    compare digit by digit aligned on weight with missing digits as zero
 *    (dscale plays no part: 1.50 = 1.5); a value with no digits is zero
 *    whatever its sign bit.
 *  - Digits outside 0..9999 mean the datum is not what we think it is:
 *    AP_FALLBACK.
 */
#include <string.h>

#include "ap_bytes.h"
#include "diskd.h"
#include "numeric_i64.h"

#define NBASE					AP_NUMERIC_NBASE

/* Digit i of a decoded numeric (digits may sit at any address). */
static inline int
num_digit(const ApNumeric *n, int i)
{
	return ap_numeric_digit(n, i);
}

/* Decode the stored form; digits stay in the datum (common/ap_numeric.h). */
ApStatus
ap_numeric_decode(const unsigned char *payload, uint32_t len, ApNumeric *out)
{
	return ap_numeric_parse(payload, len, out) ? AP_OK : AP_FALLBACK;
}

/*
 * Compare magnitudes: walk digit positions from the highest weight of either
 * value down to the lowest, a position outside a value's digits being zero.
 */
static int
cmp_abs(const ApNumeric *a, const ApNumeric *b)
{
	int			hi = a->weight > b->weight ? a->weight : b->weight;
	int			alo = a->weight - a->ndigits + 1;
	int			blo = b->weight - b->ndigits + 1;
	int			lo = alo < blo ? alo : blo;

	for (int w = hi; w >= lo; w--)
	{
		int			ia = a->weight - w;
		int			ib = b->weight - w;
		int			da = (ia >= 0 && ia < a->ndigits) ? num_digit(a, ia) : 0;
		int			db = (ib >= 0 && ib < b->ndigits) ? num_digit(b, ib) : 0;

		if (da != db)
			return da > db ? 1 : -1;
	}
	return 0;
}

/* Rank of a special value in numeric's total order (finite = 0). */
static int
special_rank(const ApNumeric *n)
{
	switch (n->special)
	{
		case AP_NUM_NAN:
			return 2;
		case AP_NUM_PINF:
			return 1;
		case AP_NUM_NINF:
			return -1;
		default:
			return 0;
	}
}

/* numeric_cmp(): -1, 0 or 1. */
int
ap_numeric_cmp(const ApNumeric *a, const ApNumeric *b)
{
	int			ra = special_rank(a);
	int			rb = special_rank(b);

	if (ra != 0 || rb != 0)
		return ra == rb ? 0 : (ra > rb ? 1 : -1);

	/* zero is only ever "no digits"; its sign bit does not matter */
	if (a->ndigits == 0)
	{
		if (b->ndigits == 0)
			return 0;
		return b->negative ? 1 : -1;
	}
	if (b->ndigits == 0)
		return a->negative ? -1 : 1;

	if (a->negative != b->negative)
		return a->negative ? -1 : 1;
	return a->negative ? -cmp_abs(a, b) : cmp_abs(a, b);
}

/* ---------------- exact fixed-point arithmetic ---------------- */

/*
 * Computed numerics are value = coef * 10^-dscale with |coef| < 10^38 and
 * every result is checked against the bound again; a sum of two may exceed
 * int128 itself (2 * 10^38 > 2^127), so sums are overflow-checked too.
 * PostgreSQL's numeric is arbitrary precision; whatever leaves this range is
 * AP_FALLBACK and the host computes it.
 */
#define FIXED_MAX_POW10			38
#define NUMERIC_MAX_DSCALE		0x3FFF	/* NUMERIC_DSCALE_MAX */
#define NUMERIC_SHORT_DSCALE_MAX 63
#define NUMERIC_SHORT_WEIGHT_MAX 63
#define NUMERIC_SHORT_WEIGHT_MIN (-64)

/* 10^k for 0 <= k <= 19 (the largest power of ten in 64 bits). */
static const uint64_t pow10_u64[20] = {
	UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000),
	UINT64_C(100000), UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000),
	UINT64_C(1000000000), UINT64_C(10000000000), UINT64_C(100000000000),
	UINT64_C(1000000000000), UINT64_C(10000000000000), UINT64_C(100000000000000),
	UINT64_C(1000000000000000), UINT64_C(10000000000000000),
	UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
	UINT64_C(10000000000000000000)
};

/*
 * 10^k for 0 <= k <= 38 as an unsigned 128-bit integer: a table lookup and
 * at most one multiplication, since this runs several times per value in
 * numeric arithmetic and sums (it was a loop of k multiplications).
 */
static inline ap_u128
pow10_u128(int k)
{
	if (k < 20)
		return pow10_u64[k];
	return (ap_u128) pow10_u64[k - 19] * pow10_u64[19];
}

/* |coef| below 10^38: the invariant of every ApFixed. */
static inline bool
fixed_in_range(ap_i128 coef)
{
	ap_u128		mag = coef < 0 ? -(ap_u128) coef : (ap_u128) coef;

	return mag < (ap_u128) pow10_u64[19] * pow10_u64[19];
}

/* Does a coefficient fit in 64 bits (so a 64x64-bit product cannot overflow)? */
static inline bool
fits_i64(ap_i128 v)
{
	return v >= INT64_MIN && v <= INT64_MAX;
}

/* Multiply by 10^k (k >= 0) keeping the invariant; false on overflow. */
static inline bool
fixed_scale_up(ap_i128 coef, int k, ap_i128 *out)
{
	if (coef == 0)
	{
		*out = 0;
		return true;
	}
	/*
	 * The usual operand is a 64-bit coefficient scaled by a few places: one
	 * 64x64-bit multiply whose product stays below 2^127 needs no overflow
	 * check (the generic 128-bit one is a libgcc call).
	 */
	if (k <= 19 && fits_i64(coef))
	{
		*out = (ap_i128) (int64_t) coef * (ap_i128) pow10_u64[k];
		return fixed_in_range(*out);
	}
	if (k > FIXED_MAX_POW10)
		return false;
	if (__builtin_mul_overflow(coef, (ap_i128) pow10_u128(k), out))
		return false;
	return fixed_in_range(*out);
}

/*
 * Decode a stored numeric payload straight to its fixed-point value, as
 * ap_numeric_decode followed by ap_numeric_to_fixed would (same validity
 * checks, same AP_FALLBACK cases), without the intermediate walk: this runs
 * for every numeric attribute an expression reads.  *sp is the special value
 * (NaN, infinities) or AP_NUM_FINITE with *out set.
 */
ApStatus
ap_numeric_payload_fixed(const unsigned char *payload, uint32_t len, ApFixed *out,
						 ApNumSpecial *sp)
{
	ApNumeric	n;
	int64_t		c64;
	int			ds;

	if (ap_numeric_payload_i64(payload, len, &c64, &ds))
	{
		*sp = AP_NUM_FINITE;
		out->coef = (ap_i128) c64;
		out->dscale = ds;
		return AP_OK;
	}
	if (ap_numeric_decode(payload, len, &n) != AP_OK)
		return AP_FALLBACK;
	*sp = n.special;
	if (n.special != AP_NUM_FINITE)
		return AP_OK;
	return ap_numeric_to_fixed(&n, out);
}

/* Convert a finite decoded numeric; AP_FALLBACK beyond 38 digits. */
ApStatus
ap_numeric_to_fixed(const ApNumeric *n, ApFixed *out)
{
	ap_i128		acc = 0;
	int			e;

	if (n->special != AP_NUM_FINITE || n->dscale > NUMERIC_MAX_DSCALE)
		return AP_FALLBACK;
	out->dscale = n->dscale;
	out->coef = 0;
	if (n->ndigits == 0)
		return AP_OK;

	/*
	 * Fast path for the usual short value (up to 16 decimal digits, scale up
	 * to 18): 64-bit arithmetic cannot overflow there, and this runs for
	 * every numeric an expression or a sum reads.
	 */
	e = 4 * (n->weight - n->ndigits + 1) + n->dscale;
	if (n->ndigits <= 4 && e >= -18 && e <= 2)
	{
		int64_t		acc64 = 0;

		for (int i = 0; i < n->ndigits; i++)
			acc64 = acc64 * NBASE + num_digit(n, i);
		if (e >= 0)
			acc64 *= (int64_t) pow10_u64[e];
		else
		{
			int64_t		div = (int64_t) pow10_u64[-e];

			if (acc64 % div != 0)
				return AP_FALLBACK;
			acc64 /= div;
		}
		out->coef = n->negative ? -(ap_i128) acc64 : (ap_i128) acc64;
		return AP_OK;
	}

	for (int i = 0; i < n->ndigits; i++)
	{
		if (__builtin_mul_overflow(acc, (ap_i128) NBASE, &acc) || !fixed_in_range(acc))
			return AP_FALLBACK;
		acc += num_digit(n, i);
	}
	/* acc is the integer of the digits; its last digit has weight w-ndigits+1 */
	e = 4 * (n->weight - n->ndigits + 1) + n->dscale;
	if (e >= 0)
	{
		if (!fixed_scale_up(acc, e, &acc))
			return AP_FALLBACK;
	}
	else
	{
		ap_i128		div;

		/* digits below dscale are zero in every datum PostgreSQL writes */
		if (-e > FIXED_MAX_POW10)
			return AP_FALLBACK;
		div = (ap_i128) pow10_u128(-e);
		if (acc % div != 0)
			return AP_FALLBACK;
		acc /= div;
	}
	out->coef = n->negative ? -acc : acc;
	return AP_OK;
}

/*
 * Base-10000 digits of a fixed value, most significant first, leading and
 * trailing zero digits stripped, and the weight of the first digit.  The
 * fraction is first padded to a multiple of 4 decimal places: with pad zeros
 * appended, the lowest digit is (coef mod 10^(4-pad)) * 10^pad and the rest
 * are the base-10000 digits of coef / 10^(4-pad).
 */
static int
fixed_digits(const ApFixed *f, int16_t *digits, int *weight)
{
	ap_u128		mag = f->coef < 0 ? -(ap_u128) f->coef : (ap_u128) f->coef;
	int			pad = (4 - f->dscale % 4) % 4;
	int			lowpos = -((f->dscale + pad) / 4);	/* weight of the lowest digit */
	int16_t		rev[16];
	int			n = 0;
	int			first = 0;

	if (mag == 0)
	{
		*weight = 0;
		return 0;
	}
	if (pad > 0)
	{
		ap_u128		unit = pow10_u128(4 - pad);

		rev[n++] = (int16_t) ((mag % unit) * (ap_u128) pow10_u128(pad));
		mag /= unit;
	}
	while (mag > 0)
	{
		rev[n++] = (int16_t) (mag % NBASE);
		mag /= NBASE;
	}
	/* rev[] is least significant first; drop trailing (low) zero digits */
	while (first < n && rev[first] == 0)
	{
		first++;
		lowpos++;
	}
	for (int i = 0; i < n - first; i++)
		digits[i] = rev[n - 1 - i];
	*weight = lowpos + (n - first) - 1;
	return n - first;
}

/* Write a numeric payload header and digits (make_result's layout choice). */
static uint32_t
encode_payload(bool negative, int weight, int dscale, const int16_t *digits,
			   int ndigits, unsigned char *buf)
{
	uint16_t	h;
	uint32_t	off;

	if (ndigits == 0)
	{
		/* zero: no digits, weight 0, positive */
		weight = 0;
		negative = false;
	}
	if (dscale <= NUMERIC_SHORT_DSCALE_MAX && weight <= NUMERIC_SHORT_WEIGHT_MAX &&
		weight >= NUMERIC_SHORT_WEIGHT_MIN)
	{
		h = (uint16_t) (AP_NUMERIC_SHORT | (negative ? AP_NUMERIC_SHORT_SIGN : 0) |
						(dscale << AP_NUMERIC_SHORT_DSCALE_SHIFT) |
						(weight < 0 ? AP_NUMERIC_SHORT_WSIGN : 0) |
						(weight & AP_NUMERIC_SHORT_WMASK));
		memcpy(buf, &h, 2);
		off = 2;
	}
	else
	{
		int16_t		w = (int16_t) weight;

		h = (uint16_t) ((negative ? AP_NUMERIC_NEG : 0) | (dscale & AP_NUMERIC_DSCALE_MASK));
		memcpy(buf, &h, 2);
		memcpy(buf + 2, &w, 2);
		off = 4;
	}
	memcpy(buf + off, digits, (size_t) ndigits * 2);
	return off + (uint32_t) ndigits * 2;
}

/* Encode a fixed value as a numeric payload; returns its byte length. */
uint32_t
ap_numeric_encode_fixed(const ApFixed *f, unsigned char *buf)
{
	int16_t		digits[16];
	int			weight;
	int			n = fixed_digits(f, digits, &weight);

	return encode_payload(f->coef < 0, weight, f->dscale, digits, n, buf);
}

/* Encode NaN or an infinity as a numeric payload (2 bytes). */
uint32_t
ap_numeric_encode_special(ApNumSpecial s, unsigned char *buf)
{
	uint16_t	h = s == AP_NUM_NAN ? AP_NUMERIC_NAN :
		s == AP_NUM_PINF ? AP_NUMERIC_PINF : AP_NUMERIC_NINF;

	memcpy(buf, &h, 2);
	return 2;
}

/* Bring a and b to the larger dscale; false on overflow. */
static bool
fixed_align(const ApFixed *a, const ApFixed *b, ap_i128 *ca, ap_i128 *cb, int *scale)
{
	*scale = a->dscale > b->dscale ? a->dscale : b->dscale;
	if (a->dscale == b->dscale)
	{
		*ca = a->coef;
		*cb = b->coef;
		return true;
	}
	return fixed_scale_up(a->coef, *scale - a->dscale, ca) &&
		fixed_scale_up(b->coef, *scale - b->dscale, cb);
}

/* a + b (negate_b: a - b); result dscale max(a, b) as add_var/sub_var. */
ApStatus
ap_fixed_add(const ApFixed *a, const ApFixed *b, bool negate_b, ApFixed *r)
{
	ap_i128		ca,
				cb;
	int			scale;

	if (!fixed_align(a, b, &ca, &cb, &scale))
		return AP_FALLBACK;
	if (negate_b ? __builtin_sub_overflow(ca, cb, &r->coef) :
		__builtin_add_overflow(ca, cb, &r->coef))
		return AP_FALLBACK;
	r->dscale = scale;
	return fixed_in_range(r->coef) ? AP_OK : AP_FALLBACK;
}

/* a * b; result dscale a + b as numeric_mul requests (exact product). */
ApStatus
ap_fixed_mul(const ApFixed *a, const ApFixed *b, ApFixed *r)
{
	r->dscale = a->dscale + b->dscale;
	if (r->dscale > NUMERIC_MAX_DSCALE)
		return AP_FALLBACK;		/* PostgreSQL would round; rare enough */
	/* two 64-bit coefficients: the product is below 2^126, no overflow check */
	if (fits_i64(a->coef) && fits_i64(b->coef))
		r->coef = (ap_i128) (int64_t) a->coef * (ap_i128) (int64_t) b->coef;
	else if (__builtin_mul_overflow(a->coef, b->coef, &r->coef))
		return AP_FALLBACK;
	return fixed_in_range(r->coef) ? AP_OK : AP_FALLBACK;
}

/* Divide a magnitude by 10^k rounding half away from zero (round_var). */
static ap_u128
round_div_pow10(ap_u128 mag, int k)
{
	ap_u128		unit;
	ap_u128		q;

	if (k > FIXED_MAX_POW10)
		return 0;				/* |value| < 10^38 rounds to zero */
	unit = pow10_u128(k);
	q = mag / unit;
	if ((mag % unit) * 2 >= unit)
		q++;
	return q;
}

/*
 * Round to `scale` decimal places, half away from zero; a negative scale
 * rounds to tens, hundreds, ... and leaves dscale 0 (apply_typmod's rules).
 */
ApStatus
ap_fixed_round(const ApFixed *a, int scale, ApFixed *r)
{
	int			target = scale < 0 ? 0 : scale;

	if (scale >= a->dscale)
	{
		if (!fixed_scale_up(a->coef, scale - a->dscale, &r->coef))
			return AP_FALLBACK;
		r->dscale = scale;
		return AP_OK;
	}
	else
	{
		ap_u128		mag = a->coef < 0 ? -(ap_u128) a->coef : (ap_u128) a->coef;
		ap_i128		q;

		mag = round_div_pow10(mag, a->dscale - scale);
		q = (ap_i128) mag;
		/* scale < 0: put the rounded-away places back as zeros */
		if (scale < 0 && !fixed_scale_up(q, -scale, &q))
			return AP_FALLBACK;
		r->coef = a->coef < 0 ? -q : q;
		r->dscale = target;
		return fixed_in_range(r->coef) ? AP_OK : AP_FALLBACK;
	}
}

/*
 * numeric(p,s) coercion: round to s, then the integer part may have at most
 * p - s decimal digits (a zero integer part has none).  typmod < 4 (no
 * typmod) leaves the value alone.  AP_FALLBACK is PostgreSQL's "numeric
 * field overflow".
 */
ApStatus
ap_fixed_typmod(const ApFixed *a, int32_t typmod, ApFixed *r)
{
	int			precision,
				scale,
				intdigits = 0;
	ap_u128		mag;

	if (typmod < 4)
	{
		*r = *a;
		return AP_OK;
	}
	precision = ((typmod - 4) >> 16) & 0xffff;
	scale = (((typmod - 4) & 0x7ff) ^ 1024) - 1024;
	if (ap_fixed_round(a, scale, r) != AP_OK)
		return AP_FALLBACK;
	mag = r->coef < 0 ? -(ap_u128) r->coef : (ap_u128) r->coef;
	if (r->dscale <= FIXED_MAX_POW10)
	{
		mag /= pow10_u128(r->dscale);
		while (mag > 0)
		{
			intdigits++;
			mag /= 10;
		}
	}
	return intdigits > precision - scale ? AP_FALLBACK : AP_OK;
}

/*
 * numeric division as numeric_div: the result scale is select_div_scale()'s
 * (at least 16 significant digits, not below either input's dscale, within
 * 0..1000), the quotient rounded half away from zero.  b = 0 is AP_FALLBACK
 * (division by zero error).
 */
ApStatus
ap_fixed_div(const ApFixed *a, const ApFixed *b, ApFixed *r)
{
	int16_t		da[16],
				db[16];
	int			wa = 0,
				wb = 0;
	int			na;
	int			qweight,
				rscale,
				k;
	ap_i128		num;
	ap_u128		ma,
				mb,
				q,
				rem;

	if (b->coef == 0)
		return AP_FALLBACK;
	na = fixed_digits(a, da, &wa);
	(void) fixed_digits(b, db, &wb);	/* b != 0: db[0] is its first digit */
	/* stripped digits: the first is the first nonzero one (0 for a zero a) */
	qweight = (na > 0 ? wa : 0) - wb;
	if ((na > 0 ? da[0] : 0) <= db[0])
		qweight--;
	rscale = 16 - qweight * 4;
	if (rscale < a->dscale)
		rscale = a->dscale;
	if (rscale < b->dscale)
		rscale = b->dscale;
	if (rscale < 0)
		rscale = 0;
	if (rscale > 1000)
		rscale = 1000;

	/*
	 * q = a / b at rscale = a.coef * 10^(rscale - sa + sb) / b.coef.  A
	 * dividend stored with more than 1000 places (a product's scale may be)
	 * can leave k < 0: the quotient rounds away places of a, the host's work.
	 */
	k = rscale - a->dscale + b->dscale;
	if (k < 0 || !fixed_scale_up(a->coef, k, &num))
		return AP_FALLBACK;
	ma = num < 0 ? -(ap_u128) num : (ap_u128) num;
	mb = b->coef < 0 ? -(ap_u128) b->coef : (ap_u128) b->coef;
	q = ma / mb;
	rem = ma % mb;
	if (rem * 2 >= mb)
		q++;
	r->coef = ((num < 0) != (b->coef < 0)) ? -(ap_i128) q : (ap_i128) q;
	r->dscale = rscale;
	return fixed_in_range(r->coef) ? AP_OK : AP_FALLBACK;
}

/* Three-way compare of two fixed values (exact, no overflow). */
int
ap_fixed_cmp(const ApFixed *a, const ApFixed *b)
{
	unsigned char pa[40],
				pb[40];
	ApNumeric	na,
				nb;
	ap_i128		x;

	/* one scale, or aligned without overflow: the coefficients decide */
	if (a->dscale == b->dscale)
		return a->coef < b->coef ? -1 : (a->coef > b->coef ? 1 : 0);
	if (a->dscale < b->dscale && b->dscale - a->dscale <= FIXED_MAX_POW10 &&
		!__builtin_mul_overflow(a->coef, (ap_i128) pow10_u128(b->dscale - a->dscale), &x))
		return x < b->coef ? -1 : (x > b->coef ? 1 : 0);
	if (b->dscale < a->dscale && a->dscale - b->dscale <= FIXED_MAX_POW10 &&
		!__builtin_mul_overflow(b->coef, (ap_i128) pow10_u128(a->dscale - b->dscale), &x))
		return a->coef < x ? -1 : (a->coef > x ? 1 : 0);

	/* aligning would overflow; the digit form compares any two exactly */
	ap_numeric_decode(pa, ap_numeric_encode_fixed(a, pa), &na);
	ap_numeric_decode(pb, ap_numeric_encode_fixed(b, pb), &nb);
	return ap_numeric_cmp(&na, &nb);
}
