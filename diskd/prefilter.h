/*
 * prefilter.h
 *	  The filter's range checks (ApProgram.ranges) decided on the raw tuple,
 *	  before it is deformed or the filter runs: most rows of a selective scan
 *	  end here, after a walk that only measures the attributes up to the
 *	  checked ones.  The checks run in the filter's order (the host's, the
 *	  most selective first), the walk going as far as the next one needs.
 *
 * Only tuples without nulls whose walk meets nothing but fixed-length
 * values and short-header varlenas are decided here; any other tuple, and
 * any value outside a check's domain (a numeric of more than 16 digits), is
 * left to the full path (deform and filter), which decides exactly as
 * before.  A rejection is always one the filter would make: the checks are
 * necessary conditions of it.
 */
#ifndef DISKD_PREFILTER_H
#define DISKD_PREFILTER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "diskd.h"
#include "numeric_i64.h"

/*
 * One stretch of the walk: nvarlena varlenas, then one fixed-length
 * attribute or one checked numeric (attlen -1) (attno; checks from index
 * check on, or -1 if none reads it).
 */
/* Fixed-length attributes a walk passes at most (checks beyond are left out). */
#define AP_PREFILTER_MAX_STEPS	64

typedef struct ApPrefilterStep
{
	uint16_t	nvarlena;
	int16_t		attlen;
	uint8_t		alignmask;		/* attalign - 1 */
	int8_t		check;
	int			attno;
} ApPrefilterStep;

/*
 * A check at its place in the walk: a range, a comparison with an earlier
 * column, or a numeric's range (ApRangeCheck's nscale and open bounds).
 */
typedef struct ApPrefilterCheck
{
	int			attno;			/* the column read (a pair: the later of the two) */
	bool		numeric;		/* a short-header numeric against lo and hi */
	int16_t		nscale;
	bool		lo_open;
	bool		hi_open;
	uint8_t		width;			/* 2, 4 or 8 bytes, signed */
	bool		cached;			/* at cacheoff in every tuple without nulls */
	uint32_t	cacheoff;
	int64_t		dom_lo;			/* as in ApRangeCheck */
	int64_t		dom_hi;
	int64_t		lo;
	int64_t		hi;
	int64_t		olo;
	int64_t		ohi;
	/* a pair: the other column, at a cached offset or at a step of the walk */
	bool		pair;
	uint8_t		mask;			/* sign bits of cmp(attno, other) that pass */
	bool		other_cached;
	uint32_t	other_cacheoff;
	int			other_step;
	int			step;			/* not cached: the walk's step that reads attno */
	int			rank;			/* its place in the filter's order */
} ApPrefilterCheck;

