/*
 * bloom_planner.c
 *	  set_join_pathlist_hook: joins whose big side's ActiveScan carries Bloom
 *	  filters of the small sides' join keys (Riedel et al., section 3.3.3).
 *
 * Shape: the big side's ActiveScan gets one child plan
 * per filter (custom_plans) producing a small side's keys; at its first
 * execution it runs the children, builds the filters and ships them with the
 * scan.  PostgreSQL's own Hash Joins above do the exact joins, so a filter
 * only has to be conservative: a row it drops must be one that cannot join.
 *
 * When a filter is offered.  For an equi-join between a big side holding a
 * base relation B with an ActiveScan path and a small side S:
 *	- the join type lets the big side lose its non-joining rows: INNER, SEMI
 *	  (either side), the nullable side of LEFT/RIGHT.  Never the preserved
 *	  side of an outer join, never either side of an anti or full join;
 *	  for outer joins only the join's own clauses count (not WHERE clauses
 *	  pushed down to it);
 *	- key clauses are whitelisted equalities (shippable.c) of the families
 *	  ap_bloom.h normalizes: integers in any mix, numeric, date, text/varchar
 *	  and bpchar, the latter two only under a deterministic collation; the B
 *	  side of each is a column, the small side any non-volatile expression;
 *	- the small side is a table, or a join of tables (a join result:
 *	  active_pg.bloom_join_results), whose rows are the ones the join sees
 *	  (ap_bloom_small_ok: no subquery, whose path belongs to its own planner
 *	  run and cannot be planned twice, no volatile clause, no lateral
 *	  reference, an unparameterized path, no Gather), and is estimated to
 *	  return no more rows than B's scan (a filter spares that scan's output;
 *	  one built from a larger input hardly pays);
 *	- the keys come from bloom_keys.c.
 * The child runs the small side's cheapest path a second time (the join reads
 * it too): cheap when it is small, and costed.
 *
 * Several filters on one scan (a chain).  The big side is either B itself
 * (the first filter: B join S_0) or a join relation X holding one of our own
 * filtered joins: a left-deep stack of Hash Joins, level l joining S_l, with
 * B's filtered scan at the bottom.  Joining X with S_n, the chain is rebuilt
 * with one more filter on B's scan (S_n's keys) and every level's Hash Join
 * made again over it; S_n's join goes on top.  This is sound because S_n's
 * join removes every row derived from a B row whose key is not among S_n's
 * keys: such a row leaves the levels below either with that key or, where B
 * is the nullable side of a lower outer join, null-extended, and both fail
 * the strict equality at S_n's join; rows not derived from it are the same.
 * The levels below are all joins where B may lose rows (each carried its own
 * filter under the rules above).  The key may also come through an
 * equivalence class: S_n's clause names another member (l_partkey =
 * p_partkey = ps_partkey joined as p_partkey = ps_partkey) whose equality
 * with B's column X already enforces; only when every level and S_n's join
 * are inner joins (or S_n's a semi join), so that no outer join nulls it.
 * Each filter must pay on its own (AP_BLOOM_USEFUL_SEL); add_path decides
 * between one filter, several, and none.  At most AP_BLOOM_FILTERS_MAX.
 *
 * Cost.  With n_s distinct keys on the small side and n_b on the big side,
 * a fraction min(1, n_s / n_b) of B's rows can join (containment of value
 * sets).  n_b is at least the small table's unrestricted distinct count:
 * sampled distinct counts of a big table's foreign key fall far short of the
 * truth (l_orderkey at SF 1: 0.4 of 1.5 million), and eqjoinsel takes the
 * larger of the two columns' counts for the join too.  With the filter's expected false-positive rate f the disks return
 * (frac + (1 - frac) f) of the rows they returned before, filters taken as
 * independent.  The path pays the hashing of the small sides' keys at
 * startup, and the small sides' own cost except where the Hash Join above
 * shares it (bloom_share.c: it runs once, and the join's cost has it).  The scan itself is costed by the throughput model
 * (model.c) of the unfiltered scan with only the kept share of its rows
 * crossing to the host and a probe per key column per tuple reaching each
 * filter added to the disks' work (ApModelFilterOutput), at the unfiltered
 * scan's exchange rate of seconds to cost units: the host's work on the
 * dropped rows is what a filter saves, and for a selective filter on a big
 * table it is most of the scan's predicted time.  (Charging only
 * cpu_tuple_cost per dropped row, as before, left the model's host term for
 * every row in the cost: PostgreSQL's index nested loops then looked
 * cheaper than a filtered scan six times faster, TPC-H Q7 at SF 1.)  The
 * joins above are costed by PostgreSQL with the smaller row counts (a
 * rebuilt level's rows are its join's estimate times the filters added
 * above it).  active_pg.force_bloom (testing) makes the path
 * win wherever it is possible.
 *
 * Parallel chains.  A serial chain runs in the leader: its children run in
 * the process that runs the scan.  A partial chain is built on B's partial
 * ActiveScan (planner.c keeps it for the purpose, offered or not): every
 * participant under Gather runs each small side whole, builds the filters
 * from its own rows and scans its share of B's disks with them; the Hash
 * Joins above return each participant's share of the join, so B is the
 * outer side of inner or semi joins only, and the small sides must be
 * parallel-safe.  Its cost adds what PostgreSQL does not see: the small
 * sides' runs in the other participants (an ActiveScan in one always, since
 * the disks scan for each; all of them where the cores do not outnumber
 * participants and disks), and the cores the disks take from the
 * participants above the scan (ap_bloom_cores_taken).  So a chain whose
 * joins above outweigh its scan runs them in parallel (TPC-H Q9's
 * partsupp, Q21's orders), and one whose disks fill the cores stays
 * serial (Q5's lineitem).  A level whose small side is a table with a
 * partial path is offered under a Parallel Hash as well: the participants
 * hash their parts of the small side into one shared table, pass its keys'
 * hashes to a shared list (a parallel BloomShare, bloom_share.c) and every
 * participant builds the filter from all of them once the Parallel Hash's
 * build is over, which is before any participant's probe side starts.  That
 * level charges no other participant's run of the small side.  Join results
 * as such small sides are not offered: their partial paths may hold chains
 * of their own.  active_pg.enable_parallel_bloom switches partial chains
 * off.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/geqo.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "active_pg.h"
#include "bloomjoin.h"
#include "transport.h"
#include "model.h"
#include "plan_memo.h"
#include "shippable.h"

/* active_pg.force_bloom scales the cost of filtered joins by this. */
#define AP_BLOOM_FORCE_COST_FACTOR	1e-6
/* A disk's probe of one key column, ns at the host's speed (measured: 8-15). */
#define AP_BLOOM_PROBE_NS			12.0
/*
 * ... plus the read of the filter's block, which misses the CPU caches more
 * the larger the filter: nothing up to AP_BLOOM_CACHED_BYTES (bloomjoin.h), then up to
 * AP_BLOOM_MISS_NS at AP_BLOOM_MISS_BYTES and beyond, log-linear between.
 * Measured at SF 1 over lineitem (4 disks on 2 cores): a 14 kB filter costs
 * about 12 ns a probe, 75 kB 31 ns, 422 kB 60 ns.
 */
#define AP_BLOOM_MISS_BYTES			(512.0 * 1024)
#define AP_BLOOM_MISS_NS			48.0
/* Do not bother with a filter expected to keep more than this share of rows. */
#define AP_BLOOM_USEFUL_SEL			0.9
/*
 * A chain is not offered where probing B by index for the rows of one of
 * its small sides costs less than the filtered scan by this factor, both at
 * measured speed (ap_bloom_probes_win).
 */
#define AP_BLOOM_PROBE_MARGIN		3.0

/* add_path's fuzz factor for total cost (pathnode.c's STD_FUZZ_FACTOR) */
#define AP_BLOOM_FUZZ				1.01

/*
 * One level of a chain: the filter of S_l's keys on B's scan and the Hash
 * Join of S_l above the level below.
 */
