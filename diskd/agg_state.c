/*
 * agg_state.c
 *	  The disk aggregation's state transitions (see agg_compile.c for the rules): the
 *	  new state of one aggregate given its current one and a tuple's
 *	  argument, exactly as PostgreSQL's transition function would leave it,
 *	  or AP_FALLBACK where PostgreSQL would raise an error or the disk cannot
 *	  be exact.  Split from agg_table.c, which finds the groups.
 */
#include <math.h>
#include <string.h>

#include "agg_internal.h"

/* Bytes of a bpchar payload without trailing spaces (bcTruelen). */
static uint32_t
bpchar_truelen(const unsigned char *p, uint32_t len)
{
	while (len > 0 && p[len - 1] == ' ')
		len--;
	return len;
}

/* Three-way compare of two varlena datums of kind k; AP_FALLBACK if undecodable. */
static ApStatus
cmp_varlena(int k, const unsigned char *x, uint32_t xl, const unsigned char *y, uint32_t yl,
			int *c)
{
	if (k == AP_TYPE_NUMERIC)
	{
		ApNumeric	nx,
					ny;

		if (ap_numeric_decode(x, xl, &nx) != AP_OK || ap_numeric_decode(y, yl, &ny) != AP_OK)
			return AP_FALLBACK;
		*c = ap_numeric_cmp(&nx, &ny);
		return AP_OK;
	}
	if (k == AP_TYPE_BPCHAR)
	{
		xl = bpchar_truelen(x, xl);
		yl = bpchar_truelen(y, yl);
	}
	/* varstr_cmp under C collation: memcmp, then the shorter first */
	*c = memcmp(x, y, xl < yl ? xl : yl);
	if (*c == 0 && xl != yl)
		*c = xl < yl ? -1 : 1;
	else
		*c = *c < 0 ? -1 : *c > 0;
	return AP_OK;
}

/*
 * The new state of spec sp given the current one (cur, may be !has) and
 * this tuple's argument v.  AP_FALLBACK where PostgreSQL would error or the
 * disk cannot be exact.
 */
ApStatus
ap_agg_next_state(const ApAgg *a, const AggSpec *sp, const AggState *cur, const ApVal *v,
		   bool isnull, AggNext *nx)
{
	nx->st = *cur;
	nx->vdatum = NULL;
	switch (sp->fn)
	{
		case AP_AGG_COUNT_STAR:
			nx->st.has = true;
			nx->st.u.i = (cur->has ? cur->u.i : 0) + 1;
			return AP_OK;
		case AP_AGG_COUNT:
			if (isnull)
			{
				nx->touch = false;
				return AP_OK;
			}
			nx->st.has = true;
			nx->st.u.i = (cur->has ? cur->u.i : 0) + 1;
			return AP_OK;
		default:
			break;
	}
	if (isnull)
	{
		nx->touch = false;
		return AP_OK;
	}
	nx->st.has = true;

	switch (sp->fn)
	{
		case AP_AGG_SUM:
			if (sp->state_kind == AP_TYPE_NUMERIC)
			{
				ApFixed		x;

				if (sp->arg_kind == AP_TYPE_NUMERIC)
				{
					ApNumSpecial spc = AP_NUM_FINITE;

					/* NaN and infinities (and values beyond 38 digits) go to the host */
					if (v->nform == AP_NF_FIXED)
						x = v->u.fx;
					else if (v->nform != AP_NF_DATUM ||
							 ap_numeric_payload_fixed(v->u.s.p, v->u.s.len, &x, &spc) != AP_OK ||
							 spc != AP_NUM_FINITE)
						return AP_FALLBACK;
				}
				else
				{
					x.coef = v->u.i;
					x.dscale = 0;
				}
				if (!cur->has)
					nx->st.u.fx = x;
				else if (cur->u.fx.dscale == x.dscale)
				{
					/* the usual case (one column's scale); two below 10^38 may pass 2^127 */
					ap_i128		r;
					ap_u128		mag;

					if (__builtin_add_overflow(cur->u.fx.coef, x.coef, &r))
						return AP_FALLBACK;
					mag = r < 0 ? -(ap_u128) r : (ap_u128) r;
					if (mag >= a->fixed_bound)
						return AP_FALLBACK;
					nx->st.u.fx.coef = r;
					nx->st.u.fx.dscale = x.dscale;
				}
				else if (ap_fixed_add(&cur->u.fx, &x, false, &nx->st.u.fx) != AP_OK)
					return AP_FALLBACK;
				return AP_OK;
			}
			if (sp->state_kind == AP_TYPE_FLOAT8)
			{
				double		x;
				double		r;

				x = sp->widen ? (double) v->u.f4 : v->u.f8;
				r = cur->has ? cur->u.f8 + x : x;
				/* float8pl's overflow error: the host raises it */
				if (cur->has && isinf(r) && !isinf(cur->u.f8) && !isinf(x))
					return AP_FALLBACK;
				nx->st.u.f8 = r;
				return AP_OK;
			}
			else
			{
				float		x = v->u.f4;
				float		r;

				r = cur->has ? cur->u.f4 + x : x;
				if (cur->has && isinf(r) && !isinf(cur->u.f4) && !isinf(x))
					return AP_FALLBACK;
				nx->st.u.f4 = r;
				return AP_OK;
			}
		case AP_AGG_MIN:
		case AP_AGG_MAX:
			{
				int			k = sp->arg_kind;
				int			c = 0;
				bool		better;

				if (kind_varlena(k))
				{
					const unsigned char *data;
					uint32_t	len;

					val_payload(v, nx->nbuf, &data, &len);
					if (cur->has &&
						cmp_varlena(k, data, len, cur->u.v.datum + 4, cur->u.v.len - 4, &c) != AP_OK)
						return AP_FALLBACK;
					better = !cur->has || (sp->fn == AP_AGG_MIN ? c < 0 : c > 0);
					if (better)
					{
						nx->vdatum = data;
						nx->vlen = len;
					}
					else
						nx->touch = false;
					return AP_OK;
				}
				if (k == AP_TYPE_FLOAT4 || k == AP_TYPE_FLOAT8)
				{
					double		x = k == AP_TYPE_FLOAT4 ? (double) v->u.f4 : v->u.f8;

					if (cur->has)
						c = ap_vm_cmp_double(x, cur->u.f8);
					better = !cur->has || (sp->fn == AP_AGG_MIN ? c < 0 : c > 0);
					if (better)
						nx->st.u.f8 = x;
				}
				else
				{
					int64_t		x = v->u.i;

					if (cur->has)
						c = x < cur->u.i ? -1 : x > cur->u.i;
					better = !cur->has || (sp->fn == AP_AGG_MIN ? c < 0 : c > 0);
					if (better)
						nx->st.u.i = x;
				}
				if (!better)
					nx->touch = false;
				return AP_OK;
			}
		case AP_AGG_BOOL_AND:
			nx->st.u.b = (cur->has ? cur->u.b : true) && v->u.i != 0;
			return AP_OK;
		case AP_AGG_BOOL_OR:
			nx->st.u.b = (cur->has ? cur->u.b : false) || v->u.i != 0;
			return AP_OK;
		default:
			return AP_FALLBACK;
	}
}

