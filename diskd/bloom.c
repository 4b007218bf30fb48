/*
 * bloom.c
 *	  Probe tuples against the Bloom filters of a join's small side.
 *
 * Rules of this file:
 *   - The filter bits, hash and key encoding are proto/ap_bloom.h, compiled
 *     here and in the extension, so a key the host inserted always passes.
 *   - Every field of every BloomFilter is checked at compile time; the
 *     per-tuple path then trusts the compiled form and never fails.
 *   - Keys are columns of the scanned relation (Expr.var) whose stored kind
 *     is the one the host states; the kinds the filter encodes are those of
 *     ap_bloom.h: int2/int4/int8, date, numeric, text, varchar, bpchar.
 *   - Whatever cannot be encoded exactly passes (see bloom.h); a NULL key is
 *     dropped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"

/* Tuples ap_bloom_first_batch hashes before it probes them. */
#define BLOOM_BATCH		64

/* Can a key of this kind be encoded as ap_bloom.h defines? */
static bool
bloom_kind_ok(uint32_t kind)
{
	switch (kind)
	{
		case AP_TYPE_INT2:
		case AP_TYPE_INT4:
		case AP_TYPE_INT8:
		case AP_TYPE_DATE:
		case AP_TYPE_NUMERIC:
		case AP_TYPE_TEXT:
		case AP_TYPE_VARCHAR:
		case AP_TYPE_BPCHAR:
			return true;
		default:
			return false;
	}
}

