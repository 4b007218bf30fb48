/*
 * bloom.h
 *	  The disk's side of the Bloom semi-join (diskd/bloom.c): compile the
 *	  filters of a Program and probe a tuple's join keys against them.
 *
 * Layout, hash and key normalization are proto/ap_bloom.h, the same header
 * the host builds filters with.  A pure layer: no allocation per tuple, no
 * blocking, never an error per tuple.  A key the disk cannot encode exactly
 * (an external TOAST value, lz4, a compressed value larger than the scratch
 * space) passes: the filter only ever saves work, PostgreSQL's join above
 * decides.  A NULL key never passes (the join's equality is strict).
 */
#ifndef DISKD_BLOOM_H
#define DISKD_BLOOM_H

#include "ap_bloom.h"
#include "diskd.h"

/* Scratch for decompressing one inline pglz key value. */
#define AP_BLOOM_SCRATCH_BYTES		(64u * 1024u)

/* One compiled BloomFilter. */
typedef struct ApBloomProbe
{
	const unsigned char *bits;	/* points into the request (valid for the scan) */
	uint32_t	nblocks;
	uint32_t	nhashes;
	uint64_t	seed;
	int			nkeys;
	int			attnos[AP_BLOOM_KEYS_MAX];	/* key columns, 1-based */
	uint8_t		kinds[AP_BLOOM_KEYS_MAX];	/* ApTypeKind of each */
	uint64_t	tested;			/* tuples probed against this filter */
	uint64_t	dropped;		/* tuples this filter dropped */
} ApBloomProbe;

/* All filters of one scan. */
typedef struct ApBloomSet
{
	ApBloomProbe filters[AP_BLOOM_FILTERS_MAX];
	int			nfilters;
	int			max_attno;		/* highest key column: deform this far first */
	unsigned char *scratch;		/* AP_BLOOM_SCRATCH_BYTES, NULL if no varlena key */
	char		error[256];		/* why compilation failed */
} ApBloomSet;

/*
 * Compile Program.blooms against the tuple descriptor into set (which the
 * caller zeroed).  Returns 0 or an ApErrCode (AP_ERR_BAD_REQUEST,
 * AP_ERR_UNSUPPORTED, AP_ERR_OUT_OF_MEMORY) with set->error.  Checks sizes,
 * k, key count, attribute numbers and kinds.
 */
int			ap_bloom_compile(const ActivePg__Program *msg, const ApTupleDesc *desc,
							 ApBloomSet *set);
void		ap_bloom_free(ApBloomSet *set);

/*
 * May the tuple join?  values[i] = attnum i+1, deformed at least up to
 * set->max_attno.  False: some filter certainly rejects the keys.
 */
bool		ap_bloom_pass(ApBloomSet *set, const ApValue *values);

#endif							/* DISKD_BLOOM_H */
