/*
 * bloom_exec.c
 *	  Build the Bloom filters of an ActiveScan from its child plans, encode
 *	  them for the disks, and show them in EXPLAIN.
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
 *     shows), capped by active_pg.bloom_max_bytes as it was when planned.
 *   - The hashes are collected before sizing; past work_mem of them the
 *     filter gets the cap's size at once and keys are inserted as they come.
 *   - A filter without keys means no row of the big side can join: the scan
 *     returns nothing without contacting the disks.
 *   - The filter bits live in a context of the node, not of one execution.
 */
#include "postgres.h"

#include "executor/executor.h"
#include "fmgr.h"
#include "lib/qunique.h"
#include "miscadmin.h"
#include "utils/date.h"
#include "utils/memutils.h"

#include "active_pg.h"
#include "bloom.h"

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

/* Set up the filters and their child plans (see bloom.h). */
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
	forboth(lc, blooms, lp, cscan->custom_plans)
	{
		List	   *entry = lfirst(lc);
		Plan	   *plan = lfirst(lp);
		ApBloomFilterState *f = &bs->filters[i];
		List	   *attnos;
		List	   *kinds;
		List	   *host_kinds;
		int			k;

		if (list_length(entry) != AP_BLOOM_PRIV_COUNT)
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
		f->est_keys = floatVal(list_nth(entry, AP_BLOOM_PRIV_EST_KEYS));
		f->max_bytes = intVal(list_nth(entry, AP_BLOOM_PRIV_MAX_BYTES));
		f->seed = AP_BLOOM_SEED(i);
		f->child = ExecInitNode(plan, estate, eflags);
		node->custom_ps = lappend(node->custom_ps, f->child);
		i++;
	}
	return bs;
}

/* Add one key column of the child's slot to the hash, as the disks hash it. */
static void
ap_bloom_hash_datum(ApBloomHash *st, int kind, Datum d)
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

/* qsort comparator of hashes. */
static int
ap_bloom_cmp_u64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y;
}

