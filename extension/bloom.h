/*
 * bloom.h
 *	  The Bloom semi-join of active_pg (issue 5; seeds/000 section 3.3.3):
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

#include "ap_bloom.h"

/* ---------- GUCs (guc.c) ---------- */
#define AP_ENABLE_BLOOM_DEFAULT		true
#define AP_FORCE_BLOOM_DEFAULT		false
#define AP_BLOOM_MAX_BYTES_DEFAULT	(1024 * 1024)
#define AP_BLOOM_MAX_BYTES_MIN		AP_BLOOM_BLOCK_BYTES
#define AP_BLOOM_MAX_BYTES_MAX		((int) AP_BLOOM_BYTES_MAX)

extern bool active_pg_enable_bloom;		/* active_pg.enable_bloom */
extern bool active_pg_force_bloom;		/* active_pg.force_bloom: testing switch */
extern int	active_pg_bloom_max_bytes;	/* active_pg.bloom_max_bytes */

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
	AP_BLOOM_PRIV_COUNT
} ApBloomPrivIndex;

/* ---------- bloom_planner.c ---------- */
void		ApBloomPlannerInit(void);

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
	PlanState  *child;			/* produces the small side's keys */

	/* the filter, kept across rescans while the child's params stand */
	bool		built;
	unsigned char *bits;
	uint32		nblocks;
	uint32		nhashes;
	uint64		seed;
	uint64		keys;			/* non-NULL keys inserted (last build) */
	uint64		distinct;		/* distinct key hashes (last build) */
	uint64		builds;			/* times the child ran */
} ApBloomFilterState;

/* All filters of one ActiveScan. */
typedef struct ApBloomState
{
	int			nfilters;
	ApBloomFilterState *filters;
	MemoryContext cxt;			/* filters' bits: lives as long as the node */
	uint64		skipped_scans;	/* executions skipped: a filter was empty */
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

/* Program.blooms for the built filters, palloc'd in CurrentMemoryContext. */
void		ApBloomEncode(ApBloomState *bs, ActivePg__Program *prog);

/* Rescan: filters whose child's parameters changed are rebuilt at next use. */
void		ApBloomRescan(ApBloomState *bs, PlanState *parent);

/* End the child plans. */
void		ApBloomEnd(ApBloomState *bs);

/*
 * EXPLAIN of the filters: the plan's filters (and with ANALYZE the built
 * ones, keys, and rows tested and dropped by the disks).  disk_stats are the
 * scan's per-disk statistics (ndisks of them, valid[i] if reported).
 */
void		ApBloomExplain(ApBloomState *bs, const ActivePg__ScanStats *disk_stats,
						   const bool *valid, int ndisks, ExplainState *es);

#endif							/* AP_BLOOM_EXT_H */