typedef struct ApBloomLevel
{
	/* the filter */
	List	   *entry;			/* custom_private entry: ApBloomPrivIndex, then small exprs */
	Path	   *child;			/* S_l's cheapest path: builds the filter */
	int			nkeys;
	double		est_keys;		/* the small side's estimated distinct keys */
	double		sel;			/* share of B's rows it keeps */
	double		bytes;			/* the filter's planned size */
	double		join_factor;	/* the join's rows over PostgreSQL's estimate */
	double		dup;			/* the small side's rows per key, at least 1 */
	/* the join */
	RelOptInfo *joinrel;
	RelOptInfo *small;
	JoinType	jointype;
	JoinPathExtraData extra;	/* a copy: the hook's lives on the caller's stack */
	bool		big_is_outer;
	/*
	 * A partial chain's Parallel Hash: the participants hash S_l's partial
	 * path together and the filter is built from all their keys
	 * (bloom_share.c), where otherwise each participant runs S_l whole.
	 */
	Path	   *phash;			/* S_l's partial path, or NULL */
	HashPath   *hpath;			/* built over this scan path */
} ApBloomLevel;

/*
 * The filtered ActiveScan path of B.  Only this file creates paths with
 * ap_bloom_path_methods, each with room for its own levels
 * (ap_bloom_extend), so such a CustomPath may be read as an ApBloomPath.
 */
typedef struct ApBloomPath
{
	CustomPath	cpath;			/* first: this is the path */
	RelOptInfo *big;			/* B */
	CustomPath *base;			/* B's unfiltered ActiveScan path */
	bool		partial;		/* base is the partial path: a chain under Gather */
	Cost		scan_cost;		/* the filtered scan's, the filters' build apart */
	/* sharing the small sides with the Hash Joins (bloom_share.c) */
	int			share_ids[AP_BLOOM_FILTERS_MAX];	/* per level, 0 none */
	List	   *share_pos[AP_BLOOM_FILTERS_MAX];	/* per level: keys' positions */
	int			filter_level[AP_BLOOM_FILTERS_MAX];	/* filter i (probe order) is
													 * level filter_level[i] */
	int			nlevels;
	/*
	 * nlevels of them: most chains hold one or two, and a new session's
	 * first plan pays for every page the planner's memory grows by
	 */
	ApBloomLevel levels[FLEXIBLE_ARRAY_MEMBER];
} ApBloomPath;

static set_join_pathlist_hook_type prev_set_join_pathlist_hook = NULL;

/*
 * Set while a join search runs over relations none of which has an
 * ActiveScan a filter could ride on (ap_bloom_join_search): no filter, chain
 * or probe can be offered there, and the join hook returns at once.
 */
static bool ap_bloom_idle = false;
static join_search_hook_type prev_join_search_hook = NULL;

/* The ActiveScan path methods (planner.c's), captured from the first path seen. */
static const CustomPathMethods *ap_scan_path_methods = NULL;

static void ap_bloom_offer_chain(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *bigrel,
								 RelOptInfo *b, CustomPath *base, struct ApBloomPath *prev,
								 RelOptInfo *small, ApBloomLevel *top,
								 JoinPathExtraData *extra, bool partial);
static Plan *ap_bloom_plan_path(PlannerInfo *root, RelOptInfo *rel,
								CustomPath *best_path, List *tlist,
								List *clauses, List *custom_plans);

static const CustomPathMethods ap_bloom_path_methods = {
	.CustomName = AP_SCAN_NAME,
	.PlanCustomPath = ap_bloom_plan_path,
};

/* Is path an ActiveScan (serial, partial or filtered)? */
static bool
ap_bloom_is_scan(Path *path)
{
	return IsA(path, CustomPath) &&
		strcmp(((CustomPath *) path)->methods->CustomName, AP_SCAN_NAME) == 0;
}

/*
 * The unparameterized ActiveScan of a base relation without filters in
 * paths (its pathlist or partial_pathlist), else the one planner.c kept for
 * the Bloom paths (ApBloomBasePath: the serial one not offered on its own,
 * the partial one offered or not), or NULL.
 */
static CustomPath *
ap_bloom_base_of(RelOptInfo *rel, List *paths, bool partial)
{
	ListCell   *lc;
	CustomPath *found = NULL;

	foreach(lc, paths)
	{
		Path	   *path = (Path *) lfirst(lc);

		/* not one already carrying filters (ours, or none produced today) */
		if (ap_bloom_is_scan(path) && path->param_info == NULL &&
			((CustomPath *) path)->methods != &ap_bloom_path_methods &&
			list_nth(((CustomPath *) path)->custom_private, AP_PATH_PRIV_BLOOMS) == NIL)
		{
			found = (CustomPath *) path;
			break;
		}
	}
	if (found == NULL)
		found = ApBloomBasePath(rel, partial);
	if (found != NULL)
		ap_scan_path_methods = found->methods;
	return found;
}

/* B's serial ActiveScan the serial chains are built on, or NULL. */
static CustomPath *
ap_bloom_scan_path(RelOptInfo *rel)
{
	return ap_bloom_base_of(rel, rel->pathlist, false);
}

/* B's partial ActiveScan the partial chains are built on, or NULL. */
static CustomPath *
ap_bloom_partial_scan_path(RelOptInfo *rel)
{
	if (!active_pg_enable_parallel_bloom)
		return NULL;
	return ap_bloom_base_of(rel, rel->partial_pathlist, true);
}

/*
 * The chain whose top Hash Join is path, or NULL.  The filtered scan is
 * found by descending through Hash Joins; it is the chain's only if its
 * record of the top level is this very path.
 */
static ApBloomPath *
ap_bloom_chain_of(Path *path)
{
	Path	   *p = path;

	for (int depth = 0; depth < AP_BLOOM_FILTERS_MAX; depth++)
	{
		HashPath   *hp;
		Path	   *sides[2];

		if (!IsA(p, HashPath))
			return NULL;
		hp = (HashPath *) p;
		sides[0] = hp->jpath.outerjoinpath;
		sides[1] = hp->jpath.innerjoinpath;
		p = NULL;
		for (int i = 0; i < 2; i++)
		{
			if (IsA(sides[i], CustomPath) &&
				((CustomPath *) sides[i])->methods == &ap_bloom_path_methods)
			{
				ApBloomPath *bp = (ApBloomPath *) sides[i];

				if (bp->nlevels > 0 && bp->levels[bp->nlevels - 1].hpath == (HashPath *) path)
					return bp;
				return NULL;
			}
			if (IsA(sides[i], HashPath) && p == NULL)
				p = sides[i];
		}
		if (p == NULL)
			return NULL;
	}
	return NULL;
}

/*
 * Does pred hold for path or a path below it, through the joins and the
 * nodes a small side's path may hold above its scans?  Walks the tree.
 */
static bool
ap_bloom_path_any(Path *path, bool (*pred) (Path *path))
{
	Path	   *sub;

	check_stack_depth();
	if (pred(path))
		return true;
	switch (nodeTag(path))
	{
		case T_NestPath:
		case T_MergePath:
		case T_HashPath:
			return ap_bloom_path_any(((JoinPath *) path)->outerjoinpath, pred) ||
				ap_bloom_path_any(((JoinPath *) path)->innerjoinpath, pred);
		case T_MaterialPath:
			sub = ((MaterialPath *) path)->subpath;
			break;
		case T_MemoizePath:
			sub = ((MemoizePath *) path)->subpath;
			break;
		case T_UniquePath:
			sub = ((UniquePath *) path)->subpath;
			break;
		case T_ProjectionPath:
			sub = ((ProjectionPath *) path)->subpath;
			break;
		case T_SortPath:
		case T_IncrementalSortPath:
			sub = ((SortPath *) path)->subpath;
			break;
		case T_AggPath:
			sub = ((AggPath *) path)->subpath;
			break;
		default:
			return false;
	}
	return ap_bloom_path_any(sub, pred);
}

/* ns a disk spends on one tuple's probe of level lv's filter (see AP_BLOOM_MISS_NS). */
static double
ap_bloom_probe_ns(const ApBloomLevel *lv)
{
	double		miss = 0.0;

	if (lv->bytes > AP_BLOOM_CACHED_BYTES)
		miss = AP_BLOOM_MISS_NS *
			Min(1.0, log2(lv->bytes / (double) AP_BLOOM_CACHED_BYTES) /
				log2(AP_BLOOM_MISS_BYTES / (double) AP_BLOOM_CACHED_BYTES));
	return AP_BLOOM_PROBE_NS * lv->nkeys + miss;
}

