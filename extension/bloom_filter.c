/*
 * bloom_filter.c
 *	  The host's half of the Bloom filter itself (proto/ap_bloom.h is the
 *	  other, shared with the disks): how large a filter is and how many hash
 *	  functions it gets for a number of keys, and how a key column's value
 *	  is hashed.  The planner (bloom_keys.c), the executor (bloom_exec.c),
 *	  EXPLAIN (bloom_explain.c) and the measurement (bloom_measure.c) all
 *	  size and hash through here, so what EXPLAIN shows is what is built
 *	  and what the host inserts is what the disks probe.
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/date.h"

#include "bloomjoin.h"

/* Add one key column's value to the hash, as the disks hash it (see bloomjoin.h). */
void
ApBloomHashDatum(ApBloomHash *st, int kind, Datum d)
{
	struct varlena *v;

	switch (kind)
	{
		case AP_TYPE_INT2:
			ap_bloom_key_int(st, DatumGetInt16(d));
			return;
		case AP_TYPE_INT4:
			ap_bloom_key_int(st, DatumGetInt32(d));
			return;
		case AP_TYPE_INT8:
			ap_bloom_key_int(st, DatumGetInt64(d));
			return;
		case AP_TYPE_DATE:
			ap_bloom_key_date(st, DatumGetDateADT(d));
			return;
		case AP_TYPE_NUMERIC:
		case AP_TYPE_TEXT:
		case AP_TYPE_VARCHAR:
		case AP_TYPE_BPCHAR:
			break;
		default:
			elog(ERROR, "Bloom filter key of kind %d", kind);
	}
	/* compressed or external values are expanded in the per-row context */
	v = PG_DETOAST_DATUM_PACKED(d);
	if (kind == AP_TYPE_NUMERIC)
	{
		if (!ap_bloom_key_numeric(st, (const unsigned char *) VARDATA_ANY(v),
								  VARSIZE_ANY_EXHDR(v)))
			elog(ERROR, "numeric key in an unexpected format");
	}
	else if (kind == AP_TYPE_BPCHAR)
		ap_bloom_key_bpchar(st, (const unsigned char *) VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
	else
		ap_bloom_key_text(st, (const unsigned char *) VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
}

/* A row's key columns into a running hash (see bloomjoin.h). */
bool
ApBloomHashKeys(ApBloomHash *st, TupleTableSlot *slot, int nkeys, const int *at,
				const int *kinds)
{
	for (int k = 0; k < nkeys; k++)
	{
		if (slot->tts_isnull[at[k]])
			return false;
		ApBloomHashDatum(st, kinds[k], slot->tts_values[at[k]]);
	}
	return true;
}

/* Filter geometry (see bloomjoin.h). */
void
ApBloomGeometry(double nkeys, int max_bytes, int fixed_bytes, uint32 *len, uint32 *k)
{
	uint32		nblocks;

	if (fixed_bytes > 0)
	{
		*len = (uint32) fixed_bytes;
		*k = ap_bloom_best_k_len(Max(nkeys, 1.0), *len);
		return;
	}
	ap_bloom_size(nkeys, (uint64) max_bytes, AP_BLOOM_TARGET_FPR, &nblocks, k);
	/*
	 * Bits are free while the filter stays in the CPU cache
	 * (AP_BLOOM_CACHED_BYTES; half of it, the scan's own data shares the
	 * cache), false passes are not: a small key set gets that many bytes,
	 * with no more hash functions than its target size wanted (every probe
	 * pays for each).
	 */
	if (nblocks * AP_BLOOM_BLOCK_BYTES < AP_BLOOM_CACHED_BYTES / 2 &&
		max_bytes >= AP_BLOOM_CACHED_BYTES / 2)
	{
		uint32		k_free;

		nblocks = AP_BLOOM_CACHED_BYTES / 2 / AP_BLOOM_BLOCK_BYTES;
		k_free = ap_bloom_best_k(Max(nkeys, 1.0), nblocks);
		*k = Min(*k, k_free);
	}
	*len = nblocks * AP_BLOOM_BLOCK_BYTES;
}
