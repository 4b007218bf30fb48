/*
 * rowenc.c
 *	  Encode projected values into RowBatch rows (proto/ap_rows.h).
 *
 * Rules of this file:
 *  - Values are copied byte for byte as stored in the heap tuple; the host
 *    points slot values into the batch, so placement follows
 *    heap_fill_tuple(): fixed-length and cstring values aligned to attalign,
 *    varlena values with a 1-byte header (short or external) unaligned, all
 *    others aligned; padding is zero so a reader applying the "zero byte =
 *    padding" rule of varlena alignment lands where we wrote.
 *  - Each row starts 8-aligned relative to the buffer start; the host copies
 *    the batch into a MAXALIGN'd buffer, so relative alignment is absolute.
 *  - The buffer grows by doubling between rows; nothing else allocates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "diskd.h"

/* Alignment in bytes for an attalign code (unknown codes: none). */
static inline uint32_t
align_bytes(char attalign)
{
	switch (attalign)
	{
		case 's':
			return 2;
		case 'i':
			return 4;
		case 'd':
			return 8;
		default:
			return 1;
	}
}

/* Offset where value v of column col goes when the data so far ends at off. */
static inline uint32_t
place(const ApColumn *col, const ApValue *v, uint32_t off)
{
	uint32_t	al = align_bytes(col->attalign);

	/* 1-byte varlena headers are never aligned (heap_fill_tuple) */
	if (col->attlen == -1 && v->len >= 1 && ap_varlena_is_1b(v->ptr))
		return off;
	return (off + al - 1) & ~(al - 1);
}

/* Allocate an empty buffer of cap bytes (at least one row header). */
int
ap_rowbatch_init(ApRowBatchBuf *b, uint32_t cap)
{
	if (cap < 64)
		cap = 64;
	b->data = malloc(cap);
	b->cap = b->data ? cap : 0;
	b->len = 0;
	b->nrows = 0;
	return b->data ? 0 : -ENOMEM;
}

/* Forget the rows, keep the memory for the next batch. */
void
ap_rowbatch_reset(ApRowBatchBuf *b)
{
	b->len = 0;
	b->nrows = 0;
}

/* Release the buffer; safe to call twice. */
void
ap_rowbatch_free(ApRowBatchBuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->nrows = 0;
}

/* Make room for need bytes in total, doubling to amortize copies. */
static int
rowbuf_reserve(ApRowBatchBuf *b, uint64_t need)
{
	uint64_t	ncap = b->cap ? b->cap : 64;
	unsigned char *nd;

	if (need <= b->cap)
		return 0;
	if (need > UINT32_MAX)
		return -ENOMEM;
	while (ncap < need)
		ncap *= 2;
	if (ncap > UINT32_MAX)
		ncap = UINT32_MAX;
	nd = realloc(b->data, (size_t) ncap);
	if (nd == NULL)
		return -ENOMEM;
	b->data = nd;
	b->cap = (uint32_t) ncap;
	return 0;
}

/* The i-th value of a row: projected attributes first, then computed values. */
static inline void
row_value(const ApTupleDesc *desc, const int *project, int nproject,
		  const ApValue *values, const ApColumn *ecols, const ApValue *evals,
		  int i, const ApColumn **col, const ApValue **v)
{
	if (i < nproject)
	{
		*col = &desc->cols[project[i] - 1];
		*v = &values[project[i] - 1];
	}
	else
	{
		*col = &ecols[i - nproject];
		*v = &evals[i - nproject];
	}
}

/* Append one row of attributes only. */
int
ap_rowbatch_append(ApRowBatchBuf *b, const ApTupleDesc *desc,
				 const int *project, int nproject, const ApValue *values)
{
	return ap_rowbatch_append_exprs(b, desc, project, nproject, values, NULL, 0, NULL, -1);
}

/*
 * Copy one stored value.  Most are 1-16 bytes (keys, dates, numerics, short
 * strings): fixed-size moves, overlapping where the size is between two of
 * them, read and written within [0, n) only; no library call per value.
 */
static inline void
copy_value(unsigned char *dst, const unsigned char *src, uint32_t n)
{
	uint64_t	a8,
				b8;
	uint32_t	a4,
				b4;

	if (n >= 8 && n <= 16)
	{
		memcpy(&a8, src, 8);
		memcpy(&b8, src + n - 8, 8);
		memcpy(dst, &a8, 8);
		memcpy(dst + n - 8, &b8, 8);
	}
	else if (n >= 4 && n < 8)
	{
		memcpy(&a4, src, 4);
		memcpy(&b4, src + n - 4, 4);
		memcpy(dst, &a4, 4);
		memcpy(dst + n - 4, &b4, 4);
	}
	else if (n < 4)
	{
		for (uint32_t i = 0; i < n; i++)
			dst[i] = src[i];
	}
	else
		memcpy(dst, src, n);
}

/*
 * Append one row.  A first pass finds the nulls (the data offset depends on
 * them) and a bound on the row's size (its values plus the most alignment
 * padding); the second writes the values, zeroing only the padding it skips.
 */
int
ap_rowbatch_append_exprs(ApRowBatchBuf *b, const ApTupleDesc *desc,
					   const int *project, int nproject, const ApValue *values,
					   const ApColumn *ecols, int nexprs, const ApValue *evals,
					   int64_t tid)
{
	uint32_t	start = AP_ROW_ALIGN_UP(b->len);
	uint16_t	flags = tid >= 0 ? AP_ROW_HASTID : 0;
	uint32_t	dataoff;
	uint64_t	bound = 0;
	uint32_t	off;
	unsigned char *row;
	ApRowHeader hdr;
	const ApColumn *col;
	const ApValue *v;
	int			natts = nproject + nexprs;
	int			rc;

	if (nproject < 0 || nexprs < 0 || natts > UINT16_MAX)
		return -EINVAL;
	for (int i = 0; i < natts; i++)
	{
		row_value(desc, project, nproject, values, ecols, evals, i, &col, &v);
		if (v->isnull)
			flags |= AP_ROW_HASNULLS;
		else
			bound += (uint64_t) v->len + 7;
	}
	dataoff = AP_ROW_DATA_OFFSET(flags, (uint32_t) natts);
	bound += dataoff;
	if (bound > UINT32_MAX)
		return -ENOMEM;
	if ((rc = rowbuf_reserve(b, (uint64_t) start + bound)) != 0)
		return rc;

	/* zero the gap before the row and the header with its null bitmap */
	memset(b->data + b->len, 0, start - b->len + dataoff);
	row = b->data + start;

	off = dataoff;
	for (int i = 0; i < natts; i++)
	{
		uint32_t	at;

		row_value(desc, project, nproject, values, ecols, evals, i, &col, &v);
		if (v->isnull)
			continue;
		if (flags & AP_ROW_HASNULLS)
			row[AP_ROW_BITMAP_OFFSET(flags) + (i >> 3)] |= (unsigned char) (1u << (i & 7));
		at = place(col, v, off);
		while (off < at)
			row[off++] = 0;
		copy_value(row + at, v->ptr, v->len);
		off = at + v->len;
	}

	hdr.row_bytes = off;
	hdr.flags = flags;
	hdr.natts = (uint16_t) natts;
	memcpy(row, &hdr, sizeof(hdr));
	if (flags & AP_ROW_HASTID)
	{
		uint64_t	packed = (uint64_t) tid;

		memcpy(row + AP_ROW_HEADER_BYTES, &packed, sizeof(packed));
	}

	b->len = start + off;
	b->nrows++;
	return 0;
}