/*
 * Seconds a partial chain's participants lose to its disks.  PostgreSQL
 * divides the work of the joins above a partial path by the participants
 * (the parallel divisor), as if each had a core of its own; while the disks
 * scan, their CPU (mf's, summed over the disks) runs on the same cores, and
 * the participants above the scan get only what the disks leave.  The
 * disks' work spread over the cores is charged at the share of it the
 * divisor would have taken off the joins above.  A small scan under much
 * host work above it pays little (TPC-H Q9, SF 0.1: partsupp under nested
 * loops over 32,000 rows, 176-181 -> 105-114 ms with workers, stock's
 * parallel plan 103-104 ms); a large one whose joins above are light does
 * not go parallel (Q5, SF 1: lineitem with its supplier filter, 1.2 million
 * rows shipped into a Parallel Hash Join, ran 387-419 ms against 275-288 ms
 * for the serial chain).
 */
static double
ap_bloom_cores_taken(const ApModelResult *mf, const CustomPath *base)
{
	int			cores = Max(mf->cores, 1);
	double		disk_s = Max(mf->a_cores * cores - mf->a_host, 0.0);
	double		divisor = ApParallelDivisor(base->path.parallel_workers);

	return disk_s / cores * (1.0 - 1.0 / Max(divisor, 1.0));
}

/*
 * Rows and costs of the filtered scan from the unfiltered one and its
 * filters (see the file header), and its custom_paths and custom_private.
 * The disks probe the filters in custom_private's order and stop at the
 * first that drops a row: the most selective goes first.
 */
static void
ap_bloom_cost_scan(ApBloomPath *bp)
{
	int			order[AP_BLOOM_FILTERS_MAX];
	RelOptInfo *b = bp->big;
	CustomPath *base = bp->base;
	double		reaching = b->tuples;
	double		sel = 1.0;
	Cost		build = 0;
	Cost		scan = base->path.total_cost;
	double		probe_s = 0;
	ApModelResult m;
	ApModelResult mf;
	List	   *children = NIL;
	List	   *entries = NIL;
	List	   *priv;
	bool		shared_cores;

	/*
	 * Every participant of a partial chain runs each small side whole.
	 * PostgreSQL charges that once, as the participants run side by side; on
	 * a machine with no more cores than participants and disks, those runs
	 * take the cores the disks and the other participants need, and add up
	 * (TPC-H Q21, SF 0.1, 2 cores: its partial orders scan under a small
	 * side of 8,000 lineitem rows found by index, run by both participants,
	 * took 62-66 ms against 60-63 ms serially).  An ActiveScan in a small
	 * side is charged per participant wherever it runs: the disks scan for
	 * each.
	 */
	shared_cores = bp->partial &&
		ApModelCores() <= base->path.parallel_workers + 1 + ApConfiguredDiskCount();

	/* insertion sort by selectivity; ties keep the join order */
	for (int l = 0; l < bp->nlevels; l++)
	{
		int			j = l;

		while (j > 0 && bp->levels[order[j - 1]].sel > bp->levels[l].sel)
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = l;
	}
	for (int i = 0; i < bp->nlevels; i++)
	{
		ApBloomLevel *lv = &bp->levels[order[i]];

		/*
		 * A small side the Hash shares runs once, charged to the Hash.  One
		 * the probe side shares is still charged twice: crediting it made
		 * TPC-H Q8 and Q10 pick slower plans (measured, ARCHITECTURE.md).
		 */
		if (bp->share_ids[order[i]] == 0 || !lv->big_is_outer)
			build += lv->child->total_cost;
		/* a partial chain: the other participants' runs of the small side */
		if (bp->partial && lv->phash == NULL &&
			(shared_cores || ap_bloom_path_any(lv->child, ap_bloom_is_scan)))
			build += base->path.parallel_workers * lv->child->total_cost;
		build += cpu_operator_cost * lv->nkeys * lv->child->rows;
		probe_s += ap_bloom_probe_ns(lv) * 1e-9 * reaching;
		reaching *= lv->sel;
		sel *= lv->sel;
		children = lappend(children, lv->child);
		entries = lappend(entries, lv->entry);
		bp->filter_level[i] = order[i];
	}
	memcpy(&bp->cpath, base, sizeof(CustomPath));
	/*
	 * The filters' children run in whichever process runs the scan: a serial
	 * chain stays in the leader.  A partial one runs in every participant,
	 * each building the filters from its own run of the small sides (which
	 * are parallel-safe, ap_bloom_offer) and scanning its share of B.
	 */
	if (!bp->partial)
		bp->cpath.path.parallel_safe = false;
	bp->cpath.methods = &ap_bloom_path_methods;
	bp->cpath.custom_paths = children;
	priv = list_copy(base->custom_private);
	list_nth_cell(priv, AP_PATH_PRIV_BLOOMS)->ptr_value = entries;
	bp->cpath.custom_private = priv;

	bp->cpath.path.rows = clamp_row_est((bp->partial ? base->path.rows : b->rows) * sel);
	bp->cpath.path.startup_cost = base->path.startup_cost + build;
	/*
	 * The model of the scan (planner.c gives every ActiveScan path one) with
	 * only the rows that pass the filters crossing to the host and the probes
	 * added to the disks' work, at the scan's own exchange rate of seconds to
	 * cost units.
	 */
	if (ApModelFromList(list_nth(priv, AP_PATH_PRIV_MODEL), &m) && m.t_active > 0)
	{
		ApModelFilterOutput(&m, sel, probe_s, &mf);
		scan = base->path.total_cost * mf.t_active / m.t_active;
		if (bp->partial)
			scan += base->path.total_cost * ap_bloom_cores_taken(&mf, base) / m.t_active;
		list_nth_cell(priv, AP_PATH_PRIV_MODEL)->ptr_value = ApModelToList(&mf);
	}
	bp->scan_cost = scan;
	bp->cpath.path.total_cost = Max(scan + build, bp->cpath.path.startup_cost);
}

/*
 * The Hash Join of level l over lower (the level below, or the scan), or
 * NULL if it has no hash clause.  rows: what it is expected to return.
 */
static HashPath *
ap_bloom_join(PlannerInfo *root, ApBloomPath *bp, int l, Path *lower, double rows)
{
	ApBloomLevel *lv = &bp->levels[l];
	int			share = bp->share_ids[l];
	RelOptInfo *outerrel = lv->big_is_outer ? lower->parent : lv->small;
	RelOptInfo *innerrel = lv->big_is_outer ? lv->small : lower->parent;
	Path	   *small;
	Path	   *outer_path;
	Path	   *inner_path;
	List	   *hashclauses;
	JoinCostWorkspace workspace;
	HashPath   *hpath;
	bool		parallel_hash = lv->phash != NULL;

	if (parallel_hash)
	{
		int			filter = 0;

		while (bp->filter_level[filter] != l)
			filter++;
		Assert(share > 0 && lv->big_is_outer);
		small = ApBloomShareParallelPath(root, lv->phash, share, filter, bp->share_pos[l],
										 list_nth(lv->entry, AP_BLOOM_PRIV_HOST_KINDS));
	}
	else if (share > 0)
		small = ApBloomSharePath(root, lv->small->cheapest_total_path, share,
								 !lv->big_is_outer);
	else
		small = lv->small->cheapest_total_path;
	outer_path = lv->big_is_outer ? lower : small;
	inner_path = lv->big_is_outer ? small : lower;
	hashclauses = ApBloomHashClauses(lv->joinrel, lv->jointype, lv->extra.restrictlist,
									   outerrel, innerrel);
	if (hashclauses == NIL)
		return NULL;
	initial_cost_hashjoin(root, &workspace, lv->jointype, hashclauses,
						  outer_path, inner_path, &lv->extra, parallel_hash);
	hpath = create_hashjoin_path(root, lv->joinrel, lv->jointype, &workspace, &lv->extra,
								 outer_path, inner_path, parallel_hash,
								 lv->extra.restrictlist, NULL, hashclauses);
	hpath->jpath.path.rows = clamp_row_est(rows);
	return hpath;
}

/*
 * Can level l's filter be built from the rows its Hash Join already reads
 * from the small side (bloom_share.c), hashed or probing?  When the small
 * side's path is the one the filter's child runs and every key expression
 * is one of its output columns: then a share id and the keys' positions.
 */
