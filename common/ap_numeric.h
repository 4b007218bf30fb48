/*
 * ap_numeric.h
 *	  PostgreSQL's on-disk numeric format, read in one place.
 *
 * A numeric datum's payload (after the varlena header) is a u16 header,
 * for the long form an int16 weight, then base-10000 int16 digits, in the
 * server's byte order and possibly unaligned (utils/adt/numeric.c):
 *   special   (h & 0xC000) == 0xC000: 0xC000 NaN, 0xD000 +inf, 0xF000 -inf
 *   short     (h & 0xC000) == 0x8000: sign 0x2000, dscale (h & 0x1F80) >> 7,
 *             7-bit two's complement weight (sign 0x0040, value 0x003F)
 *   long      sign h & 0xC000 (0x4000 negative), dscale h & 0x3FFF,
 *             weight int16 at +2, digits at +4
 * The disk's comparison and arithmetic (diskd/numeric.c and its hot path
 * numeric_i64.h) and the Bloom filters' numeric keys (proto/ap_bloom.h)
 * all read it through ap_numeric_parse.
 */
#ifndef AP_NUMERIC_H
#define AP_NUMERIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ap_bytes.h"

#define AP_NUMERIC_SIGN_MASK		0xC000
#define AP_NUMERIC_NEG				0x4000
#define AP_NUMERIC_SHORT			0x8000
#define AP_NUMERIC_SPECIAL			0xC000
#define AP_NUMERIC_EXT_MASK			0xF000
#define AP_NUMERIC_NAN				0xC000
#define AP_NUMERIC_PINF				0xD000
#define AP_NUMERIC_NINF				0xF000
#define AP_NUMERIC_SHORT_SIGN		0x2000
#define AP_NUMERIC_SHORT_DSCALE_MASK 0x1F80
#define AP_NUMERIC_SHORT_DSCALE_SHIFT 7
#define AP_NUMERIC_SHORT_WSIGN		0x0040
#define AP_NUMERIC_SHORT_WMASK		0x003F
#define AP_NUMERIC_DSCALE_MASK		0x3FFF
#define AP_NUMERIC_NBASE			10000

typedef enum ApNumSpecial
{
	AP_NUM_FINITE = 0,
	AP_NUM_NAN,
	AP_NUM_PINF,
	AP_NUM_NINF
} ApNumSpecial;

/* A decoded numeric: base-10000 digits (pointer into the datum, unaligned). */
typedef struct ApNumeric
{
	ApNumSpecial special;
	bool		negative;
	int			weight;			/* weight of the first digit */
	int			dscale;
	int			ndigits;
	const unsigned char *digits;	/* ndigits int16, server byte order, unaligned */
	bool		odd_byte;		/* a byte after the last digit (NUMERIC_NDIGITS drops it) */
} ApNumeric;

/* Digit i of a decoded numeric. */
static inline int
ap_numeric_digit(const ApNumeric *n, int i)
{
	return (int16_t) ap_read_u16(n->digits + 2 * i);
}

/*
 * Decode the stored form of payload (len bytes); digits stay in the datum.
 * False if it is not a numeric: too short, an unknown special value, or a
 * digit outside 0..9999.
 */
static inline bool
ap_numeric_parse(const unsigned char *payload, size_t len, ApNumeric *out)
{
	uint16_t	h;
	size_t		hdrbytes;

	memset(out, 0, sizeof(*out));
	if (len < 2)
		return false;
	h = ap_read_u16(payload);
	if ((h & AP_NUMERIC_SIGN_MASK) == AP_NUMERIC_SPECIAL)
	{
		switch (h & AP_NUMERIC_EXT_MASK)
		{
			case AP_NUMERIC_NAN:
				out->special = AP_NUM_NAN;
				return true;
			case AP_NUMERIC_PINF:
				out->special = AP_NUM_PINF;
				return true;
			case AP_NUMERIC_NINF:
				out->special = AP_NUM_NINF;
				out->negative = true;
				return true;
			default:
				return false;
		}
	}
	out->special = AP_NUM_FINITE;
	if ((h & AP_NUMERIC_SIGN_MASK) == AP_NUMERIC_SHORT)
	{
		out->negative = (h & AP_NUMERIC_SHORT_SIGN) != 0;
		out->dscale = (h & AP_NUMERIC_SHORT_DSCALE_MASK) >> AP_NUMERIC_SHORT_DSCALE_SHIFT;
		out->weight = h & AP_NUMERIC_SHORT_WMASK;
		if (h & AP_NUMERIC_SHORT_WSIGN)
			out->weight -= 64;	/* 7-bit two's complement */
		hdrbytes = 2;
	}
	else
	{
		if (len < 4)
			return false;
		out->negative = (h & AP_NUMERIC_SIGN_MASK) == AP_NUMERIC_NEG;
		out->dscale = h & AP_NUMERIC_DSCALE_MASK;
		out->weight = (int16_t) ap_read_u16(payload + 2);
		hdrbytes = 4;
	}
	out->ndigits = (int) ((len - hdrbytes) / 2);
	out->odd_byte = ((len - hdrbytes) % 2) != 0;
	out->digits = payload + hdrbytes;
	for (int i = 0; i < out->ndigits; i++)
	{
		int			d = ap_numeric_digit(out, i);

		if (d < 0 || d >= AP_NUMERIC_NBASE)
			return false;
	}
	return true;
}

#endif							/* AP_NUMERIC_H */
