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

ApPrefilter *
ap_prefilter_build(const ApProgram *prog, const ApTupleDesc *desc)
{
	ApPrefilterCheck checks[AP_MAX_RANGE_CHECKS];
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
		const ApColumn *col;
		ApPrefilterCheck *c = &checks[n];

		if (r->attno < 1 || r->attno > desc->natts)
			continue;
		col = &desc->cols[r->attno - 1];
		if (col->attlen != 2 && col->attlen != 4 && col->attlen != 8)
			continue;
		c->attno = r->attno;
		c->width = (uint8_t) col->attlen;
		c->cached = r->attno <= desc->ncached;
		c->cacheoff = c->cached ? col->cacheoff : 0;
		c->dom_lo = r->dom_lo;
		c->dom_hi = r->dom_hi;
		c->lo = r->lo;
		c->hi = r->hi;
		c->olo = r->olo;
		c->ohi = r->ohi;
		if (!c->cached && r->attno > walk_end)
			continue;
		if (r->attno > upto)
			upto = r->attno;
		n++;
	}
	if (n == 0)
		return NULL;
	qsort(checks, (size_t) n, sizeof(checks[0]), cmp_check);

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
		if (pf->checks[i].cached)
			pf->ncached = i + 1;
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
	return pf;
}