static void
ap_bloom_plan_share(ApBloomPath *bp, int l)
{
	ApBloomLevel *lv = &bp->levels[l];
	Path	   *small = lv->small->cheapest_total_path;
	List	   *pos = NIL;
	ListCell   *lc;

	bp->share_ids[l] = 0;
	bp->share_pos[l] = NIL;
	if (lv->child != small || small->param_info != NULL)
		return;
	/* under a Parallel Hash the share passes up the partial path's rows */
	if (lv->phash != NULL)
		small = lv->phash;
	foreach(lc, (List *) llast(lv->entry))
	{
		int			at = 0;
		int			i = 1;
		ListCell   *le;

		foreach(le, small->pathtarget->exprs)
		{
			if (equal(lfirst(le), lfirst(lc)))
			{
				at = i;
				break;
			}
			i++;
		}
		if (at == 0)
			return;
		pos = lappend_int(pos, at);
	}
	bp->share_ids[l] = ApBloomShareNewId();
	bp->share_pos[l] = pos;
}

/*
 * The rows level l's join returns, the filters of the levels above apart:
 * PostgreSQL's estimate of its join relation, corrected where a small
 * side's key domain reaches far beyond B's column (join_factor,
 * ApBloomSelectivity: TPC-DS's fact tables joined to date_dim, estimated
 * 40 times too few), and then at most the rows of B the filters up to l
 * keep times each small side's rows per key.
 */
static double
ap_bloom_join_rows(ApBloomPath *bp, int l)
{
	double		pg_rows = bp->levels[l].joinrel->rows;
	double		rows = pg_rows;
	double		bound = bp->big->rows;

	for (int m = 0; m <= l; m++)
	{
		rows *= bp->levels[m].join_factor;
		bound *= bp->levels[m].sel * bp->levels[m].dup;
	}
	if (rows > pg_rows)
		rows = Max(pg_rows, Min(rows, bound));
	return rows;
}

/*
 * A new chain: prev's levels (none when prev is NULL) and the new level
 * top, every join rebuilt over the scan with one more filter.  NULL if a
 * level cannot be rebuilt.
 */
static ApBloomPath *
ap_bloom_extend(PlannerInfo *root, RelOptInfo *b, CustomPath *base,
				ApBloomPath *prev, ApBloomLevel *top, bool partial)
{
	int			nlevels = (prev != NULL ? prev->nlevels : 0) + 1;
	ApBloomPath *bp = palloc0(offsetof(ApBloomPath, levels) + nlevels * sizeof(ApBloomLevel));
	Path	   *lower;
	/* a partial join's rows are one participant's */
	double		divisor = partial ? ApParallelDivisor(base->path.parallel_workers) : 1.0;

	bp->big = b;
	bp->base = base;
	bp->partial = partial;
	if (prev != NULL)
	{
		bp->nlevels = prev->nlevels;
		memcpy(bp->levels, prev->levels, sizeof(ApBloomLevel) * prev->nlevels);
	}
	bp->levels[bp->nlevels++] = *top;
	for (int l = 0; l < bp->nlevels; l++)
	{
		ap_bloom_plan_share(bp, l);
		/* a Parallel Hash level's filter has no other source of all the keys */
		if (bp->levels[l].phash != NULL && bp->share_ids[l] == 0)
			return NULL;
	}
	ap_bloom_cost_scan(bp);

	lower = &bp->cpath.path;
	for (int l = 0; l < bp->nlevels; l++)
	{
		ApBloomLevel *lv = &bp->levels[l];
		double		rows = ap_bloom_join_rows(bp, l);

		/* the filters of the levels above remove rows this join returned */
		for (int m = l + 1; m < bp->nlevels; m++)
			rows *= bp->levels[m].sel;
		lv->hpath = ap_bloom_join(root, bp, l, lower, rows / divisor);
		if (lv->hpath == NULL)
			return NULL;
		lower = &lv->hpath->jpath.path;
	}
	return bp;
}

/*
 * The least cost any filtered scan of B over base can have: ap_bloom_cost_scan
 * scales base's cost by the model's time with the filters' output and
 * probes (ApModelFilterOutput), which only grows with the rows the filters
 * keep and the probes' work; so with none kept and no probe.  Base's own
 * cost where it carries no model.
 */
static Cost
ap_bloom_least_scan(const CustomPath *base)
{
	ApModelResult m;
	ApModelResult m0;

	if (!ApModelFromList(list_nth(base->custom_private, AP_PATH_PRIV_MODEL), &m) ||
		m.t_active <= 0)
		return base->path.total_cost;
	ApModelFilterOutput(&m, 0.0, 0.0, &m0);
	return base->path.total_cost * m0.t_active / m.t_active;
}

/*
 * Would add_path (partial: add_partial_path) surely reject any Bloom path
 * of joinrel filtering base's scan of B with small's keys on top of prev's
 * levels (none when prev is NULL)?  Such a path costs at least the least
 * filtered scan of base (ap_bloom_least_scan) plus every level's small side,
 * which the level's Hash Join runs whole as one of its two inputs (a
 * Parallel Hash level: its partial path); it starts no sooner than base
 * starts and small's cheapest path has run (the filter is built from it,
 * or the Hash Join above hashes it first), returns no fewer rows than joinrel
 * (ap_bloom_join_rows), and a serial one is not parallel-safe.  So an
 * unparameterized path of joinrel, no more disabled (PostgreSQL 18 compares
 * that first), returning no more rows than joinrel, starting no later and
 * cheaper in total beyond add_path's fuzz factor dominates every serial
 * one; a cheaper partial path (add_partial_path compares total cost and
 * pathkeys only) every partial one.  The filters' keys, selectivities,
 * geometry and costs are then not computed.  Where the chain's pricing may
 * offer index probes of B instead (probes_possible, ap_bloom_offer_chain),
 * which nothing here bounds, only a path under a quarter of B's cost floor
 * (ApRelCostFloor) counts as proof: two index lookups joined by a nested
 * loop (bench/adhoc 107).  Not under the testing switches, which make Bloom
 * paths win where they can.
 */
static bool
ap_bloom_cannot_win(RelOptInfo *joinrel, RelOptInfo *b, CustomPath *base, RelOptInfo *small,
					ApBloomPath *prev, bool partial, bool probes_possible)
{
	Cost		least;
	Cost		small_total;
	ListCell   *lc;

	if (active_pg_force || active_pg_force_bloom || small->cheapest_total_path == NULL)
		return false;
	small_total = small->cheapest_total_path->total_cost;
	if (probes_possible)
	{
		Cost		floor = ApRelCostFloor(b);

		foreach(lc, joinrel->pathlist)
		{
			Path	   *path = (Path *) lfirst(lc);

			if (path->param_info == NULL && ApPathDisabledNodes(path) == 0 &&
				path->total_cost < 0.25 * floor && path->startup_cost <= small_total)
				return true;
		}
		return false;
	}

	least = ap_bloom_least_scan(base);
	/* a partial chain may hash this level's small side in parallel */
	if (partial && small->partial_pathlist != NIL)
		least += Min(small_total, ((Path *) linitial(small->partial_pathlist))->total_cost);
	else
		least += small_total;
	for (int l = 0; prev != NULL && l < prev->nlevels; l++)
		least += prev->levels[l].phash != NULL ?
			Min(prev->levels[l].child->total_cost, prev->levels[l].phash->total_cost) :
			prev->levels[l].child->total_cost;
	foreach(lc, partial ? joinrel->partial_pathlist : joinrel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (path->param_info != NULL || ApPathDisabledNodes(path) != 0 ||
			path->total_cost * AP_BLOOM_FUZZ >= least)
			continue;
		if (partial ||
			(path->rows <= joinrel->rows &&
			 path->startup_cost <= base->path.startup_cost + small_total))
			return true;
	}
	return false;
}

