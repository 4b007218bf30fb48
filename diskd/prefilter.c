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

/* Does one of the n checks read attribute attno as a numeric? */
static bool
numeric_checked(const ApPrefilterCheck *checks, int n, int attno)
{
	for (int i = 0; i < n; i++)
	{
		if (checks[i].numeric && checks[i].attno == attno)
			return true;
	}
	return false;
}

/* The index of the walk's step that reads attribute attno (one exists). */
static int
step_of(const ApPrefilter *pf, int attno)
{
	for (int i = 0; i < pf->nsteps; i++)
	{
		if (pf->steps[i].attno == attno)
			return i;
	}
	return -1;
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
		c->rank = i;
		c->mask = r->mask;
		if (other > later)
		{
			/* read at the later column: cmp(later, other) mirrors the sign bits */
			later = r->attno2;
			other = r->attno;
			c->mask = (uint8_t) ((r->mask & 2) | ((r->mask & 1) << 2) | ((r->mask & 4) >> 2));
		}
		c->attno = later;
		if (r->type_kind == AP_TYPE_NUMERIC)
		{
			/* a numeric is read where the walk reaches it, never at a cached offset */
			if (other > 0 || desc->cols[later - 1].attlen != -1 || later <= desc->ncached ||
				later > walk_end ||
				fixed_between(desc, walk_from, later - 1) >= AP_PREFILTER_MAX_STEPS)
				continue;
			c->numeric = true;
			c->nscale = r->nscale;
			c->lo_open = r->lo_open;
			c->hi_open = r->hi_open;
			c->lo = r->lo;
			c->hi = r->hi;
			others[n] = 0;
			if (later > upto)
				upto = later;
			n++;
			continue;
		}
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
	}
	for (int a = walk_from, nvar = 0; a < upto; a++)
	{
		const ApColumn *col = &desc->cols[a];
		ApPrefilterStep *st;

		/* a varlena is a step of its own only where a numeric check reads it */
		if (col->attlen == -1 && !numeric_checked(pf->checks, n, a + 1))
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
	for (int i = pf->ncached; i < n; i++)
	{
		pf->checks[i].step = step_of(pf, pf->checks[i].attno);
		/* the step that reads a pair's other column */
		if (pf->checks[i].pair && !pf->checks[i].other_cached)
			pf->checks[i].other_step = step_of(pf, others[i]);
		/* the walked checks in the filter's order (insertion by rank) */
		{
			int			j = pf->norder++;

			for (; j > 0 && pf->checks[pf->order[j - 1]].rank > pf->checks[i].rank; j--)
				pf->order[j] = pf->order[j - 1];
			pf->order[j] = i;
		}
	}
	pf->single = pf->ncached == 0 && pf->nchecks == 1 && pf->nsteps == 1 &&
		pf->steps[0].check == 0 && !pf->checks[0].pair && pf->steps[0].attlen > 0;
	return pf;
}
