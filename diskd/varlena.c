/*
 * varlena.c
 *	  varlena headers and inline pglz decompression.
 *
 * Rules of this file:
 *  - Layouts are PostgreSQL's little-endian varlena headers (varatt.h):
 *      1-byte header:  (b0 & 1) == 1; b0 == 0x01 is an external TOAST pointer
 *                      (followed by a tag byte), otherwise size = b0 >> 1
 *      4-byte header:  (b0 & 3) == 0 plain, == 2 inline-compressed;
 *                      size = le32 >> 2
 *      compressed:     u32 va_tcinfo at +4 (raw size in the low 30 bits,
 *                      method in the top 2: 0 pglz, 1 lz4), data at +8
 *  - Callers have already bounded the datum (tuple.c checks VARSIZE_ANY
 *    against the tuple); decompression trusts nothing in the compressed
 *    stream and never reads or writes outside its buffers.
 *  - Anything we cannot reproduce exactly (external values, lz4, too large,
 *    corrupt) is AP_FALLBACK: the host's detoasting produces the value or the
 *    error PostgreSQL itself would produce.
 */
#include <string.h>

#include "ap_bytes.h"
#include "diskd.h"

#define VARTAG_ONDISK			18
#define VARATT_EXTERNAL_ONDISK	16	/* sizeof(varatt_external) */
#define VARHDRSZ				4
#define VARHDRSZ_SHORT			1
#define VARHDRSZ_COMPRESSED		8
#define TOAST_PGLZ_METHOD		0

/* VARATT_IS_1B: short inline value or external pointer. */
bool
ap_varlena_is_1b(const unsigned char *p)
{
	return (p[0] & 0x01) == 0x01;
}

/* VARATT_IS_EXTERNAL: 1-byte header with size zero, a tag byte follows. */
bool
ap_varlena_is_external(const unsigned char *p)
{
	return p[0] == 0x01;
}

/* VARATT_IS_4B_C: 4-byte header with the compressed bit. */
bool
ap_varlena_is_compressed(const unsigned char *p)
{
	return (p[0] & 0x03) == 0x02;
}

/*
 * VARSIZE_ANY.  Only on-disk TOAST pointers can appear in a heap page; other
 * external tags (in-memory pointers) return 0 so callers treat them as
 * invalid.
 */
uint32_t
ap_varlena_size_any(const unsigned char *p)
{
	if (ap_varlena_is_external(p))
		return p[1] == VARTAG_ONDISK ? 2 + VARATT_EXTERNAL_ONDISK : 0;
	if (ap_varlena_is_1b(p))
		return (uint32_t) p[0] >> 1;
	return ap_read_u32(p) >> 2;
}

/*
 * Payload of a varlena for evaluation.  Plain values point into the datum;
 * pglz-compressed inline values are decompressed into scratch.
 */
ApStatus
ap_varlena_payload(const unsigned char *p, unsigned char *scratch,
				   uint32_t scratch_cap, const unsigned char **data,
				   uint32_t *datalen)
{
	uint32_t	size;
	uint32_t	tcinfo;
	uint32_t	rawsize;

	if (ap_varlena_is_external(p))
		return AP_FALLBACK;
	if (ap_varlena_is_1b(p))
	{
		size = (uint32_t) p[0] >> 1;
		if (size < VARHDRSZ_SHORT)
			return AP_FALLBACK;
		*data = p + VARHDRSZ_SHORT;
		*datalen = size - VARHDRSZ_SHORT;
		return AP_OK;
	}

	size = ap_read_u32(p) >> 2;
	if (!ap_varlena_is_compressed(p))
	{
		if (size < VARHDRSZ)
			return AP_FALLBACK;
		*data = p + VARHDRSZ;
		*datalen = size - VARHDRSZ;
		return AP_OK;
	}

	if (size < VARHDRSZ_COMPRESSED)
		return AP_FALLBACK;
	tcinfo = ap_read_u32(p + 4);
	rawsize = tcinfo & 0x3FFFFFFFu;
	if ((tcinfo >> 30) != TOAST_PGLZ_METHOD)
		return AP_FALLBACK;		/* lz4: the host decompresses */
	if (scratch == NULL || rawsize > scratch_cap || rawsize > INT32_MAX)
		return AP_FALLBACK;
	if (ap_pglz_decompress(p + VARHDRSZ_COMPRESSED,
						   (int32_t) (size - VARHDRSZ_COMPRESSED),
						   scratch, (int32_t) rawsize) != (int32_t) rawsize)
		return AP_FALLBACK;
	*data = scratch;
	*datalen = rawsize;
	return AP_OK;
}

/*
 * pglz decompression as toast_decompress_datum() uses it (check_complete):
 * the output must be exactly rawsize bytes and the input fully consumed,
 * otherwise PostgreSQL reports corrupt data, and so do we (-1).
 *
 * Stream: a control byte whose bits (LSB first) describe the next 8 items.
 * Clear bit: one literal byte.  Set bit: a 2- or 3-byte tag
 *   len = (b0 & 0x0f) + 3, off = ((b0 & 0xf0) << 4) | b1, len 18 adds b2,
 * copying len bytes from off bytes back in the output, byte by byte so a
 * copy may overlap its own output (run-length encoding).  Like PostgreSQL,
 * a copy running past rawsize is clipped to it.
 */
int32_t
ap_pglz_decompress(const unsigned char *src, int32_t srclen,
				   unsigned char *dst, int32_t rawsize)
{
	const unsigned char *sp = src;
	const unsigned char *send;
	unsigned char *dp = dst;
	unsigned char *dend;

	if (srclen < 0 || rawsize < 0)
		return -1;
	send = src + srclen;
	dend = dst + rawsize;

	while (sp < send && dp < dend)
	{
		unsigned	ctrl = *sp++;

		for (int bit = 0; bit < 8 && sp < send && dp < dend; bit++, ctrl >>= 1)
		{
			if (ctrl & 1)
			{
				uint32_t	len;
				uint32_t	off;

				/* the tag's bytes must all be inside the input */
				if (send - sp < 2)
					return -1;
				len = (uint32_t) (sp[0] & 0x0f) + 3;
				off = ((uint32_t) (sp[0] & 0xf0) << 4) | sp[1];
				sp += 2;
				if (len == 18)
				{
					if (sp >= send)
						return -1;
					len += *sp++;
				}
				/* a back-reference must point into what we already wrote */
				if (off == 0 || off > (uint32_t) (dp - dst))
					return -1;
				if (len > (uint32_t) (dend - dp))
					len = (uint32_t) (dend - dp);
				for (uint32_t i = 0; i < len; i++)
				{
					*dp = *(dp - off);
					dp++;
				}
			}
			else
				*dp++ = *sp++;
		}
	}

	if (dp != dend || sp != send)
		return -1;
	return rawsize;
}
