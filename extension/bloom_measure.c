/*
 * bloom_measure.c
 *	  EXPLAIN ANALYZE of the Bloom semi-join: the measured false-positive
 *	  rate of each filter of an ActiveScan.
 *
 * Rules of this file:
 *   - Only under EXPLAIN ANALYZE (the scan is instrumented): then a build
 *     keeps, next to the filter, the exact set of the keys' normalized
 *     encodings (ap_bloom.h: values PostgreSQL's equality calls equal encode
 *     alike, and the encoding is self-delimiting, so equal encodings mean
 *     equal keys), and every row the disks ship is set against it: its key
 *     is in the set (a true match) or not (a false positive of the filter).
 *   - The disks probe the filters right after visibility, so rows a filter
 *     passed may still be dropped by a later filter or the disk filter and
 *     never reach the host.  The rate is therefore measured on the rows the
 *     filter alone decides: those every other filter and the disk filter
 *     pass.  Of these the host sees the ones the filter passed; the disks
 *     count the ones it dropped (ScanStats.bloom_filter_alone, under
 *     Program.bloom_measure).  measured fpr = false passes / (false passes +
 *     dropped alone), over non-NULL keys.  With one filter and no disk filter
 *     that is false passes / (rows tested - true matches - NULL keys).
 *   - Rows the disks hand back (fallback TIDs and blocks) are in neither
 *     count.  A filter is left unmeasured, with the reason, when a build
 *     could not keep its keys (over maintenance_work_mem, a key longer
 *     than AP_BLOOM_EXACT_WORDS_MAX words), when a key column was not
 *     shipped, or when a disk did not report per-filter counts.
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "active_pg.h"
#include "bloomjoin.h"

#define AP_BLOOM_EXACT_INITIAL		1024

/* A new, empty exact key set (see bloomjoin.h). */
ApBloomExactSet *
ApBloomExactCreate(void)
{
	ApBloomExactSet *set = palloc0(sizeof(ApBloomExactSet));

	set->limit = (Size) maintenance_work_mem * 1024;
	set->cap_keys = AP_BLOOM_EXACT_INITIAL;
	set->keys = MemoryContextAllocHuge(CurrentMemoryContext,
									   sizeof(ApBloomExactKey) * set->cap_keys);
	set->cap_words = AP_BLOOM_EXACT_INITIAL;
	set->words = MemoryContextAllocHuge(CurrentMemoryContext,
										sizeof(uint64) * set->cap_words);
	return set;
}

/* Give up keeping the set: free what it holds, say why. */
static void
ap_bloom_exact_give_up(ApBloomExactSet *set, const char *why)
{
	pfree(set->keys);
	pfree(set->words);
	set->keys = NULL;
	set->words = NULL;
	set->nkeys = set->cap_keys = 0;
	set->nwords = set->cap_words = 0;
	set->why = why;
}

/* Add one key (see bloomjoin.h). */
void
ApBloomExactAdd(ApBloomExactSet *set, uint64 hash, const uint64 *words, uint32 nwords)
{
	ApBloomExactKey *key;

	if (set->why != NULL)
		return;
	if (nwords > AP_BLOOM_EXACT_WORDS_MAX)
	{
		ap_bloom_exact_give_up(set, psprintf("a key is longer than %d bytes",
											 AP_BLOOM_EXACT_WORDS_MAX * 8));
		return;
	}
	if (set->nkeys == set->cap_keys || set->nwords + nwords > set->cap_words)
	{
		int64		cap_keys = set->nkeys == set->cap_keys ? set->cap_keys * 2 : set->cap_keys;
		int64		cap_words = set->cap_words;

		while (set->nwords + nwords > cap_words)
			cap_words *= 2;
		if ((Size) cap_keys * sizeof(ApBloomExactKey) + (Size) cap_words * sizeof(uint64) >
			set->limit)
		{
			ap_bloom_exact_give_up(set, "its key set exceeds maintenance_work_mem");
			return;
		}
		set->keys = repalloc_huge(set->keys, sizeof(ApBloomExactKey) * cap_keys);
		set->words = repalloc_huge(set->words, sizeof(uint64) * cap_words);
		set->cap_keys = cap_keys;
		set->cap_words = cap_words;
	}
	key = &set->keys[set->nkeys++];
	key->hash = hash;
	key->nwords = nwords;
	key->off = set->nwords;
	memcpy(set->words + set->nwords, words, sizeof(uint64) * nwords);
	set->nwords += nwords;
}

