/*
 * bloomjoin.h
 *	  The Bloom semi-join of active_pg (Riedel et al., section 3.3.3):
 *	  the planner offers a join whose big side's ActiveScan carries a Bloom
 *	  filter over the small side's join keys (bloom_planner.c); at its first
 *	  execution the scan runs the small side (a child plan), builds the filter
 *	  and ships it; the disks drop rows whose keys cannot join (bloom_exec.c).
 *	  PostgreSQL's own join above still does the exact join.
 *
 * Plan layout: custom_plans holds one child plan per filter whose target list
 * is exactly the small side's key expressions, in key order;
 * custom_private[AP_PRIV_BLOOMS] is a List with one List per filter, indexed
 * by ApBloomPrivIndex.  A scan without filters has NIL there.
 */
#ifndef AP_BLOOM_EXT_H
#define AP_BLOOM_EXT_H

#include "active_pg.h"

#include "commands/explain.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"

#include "ap_bloom.h"

/* ---------- GUCs (guc.c: bounds and defaults in its settings table) ---------- */

extern bool active_pg_enable_bloom;		/* active_pg.enable_bloom */
extern bool active_pg_enable_parallel_bloom;	/* active_pg.enable_parallel_bloom */
extern bool active_pg_force_bloom;		/* active_pg.force_bloom: testing switch */
extern bool active_pg_bloom_join_results;	/* active_pg.bloom_join_results */
extern int	active_pg_bloom_max_bytes;	/* active_pg.bloom_max_bytes */
extern int	active_pg_bloom_bytes;		/* active_pg.bloom_bytes: size of the filters built
										 * (benchmarks; the planner ignores it) */

/* Seed of filter i of a scan (fixed: EXPLAIN ANALYZE counts are repeatable). */
#define AP_BLOOM_SEED(i)			(UINT64_C(0xA5C7B100F17E5EED) + (uint64) (i))

/* One filter's entry in custom_private[AP_PRIV_BLOOMS]. */
typedef enum ApBloomPrivIndex
{
	AP_BLOOM_PRIV_LABEL = 0,	/* String: "l_partkey IN part.p_partkey" */
	AP_BLOOM_PRIV_ATTNOS,		/* IntList: key columns of the scanned relation */
	AP_BLOOM_PRIV_KINDS,		/* IntList: their ApTypeKind (BloomFilter.key_kinds) */
	AP_BLOOM_PRIV_HOST_KINDS,	/* IntList: ApTypeKind of the child's key columns */
	AP_BLOOM_PRIV_EST_KEYS,		/* Float: estimated distinct keys of the small side */
	AP_BLOOM_PRIV_MAX_BYTES,	/* Integer: active_pg.bloom_max_bytes when planned */
	AP_BLOOM_PRIV_COUNT,		/* the planner's path entries: then the small exprs */
	/* plan entries only (bloom_share.c) */
	AP_BLOOM_PRIV_SHARE = AP_BLOOM_PRIV_COUNT,	/* Integer: share id of the small side, 0 none */
	AP_BLOOM_PRIV_SHARE_POS,	/* IntList: the keys' positions in the share's rows */
	AP_BLOOM_PRIV_PLAN_COUNT
} ApBloomPrivIndex;

/* ---------- bloom_planner.c ---------- */
void		ApBloomPlannerInit(void);

/* ---------- bloom_keys.c (the planner's keys, labels and estimates) ---------- */

/* One key column pair of a candidate filter. */
typedef struct ApBloomKey
{
	AttrNumber	attno;			/* big table's column */
	Oid			type;			/* its type */
	ApTypeKind	kind;			/* its kind */
	Expr	   *small_expr;		/* small side expression */
	ApTypeKind	small_kind;
} ApBloomKey;

/*
 * The keys (at most AP_BLOOM_KEYS_MAX, into keys) a filter on table b, within
 * the big side bigrel, can take from the join of bigrel and small; allow_ec
 * lets a clause through an equivalence class stand for b's column.
 */
int			ApBloomJoinKeys(RelOptInfo *joinrel, JoinType jointype, List *restrictlist,
							RelOptInfo *bigrel, RelOptInfo *b, RelOptInfo *small,
							bool allow_ec, ApBloomKey *keys);
/* Hash clauses of outerrel JOIN innerrel as hash_inner_and_outer picks them. */
List	   *ApBloomHashClauses(RelOptInfo *joinrel, JoinType jointype, List *restrictlist,
							   RelOptInfo *outerrel, RelOptInfo *innerrel);
