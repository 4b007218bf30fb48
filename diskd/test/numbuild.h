/*
 * numbuild.h
 *	  Stored numerics for the diskd unit tests, written as PostgreSQL writes
 *	  them (numeric.c's make_result), to feed the decoders.
 */
#ifndef DISKD_TEST_NUMBUILD_H
#define DISKD_TEST_NUMBUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * A short-format numeric payload of coef * 10^-dscale, as make_result
 * writes it: base-10000 digits aligned on the decimal point, leading and
 * trailing zero digits stripped.  Returns the payload length.
 */
static inline size_t
short_numeric(__int128 coef, int dscale, unsigned char *p)
{
	int16_t		digits[16];
	int			nd = 0;
	bool		neg = coef < 0;
	unsigned __int128 mag = neg ? -(unsigned __int128) coef : (unsigned __int128) coef;
	int			pad = (4 - dscale % 4) % 4;
	int			weight;
	uint16_t	h;
	int			first = 0;

	/* scale the magnitude so the last group ends on a digit boundary */
	for (int i = 0; i < pad; i++)
		mag *= 10;
	while (mag > 0)
	{
		digits[nd++] = (int16_t) (mag % 10000);
		mag /= 10000;
	}
	/* digits[] is little-endian; the group at index (dscale + pad) / 4 is 10^0 */
	weight = nd - 1 - (dscale + pad) / 4;
	while (first < nd && digits[first] == 0)
		first++;				/* trailing zero groups (least significant) */
	if (first == nd)
	{
		nd = 0;
		weight = 0;
		neg = false;
	}
	h = 0x8000 | (neg ? 0x2000 : 0) | (uint16_t) (dscale << 7) |
		(weight < 0 ? 0x40 : 0) | (uint16_t) (weight & 0x3F);
	memcpy(p, &h, 2);
	for (int i = nd - 1, k = 0; i >= first; i--, k++)
		memcpy(p + 2 + 2 * k, &digits[i], 2);
	return 2 + 2 * (size_t) (nd > 0 ? nd - first : 0);
}

#endif							/* DISKD_TEST_NUMBUILD_H */