/* Give the filter its bits for nkeys distinct keys (or the cap if nkeys < 0). */
static void
ap_bloom_alloc(ApBloomState *bs, ApBloomFilterState *f, double nkeys)
{
	if (f->bits != NULL)
		pfree(f->bits);
	if (nkeys < 0)
	{
		f->nblocks = Max(f->max_bytes / AP_BLOOM_BLOCK_BYTES, 1);
		f->nhashes = ap_bloom_best_k(Max(f->est_keys, (double) f->nblocks * AP_BLOOM_BLOCK_BITS / 8),
									 f->nblocks);
	}
	else
		ap_bloom_size(nkeys, (uint64) f->max_bytes, AP_BLOOM_TARGET_FPR,
					  &f->nblocks, &f->nhashes);
	f->bits = MemoryContextAllocExtended(bs->cxt, (Size) f->nblocks * AP_BLOOM_BLOCK_BYTES,
										   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
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

	if (f->builds > 0)
		ExecReScan(f->child);
	f->builds++;
	f->keys = 0;
	f->distinct = 0;
	hs.n = 0;
	hs.cap = AP_BLOOM_HASHES_INITIAL;
	hs.limit = Max((int64) work_mem * 1024 / (int64) sizeof(uint64), AP_BLOOM_HASHES_INITIAL);
	hs.h = MemoryContextAllocHuge(build_cxt, sizeof(uint64) * hs.cap);

	for (;;)
	{
		TupleTableSlot *slot;
		ApBloomHash st;
		bool		isnull = false;
		uint64		h;

		CHECK_FOR_INTERRUPTS();
		slot = ExecProcNode(f->child);
		if (TupIsNull(slot))
			break;
		slot_getsomeattrs(slot, f->nkeys);
		oldcxt = MemoryContextSwitchTo(row_cxt);
		ap_bloom_hash_init(&st, f->seed);
		for (int k = 0; k < f->nkeys && !isnull; k++)
		{
			if (slot->tts_isnull[k])
				isnull = true;
			else
				ap_bloom_hash_datum(&st, f->host_kinds[k], slot->tts_values[k]);
		}
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(row_cxt);
		/* NULL never equals anything: the key is not inserted */
		if (isnull)
			continue;
		h = ap_bloom_hash_final(&st);
		f->keys++;
		if (direct)
		{
			ap_bloom_insert(f->bits, f->nblocks, f->nhashes, h);
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
					ap_bloom_insert(f->bits, f->nblocks, f->nhashes, hs.h[i]);
				ap_bloom_insert(f->bits, f->nblocks, f->nhashes, h);
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
	{
		if (hs.n > 1)
		{
			qsort(hs.h, hs.n, sizeof(uint64), ap_bloom_cmp_u64);
			hs.n = qunique(hs.h, hs.n, sizeof(uint64), ap_bloom_cmp_u64);
		}
		f->distinct = hs.n;
		ap_bloom_alloc(bs, f, (double) hs.n);
		for (int64 i = 0; i < hs.n; i++)
			ap_bloom_insert(f->bits, f->nblocks, f->nhashes, hs.h[i]);
	}
	MemoryContextDelete(build_cxt);
	f->built = true;
}

/* Build the filters not built yet (see bloom.h). */
bool
ApBloomBuild(ApBloomState *bs)
{
	bool		any_empty = false;

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

/* Program.blooms of the built filters (see bloom.h). */
void
ApBloomEncode(ApBloomState *bs, ActivePg__Program *prog)
{
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
		bf->bits.len = (size_t) f->nblocks * AP_BLOOM_BLOCK_BYTES;
		bf->nhashes = f->nhashes;
		bf->seed = f->seed;
		prog->blooms[i] = bf;
	}
}

/* Rescan (see bloom.h). */
void
ApBloomRescan(ApBloomState *bs, PlanState *parent)
{
	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];

		/* ExecReScan propagates changed params to lefttree/righttree only */
		if (parent->chgParam != NULL)
			UpdateChangedParamSet(f->child, parent->chgParam);
		if (f->child->chgParam != NULL)
			f->built = false;
	}
}

/* End the child plans (see bloom.h). */
void
ApBloomEnd(ApBloomState *bs)
{
	for (int i = 0; i < bs->nfilters; i++)
		ExecEndNode(bs->filters[i].child);
}

/* "1 MB", "13.5 kB", "64 B". */
static char *
ap_bloom_format_size(uint64 bytes)
{
	if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
		return psprintf(UINT64_FORMAT " MB", bytes / (1024 * 1024));
	if (bytes >= 1024)
		return psprintf("%.1f kB", bytes / 1024.0);
	return psprintf(UINT64_FORMAT " B", bytes);
}

/* "0.8%", "<0.1%". */
static char *
ap_bloom_format_fpr(double fpr)
{
	if (fpr * 100.0 < 0.1)
		return pstrdup("<0.1%");
	return psprintf("%.1f%%", fpr * 100.0);
}

/* EXPLAIN of the filters (see bloom.h). */
void
ApBloomExplain(ApBloomState *bs, const ActivePg__ScanStats *disk_stats,
			   const bool *valid, int ndisks, ExplainState *es)
{
	uint64		tested = 0;
	uint64		dropped = 0;
	bool		analyzed = es->analyze && bs->nfilters > 0 && bs->filters[0].builds > 0;

	/* structured formats: a labelled array of filter objects (valid JSON) */
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainOpenGroup("Bloom Filters", "Bloom Filters", false, es);
	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];
		uint32		nblocks = f->nblocks;
		uint32		k = f->nhashes;
		double		nkeys = (double) f->distinct;
		double		fpr;
		char	   *size;

		/* plain EXPLAIN: the size the estimate gives; ANALYZE: the built one */
		if (!(es->analyze && f->builds > 0))
		{
			nkeys = f->est_keys;
			ap_bloom_size(nkeys, (uint64) f->max_bytes, AP_BLOOM_TARGET_FPR, &nblocks, &k);
		}
		fpr = ap_bloom_fpr(nkeys, nblocks, k);
		size = ap_bloom_format_size((uint64) nblocks * AP_BLOOM_BLOCK_BYTES);
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Bloom Filter: %s (%s, k=%u, est. fpr %s)",
							 f->label, size, k, ap_bloom_format_fpr(fpr));
			if (es->analyze && f->builds > 0)
				appendStringInfo(es->str, " keys " UINT64_FORMAT " (" UINT64_FORMAT " distinct)",
								 f->keys, f->distinct);
			if (es->analyze && f->builds > 1)
				appendStringInfo(es->str, ", built " UINT64_FORMAT " times", f->builds);
			appendStringInfoChar(es->str, '\n');
			continue;
		}
		ExplainOpenGroup("Bloom Filter", NULL, true, es);
		ExplainPropertyText("Bloom Filter", f->label, es);
		ExplainPropertyUInteger("Bloom Filter Size", "bytes",
								(uint64) nblocks * AP_BLOOM_BLOCK_BYTES, es);
		ExplainPropertyUInteger("Bloom Filter Hashes", NULL, k, es);
		ExplainPropertyFloat("Bloom Filter Estimated FPR", NULL, fpr, 6, es);
		if (es->analyze && f->builds > 0)
		{
			ExplainPropertyUInteger("Bloom Filter Keys", NULL, f->keys, es);
			ExplainPropertyUInteger("Bloom Filter Distinct Keys", NULL, f->distinct, es);
			ExplainPropertyUInteger("Bloom Filter Builds", NULL, f->builds, es);
		}
		ExplainCloseGroup("Bloom Filter", NULL, true, es);
	}
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainCloseGroup("Bloom Filters", "Bloom Filters", false, es);
	if (!analyzed)
		return;

	for (int d = 0; d < ndisks; d++)
	{
		if (!valid[d])
			continue;
		tested += disk_stats[d].bloom_tested;
		dropped += disk_stats[d].bloom_dropped;
	}
	if (es->format != EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyUInteger("Bloom Rows Tested", NULL, tested, es);
		ExplainPropertyUInteger("Bloom Rows Dropped", NULL, dropped, es);
		ExplainPropertyUInteger("Bloom Skipped Executions", NULL, bs->skipped_scans, es);
		return;
	}
	appendStringInfoSpaces(es->str, es->indent * 2);
	appendStringInfo(es->str, "Bloom Rows: tested " UINT64_FORMAT ", dropped " UINT64_FORMAT,
					 tested, dropped);
	if (bs->skipped_scans > 0)
		appendStringInfo(es->str, "; " UINT64_FORMAT " executions skipped (no key)",
						 bs->skipped_scans);
	appendStringInfoChar(es->str, '\n');
	appendStringInfoSpaces(es->str, es->indent * 2);
	appendStringInfoString(es->str, "Bloom Rows Per Disk (dropped/tested):");
	for (int d = 0; d < ndisks; d++)
	{
		if (valid[d])
			appendStringInfo(es->str, "%s disk %d " UINT64_FORMAT "/" UINT64_FORMAT,
							 d > 0 ? "," : "", d, disk_stats[d].bloom_dropped,
							 disk_stats[d].bloom_tested);
	}
	appendStringInfoChar(es->str, '\n');
}
