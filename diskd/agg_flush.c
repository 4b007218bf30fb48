/*
 * agg_flush.c
 *	  The disk aggregation's flush protocol: every group of the table encoded
 *	  as a partial row (its keys, then one state per aggregate in its datum
 *	  format, AP_AGG_STATE_KIND) and shipped in AggPartial frames of about
 *	  batch_bytes, after which the table starts again empty.  The host merges
 *	  the partial rows of all flushes and all disks with PostgreSQL's own
 *	  combine functions, so a group may be flushed any number of times.
 */
#include <stdlib.h>
#include <string.h>

#include "agg_internal.h"

/* Statistics for Done. */
void
ap_agg_stats(const ApAgg *a, uint64_t *groups_shipped, uint64_t *flushes,
			 uint64_t *stream_flushes)
{
	*groups_shipped = a->groups_shipped;
	*flushes = a->flushes;
	*stream_flushes = a->stream_flushes;
}


/*
 * Encode a state in its datum format (AP_AGG_STATE_KIND) into p, or point
 * *ptr at the stored datum (varlena min/max).  Returns the datum's length.
 */
static uint32_t
encode_state(const AggSpec *sp, const AggState *s, unsigned char *p,
			 const unsigned char **ptr)
{
	int			k = sp->state_kind;

	*ptr = p;
	if (sp->fn == AP_AGG_SUM && k == AP_TYPE_NUMERIC)
	{
		uint32_t	plen = ap_numeric_encode_fixed(&s->u.fx, p + 4);
		uint32_t	hdr = (plen + 4) << 2;	/* SET_VARSIZE, little-endian */

		memcpy(p, &hdr, 4);
		return plen + 4;
	}
	if (kind_varlena(k))
	{
		*ptr = s->u.v.datum;
		return s->u.v.len;
	}
	if (k == AP_TYPE_BOOL)
	{
		p[0] = s->u.b ? 1 : 0;
		return 1;
	}
	if (k == AP_TYPE_FLOAT4)
	{
		/* a sum accumulates in float; min/max keep the (exact) double */
		float		f = sp->fn == AP_AGG_SUM ? s->u.f4 : (float) s->u.f8;

		memcpy(p, &f, 4);
		return 4;
	}
	if (k == AP_TYPE_FLOAT8)
	{
		memcpy(p, &s->u.f8, 8);
		return 8;
	}
	switch (AP_KIND_ATTLEN(k))
	{
		case 2:
			{
				int16_t		x = (int16_t) s->u.i;

				memcpy(p, &x, 2);
				return 2;
			}
		case 4:
			{
				int32_t		x = (int32_t) s->u.i;

				memcpy(p, &x, 4);
				return 4;
			}
		default:
			memcpy(p, &s->u.i, 8);
			return 8;
	}
}

/* Slots ahead of the current one whose groups ap_agg_flush prefetches. */
#define AGG_FLUSH_PREFETCH		16

/* Point out_values[] at one group's keys and encoded states (in scratch). */
static int
group_values(ApAgg *a, AggGroup *g, unsigned char *scratch)
{
	const unsigned char *k = group_key(a, g);
	size_t		koff = 0;
	size_t		soff = 0;

	for (int i = 0; i < a->nkeys; i++)
	{
		ApValue    *v = &a->out_values[i];
		bool		isnull = k[koff++] != 0;

		v->isnull = isnull;
		v->ptr = NULL;
		v->len = 0;
		if (isnull)
			continue;
		v->ptr = k + koff;
		if (kind_varlena(a->key_kinds[i]))
		{
			uint32_t	hdr;

			memcpy(&hdr, k + koff, 4);
			v->len = hdr >> 2;
		}
		else
			v->len = (uint32_t) AP_KIND_ATTLEN(a->key_kinds[i]);
		koff += v->len;
	}
	for (int j = 0; j < a->nspecs; j++)
	{
		AggSpec    *sp = &a->specs[j];
		AggState   *s = &g->states[j];
		ApValue    *v = &a->out_values[a->nkeys + j];
		unsigned char *p = scratch + soff;

		v->isnull = !s->has;
		v->ptr = p;
		v->len = 0;
		if (!s->has)
			continue;
		v->len = encode_state(sp, s, p, &v->ptr);
		soff += 8 + AP_NUMERIC_FIXED_MAX_BYTES;
	}
	return 0;
}

/*
 * Ship every group through send (one AggPartial per batch_bytes of rows)
 * and empty the table.  memory_flush: the table filled up.  0 or -1 (the
 * send failed or out of memory; err set).
 */
int
ap_agg_flush(ApAgg *a, bool memory_flush, uint32_t batch_bytes, ApAggSendFn send, void *arg)
{
	ApRowBatchBuf	rows;
	unsigned char *scratch;
	ApTupleDesc desc;
	int			rc = 0;
	bool		early = ap_agg_stream_flush_starts(a);

	if (a->ngroups == 0)
		return 0;
	if (ap_rowbatch_init(&rows, batch_bytes + 4096) < 0)
		return -1;
	scratch = malloc((size_t) (a->nspecs + 1) * (8 + AP_NUMERIC_FIXED_MAX_BYTES));
	if (scratch == NULL)
	{
		ap_rowbatch_free(&rows);
		return -1;
	}
	desc.natts = a->nkeys + a->nspecs;
	desc.ncached = 0;
	desc.cols = a->out_cols;
	for (uint32_t i = 0; i < a->index_cap && rc == 0; i++)
	{
		AggGroup   *g = slot_group(a, i);

		/*
		 * The index is in hash order, the groups in the order they came: each
		 * group would be a cache miss of its own (TPC-H Q18's 375,000 groups
		 * per disk), so the groups a few slots ahead are loaded meanwhile.
		 */
		if (i + AGG_FLUSH_PREFETCH < a->index_cap)
		{
			const unsigned char *ahead = (const unsigned char *) slot_group(a, i + AGG_FLUSH_PREFETCH);

			if (ahead != NULL)
			{
				__builtin_prefetch(ahead);
				__builtin_prefetch(ahead + 64);
			}
		}
		if (g == NULL)
			continue;
		if (early)
			ap_agg_stream_shipped(a, g->hash);
		group_values(a, g, scratch);
		if (ap_rowbatch_append(&rows, &desc, a->out_project, desc.natts, a->out_values) < 0)
		{
			rc = -1;
			break;
		}
		if (rows.len >= batch_bytes)
		{
			rc = send(arg, rows.data, rows.len, rows.nrows, memory_flush);
			a->groups_shipped += rows.nrows;
			ap_rowbatch_reset(&rows);
		}
	}
	if (rc == 0 && rows.nrows > 0)
	{
		rc = send(arg, rows.data, rows.len, rows.nrows, memory_flush);
		a->groups_shipped += rows.nrows;
	}
	ap_rowbatch_free(&rows);
	free(scratch);

	ap_agg_table_clear(a);
	if (early)
		a->stream_flushes++;
	else if (memory_flush)
		a->flushes++;
	return rc;
}