/*
 * Would a nested loop probing B by one of its indexes, once per row of one
 * of the chain's small sides, take far less than the filtered scan of all
 * of B?  Both at measured speed and at the exchange rate of B's ActiveScan:
 * the scan as ap_bloom_cost_scan prices it, the probes as ApIndexProbePath
 * does.  PostgreSQL prices a probe's heap pages as reads from the device
 * (random_page_cost) even where they are buffers or in the page cache, so
 * a chain priced at measured speed beat on cost the nested loop that ran
 * in a third of its time or less: TPC-DS's query 3 at SF 1 probes
 * store_sales by its key's leading column for 39 items (about 6,000 rows),
 * 49 ms, where the filtered scan of its 2.9 million rows took 169.  Only
 * beyond AP_BLOOM_PROBE_MARGIN.  The top level's probe path and its cost
 * per probe come back in *probe and *probe_cost (NULL if that level's
 * probes do not win).  Not under the testing switches.
 */
static bool
ap_bloom_probes_win(PlannerInfo *root, ApBloomPath *bp, Path **probe, Cost *probe_cost)
{
	bool		win = false;

	*probe = NULL;
	if (active_pg_force || active_pg_force_bloom)
		return false;
	for (int l = 0; l < bp->nlevels; l++)
	{
		RelOptInfo *small = bp->levels[l].small;
		Cost		c;
		Path	   *path = ApIndexProbePath(root, bp->big, small->relids, &c);

		if (path != NULL && AP_BLOOM_PROBE_MARGIN * c * Max(small->rows, 1.0) < bp->scan_cost)
		{
			win = true;
			if (l == bp->nlevels - 1)
			{
				*probe = path;
				*probe_cost = c;
			}
		}
	}
	return win;
}

/*
 * In place of a first filter that probes beat (ap_bloom_probes_win): the
 * nested loop over small's rows probing B by probe, that path priced at
 * measured speed, probe_cost a probe.  Without it PostgreSQL's own nested
 * loop, costed with every heap page a read from the device, lost to the
 * hash join over B's unfiltered ActiveScan, and the plan was slower than
 * with the filter (bench/adhoc 138 at SF 0.1: 104 ms against 30, stock's
 * nested loop 16).  An inner join of B's base relation alone, B inside;
 * small a table or a join result (TPC-DS 50 at SF 1 with workers probes
 * store_sales from store_returns joined to its dates: 33 ms against 42 with
 * PostgreSQL's price of the probes, stock 40).  Also for join results no
 * filter can come from (ap_bloom_try_probes).
 */
static void
ap_bloom_offer_probes(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *small,
					  Path *probe, Cost probe_cost, JoinPathExtraData *extra)
{
	Path	   *outer = small->cheapest_total_path;
	Path	   *inner;
	JoinCostWorkspace workspace;
	NestPath   *npath;

	if (IsA(probe, IndexPath))
	{
		inner = (Path *) makeNode(IndexPath);
		memcpy(inner, probe, sizeof(IndexPath));
	}
	else if (IsA(probe, BitmapHeapPath))
	{
		inner = (Path *) makeNode(BitmapHeapPath);
		memcpy(inner, probe, sizeof(BitmapHeapPath));
	}
	else
		return;
	inner->startup_cost = Min(inner->startup_cost, probe_cost);
	inner->total_cost = probe_cost;
	initial_cost_nestloop(root, &workspace, JOIN_INNER, outer, inner, extra);
	npath = create_nestloop_path(root, joinrel, JOIN_INNER, &workspace, extra, outer, inner,
								 extra->restrictlist, NIL, NULL);
	add_path(joinrel, &npath->jpath.path);

	/*
	 * ... and under Gather, over small's partial path, as PostgreSQL's own
	 * nested loops go parallel: the price of a probe must not favour the
	 * serial plan over the parallel one (TPC-H Q9 at SF 0.1 went serial and
	 * 40% slower).
	 */
	if (!joinrel->consider_parallel || small->partial_pathlist == NIL || !inner->parallel_safe)
		return;
	outer = (Path *) linitial(small->partial_pathlist);
	if (outer->param_info != NULL)
		return;
	initial_cost_nestloop(root, &workspace, JOIN_INNER, outer, inner, extra);
	npath = create_nestloop_path(root, joinrel, JOIN_INNER, &workspace, extra, outer, inner,
								 extra->restrictlist, NIL, NULL);
	add_partial_path(joinrel, &npath->jpath.path);
}

/*
 * Offer the join of bigrel (B or one of our chains over B) and small in
 * which B's scan carries one more filter, of small's keys.
 */
static void
ap_bloom_offer(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *bigrel,
			   RelOptInfo *b, CustomPath *base, ApBloomPath *prev, RelOptInfo *small,
			   JoinType jointype, JoinPathExtraData *extra, bool big_is_outer,
			   bool partial)
{
	ApBloomKey	keys[AP_BLOOM_KEYS_MAX];
	int			nkeys;
	bool		allow_ec;
	double		nd_small;
	ApBloomLevel top;

	/*
	 * The small side returns no more rows than B's scan: the filter is meant
	 * to spare that scan's output, and one built from a larger input than it
	 * can save (orders filtered by all of lineitem's keys) hardly ever pays,
	 * even where force_bloom would take it.
	 */
	if (small->rows > b->rows)
		return;

	/*
	 * A partial chain (under Gather): B's share of each participant probes
	 * Hash Joins whose inner side, the small side, every participant runs
	 * whole, as PostgreSQL's own parallel Hash Joins without a shared table
	 * do; so B is the outer side at every level (prev's levels were checked
	 * when they were offered), and the small sides and the join are
	 * parallel-safe.  Each participant's Hash Join returns its own share of
	 * the join: an inner or semi join's, never a right join's, whose
	 * unmatched inner rows every participant would return again.
	 */
	if (partial &&
		((jointype != JOIN_INNER && jointype != JOIN_SEMI) ||
		 !big_is_outer || !joinrel->consider_parallel || !base->path.parallel_safe ||
		 !small->cheapest_total_path->parallel_safe))
		return;
	if (ap_bloom_cannot_win(joinrel, b, base, small, prev, partial,
							!partial && prev == NULL && bigrel == b && !big_is_outer &&
							jointype == JOIN_INNER))
		return;
	/* a key through an equivalence class needs inner joins all the way */
	allow_ec = prev != NULL && (jointype == JOIN_INNER || jointype == JOIN_SEMI);
	for (int l = 0; prev != NULL && l < prev->nlevels; l++)
	{
		if (prev->levels[l].jointype != JOIN_INNER)
			allow_ec = false;
	}
	nkeys = ApBloomJoinKeys(joinrel, jointype, extra->restrictlist, bigrel, b, small,
							allow_ec, keys);
	if (nkeys == 0)
		return;

	memset(&top, 0, sizeof(top));
	top.sel = ApBloomSelectivity(root, b, small, keys, nkeys, &nd_small, &top.bytes,
								 &top.join_factor);
	if (jointype != JOIN_INNER)
		top.join_factor = 1.0;
	top.dup = Max(1.0, small->rows / Max(nd_small, 1.0));
	if (!active_pg_force_bloom && top.sel > AP_BLOOM_USEFUL_SEL)
		return;
	top.entry = ApBloomPrivate(keys, nkeys);
	top.est_keys = nd_small;
	top.child = small->cheapest_total_path;
	top.nkeys = nkeys;
	top.joinrel = joinrel;
	top.small = small;
	top.jointype = jointype;
	top.extra = *extra;
	top.big_is_outer = big_is_outer;

	ap_bloom_offer_chain(root, joinrel, bigrel, b, base, prev, small, &top, extra, partial);

	/*
	 * A partial chain whose small side is a table with a partial path is
	 * offered under a Parallel Hash as well: the participants hash their
	 * parts of it together and every one builds the filter from all the
	 * keys (bloom_share.c), instead of each running the small side whole.
	 * A join result's partial path may hold chains of its own, whose
	 * filters under a Parallel Hash are not planned.
	 */
	if (partial && small->reloptkind == RELOPT_BASEREL && small->partial_pathlist != NIL)
	{
		Path	   *ppath = linitial(small->partial_pathlist);

		if (ppath->param_info == NULL && ppath->parallel_safe)
		{
			top.phash = ppath;
			ap_bloom_offer_chain(root, joinrel, bigrel, b, base, prev, small, &top, extra,
								 partial);
		}
	}
}

