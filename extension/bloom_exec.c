/*
 * bloom_exec.c
 *	  Build the Bloom filters of an ActiveScan from its child plans and encode
 *	  them for the disks (EXPLAIN: bloom_explain.c; EXPLAIN ANALYZE's
 *	  false-positive measurement: bloom_measure.c).
 *
 * Rules of this file:
 *   - A filter is built at the scan's first execution (never at Begin: plain
 *     EXPLAIN runs nothing) by running the child to completion.  It stays
 *     valid across rescans until the child's parameters change (a
 *     correlated small side): then the child is rescanned and the filter
 *     rebuilt at the next execution.
 *   - Keys are hashed with proto/ap_bloom.h from PostgreSQL's own values
 *     (detoasted), exactly as the disks hash stored values; a NULL key is
 *     never inserted.  The size comes from the number of distinct key hashes
 *     actually seen (the planner's estimate only sizes what plain EXPLAIN
 *     shows), capped by active_pg.bloom_max_bytes as it was when planned;
 *     active_pg.bloom_bytes, when set, fixes the size of the filters built
 *     (Riedel et al.'s Table 3 compares sizes on one plan, so the planner ignores it).
 *   - The hashes are collected before sizing; past work_mem of them the
 *     filter gets the cap's size at once and keys are inserted as they come.
 *   - Under a Parallel Hash the keys come as the participants' hashes
 *     (bloom_share.c): sized the same way from their distinct count, built
 *     again at every rescan (the Parallel Hash is), not measured under
 *     EXPLAIN ANALYZE (the keys' encodings stayed with the participants).
 *   - A filter without keys means no row of the big side can join: the scan
 *     returns nothing without contacting the disks.
 *   - The filter bits live in a context of the node, not of one execution.
 *   - Under EXPLAIN ANALYZE (the node is instrumented) a build also keeps the
 *     exact set of the keys' normalized encodings, and the disks are asked
 *     for the counts the false-positive rate needs (Program.bloom_measure).
 */
#include "postgres.h"

#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/date.h"
#include "utils/memutils.h"

#include "active_pg.h"
#include "bloomjoin.h"

/* Room for hashes allocated at first; grows by doubling up to work_mem. */
#define AP_BLOOM_HASHES_INITIAL		1024

/* Collected key hashes of one build. */
typedef struct ApBloomHashes
{
	uint64	   *h;
	int64		n;
	int64		cap;
	int64		limit;			/* work_mem worth of hashes */
} ApBloomHashes;

/* Set up the filters and their child plans (see bloomjoin.h). */
ApBloomState *
ApBloomBegin(CustomScanState *node, List *blooms, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	ApBloomState *bs;
	ListCell   *lc;
	ListCell   *lp;
	int			i = 0;

	if (blooms == NIL)
		return NULL;
	if (list_length(blooms) != list_length(cscan->custom_plans) ||
		list_length(blooms) > AP_BLOOM_FILTERS_MAX)
		elog(ERROR, "ActiveScan plan has %d Bloom filters and %d child plans",
			 list_length(blooms), list_length(cscan->custom_plans));

	bs = palloc0(sizeof(ApBloomState));
	bs->nfilters = list_length(blooms);
	bs->filters = palloc0(sizeof(ApBloomFilterState) * bs->nfilters);
	bs->cxt = AllocSetContextCreate(estate->es_query_cxt, "active_pg bloom",
									ALLOCSET_DEFAULT_SIZES);
	bs->parent = &node->ss.ps;
	/* before the children's shares: see ApBloomShareRows */
	bs->share_mark = ApBloomShareMark();
	forboth(lc, blooms, lp, cscan->custom_plans)
	{
		List	   *entry = lfirst(lc);
		Plan	   *plan = lfirst(lp);
		ApBloomFilterState *f = &bs->filters[i];
		List	   *attnos;
		List	   *kinds;
		List	   *host_kinds;
		int			k;

		if (list_length(entry) != AP_BLOOM_PRIV_PLAN_COUNT)
			elog(ERROR, "ActiveScan Bloom filter %d has %d items", i, list_length(entry));
		attnos = list_nth(entry, AP_BLOOM_PRIV_ATTNOS);
		kinds = list_nth(entry, AP_BLOOM_PRIV_KINDS);
		host_kinds = list_nth(entry, AP_BLOOM_PRIV_HOST_KINDS);
		f->nkeys = list_length(attnos);
		if (f->nkeys < 1 || f->nkeys > AP_BLOOM_KEYS_MAX ||
			list_length(kinds) != f->nkeys || list_length(host_kinds) != f->nkeys ||
			list_length(plan->targetlist) != f->nkeys)
			elog(ERROR, "ActiveScan Bloom filter %d has inconsistent keys", i);
		f->label = strVal(list_nth(entry, AP_BLOOM_PRIV_LABEL));
		for (k = 0; k < f->nkeys; k++)
		{
			f->attnos[k] = list_nth_int(attnos, k);
			f->kinds[k] = list_nth_int(kinds, k);
			f->host_kinds[k] = list_nth_int(host_kinds, k);
		}
		{
			/* a plan read back in a parallel worker turns an integral Float into an Integer */
			Node	   *est = list_nth(entry, AP_BLOOM_PRIV_EST_KEYS);

			f->est_keys = IsA(est, Integer) ? (double) intVal(est) : floatVal(est);
		}
		f->max_bytes = intVal(list_nth(entry, AP_BLOOM_PRIV_MAX_BYTES));
		f->seed = AP_BLOOM_SEED(i);
		f->share = intVal(list_nth(entry, AP_BLOOM_PRIV_SHARE));
		if (f->share > 0)
		{
			List	   *pos = list_nth(entry, AP_BLOOM_PRIV_SHARE_POS);

			if (list_length(pos) != f->nkeys)
				elog(ERROR, "ActiveScan Bloom filter %d has inconsistent shared keys", i);
			for (k = 0; k < f->nkeys; k++)
				f->share_pos[k] = list_nth_int(pos, k);
		}
		f->child = ExecInitNode(plan, estate, eflags);
		node->custom_ps = lappend(node->custom_ps, f->child);
		i++;
	}
	return bs;
}