/* Order of keys: hash, then length, then the words. */
static int
ap_bloom_exact_cmp(const ApBloomExactKey *a, const ApBloomExactKey *b, const uint64 *words)
{
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->nwords != b->nwords)
		return a->nwords < b->nwords ? -1 : 1;
	return memcmp(words + a->off, words + b->off, sizeof(uint64) * a->nwords);
}

static int
ap_bloom_exact_qsort_cmp(const void *a, const void *b, void *arg)
{
	return ap_bloom_exact_cmp(a, b, arg);
}

/* Sort and deduplicate (see bloomjoin.h). */
void
ApBloomExactFinish(ApBloomExactSet *set)
{
	int64		n = 0;

	if (set->why != NULL || set->nkeys == 0)
		return;
	qsort_arg(set->keys, set->nkeys, sizeof(ApBloomExactKey), ap_bloom_exact_qsort_cmp,
			  set->words);
	for (int64 i = 0; i < set->nkeys; i++)
	{
		if (n > 0 && ap_bloom_exact_cmp(&set->keys[n - 1], &set->keys[i], set->words) == 0)
			continue;
		set->keys[n++] = set->keys[i];
	}
	set->nkeys = n;
}

/* Is the key (hash, words) in the set? */
static bool
ap_bloom_exact_contains(const ApBloomExactSet *set, uint64 hash, const uint64 *words,
						uint32 nwords)
{
	int64		lo = 0;
	int64		hi = set->nkeys;

	/* the first key with this hash */
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (set->keys[mid].hash < hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < set->nkeys && set->keys[lo].hash == hash; lo++)
	{
		const ApBloomExactKey *key = &set->keys[lo];

		if (key->nwords == nwords &&
			memcmp(set->words + key->off, words, sizeof(uint64) * nwords) == 0)
			return true;
	}
	return false;
}

/* Set a shipped row against the exact key sets (see bloomjoin.h). */
void
ApBloomMeasureRow(ApBloomState *bs, TupleTableSlot *raw, MemoryContext tmpcxt)
{
	MemoryContext oldcxt;
	bool		all_measured = true;
	bool		all_true = true;

	if (!bs->measure || !bs->shipped)
		return;
	oldcxt = MemoryContextSwitchTo(tmpcxt);
	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];
		uint64		words[AP_BLOOM_EXACT_WORDS_MAX];
		ApBloomHash st;
		bool		shipped = true;

		if (f->exact == NULL)
		{
			all_measured = false;
			continue;
		}
		ap_bloom_hash_init(&st, f->seed);
		st.capture = words;
		st.capture_cap = AP_BLOOM_EXACT_WORDS_MAX;
		for (int k = 0; k < f->nkeys && shipped; k++)
		{
			int			attno = f->attnos[k];

			/*
			 * A shipped key is never NULL (the filter drops NULL keys): a
			 * NULL here is a column the scan does not ship.
			 */
			if (attno > raw->tts_nvalid || raw->tts_isnull[attno - 1])
				shipped = false;
			else
				ApBloomHashDatum(&st, f->kinds[k], raw->tts_values[attno - 1]);
		}
		if (!shipped)
		{
			f->unmeasured = "a key column is not shipped";
			all_measured = false;
			continue;
		}
		/* longer than any key in the set: certainly not in it */
		if (st.nwords <= AP_BLOOM_EXACT_WORDS_MAX &&
			ap_bloom_exact_contains(f->exact, ap_bloom_hash_final(&st), words, st.nwords))
			f->true_passes++;
		else
		{
			f->false_passes++;
			all_true = false;
		}
	}
	MemoryContextSwitchTo(oldcxt);
	if (all_measured)
	{
		bs->rows_measured++;
		if (all_true)
			bs->true_all++;
	}
}

