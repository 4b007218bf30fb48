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

/* A check at its place in the walk: a range, or a comparison with an earlier column. */
typedef struct ApPrefilterCheck
{
	int			attno;			/* the column read (a pair: the later of the two) */
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
} ApPrefilterCheck;

typedef struct ApPrefilter
{
	int			nchecks;		/* 0: no prefilter */
	int			ncached;		/* checks[0..ncached-1] read at cached offsets */
	int			upto;			/* the highest attribute a check reads */
	uint32_t	walk_off;		/* data offset where the walk starts (after the cached) */
	bool		has_pairs;		/* remember each step's offset */
	bool		single;			/* one range check, read by the walk's one step */
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
	uint32_t	offs[AP_PREFILTER_MAX_STEPS];	/* step offsets, for pairs */

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

	off = pf->walk_off;
	for (int i = 0; i < pf->nsteps; i++)
	{
		const ApPrefilterStep *st = &pf->steps[i];

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
		off = (off + st->alignmask) & ~(uint32_t) st->alignmask;
		if (off > dlen || (uint32_t) st->attlen > dlen - off)
			return false;
		if (pf->has_pairs)
			offs[i] = off;
		for (int k = st->check; k >= 0 && k < pf->nchecks && pf->checks[k].attno == st->attno; k++)
		{
			const ApPrefilterCheck *c = &pf->checks[k];
			const unsigned char *q = NULL;

			if (c->pair)
				q = data + (c->other_cached ? c->other_cacheoff : offs[c->other_step]);
			if (ap_prefilter_check_rejects(c, data + off, q))
				return true;
		}
		off += (uint32_t) st->attlen;
	}
	return false;
}

#endif							/* DISKD_PREFILTER_H */