/* ap_bloom_offer's chain: prev (if any) extended with level top. */
static void
ap_bloom_offer_chain(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *bigrel,
					 RelOptInfo *b, CustomPath *base, ApBloomPath *prev, RelOptInfo *small,
					 ApBloomLevel *top, JoinPathExtraData *extra, bool partial)
{
	ApBloomPath *bp;
	HashPath   *hpath;
	Path	   *probe;
	Cost		probe_cost = 0;

	bp = ap_bloom_extend(root, b, base, prev, top, partial);
	if (bp == NULL)
		return;
	if (!partial && ap_bloom_probes_win(root, bp, &probe, &probe_cost))
	{
		if (probe != NULL && prev == NULL && bigrel == b && !top->big_is_outer &&
			top->jointype == JOIN_INNER)
			ap_bloom_offer_probes(root, joinrel, small, probe, probe_cost, extra);
		return;
	}
	hpath = bp->levels[bp->nlevels - 1].hpath;
	/* the top join returns what the join relation returns, filters or not */
	hpath->jpath.path.rows = clamp_row_est(ap_bloom_join_rows(bp, bp->nlevels - 1) /
										   (partial ?
											ApParallelDivisor(hpath->jpath.path.parallel_workers) :
											1.0));
	if (active_pg_force_bloom)
	{
		/*
		 * testing: win against every other path of this join, while the
		 * cheaper of two filtered paths (which side carries the filter, how
		 * many filters) still wins among themselves
		 */
		hpath->jpath.path.startup_cost *= AP_BLOOM_FORCE_COST_FACTOR;
		hpath->jpath.path.total_cost *= AP_BLOOM_FORCE_COST_FACTOR;
	}
	if (partial)
	{
		Assert(hpath->jpath.path.parallel_safe && hpath->jpath.path.parallel_workers > 0);
		add_partial_path(joinrel, &hpath->jpath.path);
	}
	else
		add_path(joinrel, &hpath->jpath.path);
}

/*
 * Is path what a filter's child must not hold: a Gather, or a filter whose
 * own small side is a join result?
 */
static bool
ap_bloom_refused_node(Path *path)
{
	if (IsA(path, GatherPath) || IsA(path, GatherMergePath))
		return true;
	if (IsA(path, CustomPath) && ((CustomPath *) path)->methods == &ap_bloom_path_methods)
	{
		ApBloomPath *bp = (ApBloomPath *) path;

		for (int l = 0; l < bp->nlevels; l++)
		{
			if (bp->levels[l].small->reloptkind != RELOPT_BASEREL)
				return true;
		}
	}
	return false;
}

/*
 * Which base relations of a planning have a volatile function among their
 * restrictions, and which among their join clauses: ap_bloom_small_ok asks
 * for every base relation of every small side it is offered, 4,000 walks of
 * the clauses in TPC-DS's query 85, whose clauses do not change during the
 * join search.  Kept in the planner's memory (plan_memo.h).
 */
typedef struct ApVolatileRels
{
	PlannerInfo *root;
	Bitmapset  *checked;
	Bitmapset  *in_restrictions;
	Bitmapset  *in_join_clauses;
} ApVolatileRels;

static ApMemo ap_volatile_rels;

/* Is value the planning root's? */
static bool
ap_volatile_rels_of(const void *value, const void *root)
{
	return ((const ApVolatileRels *) value)->root == root;
}

static ApVolatileRels *
ap_bloom_volatile_rels(PlannerInfo *root, int relid)
{
	ApVolatileRels *v = ApMemoFind(&ap_volatile_rels, ap_volatile_rels_of, root);
	RelOptInfo *rel;

	if (v == NULL)
	{
		v = palloc0(sizeof(ApVolatileRels));
		v->root = root;
		ApMemoKeep(&ap_volatile_rels, v);
	}
	if (bms_is_member(relid, v->checked))
		return v;
	rel = find_base_rel(root, relid);
	if (contain_volatile_functions((Node *) rel->baserestrictinfo))
		v->in_restrictions = bms_add_member(v->in_restrictions, relid);
	if (contain_volatile_functions((Node *) rel->joininfo))
		v->in_join_clauses = bms_add_member(v->in_join_clauses, relid);
	v->checked = bms_add_member(v->checked, relid);
	return v;
}

/*
 * Can small's cheapest path run a second time, as a filter's child, and
 * produce exactly the rows its join sees?  A table, or a join of tables (a
 * join result as the small side: orders JOIN customer for Q3's lineitem),
 * with no subquery (its path belongs to its own planner run and cannot be
 * planned twice), no volatile clause (a second run could return other rows),
 * no lateral reference, no parameterization and no Gather (one plan may run
 * its parallel workers once at a time, and the child would start its own).
 * A join result's path may itself carry filters of tables, not of other join
 * results: every join result a plan runs twice doubles what lies below it,
 * and nesting them would double it again at each level.
 */
static bool
ap_bloom_small_ok(PlannerInfo *root, RelOptInfo *small)
{
	int			relid = -1;
	Relids		base_relids = ApBaseRelids(root, small->relids);

	if (small->reloptkind != RELOPT_BASEREL &&
		!(small->reloptkind == RELOPT_JOINREL && active_pg_bloom_join_results))
		return false;
	if (!bms_is_empty(small->lateral_relids) || IS_DUMMY_REL(small))
		return false;
	if (small->cheapest_total_path == NULL || small->cheapest_total_path->param_info != NULL)
		return false;
	while ((relid = bms_next_member(base_relids, relid)) >= 0)
	{
		ApVolatileRels *v;

		if (planner_rt_fetch(relid, root)->rtekind != RTE_RELATION)
			return false;
		v = ap_bloom_volatile_rels(root, relid);
		if (bms_is_member(relid, v->in_restrictions))
			return false;
		/* join clauses among the small side's tables decide its rows too */
		if (small->reloptkind == RELOPT_JOINREL && bms_is_member(relid, v->in_join_clauses))
			return false;
	}
	if (small->reloptkind == RELOPT_JOINREL && ap_bloom_path_any(small->cheapest_total_path, ap_bloom_refused_node))
		return false;
	return true;
}

/*
 * A join result small cannot filter B's scan from (ap_bloom_small_ok: most
 * often its cheapest path holds a Gather) may still be the outer side of a
 * nested loop probing B by index, which PostgreSQL prices with every heap
 * page a read from the device.  Where those probes at measured speed
 * (ApIndexProbePath) take less than B's ActiveScan, they are offered at that
 * price (ap_bloom_offer_probes), serially and under Gather, beside
 * PostgreSQL's own: TPC-H Q5 at SF 0.1 joins orders of a year to Asia's
 * customers (4,707 rows, under Gather) and probes lineitem by its key, 34 ms
 * in PostgreSQL's parallel plan priced at twice the filtered scan of all of
 * lineitem that took 46.
 */
static void
ap_bloom_try_probes(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *b,
					RelOptInfo *small, JoinPathExtraData *extra)
{
	CustomPath *base;
	Path	   *probe;
	Cost		probe_cost;

	if (active_pg_force || active_pg_force_bloom || small->reloptkind != RELOPT_JOINREL ||
		!bms_is_empty(small->lateral_relids) || IS_DUMMY_REL(small) ||
		small->cheapest_total_path == NULL || small->cheapest_total_path->param_info != NULL ||
		(base = ap_bloom_scan_path(b)) == NULL)
		return;
	probe = ApIndexProbePath(root, b, small->relids, &probe_cost);
	if (probe != NULL && probe_cost * Max(small->rows, 1.0) < base->path.total_cost)
		ap_bloom_offer_probes(root, joinrel, small, probe, probe_cost, extra);
}