/* A disk's per-filter counters (see bloomjoin.h). */
void
ApBloomDiskStats(ApBloomState *bs, int disk, const ActivePg__ScanStats *st)
{
	bool		complete = st->n_bloom_filter_tested == (size_t) bs->nfilters &&
		st->n_bloom_filter_dropped == (size_t) bs->nfilters &&
		st->n_bloom_filter_alone == (size_t) bs->nfilters;

	if (!bs->shipped || disk < 0 || disk >= AP_NDISKS_MAX)
		return;
	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];

		if (f->disk_tested == NULL)
			continue;
		if (!complete)
		{
			f->unmeasured = "a disk did not report per-filter counts";
			continue;
		}
		f->disk_tested[disk] += st->bloom_filter_tested[i];
		f->disk_dropped[disk] += st->bloom_filter_dropped[i];
		f->disk_alone[disk] += st->bloom_filter_alone[i];
		f->alone_sampled |= st->bloom_alone_sampled;
	}
}

/* See bloomjoin.h: added to the slot, which a rescan's worker of the same number uses again. */
void
ApBloomStatsSave(const ApBloomState *bs, ApBloomSharedStats *out)
{
	out->nfilters = Min(bs->nfilters, AP_BLOOM_FILTERS_MAX);
	out->skipped_scans += bs->skipped_scans;
	out->rows_measured += bs->rows_measured;
	out->true_all += bs->true_all;
	for (int i = 0; i < out->nfilters; i++)
	{
		const ApBloomFilterState *f = &bs->filters[i];
		ApBloomSharedFilter *o = &out->filters[i];

		if (f->builds == 0)
			continue;
		o->builds += f->builds;
		o->keys = f->keys;
		o->distinct = f->distinct;
		o->len = f->len;
		o->nhashes = f->nhashes;
		o->true_passes += f->true_passes;
		o->false_passes += f->false_passes;
		o->unmeasured |= f->unmeasured != NULL;
		if (f->disk_tested == NULL)
			continue;
		o->has_disk = true;
		o->alone_sampled |= f->alone_sampled;
		for (int d = 0; d < AP_NDISKS_MAX; d++)
		{
			o->disk_tested[d] += f->disk_tested[d];
			o->disk_dropped[d] += f->disk_dropped[d];
			o->disk_alone[d] += f->disk_alone[d];
		}
	}
}

/* See bloomjoin.h. */
void
ApBloomStatsAdd(ApBloomState *bs, const ApBloomSharedStats *in)
{
	MemoryContext oldcxt;

	if (in->nfilters != bs->nfilters)
		return;					/* the worker built nothing (or another plan) */
	oldcxt = MemoryContextSwitchTo(bs->cxt);
	bs->skipped_scans += in->skipped_scans;
	bs->rows_measured += in->rows_measured;
	bs->true_all += in->true_all;
	for (int i = 0; i < in->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];
		const ApBloomSharedFilter *w = &in->filters[i];

		if (w->builds == 0)
			continue;
		/* the leader may not have built it: the worker's build describes it */
		if (f->builds == 0)
		{
			f->keys = w->keys;
			f->distinct = w->distinct;
			f->len = w->len;
			f->nhashes = w->nhashes;
		}
		f->builds += w->builds;
		f->true_passes += w->true_passes;
		f->false_passes += w->false_passes;
		if (w->unmeasured && f->unmeasured == NULL)
			f->unmeasured = "a parallel worker could not measure it";
		if (!w->has_disk)
			continue;
		if (f->disk_tested == NULL)
		{
			f->disk_tested = palloc0(sizeof(uint64) * AP_NDISKS_MAX);
			f->disk_dropped = palloc0(sizeof(uint64) * AP_NDISKS_MAX);
			f->disk_alone = palloc0(sizeof(uint64) * AP_NDISKS_MAX);
		}
		f->alone_sampled |= w->alone_sampled;
		for (int d = 0; d < AP_NDISKS_MAX; d++)
		{
			f->disk_tested[d] += w->disk_tested[d];
			f->disk_dropped[d] += w->disk_dropped[d];
			f->disk_alone[d] += w->disk_alone[d];
		}
	}
	MemoryContextSwitchTo(oldcxt);
}