/*
 * EXPLAIN label of a filter's entry: "l_orderkey IN orders.o_orderkey of
 * (orders JOIN customer)".
 */
char	   *ApBloomLabel(PlannerInfo *root, RelOptInfo *big, RelOptInfo *small, List *entry);
/*
 * A filter's custom_private entry (ApBloomPrivIndex), then the small exprs;
 * its label and estimated keys are left NULL for the plan to fill
 * (ApBloomLabel).
 */
List	   *ApBloomPrivate(ApBloomKey *keys, int nkeys);
/*
 * Share of b's rows a filter of small's keys keeps; *nd_small its keys,
 * *bytes its size, *join_factor the join's rows over PostgreSQL's estimate.
 */
double		ApBloomSelectivity(PlannerInfo *root, RelOptInfo *b, RelOptInfo *small,
							   ApBloomKey *keys, int nkeys, double *nd_small, double *bytes,
							   double *join_factor);

/* ---------- bloom_filter.c: sizing, shared with the planner and EXPLAIN ---------- */

/*
 * Size (*len bytes) and k of a filter for nkeys distinct keys: fixed_bytes
 * if not 0, else for AP_BLOOM_TARGET_FPR capped by max_bytes, and at least
 * half of AP_BLOOM_CACHED_BYTES where max_bytes allows; *fpr (unless
 * NULL) its expected false-positive rate with nkeys keys.
 */
void		ApBloomGeometry(double nkeys, int max_bytes, int fixed_bytes, uint32 *len, uint32 *k,
							double *fpr);

/*
 * Keep the sizes worked out in shared memory for every backend (see
 * bloom_filter.c); called from _PG_init while preloading.
 */
void		ApBloomShmemRequest(void);
/*
 * Up to this size a filter stays in the disk's CPU cache and a probe costs
 * the same whatever its size (bloom_planner.c charges misses beyond it).
 */
#define AP_BLOOM_CACHED_BYTES	(32 * 1024)

/* ---------- bloom_measure.c: the exact key set (EXPLAIN ANALYZE) ---------- */

/* Longest key (words of its normalized encoding) the exact set keeps. */
#define AP_BLOOM_EXACT_WORDS_MAX	256

typedef struct ApBloomExactKey
{
	uint64		hash;			/* the filter's hash of the key */
	uint32		nwords;
	int64		off;			/* first word in ApBloomExactSet.words */
} ApBloomExactKey;

/*
 * The normalized encodings (ap_bloom.h) of every key one build inserted:
 * exact, unlike the filter.  Bounded by maintenance_work_mem; a key longer
 * than AP_BLOOM_EXACT_WORDS_MAX words or a set over the bound leaves the
 * filter unmeasured (why says so).
 */
typedef struct ApBloomExactSet
{
	ApBloomExactKey *keys;		/* sorted by (hash, words), unique after finish */
	int64		nkeys;
	int64		cap_keys;
	uint64	   *words;
	int64		nwords;
	int64		cap_words;
	Size		limit;			/* bytes */
	const char *why;			/* not kept: the reason; NULL while kept */
} ApBloomExactSet;

/* ---------- bloom_exec.c ---------- */

/* One filter of a running scan. */
typedef struct ApBloomFilterState
{
	/* from the plan */
	char	   *label;
	int			nkeys;
	int			attnos[AP_BLOOM_KEYS_MAX];
	int			kinds[AP_BLOOM_KEYS_MAX];
	int			host_kinds[AP_BLOOM_KEYS_MAX];
	double		est_keys;
	int			max_bytes;
	int			fixed_bytes;	/* active_pg.bloom_bytes at the last build (0: sized) */
	PlanState  *child;			/* produces the small side's keys */
	int			share;			/* share id of the small side's rows (0: none) */
	int			share_pos[AP_BLOOM_KEYS_MAX];	/* the keys' positions in them */
	bool		share_probe;	/* shared is the Hash Join's probe side (ApBloomShareRows) */
	bool		shared;			/* the last build read the shared rows */
	bool		parallel_share; /* ... as the participants' key hashes (Parallel Hash) */

	/* the filter, kept across rescans while the child's params stand */
	bool		built;
	unsigned char *bits;
	uint32		len;			/* bytes (ap_bloom_len_valid) */
	uint32		nhashes;
	uint64		seed;
	uint64		keys;			/* non-NULL keys inserted (last build) */
	uint64		distinct;		/* distinct key hashes (last build) */
	uint64		builds;			/* times the child ran */

	/*
	 * EXPLAIN ANALYZE: the exact key set of the last build, the rows the
	 * disks shipped set against it, and the disks' per-filter counters;
	 * all summed over executions.
	 */
	ApBloomExactSet *exact;		/* NULL when not measuring */
	const char *unmeasured;		/* why no false-positive rate can be measured */
	uint64		true_passes;	/* shipped rows whose key is in the exact set */
	uint64		false_passes;	/* shipped rows whose key is not */
	uint64	   *disk_tested;	/* AP_NDISKS_MAX each: ScanStats.bloom_filter_* */
	uint64	   *disk_dropped;
	uint64	   *disk_alone;
	bool		alone_sampled;	/* disk_alone estimated from a sample (ScanStats) */
} ApBloomFilterState;