typedef struct ApPrefilter
{
	int			nchecks;		/* 0: no prefilter */
	int			ncached;		/* checks[0..ncached-1] read at cached offsets */
	int			upto;			/* the highest attribute a check reads */
	uint32_t	walk_off;		/* data offset where the walk starts (after the cached) */
	bool		single;			/* one range check, read by the walk's one step */
	int			norder;			/* the walked checks ... */
	int			order[AP_MAX_RANGE_CHECKS];	/* ... in the filter's order */
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

/* A signed datum of 2, 4 or 8 bytes. */
static inline __attribute__((always_inline)) int64_t
ap_prefilter_datum(uint8_t width, const unsigned char *p)
{
	if (width == 2)
	{
		int16_t		v;

		memcpy(&v, p, 2);
		return v;
	}
	if (width == 4)
	{
		int32_t		v;

		memcpy(&v, p, 4);
		return v;
	}
	{
		int64_t		v;

		memcpy(&v, p, 8);
		return v;
	}
}

/*
 * The check's verdict on the datum at p (a pair: against the datum at q):
 * true if it rejects the tuple.
 */
static inline __attribute__((always_inline)) bool
ap_prefilter_check_rejects(const ApPrefilterCheck *c, const unsigned char *p,
						   const unsigned char *q)
{
	int64_t		x = ap_prefilter_datum(c->width, p);

	if (c->pair)
	{
		int64_t		y = ap_prefilter_datum(c->width, q);

		return (c->mask & (x < y ? 1 : x == y ? 2 : 4)) == 0;
	}
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
	int			walked;
	/* where the walked steps' attributes start: the fixed ones' and the numerics' */
	uint32_t	offs[AP_PREFILTER_MAX_STEPS + AP_MAX_RANGE_CHECKS];

	if ((hdr->infomask & AP_HEAP_HASNULL) || hdr->natts < pf->upto || hdr->hoff >= len)
		return false;
	data = tup + hdr->hoff;
	dlen = len - hdr->hoff;
	if (pf->single)
	{
		/*
		 * The usual prefilter (Q6's l_shipdate range): the step walk of the
		 * loop below, written out for one step and one check.  Deliberately
		 * a copy: one inline helper for both cost Q6 3% of its disk CPU
		 * (A/B, three rounds); change the two together.
		 */
		const ApPrefilterStep *st = &pf->steps[0];

		off = pf->walk_off;
		for (unsigned v = st->nvarlena; v > 0; v--)
		{
			uint32_t	b0;

			if (off >= dlen)
				return false;
			b0 = data[off];
			if (((b0 & 0x01) ^ 0x01) | (b0 == 0x01))
				return false;
			off += b0 >> 1;
		}
		off = (off + st->alignmask) & ~(uint32_t) st->alignmask;
		if (off > dlen || (uint32_t) st->attlen > dlen - off)
			return false;
		return ap_prefilter_check_rejects(&pf->checks[0], data + off, NULL);
	}
	for (ci = 0; ci < pf->ncached; ci++)
	{
		const ApPrefilterCheck *c = &pf->checks[ci];

		/* cached offsets grow with attno: a pair's other column ends earlier */
		if (c->cacheoff > dlen || c->width > dlen - c->cacheoff)
			return false;
		if (ap_prefilter_check_rejects(c, data + c->cacheoff, data + c->other_cacheoff))
			return true;
	}
	if (ci == pf->nchecks)
		return false;

	/*
	 * The walked checks in the filter's own order (the host's, the most
	 * selective first), the walk going only as far as the next check needs
	 * and keeping where each step's attribute starts for the checks after.
	 */
	off = pf->walk_off;
	walked = 0;
	for (int oi = 0; oi < pf->norder; oi++)
	{
		const ApPrefilterCheck *c = &pf->checks[pf->order[oi]];
		const unsigned char *p;

		for (; walked <= c->step; walked++)
		{
			const ApPrefilterStep *st = &pf->steps[walked];

			/* only short headers are measured here (see tuple.c's walk; pf->single's copy above) */
			for (unsigned v = st->nvarlena; v > 0; v--)
			{
				uint32_t	b0;

				if (off >= dlen)
					return false;
				b0 = data[off];
				/* a short header: odd, and not 0x01 (external); one branch for both */
				if (((b0 & 0x01) ^ 0x01) | (b0 == 0x01))
					return false;
				off += b0 >> 1;
			}
			if (st->attlen < 0)
			{
				uint32_t	b0;

				/* a checked numeric: a short header too */
				if (off >= dlen)
					return false;
				b0 = data[off];
				if ((((b0 & 0x01) ^ 0x01) | (b0 == 0x01)) || (b0 >> 1) > dlen - off)
					return false;
				offs[walked] = off;
				off += b0 >> 1;
				continue;
			}
			off = (off + st->alignmask) & ~(uint32_t) st->alignmask;
			if (off > dlen || (uint32_t) st->attlen > dlen - off)
				return false;
			offs[walked] = off;
			off += (uint32_t) st->attlen;
		}
		p = data + offs[c->step];
		if (c->numeric)
		{
			/* a value the check cannot read leaves it undecided; later ones may reject */
			if (ap_numeric_range_verdict(p + 1, ((uint32_t) p[0] >> 1) - 1, c->lo, c->hi,
										 c->nscale, c->lo_open, c->hi_open) > 0)
				return true;
		}
		else if (ap_prefilter_check_rejects(c, p, !c->pair ? NULL :
											data + (c->other_cached ? c->other_cacheoff :
													offs[c->other_step])))
			return true;
	}
	return false;
}

#endif							/* DISKD_PREFILTER_H */