/* Try the joins where the side bigrel carries filters and the other is small. */
static void
ap_bloom_try(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			 RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra,
			 bool big_is_outer)
{
	RelOptInfo *bigrel = big_is_outer ? outerrel : innerrel;
	RelOptInfo *small = big_is_outer ? innerrel : outerrel;
	ListCell   *lc;
	List	   *chains = NIL;

	if (!bms_is_empty(bigrel->lateral_relids))
		return;

	/*
	 * What the big side can carry is looked at first: most pairs of a join
	 * search have none (their big side is a dimension, or a join without a
	 * chain), and the small side's checks cost more.
	 */
	if (bigrel->reloptkind == RELOPT_BASEREL)
	{
		CustomPath *serial = ap_bloom_scan_path(bigrel);
		CustomPath *partial = big_is_outer ? ap_bloom_partial_scan_path(bigrel) : NULL;

		if (serial == NULL && partial == NULL)
			return;
		if (!ap_bloom_small_ok(root, small))
		{
			if (!big_is_outer && jointype == JOIN_INNER)
				ap_bloom_try_probes(root, joinrel, bigrel, small, extra);
			return;
		}
		if (serial != NULL)
			ap_bloom_offer(root, joinrel, bigrel, bigrel, serial, NULL, small,
						   jointype, extra, big_is_outer, false);
		if (partial != NULL)
			ap_bloom_offer(root, joinrel, bigrel, bigrel, partial, NULL, small,
						   jointype, extra, big_is_outer, true);
		return;
	}
	if (bigrel->reloptkind != RELOPT_JOINREL)
		return;

	/*
	 * One more filter on each chain the big side holds, serial ones from its
	 * paths and partial ones from its partial paths (collected first:
	 * add_path and add_partial_path may free).
	 */
	foreach(lc, bigrel->pathlist)
	{
		ApBloomPath *prev = ap_bloom_chain_of((Path *) lfirst(lc));

		if (prev != NULL && prev->nlevels < AP_BLOOM_FILTERS_MAX &&
			!list_member_ptr(chains, prev))
			chains = lappend(chains, prev);
	}
	foreach(lc, bigrel->partial_pathlist)
	{
		ApBloomPath *prev = ap_bloom_chain_of((Path *) lfirst(lc));

		if (big_is_outer && prev != NULL && prev->nlevels < AP_BLOOM_FILTERS_MAX &&
			!list_member_ptr(chains, prev))
			chains = lappend(chains, prev);
	}
	if (chains == NIL || !ap_bloom_small_ok(root, small))
		return;
	foreach(lc, chains)
	{
		ApBloomPath *prev = lfirst(lc);

		ap_bloom_offer(root, joinrel, bigrel, prev->big, prev->base, prev, small,
					   jointype, extra, big_is_outer, prev->partial);
	}
}

/* set_join_pathlist_hook: offer Bloom-filtered joins where the join type allows. */
static void
ap_bloom_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
					   RelOptInfo *outerrel, RelOptInfo *innerrel,
					   JoinType jointype, JoinPathExtraData *extra)
{
	if (prev_set_join_pathlist_hook)
		prev_set_join_pathlist_hook(root, joinrel, outerrel, innerrel, jointype, extra);
	if (!active_pg_enable || !active_pg_enable_bloom || ap_bloom_idle)
		return;

	switch (jointype)
	{
		case JOIN_INNER:
		case JOIN_SEMI:
			/* both sides lose only rows that cannot join */
			ap_bloom_try(root, joinrel, outerrel, innerrel, jointype, extra, true);
			ap_bloom_try(root, joinrel, outerrel, innerrel, jointype, extra, false);
			break;
		case JOIN_LEFT:
			/* the inner side is the nullable one */
			ap_bloom_try(root, joinrel, outerrel, innerrel, jointype, extra, false);
			break;
		case JOIN_RIGHT:
			/* the outer side is the nullable one */
			ap_bloom_try(root, joinrel, outerrel, innerrel, jointype, extra, true);
			break;
		default:
			/* anti and full joins keep every row of both sides' relevance */
			break;
	}
}

/*
 * PlanCustomPath of the filtered scan: planner.c's plan, plus the child
 * plans with the key expressions as their target lists; the small side's
 * expressions leave custom_private (they live in the child's tlist, where
 * setrefs processes them).
 */
static Plan *
ap_bloom_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				   List *tlist, List *clauses, List *custom_plans)
{
	ApBloomPath *bp = (ApBloomPath *) best_path;
	CustomScan *cscan;
	List	   *blooms;
	List	   *plan_blooms = NIL;
	List	   *children = NIL;
	ListCell   *lc;
	ListCell   *lp;

	cscan = (CustomScan *) ap_scan_path_methods->PlanCustomPath(root, rel, best_path, tlist,
																clauses, NIL);
	blooms = list_nth(cscan->custom_private, AP_PRIV_BLOOMS);
	forboth(lc, blooms, lp, custom_plans)
	{
		List	   *entry = lfirst(lc);
		List	   *small_exprs = llast(entry);
		List	   *child_tlist = NIL;
		int			resno = 1;
		ListCell   *le;

		foreach(le, small_exprs)
			child_tlist = lappend(child_tlist,
								  makeTargetEntry(lfirst(le), resno++, NULL, false));
		List	   *plan_entry = list_truncate(list_copy(entry), AP_BLOOM_PRIV_COUNT);
		int			l = bp->filter_level[foreach_current_index(lc)];

		list_nth_cell(plan_entry, AP_BLOOM_PRIV_LABEL)->ptr_value =
			makeString(ApBloomLabel(root, bp->big, bp->levels[l].small, entry));
		list_nth_cell(plan_entry, AP_BLOOM_PRIV_EST_KEYS)->ptr_value =
			makeFloat(psprintf("%.0f", bp->levels[l].est_keys));

		children = lappend(children, change_plan_targetlist(lfirst(lp), child_tlist, false));
		plan_entry = lappend(plan_entry, makeInteger(bp->share_ids[l]));
		plan_entry = lappend(plan_entry, list_copy(bp->share_pos[l]));
		plan_blooms = lappend(plan_blooms, plan_entry);
	}
	list_nth_cell(cscan->custom_private, AP_PRIV_BLOOMS)->ptr_value = plan_blooms;
	cscan->custom_plans = children;
	return &cscan->scan.plan;
}

/*
 * Is path the top join of a partial chain (B's filtered partial scan at the
 * bottom of its Hash Joins' outer sides), or a sort of one?
 */
static bool
ap_bloom_partial_top(Path *path)
{
	if (IsA(path, SortPath))
		path = ((SortPath *) path)->subpath;
	else if (IsA(path, IncrementalSortPath))
		path = ((IncrementalSortPath *) path)->spath.subpath;
	if (!IsA(path, HashPath))
		return false;
	while (IsA(path, HashPath))
		path = ((HashPath *) path)->jpath.outerjoinpath;
	return IsA(path, CustomPath) && ((CustomPath *) path)->methods == &ap_bloom_path_methods &&
		path->parallel_aware;
}

/*
 * The Gathers PostgreSQL puts above a partial chain take their rows from
 * its estimate of the join relation, not from the chain's corrected count
 * (ap_bloom_join_rows): TPC-DS 38 planned 3,496 rows where 142,180 came, and
 * the nested loop above probed customer by index for 40 times the loops it
 * was priced for.  Give them the participants' rows, and the tuples' cost.
 */
static void
ap_bloom_regather(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);
		Path	   *sub;
		double		rows;

		if (IsA(path, GatherPath))
			sub = ((GatherPath *) path)->subpath;
		else if (IsA(path, GatherMergePath))
			sub = ((GatherMergePath *) path)->subpath;
		else
			continue;
		if (!ap_bloom_partial_top(sub))
			continue;
		rows = clamp_row_est(sub->rows * ApParallelDivisor(sub->parallel_workers));
		if (rows <= path->rows)
			continue;
		path->total_cost += parallel_tuple_cost * (rows - path->rows);
		path->rows = rows;
	}
}

/*
 * The joins above a chain.  A chain's own joins are counted from the key
 * domain B's column holds (ap_bloom_join_rows, join_factor): a fact table
 * joined to a restricted date_dim returns some 40 times the rows
 * PostgreSQL's equality selectivity gives, whose domain is the whole
 * calendar.  PostgreSQL gives every path of a join relation that
 * relation's estimate, so the join above a chain costs its own work from
 * the chain's rows but passes the old count up, and the plan above was
 * chosen for rows 40 times too few: TPC-DS 17 and 25 at SF 1 probed
 * catalog_sales by index 30,000 times where one probe was planned (0.49x
 * and 0.53x stock), 26 probed customer_demographics, 47 and 67 sorted half
 * a million rows in one process.  After each level of the join search,
 * every join path whose inputs carry such a factor gets its relation's
 * estimate times their factors (bounded by what the join can return), its
 * costs untouched (they were computed from its inputs' rows); the next
 * level costs its joins and passes the factor on.  Only the key-domain
 * factor is carried (ap_bloom_domain_factor: single-key levels), none of
 * the other corrections a chain makes (a key of several columns, a key's
 * duplicates): carrying every difference between a path's rows and its
 * relation's made TPC-H Q3, Q7 and Q8 two to four times slower, and none
 * of TPC-H's chains has a key-domain factor.  Partial paths carry it the
 * same way, per participant, so that serial and parallel plans above a
 * chain are priced on the same count.  The correction reaches only plans
 * over a chain: PostgreSQL's own plans of the same relations keep its
 * count, as stock's plans do (correcting the clause itself for every plan
 * was tried twice and lost elsewhere: ARCHITECTURE, "Tried and reverted").
 */

