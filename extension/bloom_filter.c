/*
 * bloom_filter.c
 *	  The host's half of the Bloom filter itself (proto/ap_bloom.h is the
 *	  other, shared with the disks): how large a filter is and how many hash
 *	  functions it gets for a number of keys, and how a key column's value
 *	  is hashed.  The planner (bloom_keys.c), the executor (bloom_exec.c),
 *	  EXPLAIN (bloom_explain.c) and the measurement (bloom_measure.c) all
 *	  size and hash through here, so what EXPLAIN shows is what is built
 *	  and what the host inserts is what the disks probe.
 *
 *	  Sizing a filter tries every number of hash functions over a Poisson
 *	  sum (ap_bloom.h): some 60,000 instructions for a new number of keys,
 *	  and a session's first plan of a query with filters sizes each of them
 *	  anew.  The answers are a pure function of (keys, cap, fixed size), so
 *	  when the library is preloaded they are kept in a small table in
 *	  shared memory that every backend reads and fills: a new session's
 *	  plans and executions find the sizes the sessions before worked out.
 *	  The table only ever holds what the computation returns, so no plan
 *	  or filter depends on whether an answer was found there.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/date.h"

#include "bloomjoin.h"

/*
 * The shared table of sizes: open addressing over AP_GEOMETRY_SLOTS slots,
 * a key looked for at AP_GEOMETRY_PROBES places from its hash's; a new
 * answer takes the first empty one of them or, all taken, its home slot.
 * One LWLock: readers share it for a few comparisons, writers hold it for
 * one slot's copy.
 */
#define AP_GEOMETRY_SLOTS		1024
#define AP_GEOMETRY_PROBES		8
#define AP_GEOMETRY_TRANCHE		"active_pg bloom sizes"

typedef struct ApGeometryKey
{
	double		nkeys;
	int32		max_bytes;
	int32		fixed_bytes;
} ApGeometryKey;

typedef struct ApGeometrySlot
{
	ApGeometryKey key;
	uint32		len;			/* 0: the slot is empty */
	uint32		k;
	double		fpr;
} ApGeometrySlot;

typedef struct ApGeometryTable
{
	LWLock	   *lock;
	ApGeometrySlot slots[AP_GEOMETRY_SLOTS];
} ApGeometryTable;

static ApGeometryTable *ap_geometry_table = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

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

/* Filter geometry, computed (see bloomjoin.h). */
static void
ap_bloom_geometry_compute(double nkeys, int max_bytes, int fixed_bytes, uint32 *len, uint32 *k)
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

/* The home slot of a key in the shared table. */
static uint32
ap_geometry_home(const ApGeometryKey *key)
{
	return hash_bytes((const unsigned char *) key, sizeof(ApGeometryKey)) % AP_GEOMETRY_SLOTS;
}

/* Look key up in the shared table; true (and the answer) if it is there. */
static bool
ap_geometry_find(const ApGeometryKey *key, uint32 home, uint32 *len, uint32 *k, double *fpr)
{
	bool		found = false;

	LWLockAcquire(ap_geometry_table->lock, LW_SHARED);
	for (int i = 0; i < AP_GEOMETRY_PROBES && !found; i++)
	{
		const ApGeometrySlot *slot =
			&ap_geometry_table->slots[(home + i) % AP_GEOMETRY_SLOTS];

		if (slot->len != 0 && memcmp(&slot->key, key, sizeof(ApGeometryKey)) == 0)
		{
			*len = slot->len;
			*k = slot->k;
			*fpr = slot->fpr;
			found = true;
		}
	}
	LWLockRelease(ap_geometry_table->lock);
	return found;
}

/* Keep an answer in the shared table (see the table's comment). */
static void
ap_geometry_keep(const ApGeometryKey *key, uint32 home, uint32 len, uint32 k, double fpr)
{
	ApGeometrySlot *slot = &ap_geometry_table->slots[home];

	LWLockAcquire(ap_geometry_table->lock, LW_EXCLUSIVE);
	for (int i = 0; i < AP_GEOMETRY_PROBES; i++)
	{
		ApGeometrySlot *s = &ap_geometry_table->slots[(home + i) % AP_GEOMETRY_SLOTS];

		if (s->len == 0 || memcmp(&s->key, key, sizeof(ApGeometryKey)) == 0)
		{
			slot = s;
			break;
		}
	}
	slot->key = *key;
	slot->len = len;
	slot->k = k;
	slot->fpr = fpr;
	LWLockRelease(ap_geometry_table->lock);
}

/* Filter geometry (see bloomjoin.h). */
void
ApBloomGeometry(double nkeys, int max_bytes, int fixed_bytes, uint32 *len, uint32 *k,
				double *fpr)
{
	ApGeometryKey key;
	uint32		home = 0;
	double		rate;

	if (ap_geometry_table != NULL)
	{
		/* padding and all: the key is compared and hashed as bytes */
		memset(&key, 0, sizeof(key));
		key.nkeys = nkeys;
		key.max_bytes = max_bytes;
		key.fixed_bytes = fixed_bytes;
		home = ap_geometry_home(&key);
		if (ap_geometry_find(&key, home, len, k, &rate))
		{
			if (fpr != NULL)
				*fpr = rate;
			return;
		}
	}
	ap_bloom_geometry_compute(nkeys, max_bytes, fixed_bytes, len, k);
	if (ap_geometry_table == NULL && fpr == NULL)
		return;
	rate = ap_bloom_fpr_len(nkeys, *len, *k);
	if (ap_geometry_table != NULL)
		ap_geometry_keep(&key, home, *len, *k, rate);
	if (fpr != NULL)
		*fpr = rate;
}

/* shmem_request_hook: the table of sizes and its lock. */
static void
ap_geometry_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(ApGeometryTable)));
	RequestNamedLWLockTranche(AP_GEOMETRY_TRANCHE, 1);
}

/* shmem_startup_hook: attach (or create, empty) the table of sizes. */
static void
ap_geometry_shmem_startup(void)
{
	bool		found;
	ApGeometryTable *table;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	table = ShmemInitStruct("active_pg bloom sizes", sizeof(ApGeometryTable), &found);
	if (!found)
	{
		memset(table, 0, sizeof(ApGeometryTable));
		table->lock = &(GetNamedLWLockTranche(AP_GEOMETRY_TRANCHE))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
	ap_geometry_table = table;
}

/* Install the table's shared memory hooks; from _PG_init while preloading. */
void
ApBloomShmemRequest(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ap_geometry_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ap_geometry_shmem_startup;
}