/*
 * Sorting the collected hashes (to count the distinct ones) sits between the
 * small side and the start of the big scan: a sort specialised for uint64,
 * its comparison inlined, in place of qsort's call per comparison.
 */
#define ST_SORT ap_bloom_sort_u64
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) (*(a) < *(b) ? -1 : *(a) > *(b))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* Remove the duplicates of a sorted array; its new length. */
static int64
ap_bloom_unique_u64(uint64 *h, int64 n)
{
	int64		out = 0;

	for (int64 i = 0; i < n; i++)
	{
		if (out == 0 || h[out - 1] != h[i])
			h[out++] = h[i];
	}
	return out;
}

/* Give the filter its bits for nkeys distinct keys (or the cap if nkeys < 0). */
static void
ap_bloom_alloc(ApBloomState *bs, ApBloomFilterState *f, double nkeys)
{
	if (f->bits != NULL)
		pfree(f->bits);
	if (nkeys < 0)
	{
		/* too many keys to count: the largest filter allowed */
		f->len = f->fixed_bytes > 0 ? f->fixed_bytes :
			Max(f->max_bytes / AP_BLOOM_BLOCK_BYTES, 1) * AP_BLOOM_BLOCK_BYTES;
		f->nhashes = ap_bloom_best_k_len(Max(f->est_keys, (double) f->len), f->len);
	}
	else
		ApBloomGeometry(nkeys, f->max_bytes, f->fixed_bytes, &f->len, &f->nhashes, NULL);
	f->bits = MemoryContextAllocExtended(bs->cxt, f->len, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
}

/* Free f's exact key set. */
static void
ap_bloom_exact_drop(ApBloomFilterState *f)
{
	if (f->exact == NULL)
		return;
	if (f->exact->keys != NULL)
		pfree(f->exact->keys);
	if (f->exact->words != NULL)
		pfree(f->exact->words);
	pfree(f->exact);
	f->exact = NULL;
}

/*
 * Under EXPLAIN ANALYZE, a build of f starts a new exact key set (the old
 * one belonged to the old filter); the per-disk counters exist from the
 * first build on.
 */
static void
ap_bloom_measure_start(ApBloomState *bs, ApBloomFilterState *f)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(bs->cxt);

	if (f->disk_tested == NULL)
	{
		f->disk_tested = palloc0(sizeof(uint64) * AP_NDISKS_MAX);
		f->disk_dropped = palloc0(sizeof(uint64) * AP_NDISKS_MAX);
		f->disk_alone = palloc0(sizeof(uint64) * AP_NDISKS_MAX);
	}
	ap_bloom_exact_drop(f);
	/* once a build could not keep its keys, the sum over executions is lost */
	if (f->unmeasured == NULL)
		f->exact = ApBloomExactCreate();
	MemoryContextSwitchTo(oldcxt);
}