/* All filters of one ActiveScan. */
typedef struct ApBloomState
{
	int			nfilters;
	ApBloomFilterState *filters;
	MemoryContext cxt;			/* filters' bits: lives as long as the node */
	PlanState  *parent;			/* the ActiveScan (instrumented under ANALYZE) */
	uint64		skipped_scans;	/* executions skipped: a filter was empty */
	bool		measure;		/* EXPLAIN ANALYZE: measure false positives */
	bool		shipped;		/* this execution shipped the filters */
	uint64		rows_measured;	/* shipped rows set against every exact key set */
	uint64		true_all;		/* of those, in every set: what ideal filters ship */
	uint64		share_mark;		/* shares registered before this node's start */
} ApBloomState;

/*
 * Set up the filters of a plan (blooms = custom_private[AP_PRIV_BLOOMS]):
 * initialize the child plans and add them to node->custom_ps.  NULL when
 * the plan has no filter.
 */
ApBloomState *ApBloomBegin(CustomScanState *node, List *blooms, EState *estate, int eflags);

/*
 * Build every filter that is not built yet by running its child plan.
 * Returns false if some filter holds no key: no row can join, the scan
 * need not run.
 */
bool		ApBloomBuild(ApBloomState *bs);

/*
 * Program.blooms (and bloom_measure) for the built filters, palloc'd in
 * CurrentMemoryContext; the execution counts as shipping them.
 */
void		ApBloomEncode(ApBloomState *bs, ActivePg__Program *prog);

/* Rescan: filters whose child's parameters changed are rebuilt at next use. */
void		ApBloomRescan(ApBloomState *bs, PlanState *parent);

/* End the child plans. */
void		ApBloomEnd(ApBloomState *bs);

/*
 * A parallel worker's Bloom counters, in a parallel ActiveScan's shared state
 * (parallel.c): each participant builds the filters from its own run of the
 * small sides and scans its share of the table with them.  The worker saves
 * its counters when it shuts the node down; the leader adds them to its own
 * for EXPLAIN ANALYZE (bloom_measure.c).
 */
typedef struct ApBloomSharedFilter
{
	uint64		builds;
	uint64		keys;			/* of the last build, */
	uint64		distinct;
	uint32		len;			/* and its geometry */
	uint32		nhashes;
	uint64		true_passes;
	uint64		false_passes;
	bool		unmeasured;		/* the worker could not measure the filter */
	bool		has_disk;		/* the disk counters below were kept */
	uint64		disk_tested[AP_NDISKS_MAX];
	uint64		disk_dropped[AP_NDISKS_MAX];
	uint64		disk_alone[AP_NDISKS_MAX];
	bool		alone_sampled;
} ApBloomSharedFilter;

typedef struct ApBloomSharedStats
{
	int			nfilters;		/* 0: the worker built none */
	uint64		skipped_scans;
	uint64		rows_measured;
	uint64		true_all;
	ApBloomSharedFilter filters[AP_BLOOM_FILTERS_MAX];
} ApBloomSharedStats;

/* A worker's counters into its shared slot; the leader's sum of one slot. */
void		ApBloomStatsSave(const ApBloomState *bs, ApBloomSharedStats *out);
void		ApBloomStatsAdd(ApBloomState *bs, const ApBloomSharedStats *in);

