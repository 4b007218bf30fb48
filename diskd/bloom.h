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
	uint32_t	log2bits;		/* bits per block: 512, or a narrow filter's 64..256 */
	uint32_t	nhashes;
	uint64_t	seed;
	uint64_t	h0;				/* ap_bloom_seed_state(seed), once per scan */
	int			nkeys;
	int			attnos[AP_BLOOM_KEYS_MAX];	/* key columns, 1-based */
	uint8_t		kinds[AP_BLOOM_KEYS_MAX];	/* ApTypeKind of each */
	bool		fixed;			/* every key an int2/int4/int8/date at a cached offset */
	uint32_t	keyoff[AP_BLOOM_KEYS_MAX];	/* with fixed: offsets in a tuple without nulls */
	uint64_t	tested;			/* tuples probed against this filter */
	uint64_t	dropped;		/* tuples this filter dropped */
	uint64_t	alone;			/* of those, dropped by it alone (Program.bloom_measure) */
} ApBloomProbe;

/* All filters of one scan. */
typedef struct ApBloomSet
{
	ApBloomProbe filters[AP_BLOOM_FILTERS_MAX];
	int			nfilters;
	int			max_attno;		/* highest key column: deform this far first */
	bool		fixed;			/* every filter's keys fixed (ap_bloom_first_batch) */
	unsigned char *scratch;		/* AP_BLOOM_SCRATCH_BYTES, NULL if no varlena key */
	bool		measure;		/* Program.bloom_measure */
	bool		sampled;		/* measure: some drops counted for others (scan_page.c) */
	/* ScanStats.bloom_filter_* point here (ap_bloom_report) */
	uint64_t	out_tested[AP_BLOOM_FILTERS_MAX];
	uint64_t	out_dropped[AP_BLOOM_FILTERS_MAX];
	uint64_t	out_alone[AP_BLOOM_FILTERS_MAX];
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
/* The same for the filters after the first, whose verdict the caller counted. */
bool		ap_bloom_pass_rest(ApBloomSet *set, const ApValue *values);

/* What ap_bloom_first_batch says of a tuple. */
#define AP_BLOOM_UNKNOWN	0	/* not decided: probe it with ap_bloom_pass */
#define AP_BLOOM_PASSES		1	/* the first filter passes it */
#define AP_BLOOM_DROPS		2	/* the first filter drops it */

/*
 * With set->fixed: the first filter's verdict on n tuples at once.
 * data[i] is tuple i's data area when it has no nulls and holds the key
 * columns at their cached offsets (ap_tuple_fixed_data), else NULL
 * (verdict AP_BLOOM_UNKNOWN).  The keys are hashed for the whole batch,
 * then probed: one tuple's hash is a chain of multiplies, a batch's are
 * independent and overlap.  Counts nothing (ap_bloom_count_first).
 */
void		ap_bloom_first_batch(const ApBloomSet *set, const unsigned char *const *data,
								 int n, uint8_t *verdict);
/* Count the first filter's verdict on one tuple, as ap_bloom_pass would. */
void		ap_bloom_count_first(ApBloomSet *set, bool passes);

/*
 * Program.bloom_measure, for a tuple ap_bloom_pass dropped: the index of the
 * one filter that rejects it, or -1 when several do or when the rejection is
 * a NULL key (never a candidate for a false positive).  Counts nothing; the
 * scan then checks Program.filter and counts filters[i].alone.
 */
int			ap_bloom_sole_rejection(ApBloomSet *set, const ApValue *values);

/*
 * Point stats->bloom_filter_tested/dropped/alone at this set's per-filter
 * counters (valid until ap_bloom_free).  Nothing without filters.
 */
void		ap_bloom_report(ApBloomSet *set, ActivePg__ScanStats *stats);

#endif							/* DISKD_BLOOM_H */
