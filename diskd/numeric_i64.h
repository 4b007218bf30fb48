/*
 * numeric_i64.h
 *	  The hot case of reading a stored numeric: PostgreSQL's short format
 *	  (numeric.c's NUMERIC_SHORT header) with at most four base-10000
 *	  digits, as a 64-bit coefficient at its display scale.  Inline because
 *	  the disk runs it for every numeric column of every aggregated tuple;
 *	  numeric.c decides every other case.
 */
#ifndef DISKD_NUMERIC_I64_H
#define DISKD_NUMERIC_I64_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ap_numeric.h"

/* 10^0 .. 10^18 */
static const int64_t ap_pow10_i64[19] = {
	INT64_C(1), INT64_C(10), INT64_C(100), INT64_C(1000), INT64_C(10000),
	INT64_C(100000), INT64_C(1000000), INT64_C(10000000), INT64_C(100000000),
	INT64_C(1000000000), INT64_C(10000000000), INT64_C(100000000000),
	INT64_C(1000000000000), INT64_C(10000000000000), INT64_C(100000000000000),
	INT64_C(1000000000000000), INT64_C(10000000000000000),
	INT64_C(100000000000000000), INT64_C(1000000000000000000)
};

/*
 * payload/len: the numeric's bytes after the varlena header.  true with
 * *coef, *dscale set if the value is that case and exact at its display
 * scale (digits below the scale all zero); false for anything else,
 * including invalid digits: the caller then takes the general decoder.
 */
static inline __attribute__((always_inline)) bool
ap_numeric_payload_i64(const unsigned char *payload, uint32_t len, int64_t *coef,
					   int *dscale)
{
	uint16_t	h;
	int			ndigits;
	int			ds;
	int			weight;
	int			e;
	int64_t		acc = 0;
	int16_t		last;

	if (len < 2)
		return false;
	memcpy(&h, payload, sizeof(h));
	if ((h & AP_NUMERIC_SIGN_MASK) != AP_NUMERIC_SHORT)
		return false;
	ndigits = (int) ((len - 2) / 2);
	ds = (h & AP_NUMERIC_SHORT_DSCALE_MASK) >> AP_NUMERIC_SHORT_DSCALE_SHIFT;
	if (ndigits == 0)
	{
		/* zero, at any weight and scale */
		*coef = 0;
		*dscale = ds;
		return (h & AP_NUMERIC_SHORT_SIGN) == 0;
	}
	weight = (h & AP_NUMERIC_SHORT_WMASK) - ((h & AP_NUMERIC_SHORT_WSIGN) ? 64 : 0);
	/* decimal exponent of the last digit's unit, relative to the scale */
	e = 4 * (weight - ndigits + 1) + ds;
	if (ndigits > 4 || e < -18 || e > 2)
		return false;
	for (int i = 0; i < ndigits - 1; i++)
	{
		int16_t		d;

		memcpy(&d, payload + 2 + 2 * i, sizeof(d));
		if (d < 0 || d >= AP_NUMERIC_NBASE)
			return false;
		acc = acc * AP_NUMERIC_NBASE + d;
	}
	memcpy(&last, payload + 2 + 2 * (ndigits - 1), sizeof(last));
	if (last < 0 || last >= AP_NUMERIC_NBASE)
		return false;
	/* constant divisors for the usual scales: no 64-bit division */
	switch (e)
	{
		case -1:
			if (last % 10 != 0)
				return false;
			acc = acc * 1000 + last / 10;
			break;
		case -2:
			if (last % 100 != 0)
				return false;
			acc = acc * 100 + last / 100;
			break;
		case -3:
			if (last % 1000 != 0)
				return false;
			acc = acc * 10 + last / 1000;
			break;
		default:
			acc = acc * AP_NUMERIC_NBASE + last;
			if (e >= 0)
				acc *= ap_pow10_i64[e];
			else
			{
				if (acc % ap_pow10_i64[-e] != 0)
					return false;
				acc /= ap_pow10_i64[-e];
			}
			break;
	}
	*coef = (h & AP_NUMERIC_SHORT_SIGN) ? -acc : acc;
	*dscale = ds;
	return true;
}

/*
 * A numeric range check on a stored numeric's payload: 1 if the value lies
 * outside the bounds lo and hi (coefficients at scale; each excluded when
 * its *_open is set; INT64_MIN and INT64_MAX: no bound on that side), 0 if
 * it lies within, -1 if the value is not one ap_numeric_payload_i64 reads
 * or its scale is more than 18 from the bounds' (the caller's general path
 * decides).  The bounds are below 10^18 and the coefficient below 10^16,
 * so scaling either by up to 10^18 stays inside 128 bits.
 */
static inline __attribute__((always_inline)) int
ap_numeric_range_verdict(const unsigned char *payload, uint32_t len, int64_t lo, int64_t hi,
						 int scale, bool lo_open, bool hi_open)
{
	int64_t		coef;
	int			ds;
	int			d;
	__int128	x;
	__int128	l = lo;
	__int128	h = hi;

	if (!ap_numeric_payload_i64(payload, len, &coef, &ds))
		return -1;
	x = coef;
	d = ds - scale;
	if (d > 0)
	{
		if (d > 18)
			return -1;
		l *= ap_pow10_i64[d];
		h *= ap_pow10_i64[d];
	}
	else if (d < 0)
	{
		if (d < -18)
			return -1;
		x *= ap_pow10_i64[-d];
	}
	if (lo != INT64_MIN && (x < l || (lo_open && x == l)))
		return 1;
	if (hi != INT64_MAX && (x > h || (hi_open && x == h)))
		return 1;
	return 0;
}

#endif							/* DISKD_NUMERIC_I64_H */