/* Add one key column's value, of ApTypeKind kind, to a running hash (bloom_filter.c). */
void		ApBloomHashDatum(ApBloomHash *st, int kind, Datum d);
/*
 * Add a row's key columns (attribute indexes at[], from 0, of ApTypeKind
 * kinds[]; the slot deformed that far) to a running hash, in the current
 * memory context (values are detoasted there).  False if a key is NULL: the
 * key is not inserted, NULL never equals anything.
 */
bool		ApBloomHashKeys(ApBloomHash *st, TupleTableSlot *slot, int nkeys, const int *at,
							const int *kinds);

/* ---------- bloom_share.c ---------- */

/* A new share id for a planned level. */
int			ApBloomShareNewId(void);
/*
 * The small side's path child, its rows kept under share id for the filter;
 * probe: the share is the Hash Join's probe side (see bloom_share.c).
 */
Path	   *ApBloomSharePath(PlannerInfo *root, Path *child, int id, bool probe);
/*
 * The same under a Parallel Hash, over the small side's partial path: the
 * participants hash the keys of the rows they pass up (key_at: positions
 * from 1 in the child's rows, host_kinds: ApTypeKinds, filter: the index of
 * the filter in the scan's list, which gives its seed) into the query's
 * shared memory, where the filtered scan finds all of them.
 */
Path	   *ApBloomShareParallelPath(PlannerInfo *root, Path *child, int id, int filter,
									 List *key_at, List *host_kinds);
/*
 * Every participant's key hashes of parallel share id in estate, copied
 * into cxt (*h, *n; *overflow: a participant had more than work_mem of
 * them and stopped), or false if the share is not one under a Parallel Hash
 * with shared memory: then ApBloomShareRows.
 */
bool		ApBloomShareHashes(EState *estate, int id, uint64 mark, MemoryContext cxt,
							   uint64 **h, int64 *n, bool *overflow);
/*
 * The completed rows of share id in estate, usable for a filter's build, or
 * NULL; *slot gets a slot of their row type, *probe whether the share is the
 * probe side of the filtered scan's Hash Join.  ApBloomShareRead reads them.
 */
struct Tuplestorestate;
uint64		ApBloomShareMark(void);
struct Tuplestorestate *ApBloomShareRows(EState *estate, int id, uint64 mark,
										 TupleTableSlot **slot, bool *probe);
bool		ApBloomShareRead(struct Tuplestorestate *store, TupleTableSlot *slot);
void		ApBloomShareInit(void);

/* ---------- bloom_measure.c ---------- */

/* A new, empty exact key set in the current memory context. */
ApBloomExactSet *ApBloomExactCreate(void);
/* Add one key (its hash and words); may give up (set->why). */
void		ApBloomExactAdd(ApBloomExactSet *set, uint64 hash, const uint64 *words,
							uint32 nwords);
/* Sort and deduplicate after the last key. */
void		ApBloomExactFinish(ApBloomExactSet *set);

/*
 * EXPLAIN ANALYZE: set a row the disks shipped (raw: the relation-shaped
 * slot, key columns at their attribute numbers) against every filter's exact
 * key set.  tmpcxt: per-row memory.
 */
void		ApBloomMeasureRow(ApBloomState *bs, TupleTableSlot *raw, MemoryContext tmpcxt);

/* A disk's Done statistics: its per-filter counters. */
void		ApBloomDiskStats(ApBloomState *bs, int disk, const ActivePg__ScanStats *st);

/* ---------- bloom_explain.c ---------- */

/*
 * EXPLAIN of the filters: the plan's filters (and with ANALYZE the built
 * ones, keys, rows tested and dropped by the disks, per filter and per
 * disk, and the measured false-positive rate).  disk_stats are the scan's
 * per-disk statistics (ndisks of them, valid[i] if reported).
 */
void		ApBloomExplain(ApBloomState *bs, const ActivePg__ScanStats *disk_stats,
						   const bool *valid, int ndisks, ExplainState *es);

/*
 * The small sides EXPLAIN shows under the scan: each shared one appears
 * once, under the Hash's BloomShare, unless ANALYZE saw the scan's own copy
 * run (the BloomShare then hides its copy).  The scan's custom_ps is set to
 * the result just before EXPLAIN prints the children; the executor ends
 * the children through the filters, not custom_ps.
 */
List	   *ApBloomExplainChildren(ApBloomState *bs, ExplainState *es);
/* Did this plan node run?  (ANALYZE; false without instrumentation; bloom_share.c.) */
bool		ApPlanStateRan(PlanState *ps);

#endif							/* AP_BLOOM_EXT_H */
