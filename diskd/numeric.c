/*
 * numeric.c
 *	  numeric's on-disk format and comparison.
 *
 * Rules of this file:
 *  - Input is the varlena payload (after the varlena header) exactly as
 *    stored: u16 n_header, then for the long form an int16 weight, then
 *    base-10000 int16 digits, little-endian and possibly unaligned.
 *      special   (h & 0xC000) == 0xC000: 0xC000 NaN, 0xD000 +inf, 0xF000 -inf
 *      short     (h & 0xC000) == 0x8000: sign 0x2000, dscale (h & 0x1F80) >> 7,
 *                7-bit two's complement weight (sign 0x0040, value 0x003F)
 *      long      sign h & 0xC000 (0x4000 negative), dscale h & 0x3FFF,
 *                weight int16 at +2, digits at +4
 *  - Comparison follows numeric_cmp(): NaN equals NaN and sorts above
 *    everything, +inf above all finite values, -inf below; finite values
 *    compare digit by digit aligned on weight with missing digits as zero
 *    (dscale plays no part: 1.50 = 1.5); a value with no digits is zero
 *    whatever its sign bit.
 *  - Digits outside 0..9999 mean the datum is not what we think it is:
 *    AP_FALLBACK.
 */
#include <string.h>

#include "diskd.h"

#define NUMERIC_SIGN_MASK		0xC000
#define NUMERIC_NEG				0x4000
#define NUMERIC_SHORT			0x8000
#define NUMERIC_SPECIAL			0xC000
#define NUMERIC_EXT_MASK		0xF000
#define NUMERIC_NAN				0xC000
#define NUMERIC_PINF			0xD000
#define NUMERIC_NINF			0xF000
#define NUMERIC_SHORT_SIGN		0x2000
#define NUMERIC_SHORT_DSCALE_MASK 0x1F80
#define NUMERIC_SHORT_DSCALE_SHIFT 7
#define NUMERIC_SHORT_WSIGN		0x0040
#define NUMERIC_SHORT_WMASK		0x003F
#define NUMERIC_DSCALE_MASK		0x3FFF
#define NBASE					10000

/* Read a little-endian u16 without alignment assumptions. */
static inline uint16_t
get_u16(const unsigned char *p)
{
	uint16_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Digit i of a decoded numeric (digits may sit at any address). */
static inline int
num_digit(const ApNumeric *n, int i)
{
	int16_t		d;

	memcpy(&d, n->digits + 2 * i, sizeof(d));
	return d;
}

/* Decode the stored form; digits stay in the datum. */
ApStatus
ap_numeric_decode(const unsigned char *payload, uint32_t len, ApNumeric *out)
{
	uint16_t	h;
	uint32_t	hdrbytes;

	memset(out, 0, sizeof(*out));
	if (len < 2)
		return AP_FALLBACK;
	h = get_u16(payload);

	if ((h & NUMERIC_SIGN_MASK) == NUMERIC_SPECIAL)
	{
		switch (h & NUMERIC_EXT_MASK)
		{
			case NUMERIC_NAN:
				out->special = AP_NUM_NAN;
				return AP_OK;
			case NUMERIC_PINF:
				out->special = AP_NUM_PINF;
				return AP_OK;
			case NUMERIC_NINF:
				out->special = AP_NUM_NINF;
				out->negative = true;
				return AP_OK;
			default:
				return AP_FALLBACK;
		}
	}

	out->special = AP_NUM_FINITE;
	if ((h & NUMERIC_SIGN_MASK) == NUMERIC_SHORT)
	{
		out->negative = (h & NUMERIC_SHORT_SIGN) != 0;
		out->dscale = (h & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT;
		out->weight = (h & NUMERIC_SHORT_WMASK);
		if (h & NUMERIC_SHORT_WSIGN)
			out->weight -= 64;	/* 7-bit two's complement */
		hdrbytes = 2;
	}
	else
	{
		int16_t		w;

		if (len < 4)
			return AP_FALLBACK;
		out->negative = (h & NUMERIC_SIGN_MASK) == NUMERIC_NEG;
		out->dscale = h & NUMERIC_DSCALE_MASK;
		memcpy(&w, payload + 2, sizeof(w));
		out->weight = w;
		hdrbytes = 4;
	}

	/* NUMERIC_NDIGITS rounds down an odd trailing byte, as we do */
	out->ndigits = (int) ((len - hdrbytes) / 2);
	out->digits = payload + hdrbytes;
	for (int i = 0; i < out->ndigits; i++)
	{
		int			d = num_digit(out, i);

		if (d < 0 || d >= NBASE)
			return AP_FALLBACK;
	}
	return AP_OK;
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