/* Size f for the distinct ones of the collected hashes hs (sorted here) and insert them. */
static void
ap_bloom_finish(ApBloomState *bs, ApBloomFilterState *f, ApBloomHashes *hs)
{
	if (hs->n > 1)
	{
		ap_bloom_sort_u64(hs->h, hs->n);
		hs->n = ap_bloom_unique_u64(hs->h, hs->n);
	}
	f->distinct = hs->n;
	ap_bloom_alloc(bs, f, (double) hs->n);
	for (int64 i = 0; i < hs->n; i++)
		ap_bloom_insert_len(f->bits, f->len, f->nhashes, hs->h[i]);
}

/* Run the child of f to completion and build its filter. */
static void
ap_bloom_build_one(ApBloomState *bs, ApBloomFilterState *f)
{
	MemoryContext build_cxt = AllocSetContextCreate(CurrentMemoryContext, "active_pg bloom build",
													ALLOCSET_DEFAULT_SIZES);
	MemoryContext row_cxt = AllocSetContextCreate(build_cxt, "active_pg bloom row",
												  ALLOCSET_SMALL_SIZES);
	MemoryContext oldcxt;
	ApBloomHashes hs;
	bool		direct = false;
	uint64		words[AP_BLOOM_EXACT_WORDS_MAX];

	EState	   *estate = bs->parent->state;
	struct Tuplestorestate *shared;
	TupleTableSlot *share_slot = NULL;

	int			at_child[AP_BLOOM_KEYS_MAX];
	int			at_share[AP_BLOOM_KEYS_MAX];
	bool		overflow = false;

	for (int k = 0; k < f->nkeys; k++)
	{
		at_child[k] = k;
		at_share[k] = f->share_pos[k] - 1;
	}
	f->builds++;
	/* a benchmark's fixed size applies to the filters built, not to the plan */
	f->fixed_bytes = active_pg_bloom_bytes;
	f->keys = 0;
	f->distinct = 0;

	/*
	 * Under a Parallel Hash the participants' key hashes, all of them (its
	 * build is over before the probe side starts: bloom_share.c).
	 */
	f->parallel_share = ApBloomShareHashes(estate, f->share, bs->share_mark, build_cxt,
										   &hs.h, &hs.n, &overflow);
	if (f->parallel_share)
	{
		f->shared = true;
		f->share_probe = false;
		if (bs->measure)
		{
			ap_bloom_measure_start(bs, f);
			/* the keys' encodings stayed with the participants that hashed them */
			f->unmeasured = "its keys were hashed by the participants of a Parallel Hash";
			ap_bloom_exact_drop(f);
		}
		f->keys = hs.n;
		if (overflow)
		{
			/* more keys than work_mem holds: a filter every row passes */
			f->distinct = hs.n;
			if (f->bits != NULL)
				pfree(f->bits);
			f->len = AP_BLOOM_BLOCK_BYTES;
			f->nhashes = 1;
			f->bits = MemoryContextAlloc(bs->cxt, f->len);
			memset(f->bits, 0xFF, f->len);
			f->keys = Max(f->keys, 1);
		}
		else
			ap_bloom_finish(bs, f, &hs);
		MemoryContextDelete(build_cxt);
		f->built = true;
		return;
	}

	/* the Hash's copy of the small side, if it already ran (bloom_share.c) */
	shared = ApBloomShareRows(estate, f->share, bs->share_mark, &share_slot, &f->share_probe);
	for (int k = 0; shared != NULL && k < f->nkeys; k++)
	{
		if (f->share_pos[k] < 1 ||
			f->share_pos[k] > share_slot->tts_tupleDescriptor->natts)
		{
			ExecDropSingleTupleTableSlot(share_slot);
			share_slot = NULL;
			shared = NULL;
		}
	}
	f->shared = shared != NULL;
	if (!f->shared && f->builds > 1)
		ExecReScan(f->child);
	if (bs->measure)
		ap_bloom_measure_start(bs, f);
	hs.n = 0;
	hs.cap = AP_BLOOM_HASHES_INITIAL;
	hs.limit = Max((int64) work_mem * 1024 / (int64) sizeof(uint64), AP_BLOOM_HASHES_INITIAL);
	hs.h = MemoryContextAllocHuge(build_cxt, sizeof(uint64) * hs.cap);

	for (;;)
	{
		TupleTableSlot *slot;
		ApBloomHash st;
		bool		isnull;
		uint64		h;

		CHECK_FOR_INTERRUPTS();
		if (shared != NULL)
		{
			if (!ApBloomShareRead(shared, share_slot))
				break;
			slot = share_slot;
		}
		else
		{
			slot = ExecProcNode(f->child);
			if (TupIsNull(slot))
				break;
		}
		slot_getsomeattrs(slot, shared != NULL ? share_slot->tts_tupleDescriptor->natts : f->nkeys);
		oldcxt = MemoryContextSwitchTo(row_cxt);
		ap_bloom_hash_init(&st, f->seed);
		if (f->exact != NULL)
		{
			/* the normalized encoding, for the exact key set */
			st.capture = words;
			st.capture_cap = AP_BLOOM_EXACT_WORDS_MAX;
		}
		isnull = !ApBloomHashKeys(&st, slot, f->nkeys, shared != NULL ? at_share : at_child,
								  f->host_kinds);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(row_cxt);
		/* NULL never equals anything: the key is not inserted */
		if (isnull)
			continue;
		h = ap_bloom_hash_final(&st);
		f->keys++;
		if (f->exact != NULL)
			ApBloomExactAdd(f->exact, h, words, st.nwords);
		if (direct)
		{
			ap_bloom_insert_len(f->bits, f->len, f->nhashes, h);
			continue;
		}
		if (hs.n == hs.cap)
		{
			if (hs.cap >= hs.limit)
			{
				/* too many to size exactly: the cap's size, keys as they come */
				direct = true;
				ap_bloom_alloc(bs, f, -1);
				for (int64 i = 0; i < hs.n; i++)
					ap_bloom_insert_len(f->bits, f->len, f->nhashes, hs.h[i]);
				ap_bloom_insert_len(f->bits, f->len, f->nhashes, h);
				continue;
			}
			hs.cap = Min(hs.cap * 2, hs.limit);
			hs.h = repalloc_huge(hs.h, sizeof(uint64) * hs.cap);
		}
		hs.h[hs.n++] = h;
	}

	if (direct)
		f->distinct = f->keys;	/* not counted: an upper bound */
	else
		ap_bloom_finish(bs, f, &hs);
	MemoryContextDelete(build_cxt);
	if (share_slot != NULL)
		ExecDropSingleTupleTableSlot(share_slot);
	if (f->exact != NULL)
	{
		ApBloomExactFinish(f->exact);
		if (f->exact->why != NULL)
		{
			f->unmeasured = f->exact->why;
			ap_bloom_exact_drop(f);
		}
	}
	f->built = true;
}