static int	bloom_fail(ApBloomSet *set, int code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Record a compile error; returns code. */
static int
bloom_fail(ApBloomSet *set, int code, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(set->error, sizeof(set->error), fmt, ap);
	va_end(ap);
	return code;
}

/* Compile one filter; 0 or an ApErrCode with set->error. */
static int
bloom_compile_one(const ActivePg__BloomFilter *bf, size_t i, const ApTupleDesc *desc,
				  ApBloomSet *set, bool *varlena)
{
	ApBloomProbe *p = &set->filters[set->nfilters];
	bool		fixed = true;

	if (!ap_bloom_len_valid(bf->bits.len) || bf->bits.len > AP_BLOOM_BYTES_MAX)
		return bloom_fail(set, AP_ERR_BAD_REQUEST,
						  "blooms[%zu].bits: %zu bytes is not 8, 16, 32 or a positive multiple of %u up to %u",
						  i, bf->bits.len, AP_BLOOM_BLOCK_BYTES, AP_BLOOM_BYTES_MAX);
	if (bf->nhashes < AP_BLOOM_HASHES_MIN || bf->nhashes > AP_BLOOM_HASHES_MAX)
		return bloom_fail(set, AP_ERR_BAD_REQUEST, "blooms[%zu].nhashes: %u is not in %d..%d",
						  i, bf->nhashes, AP_BLOOM_HASHES_MIN, AP_BLOOM_HASHES_MAX);
	if (bf->n_keys == 0 || bf->n_keys > AP_BLOOM_KEYS_MAX || bf->n_key_kinds != bf->n_keys)
		return bloom_fail(set, AP_ERR_BAD_REQUEST,
						  "blooms[%zu].keys: %zu keys with %zu kinds (1..%d keys, one kind each)",
						  i, bf->n_keys, bf->n_key_kinds, AP_BLOOM_KEYS_MAX);

	p->bits = bf->bits.data;
	p->nblocks = ap_bloom_nblocks(bf->bits.len);
	p->log2bits = ap_bloom_block_log2(bf->bits.len);
	p->nhashes = bf->nhashes;
	p->seed = bf->seed;
	p->nkeys = (int) bf->n_keys;
	p->tested = p->dropped = p->alone = 0;
	for (size_t j = 0; j < bf->n_keys; j++)
	{
		const ActivePg__Expr *e = bf->keys[j];
		uint32_t	kind = bf->key_kinds[j];
		int			attno;

		if (e == NULL || e->node_case != ACTIVE_PG__EXPR__NODE_VAR)
			return bloom_fail(set, AP_ERR_UNSUPPORTED, "blooms[%zu].keys[%zu]: only columns are supported as keys",
							  i, j);
		attno = e->var;
		if (attno < 1 || attno > desc->natts || desc->cols[attno - 1].attisdropped)
			return bloom_fail(set, AP_ERR_BAD_REQUEST, "blooms[%zu].keys[%zu]: attribute %d does not exist",
							  i, j, attno);
		if (!bloom_kind_ok(kind))
			return bloom_fail(set, AP_ERR_UNSUPPORTED, "blooms[%zu].key_kinds[%zu]: kind %u cannot be hashed",
							  i, j, kind);
		if (desc->cols[attno - 1].type_kind != kind)
			return bloom_fail(set, AP_ERR_BAD_REQUEST,
							  "blooms[%zu].key_kinds[%zu]: kind %u differs from attribute %d's kind %u",
							  i, j, kind, attno, desc->cols[attno - 1].type_kind);
		if (AP_KIND_ATTLEN(kind) != desc->cols[attno - 1].attlen)
			return bloom_fail(set, AP_ERR_BAD_REQUEST,
							  "blooms[%zu].keys[%zu]: attribute %d's length %d does not fit kind %u",
							  i, j, attno, desc->cols[attno - 1].attlen, kind);
		if (AP_KIND_ATTLEN(kind) < 0)
			*varlena = true;
		p->attnos[j] = attno;
		p->kinds[j] = (uint8_t) kind;
		p->keyoff[j] = attno <= desc->ncached ? desc->cols[attno - 1].cacheoff : 0;
		if (attno > desc->ncached || AP_KIND_ATTLEN(kind) <= 0)
			fixed = false;
		if (attno > set->max_attno)
			set->max_attno = attno;
	}
	p->h0 = ap_bloom_seed_state(p->seed);
	p->fixed = fixed;
	set->nfilters++;
	return 0;
}

/* Compile Program.blooms (see bloom.h). */
int
ap_bloom_compile(const ActivePg__Program *msg, const ApTupleDesc *desc, ApBloomSet *set)
{
	bool		varlena = false;

	set->nfilters = 0;
	set->max_attno = 0;
	set->fixed = false;
	set->measure = false;
	set->scratch = NULL;
	set->error[0] = '\0';
	if (msg == NULL || msg->n_blooms == 0)
		return 0;
	set->measure = msg->bloom_measure;
	if (msg->n_blooms > AP_BLOOM_FILTERS_MAX)
		return bloom_fail(set, AP_ERR_BAD_REQUEST, "blooms: %zu filters exceed the maximum of %d",
						  msg->n_blooms, AP_BLOOM_FILTERS_MAX);
	for (size_t i = 0; i < msg->n_blooms; i++)
	{
		int			rc;

		if (msg->blooms[i] == NULL)
			return bloom_fail(set, AP_ERR_BAD_REQUEST, "blooms[%zu]: missing", i);
		rc = bloom_compile_one(msg->blooms[i], i, desc, set, &varlena);
		if (rc != 0)
			return rc;
	}
	set->fixed = true;
	for (int i = 0; i < set->nfilters; i++)
		set->fixed &= set->filters[i].fixed;
	if (varlena)
	{
		set->scratch = malloc(AP_BLOOM_SCRATCH_BYTES);
		if (set->scratch == NULL)
			return bloom_fail(set, AP_ERR_OUT_OF_MEMORY, "blooms: out of memory");
	}
	return 0;
}

/* Release what ap_bloom_compile allocated. */
void
ap_bloom_free(ApBloomSet *set)
{
	free(set->scratch);
	set->scratch = NULL;
	set->nfilters = 0;
}

/* Add a stored int2/int4/int8/date key (kind) at p to the hash. */
static inline void
bloom_hash_fixed(ApBloomHash *st, uint8_t kind, const unsigned char *p)
{
	int64_t		v = ap_int_datum(kind, p);

	if (kind == AP_TYPE_DATE)
		ap_bloom_key_date(st, (int32_t) v);
	else
		ap_bloom_key_int(st, v);
}

/*
 * Add one key column to the hash.  Returns 1 if hashed, 0 for NULL, -1 if
 * the value cannot be encoded exactly here.
 */
static int
bloom_hash_value(ApBloomSet *set, ApBloomHash *st, uint8_t kind, const ApValue *v)
{
	const unsigned char *data;
	uint32_t	len;

	if (v->isnull)
		return 0;
	switch (kind)
	{
		case AP_TYPE_INT2:
		case AP_TYPE_INT4:
		case AP_TYPE_INT8:
		case AP_TYPE_DATE:
			bloom_hash_fixed(st, kind, v->ptr);
			return 1;
		default:
			break;
	}
	/* varlena kinds: inline pglz is decompressed, external values pass */
	if (ap_varlena_payload(v->ptr, set->scratch, AP_BLOOM_SCRATCH_BYTES, &data, &len) != AP_OK)
		return -1;
	switch (kind)
	{
		case AP_TYPE_NUMERIC:
			return ap_bloom_key_numeric(st, data, len) ? 1 : -1;
		case AP_TYPE_BPCHAR:
			ap_bloom_key_bpchar(st, data, len);
			return 1;
		default:
			ap_bloom_key_text(st, data, len);
			return 1;
	}
}

/* What one filter says of a tuple. */
typedef enum BloomVerdict
{
	BLOOM_PASS,					/* may join (or cannot be decided here) */
	BLOOM_DROP,					/* its key is certainly not in the filter */
	BLOOM_NULL					/* a NULL key: never joins */
} BloomVerdict;

/* Probe one filter. */
static inline BloomVerdict
bloom_verdict(ApBloomSet *set, const ApBloomProbe *p, const ApValue *values)
{
	ApBloomHash st;

	ap_bloom_hash_start(&st, p->h0);
	for (int j = 0; j < p->nkeys; j++)
	{
		int			rc = bloom_hash_value(set, &st, p->kinds[j], &values[p->attnos[j] - 1]);

		if (rc == 0)
			return BLOOM_NULL;
		if (rc < 0)
			return BLOOM_PASS;
	}
	return ap_bloom_probe_blocks(p->bits, p->nblocks, p->log2bits, p->nhashes,
								 ap_bloom_hash_final(&st)) ?
		BLOOM_PASS : BLOOM_DROP;
}

/* Probe the tuple against filters first.. in order; false at the first that drops it. */
static inline bool
bloom_pass_from(ApBloomSet *set, const ApValue *values, int first)
{
	for (int i = first; i < set->nfilters; i++)
	{
		ApBloomProbe *p = &set->filters[i];

		p->tested++;
		if (bloom_verdict(set, p, values) != BLOOM_PASS)
		{
			p->dropped++;
			return false;
		}
	}
	return true;
}

/* Probe the tuple against every filter (see bloom.h). */
bool
ap_bloom_pass(ApBloomSet *set, const ApValue *values)
{
	return bloom_pass_from(set, values, 0);
}

/* ... after the first (see bloom.h). */
bool
ap_bloom_pass_rest(ApBloomSet *set, const ApValue *values)
{
	return bloom_pass_from(set, values, 1);
}

/* The first filter's verdicts on a batch of tuples (see bloom.h). */
void
ap_bloom_first_batch(const ApBloomSet *set, const unsigned char *const *data, int n,
					 uint8_t *verdict)
{
	const ApBloomProbe *p = &set->filters[0];
	uint64_t	h[BLOOM_BATCH];

	for (int base = 0; base < n; base += BLOOM_BATCH)
	{
		int			m = n - base < BLOOM_BATCH ? n - base : BLOOM_BATCH;

		for (int i = 0; i < m; i++)
		{
			const unsigned char *d = data[base + i];
			ApBloomHash st;

			if (d == NULL)
				continue;
			ap_bloom_hash_start(&st, p->h0);
			for (int j = 0; j < p->nkeys; j++)
				bloom_hash_fixed(&st, p->kinds[j], d + p->keyoff[j]);
			h[i] = ap_bloom_hash_final(&st);
			/* the block of each: misses in flight together, not one per probe */
			__builtin_prefetch(p->bits + ((size_t) ap_bloom_block(h[i], p->nblocks) <<
										 (p->log2bits - 3)));
		}
		for (int i = 0; i < m; i++)
			verdict[base + i] = data[base + i] == NULL ? AP_BLOOM_UNKNOWN :
				ap_bloom_probe_blocks(p->bits, p->nblocks, p->log2bits, p->nhashes, h[i]) ?
				AP_BLOOM_PASSES : AP_BLOOM_DROPS;
	}
}

/* Count the first filter's verdict (see bloom.h). */
void
ap_bloom_count_first(ApBloomSet *set, bool passes)
{
	set->filters[0].tested++;
	if (!passes)
		set->filters[0].dropped++;
}

/* The one filter that rejects a dropped tuple (see bloom.h). */
int
ap_bloom_sole_rejection(ApBloomSet *set, const ApValue *values)
{
	int			sole = -1;

	for (int i = 0; i < set->nfilters; i++)
	{
		switch (bloom_verdict(set, &set->filters[i], values))
		{
			case BLOOM_PASS:
				break;
			case BLOOM_NULL:
				return -1;
			case BLOOM_DROP:
				if (sole >= 0)
					return -1;
				sole = i;
				break;
		}
	}
	return sole;
}

/* Per-filter counters into the scan's statistics (see bloom.h). */
void
ap_bloom_report(ApBloomSet *set, ActivePg__ScanStats *stats)
{
	if (set->nfilters == 0)
		return;
	for (int i = 0; i < set->nfilters; i++)
	{
		set->out_tested[i] = set->filters[i].tested;
		set->out_dropped[i] = set->filters[i].dropped;
		set->out_alone[i] = set->filters[i].alone;
	}
	stats->n_bloom_filter_tested = set->nfilters;
	stats->bloom_filter_tested = set->out_tested;
	stats->n_bloom_filter_dropped = set->nfilters;
	stats->bloom_filter_dropped = set->out_dropped;
	stats->n_bloom_filter_alone = set->nfilters;
	stats->bloom_filter_alone = set->out_alone;
	stats->bloom_alone_sampled = set->sampled;
}
