/*
 * tuple.c
 *	  Heap tuple header reading and attribute deforming.
 *
 * Rules of this file:
 *  - The walk over attributes reproduces heap_deform_tuple(): the null
 *    bitmap (bit attnum-1 set = NOT null), attalign alignment of fixed-length
 *    and cstring values, and for varlena values "a nonzero byte at the current
 *    offset is a header (short, external or already aligned), a zero byte is
 *    padding: align".  Offsets are relative to the data area tup + t_hoff,
 *    which PostgreSQL MAXALIGNs (page.c checks lp_off, we check t_hoff), so
 *    relative alignment equals PostgreSQL's absolute alignment.
 *  - Dropped columns are walked like any other: their bytes are still there.
 *  - The tuple is untrusted: every offset and length is checked against len;
 *    anything out of bounds or unexpected is AP_FALLBACK (the host reads the
 *    tuple through the buffer manager and reports corruption itself).
 *  - Values point into the page; nothing is copied or allocated.
 */
#include <string.h>

#include "ap_bytes.h"
#include "diskd.h"

#define VARTAG_ONDISK		18
#define EXTERNAL_ONDISK_SIZE 18		/* 2 header bytes + varatt_external */
#define MAXALIGN_BYTES		8

/* Alignment in bytes by attalign code, 0 for an unknown code (one load per column). */
static const uint8_t align_of[256] = {['c'] = 1, ['s'] = 2, ['i'] = 4, ['d'] = 8};

/*
 * Read the header fields the disk needs.  The header must fit in len, t_hoff
 * must cover the fixed header plus the null bitmap and be MAXALIGN'd as
 * PostgreSQL always writes it.
 */
ApStatus
ap_tuple_header(const unsigned char *tup, uint32_t len, ApTupleHeader *hdr)
{
	uint32_t	minhoff = AP_TUPLE_HEADER_MIN;

	if (len < AP_TUPLE_HEADER_MIN)
		return AP_FALLBACK;

	hdr->xmin = ap_read_u32(tup + 0);
	hdr->xmax = ap_read_u32(tup + 4);
	/* t_cid/t_xvac at 8, t_ctid block at 12..15 */
	hdr->ctid_offset = ap_read_u16(tup + 16);
	hdr->infomask2 = ap_read_u16(tup + 18);
	hdr->infomask = ap_read_u16(tup + 20);
	hdr->hoff = tup[22];
	hdr->natts = hdr->infomask2 & AP_HEAP_NATTS_MASK;

	if (hdr->infomask & AP_HEAP_HASNULL)
		minhoff += ((uint32_t) hdr->natts + 7) / 8;
	if (hdr->hoff < minhoff || hdr->hoff > len || hdr->hoff % MAXALIGN_BYTES != 0)
		return AP_FALLBACK;
	return AP_OK;
}

/*
 * Leading fixed-length attributes sit at the same offsets in every tuple
 * without nulls; compute them once so deforming skips the walk there.
 */
void
ap_tupdesc_cache_offsets(ApTupleDesc *desc)
{
	uint32_t	off = 0;

	desc->ncached = 0;
	for (int i = 0; i < desc->natts; i++)
	{
		ApColumn   *col = &desc->cols[i];
		uint32_t	al = align_of[(unsigned char) col->attalign];

		if (col->attlen <= 0 || al == 0)
			break;
		off = (off + al - 1) & ~(al - 1);
		col->cacheoff = off;
		off += (uint32_t) col->attlen;
		desc->ncached = i + 1;
	}
}

/*
 * Bytes of the varlena starting at data[off], bounded by dlen; 0 if the
 * header is truncated, invalid, or an external pointer we cannot size.
 * The header tests are spelled out here (varlena.c has the same rules) so
 * the per-attribute walk needs no calls.
 */
static inline uint32_t
varlena_bytes(const unsigned char *data, uint32_t off, uint32_t dlen)
{
	const unsigned char *p = data + off;
	uint32_t	avail = dlen - off;
	uint32_t	size;
	unsigned char b0;

	if (avail < 1)
		return 0;
	b0 = p[0];
	if (b0 == 0x01)
	{
		/* external TOAST pointer: only the on-disk kind can be in a page */
		if (avail < 2 || p[1] != VARTAG_ONDISK)
			return 0;
		size = EXTERNAL_ONDISK_SIZE;
	}
	else if (b0 & 0x01)
		size = (uint32_t) b0 >> 1;	/* short header */
	else
	{
		if (avail < 4)
			return 0;
		size = ap_read_u32(p) >> 2;
		/* inline-compressed values carry 4 more header bytes */
		if (size < ((b0 & 0x03) == 0x02 ? 8u : 4u))
			return 0;
	}
	return size <= avail ? size : 0;
}

/*
 * The walk over attributes i..upto-1 from data offset off.  bits is the null
 * bitmap or NULL; always inlined so the no-null walk has no bitmap tests.
 * The short-header varlena (numerics, short strings) is tested first: it is
 * what most variable-length values of a table look like.
 */