/* Build the filters not built yet (see bloomjoin.h). */
bool
ApBloomBuild(ApBloomState *bs)
{
	bool		any_empty = false;

	/* instrumented: EXPLAIN ANALYZE (known only after Begin) */
	bs->measure = bs->parent->instrument != NULL;
	bs->shipped = false;

	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];

		if (!f->built)
			ap_bloom_build_one(bs, f);
		if (f->keys == 0)
			any_empty = true;
	}
	if (any_empty)
		bs->skipped_scans++;
	return !any_empty;
}

/* Program.blooms of the built filters (see bloomjoin.h). */
void
ApBloomEncode(ApBloomState *bs, ActivePg__Program *prog)
{
	bs->shipped = true;
	prog->bloom_measure = bs->measure;
	prog->n_blooms = bs->nfilters;
	prog->blooms = palloc(sizeof(ActivePg__BloomFilter *) * bs->nfilters);
	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];
		ActivePg__BloomFilter *bf = palloc(sizeof(ActivePg__BloomFilter));

		Assert(f->built);
		active_pg__bloom_filter__init(bf);
		bf->id = i;
		bf->n_keys = f->nkeys;
		bf->keys = palloc(sizeof(ActivePg__Expr *) * f->nkeys);
		bf->n_key_kinds = f->nkeys;
		bf->key_kinds = palloc(sizeof(uint32) * f->nkeys);
		for (int k = 0; k < f->nkeys; k++)
		{
			ActivePg__Expr *e = palloc(sizeof(ActivePg__Expr));

			active_pg__expr__init(e);
			e->node_case = ACTIVE_PG__EXPR__NODE_VAR;
			e->var = f->attnos[k];
			bf->keys[k] = e;
			bf->key_kinds[k] = f->kinds[k];
		}
		bf->bits.data = f->bits;
		bf->bits.len = f->len;
		bf->nhashes = f->nhashes;
		bf->seed = f->seed;
		prog->blooms[i] = bf;
	}
}

/* Rescan (see bloomjoin.h). */
void
ApBloomRescan(ApBloomState *bs, PlanState *parent)
{
	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];

		/* ExecReScan propagates changed params to lefttree/righttree only */
		if (parent->chgParam != NULL)
			UpdateChangedParamSet(f->child, parent->chgParam);
		/* a Parallel Hash is built again at every rescan, its keys with it */
		if (f->child->chgParam != NULL || f->parallel_share)
			f->built = false;
	}
}

/* End the child plans (see bloomjoin.h). */
void
ApBloomEnd(ApBloomState *bs)
{
	for (int i = 0; i < bs->nfilters; i++)
		ExecEndNode(bs->filters[i].child);
}
