/*
 * prefilter.h
 *	  The filter's range checks (ApProgram.ranges) decided on the raw tuple,
 *	  before it is deformed or the filter runs: most rows of a selective scan
 *	  end here, after a walk that only measures the attributes up to the
 *	  last checked one and writes nothing.
 *
 * Only tuples without nulls whose walk meets nothing but fixed-length
 * values and short-header varlenas are decided here; any other tuple, and
 * any value outside a check's domain, is left to the full path (deform and
 * filter), which decides exactly as before.  A rejection is always one the
 * filter would make: the checks are necessary conditions of it.
 */
#ifndef DISKD_PREFILTER_H
#define DISKD_PREFILTER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "diskd.h"

/*
 * One stretch of the walk: nvarlena varlenas, then one fixed-length
 * attribute (attno; checks from index check on, or -1 if none reads it).
 */
typedef struct ApPrefilterStep
{
	uint16_t	nvarlena;
	int16_t		attlen;
	uint8_t		alignmask;		/* attalign - 1 */
	int8_t		check;
	int			attno;
} ApPrefilterStep;

typedef struct ApPrefilterCheck
{
	int			attno;
	uint8_t		width;			/* 2, 4 or 8 bytes, signed */
	bool		cached;			/* at cacheoff in every tuple without nulls */
	uint32_t	cacheoff;
	int64_t		dom_lo;			/* as in ApRangeCheck */
	int64_t		dom_hi;
	int64_t		lo;
	int64_t		hi;
	int64_t		olo;
	int64_t		ohi;
} ApPrefilterCheck;

typedef struct ApPrefilter
{
	int			nchecks;		/* 0: no prefilter */
	int			ncached;		/* checks[0..ncached-1] read at cached offsets */
	int			upto;			/* the highest attribute a check reads */
	uint32_t	walk_off;		/* data offset where the walk starts (after the cached) */
	int			nsteps;
	ApPrefilterCheck checks[AP_MAX_RANGE_CHECKS];	/* cached first, then by attno */
	ApPrefilterStep steps[];	/* the walk up to upto */
} ApPrefilter;

/*
 * Build the prefilter of a compiled program over desc (whose cached offsets
 * are computed); NULL when the program has no range checks or memory is
 * short (the scan then runs without one).  Release with free().
 */
ApPrefilter *ap_prefilter_build(const ApProgram *prog, const ApTupleDesc *desc);

/* The check's verdict on the datum at p: true if it rejects the tuple. */
static inline __attribute__((always_inline)) bool
ap_prefilter_check_rejects(const ApPrefilterCheck *c, const unsigned char *p)
{
	int64_t		x;

	if (c->width == 2)
	{
		int16_t		v;

		memcpy(&v, p, 2);
		x = v;
	}
	else if (c->width == 4)
	{
		int32_t		v;

		memcpy(&v, p, 4);
		x = v;
	}
	else
		memcpy(&x, p, 8);
	if (__builtin_expect(x >= c->dom_lo && x <= c->dom_hi, 1))
		return x < c->lo || x > c->hi;
	return x < c->olo || x > c->ohi;
}

/*
 * Does the filter certainly reject this tuple (header hdr, read by
 * ap_tuple_header; len bytes at tup)?  false: undecided, run the filter.
 */
static inline __attribute__((always_inline)) bool
ap_prefilter_rejects(const ApPrefilter *pf, const unsigned char *tup, uint32_t len,
					 const ApTupleHeader *hdr)
{
	const unsigned char *data;
	uint32_t	dlen;
	uint32_t	off;
	int			ci;

	if ((hdr->infomask & AP_HEAP_HASNULL) || hdr->natts < pf->upto || hdr->hoff >= len)
		return false;
	data = tup + hdr->hoff;
	dlen = len - hdr->hoff;
	for (ci = 0; ci < pf->ncached; ci++)
	{
		const ApPrefilterCheck *c = &pf->checks[ci];

		if (c->cacheoff > dlen || c->width > dlen - c->cacheoff)
			return false;
		if (ap_prefilter_check_rejects(c, data + c->cacheoff))
			return true;
	}
	if (ci == pf->nchecks)
		return false;

	off = pf->walk_off;
	for (int i = 0; i < pf->nsteps; i++)
	{
		const ApPrefilterStep *st = &pf->steps[i];

		/* only short headers are measured here (see tuple.c's walk) */
		for (unsigned v = st->nvarlena; v > 0; v--)
		{
			unsigned char b0;

			if (off >= dlen)
				return false;
			b0 = data[off];
			if ((b0 & 0x01) == 0 || b0 == 0x01)
				return false;
			off += (uint32_t) b0 >> 1;
		}
		off = (off + st->alignmask) & ~(uint32_t) st->alignmask;
		if (off > dlen || (uint32_t) st->attlen > dlen - off)
			return false;
		for (int k = st->check; k >= 0 && k < pf->nchecks && pf->checks[k].attno == st->attno; k++)
			if (ap_prefilter_check_rejects(&pf->checks[k], data + off))
				return true;
		off += (uint32_t) st->attlen;
	}
	return false;
}

#endif							/* DISKD_PREFILTER_H */