static inline __attribute__((always_inline)) ApStatus
deform_walk(const ApTupleDesc *desc, const unsigned char *data, uint32_t dlen,
			const unsigned char *bits, int i, int upto, uint32_t off,
			ApValue *values)
{
	for (; i < upto; i++)
	{
		const ApColumn *col = &desc->cols[i];
		uint32_t	am;
		uint32_t	size;

		if (bits != NULL && (bits[i >> 3] & (1u << (i & 7))) == 0)
		{
			values[i].ptr = NULL;
			values[i].len = 0;
			values[i].isnull = true;
			continue;
		}
		/* an unknown attalign refuses the column, whatever its value looks like */
		am = (uint32_t) align_of[(unsigned char) col->attalign] - 1;
		if (am > 7)
			return AP_FALLBACK;

		if (col->attlen == -1)
		{
			uint32_t	b0;

			if (off >= dlen)
				return AP_FALLBACK;
			b0 = data[off];
			/* a short header (odd, not 0x01): the size is in the first byte */
			if (!(((b0 & 0x01) ^ 0x01) | (b0 == 0x01)))
			{
				size = b0 >> 1;
				if (size > dlen - off)
					return AP_FALLBACK;
			}
			else
			{
				/* a zero byte cannot start a varlena header: it is padding */
				if (b0 == 0)
				{
					off = (off + am) & ~am;
					if (off >= dlen)
						return AP_FALLBACK;
				}
				size = varlena_bytes(data, off, dlen);
				if (size == 0)
					return AP_FALLBACK;
			}
		}
		else if (col->attlen > 0)
		{
			off = (off + am) & ~am;
			size = (uint32_t) col->attlen;
			if (off > dlen || size > dlen - off)
				return AP_FALLBACK;
		}
		else if (col->attlen == -2)
		{
			const unsigned char *nul;

			off = (off + am) & ~am;
			if (off >= dlen)
				return AP_FALLBACK;
			nul = memchr(data + off, 0, dlen - off);
			if (nul == NULL)
				return AP_FALLBACK;
			size = (uint32_t) (nul - (data + off)) + 1;
		}
		else
			return AP_FALLBACK;

		values[i].ptr = data + off;
		values[i].len = size;
		values[i].isnull = false;
		off += size;
	}
	return AP_OK;
}

/*
 * Deform attributes from+1..upto, attributes 1..from being in values
 * already (from 0: all of them).  Attributes beyond the tuple's own natts
 * would need the catalog's missing-value defaults, which only the host
 * knows.
 */
ApStatus
ap_tuple_deform_more(const ApTupleDesc *desc, const unsigned char *tup,
					 uint32_t len, const ApTupleHeader *hdr,
					 int from, int upto, ApValue *values)
{
	const unsigned char *data;
	uint32_t	dlen;
	uint32_t	off = 0;
	int			i = from;

	if (upto < 0 || upto > desc->natts || upto > hdr->natts || from < 0)
		return AP_FALLBACK;
	if (hdr->hoff > len)
		return AP_FALLBACK;
	if (from >= upto)
		return AP_OK;

	data = tup + hdr->hoff;
	dlen = len - hdr->hoff;

	/* resume after the last non-null attribute deformed so far */
	for (int j = from - 1; j >= 0; j--)
	{
		if (!values[j].isnull)
		{
			off = (uint32_t) (values[j].ptr - data) + values[j].len;
			break;
		}
	}

	if (hdr->infomask & AP_HEAP_HASNULL)
		return deform_walk(desc, data, dlen, tup + AP_TUPLE_HEADER_MIN, i, upto, off, values);

	if (i < desc->ncached)
	{
		/* no nulls: the leading fixed-length attributes are at known offsets */
		int			k = upto < desc->ncached ? upto : desc->ncached;
		const ApColumn *last = &desc->cols[k - 1];
		uint32_t	end = last->cacheoff + (uint32_t) last->attlen;

		if (end <= dlen)
		{
			for (; i < k; i++)
			{
				values[i].ptr = data + desc->cols[i].cacheoff;
				values[i].len = (uint32_t) desc->cols[i].attlen;
				values[i].isnull = false;
			}
			off = end;
		}
	}
	return deform_walk(desc, data, dlen, NULL, i, upto, off, values);
}

/*
 * The data area of a tuple (header hdr, read by ap_tuple_header) that
 * ap_tuple_deform takes to upto by the cached offsets alone: no nulls, at
 * least upto attributes, and the leading fixed-length ones through upto
 * (upto <= desc->ncached) within len.  NULL otherwise.
 */
const unsigned char *
ap_tuple_fixed_data(const ApTupleDesc *desc, const unsigned char *tup, uint32_t len,
					const ApTupleHeader *hdr, int upto)
{
	const ApColumn *last;

	if (upto < 1 || upto > desc->ncached || (hdr->infomask & AP_HEAP_HASNULL) ||
		upto > hdr->natts || hdr->hoff > len)
		return NULL;
	last = &desc->cols[upto - 1];
	if (last->cacheoff + (uint32_t) last->attlen > len - hdr->hoff)
		return NULL;
	return tup + hdr->hoff;
}

/* Deform attributes 1..upto (see ap_tuple_deform_more). */
ApStatus
ap_tuple_deform(const ApTupleDesc *desc, const unsigned char *tup,
				uint32_t len, const ApTupleHeader *hdr,
				int upto, ApValue *values)
{
	return ap_tuple_deform_more(desc, tup, len, hdr, 0, upto, values);
}