/* A chain's key-domain factor: its single-key levels' join factors. */
static double
ap_bloom_domain_factor(ApBloomPath *bp)
{
	double		f = 1.0;

	for (int l = 0; l < bp->nlevels; l++)
	{
		if (bp->levels[l].nkeys == 1)
			f *= bp->levels[l].join_factor;
	}
	return f;
}

/* PostgreSQL's estimate of path's rows: its relation's, one participant's share if partial. */
static double
ap_bloom_rel_rows(Path *p)
{
	if (p->parallel_workers > 0 && !IsA(p, GatherPath) && !IsA(p, GatherMergePath))
		return p->parent->rows / ApParallelDivisor(p->parallel_workers);
	return p->parent->rows;
}

/*
 * How many times its relation's estimate path returns, as far as carried
 * from chains: a chain's top join, a join the carry corrected, a Gather
 * over either, through a sort or a materialization; 1 for anything else.
 */
static double
ap_bloom_carried(Path *p)
{
	ApBloomPath *bp;
	double		ratio;

	if (p->param_info != NULL || p->parent == NULL || p->parent->rows <= 0)
		return 1.0;
	if (IsA(p, SortPath))
		return ap_bloom_carried(((SortPath *) p)->subpath);
	if (IsA(p, IncrementalSortPath))
		return ap_bloom_carried(((IncrementalSortPath *) p)->spath.subpath);
	if (IsA(p, MaterialPath))
		return ap_bloom_carried(((MaterialPath *) p)->subpath);
	if (!(IsA(p, NestPath) || IsA(p, HashPath) || IsA(p, MergePath) ||
		  IsA(p, GatherPath) || IsA(p, GatherMergePath)))
		return 1.0;
	ratio = p->rows / Max(ap_bloom_rel_rows(p), 1.0);
	if (ratio <= 1.0)
		return 1.0;
	if ((bp = ap_bloom_chain_of(p)) != NULL)
		return Min(ratio, ap_bloom_domain_factor(bp));
	return ratio;
}

/* Carry the factors of paths' inputs into the join paths of paths (see above). */
static void
ap_bloom_carry_paths(List *paths)
{
	ListCell   *lc;

	foreach(lc, paths)
	{
		Path	   *p = lfirst(lc);
		JoinPath   *jp;
		double		f;
		double		rows;

		if (!(IsA(p, NestPath) || IsA(p, HashPath) || IsA(p, MergePath)) ||
			p->param_info != NULL)
			continue;
		jp = (JoinPath *) p;
		f = ap_bloom_carried(jp->outerjoinpath) * ap_bloom_carried(jp->innerjoinpath);
		/* a chain's own top join is counted already */
		if (f <= 1.0 || ap_bloom_chain_of(p) != NULL)
			continue;
		rows = ap_bloom_rel_rows(p) * f;
		if (jp->jointype == JOIN_SEMI || jp->jointype == JOIN_ANTI)
			rows = Min(rows, jp->outerjoinpath->rows);
		else
			rows = Min(rows, jp->outerjoinpath->rows * Max(jp->innerjoinpath->rows, 1.0));
		if (rows > p->rows)
			p->rows = clamp_row_est(rows);
	}
}

/*
 * The join search: standard_join_search's levels, each level's join paths
 * given the factors their inputs carry (ap_bloom_carry_paths) and, with
 * workers, its Gathers re-rowed (ap_bloom_regather), before the next level
 * joins them (the join hook cannot: it runs after PostgreSQL's own paths
 * of the pair it is called for, and before the level's other paths and
 * Gathers exist).  GEQO, another extension's hook and an idle search get
 * PostgreSQL's.
 */
static RelOptInfo *
ap_bloom_join_levels(PlannerInfo *root, int levels_needed, List *initial_rels)
{
	RelOptInfo *rel;

	if (prev_join_search_hook)
		return prev_join_search_hook(root, levels_needed, initial_rels);
	if (enable_geqo && levels_needed >= geqo_threshold)
		return geqo(root, levels_needed, initial_rels);
	if (ap_bloom_idle)
		return standard_join_search(root, levels_needed, initial_rels);

	Assert(root->join_rel_level == NULL);
	root->join_rel_level = (List **) palloc0((levels_needed + 1) * sizeof(List *));
	root->join_rel_level[1] = initial_rels;
	for (int lev = 2; lev <= levels_needed; lev++)
	{
		ListCell   *lc;

		join_search_one_level(root, lev);
		foreach(lc, root->join_rel_level[lev])
		{
			rel = (RelOptInfo *) lfirst(lc);
			generate_partitionwise_join_paths(root, rel);
			ap_bloom_carry_paths(rel->pathlist);
			ap_bloom_carry_paths(rel->partial_pathlist);
			if (lev < levels_needed)
			{
				generate_useful_gather_paths(root, rel, false);
				if (active_pg_enable_parallel_bloom && max_parallel_workers_per_gather > 0)
					ap_bloom_regather(rel);
			}
			set_cheapest(rel);
		}
	}
	if (root->join_rel_level[levels_needed] == NIL)
		elog(ERROR, "failed to build any %d-way joins", levels_needed);
	Assert(list_length(root->join_rel_level[levels_needed]) == 1);
	rel = (RelOptInfo *) linitial(root->join_rel_level[levels_needed]);
	root->join_rel_level = NULL;
	return rel;
}

/*
 * Has any table joined here an ActiveScan a filter could ride on, the
 * serial or the partial one?  Every filter, chain and probe the join hook
 * offers is built on one (ap_bloom_try), so where none has, the join
 * search is PostgreSQL's own.  initial_rels may hold join relations of a
 * sub-problem already searched: their tables are looked at too.
 */
static bool
ap_bloom_bases_among(PlannerInfo *root, List *initial_rels)
{
	ListCell   *lc;

	foreach(lc, initial_rels)
	{
		RelOptInfo *rel = lfirst(lc);
		int			relid = -1;

		while ((relid = bms_next_member(rel->relids, relid)) >= 0)
		{
			RelOptInfo *b;

			/* outer joins' own indexes (PostgreSQL 16 on) have no relation */
			if (relid >= root->simple_rel_array_size ||
				(b = root->simple_rel_array[relid]) == NULL ||
				b->reloptkind != RELOPT_BASEREL)
				continue;
			if (ap_bloom_scan_path(b) != NULL || ap_bloom_partial_scan_path(b) != NULL)
				return true;
		}
	}
	return false;
}

/*
 * join_search_hook: ap_bloom_join_levels.  Where no table joined has an ActiveScan to build on (an OLTP join of
 * index lookups), the search is PostgreSQL's and the join hook idles: a
 * three-table join of pgbench's tables by key planned in 15,300 more
 * instructions with the extension than without (2% of its statement, in
 * the hook's checks of each pair's sides), with this 2,300.  The flag is
 * restored after the search, nested plannings (a function run while this
 * one plans) included, and on error.
 */
static RelOptInfo *
ap_bloom_join_search(PlannerInfo *root, int levels_needed, List *initial_rels)
{
	bool		saved = ap_bloom_idle;
	RelOptInfo *rel;

	ap_bloom_idle = !active_pg_enable || !active_pg_enable_bloom ||
		!ap_bloom_bases_among(root, initial_rels);
	PG_TRY();
	{
		rel = ap_bloom_join_levels(root, levels_needed, initial_rels);
	}
	PG_FINALLY();
	{
		ap_bloom_idle = saved;
	}
	PG_END_TRY();
	return rel;
}

/* Install the join hooks (after planner.c registered the scan). */
void
ApBloomPlannerInit(void)
{
	prev_set_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = ap_bloom_join_pathlist;
	prev_join_search_hook = join_search_hook;
	join_search_hook = ap_bloom_join_search;
	ApBloomShareInit();
}
