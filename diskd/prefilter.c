/*
 * prefilter.c
 *	  Build a scan's prefilter (prefilter.h) from its program's range checks
 *	  and its tuple descriptor.
 */
#include <stdlib.h>

#include "prefilter.h"

/* attalign - 1, or -1 for an alignment the walk does not know */
static int
align_mask(char attalign)
{
	switch (attalign)
	{
		case 'c':
			return 0;
		case 's':
			return 1;
		case 'i':
			return 3;
		case 'd':
			return 7;
		default:
			return -1;
	}
}

/* qsort: cached checks first, then by attribute number. */
static int
cmp_check(const void *x, const void *y)
{
	const ApPrefilterCheck *a = x;
	const ApPrefilterCheck *b = y;

	if (a->cached != b->cached)
		return a->cached ? -1 : 1;
	return (a->attno > b->attno) - (a->attno < b->attno);
}

/*
 * The fixed-length attributes among 0-based attributes from..to-1: the walk's
 * step index of the fixed-length attribute at index to.
 */
static int
fixed_between(const ApTupleDesc *desc, int from, int to)
{
	int			n = 0;

	for (int a = from; a < to; a++)
		n += desc->cols[a].attlen > 0;
	return n;
}

ApPrefilter *
ap_prefilter_build(const ApProgram *prog, const ApTupleDesc *desc)
{
	ApPrefilterCheck checks[AP_MAX_RANGE_CHECKS];
	int			others[AP_MAX_RANGE_CHECKS];	/* a pair's other attno, else 0 */
	int			n = 0;
	int			walk_from = desc->ncached;
	int			walk_end = walk_from;	/* attributes the walk can measure end here */
	int			upto = 0;
	int			nsteps;
	ApPrefilter *pf;

	/* the walk measures fixed-length values and varlenas, nothing else */
	while (walk_end < desc->natts &&
		   (desc->cols[walk_end].attlen == -1 ||
			(desc->cols[walk_end].attlen > 0 && align_mask(desc->cols[walk_end].attalign) >= 0)))
		walk_end++;

	for (int i = 0; i < prog->nranges; i++)
	{
		const ApRangeCheck *r = &prog->ranges[i];
		ApPrefilterCheck *c = &checks[n];
		int			later = r->attno;
		int			other = r->attno2;

		if (r->attno < 1 || r->attno > desc->natts || r->attno2 < 0 || r->attno2 > desc->natts)
			continue;
		memset(c, 0, sizeof(*c));
		c->mask = r->mask;
		if (other > later)
		{
			/* read at the later column: cmp(later, other) mirrors the sign bits */
			later = r->attno2;
			other = r->attno;
			c->mask = (uint8_t) ((r->mask & 2) | ((r->mask & 1) << 2) | ((r->mask & 4) >> 2));
		}
		c->attno = later;
		c->width = (uint8_t) desc->cols[later - 1].attlen;
		if (c->width != 2 && c->width != 4 && c->width != 8)
			continue;
		if (other > 0 && desc->cols[other - 1].attlen != desc->cols[later - 1].attlen)
			continue;
		c->cached = later <= desc->ncached;
		c->cacheoff = c->cached ? desc->cols[later - 1].cacheoff : 0;
		c->dom_lo = r->dom_lo;
		c->dom_hi = r->dom_hi;
		c->lo = r->lo;
		c->hi = r->hi;
		c->olo = r->olo;
		c->ohi = r->ohi;
		c->pair = other > 0;
		c->other_cached = other > 0 && other <= desc->ncached;
		c->other_cacheoff = c->other_cached ? desc->cols[other - 1].cacheoff : 0;
		if (!c->cached &&
			(later > walk_end || fixed_between(desc, walk_from, later - 1) >= AP_PREFILTER_MAX_STEPS))
			continue;
		others[n] = other;
		if (later > upto)
			upto = later;
		n++;
	}
	if (n == 0)
		return NULL;
	/* sort the pairs' other attnos along (insertion sort: at most 8) */
	for (int i = 1; i < n; i++)
	{
		for (int j = i; j > 0 && cmp_check(&checks[j - 1], &checks[j]) > 0; j--)
		{
			ApPrefilterCheck t = checks[j];
			int			o = others[j];

			checks[j] = checks[j - 1];
			checks[j - 1] = t;
			others[j] = others[j - 1];
			others[j - 1] = o;
		}
	}

	/* at most one step per attribute of the walk */
	nsteps = upto > walk_from ? upto - walk_from : 0;
	pf = calloc(1, sizeof(ApPrefilter) + sizeof(ApPrefilterStep) * (size_t) (nsteps > 0 ? nsteps : 1));
	if (pf == NULL)
		return NULL;
	memcpy(pf->checks, checks, sizeof(checks[0]) * (size_t) n);
	pf->nchecks = n;
	pf->upto = upto;
	if (walk_from > 0)
		pf->walk_off = desc->cols[walk_from - 1].cacheoff +
			(uint32_t) desc->cols[walk_from - 1].attlen;
	for (int i = 0; i < n; i++)
	{
		if (pf->checks[i].cached)
			pf->ncached = i + 1;
		if (pf->checks[i].pair && !pf->checks[i].other_cached)
		{
			/* the step that reads the other column: one per fixed attribute before it */
			pf->checks[i].other_step = fixed_between(desc, walk_from, others[i] - 1);
			pf->has_pairs = true;
		}
	}
	for (int a = walk_from, nvar = 0; a < upto; a++)
	{
		const ApColumn *col = &desc->cols[a];
		ApPrefilterStep *st;

		if (col->attlen == -1)
		{
			nvar++;
			continue;
		}
		/* upto is a checked, fixed-length attribute: every walk ends with a step */
		st = &pf->steps[pf->nsteps++];
		st->nvarlena = (uint16_t) nvar;
		st->attlen = col->attlen;
		st->alignmask = (uint8_t) align_mask(col->attalign);
		st->attno = a + 1;
		st->check = -1;
		for (int k = pf->ncached; k < n; k++)
		{
			if (pf->checks[k].attno == a + 1)
			{
				st->check = (int8_t) k;
				break;
			}
		}
		nvar = 0;
	}
	pf->single = pf->ncached == 0 && pf->nchecks == 1 && pf->nsteps == 1 &&
		pf->steps[0].check == 0 && !pf->checks[0].pair;
	return pf;
}
