/*
 * planner.c
 *	  set_rel_pathlist_hook: the ActiveScan custom path, its cost, its plan.
 *
 * When ActiveScan is offered.  Only for a plain, unparameterized scan of a
 * permanent or unlogged heap table (or materialized view) whose bytes the
 * disks can read correctly:
 *	- not a catalog (relid below FirstNormalObjectId): catalogs are read with
 *	  catalog snapshots and by code that does not expect custom nodes;
 *	- not a temporary table: its pages live in the backend's local buffers,
 *	  which cannot be flushed to the files the disks read;
 *	- not another table access method, not a foreign table, not an
 *	  inheritance/partitioned parent (its children get their own path), not
 *	  TABLESAMPLE;
 *	- not under SERIALIZABLE (the disks take no predicate locks) and not
 *	  during recovery (hint bits and flushes are the primary's business);
 *	- no system column needed (ctid for UPDATE/DELETE/FOR UPDATE, tableoid):
 *	  the disks ship user columns only.
 * Parallel query (active_pg.enable_parallel).  When the relation may be
 * scanned in parallel (rel->consider_parallel: its quals and target are
 * parallel-safe, so every Param they hold is available in workers), the path
 * is parallel-safe: a worker can run the whole conversation with the disks
 * (it shares the leader's snapshot and transaction, so it answers xid
 * questions alike), as the inner side of a join under Gather or a
 * non-partial child of a Parallel Append.  A second, partial path
 * (parallel_aware) lets Gather's participants divide the disks' work
 * (parallel.c): its cost keeps the disks' terms of the model whole and
 * divides the host's work on the shipped rows, and its rows, by
 * PostgreSQL's parallel divisor, as cost_seqscan does, so the planner
 * parallelizes the joins above a pushed-down scan when that pays.  Neither
 * while the interconnect is emulated: its throttle is per backend, so
 * participants would exceed it together.
 *
 * Cost model: Riedel's Active Disks throughput model (extension/model.c), which
 * predicts the seconds of this scan on the disks and of the host's own Seq
 * Scan of the same input, from the pages and tuples, the disk quals'
 * selectivity and operator count, the shipped width, the number of disks,
 * the emulation settings and the disks' measured cycles per byte; the path
 * costs PostgreSQL's Seq Scan cost times t_active / t_trad (model.c explains
 * the exchange rate), plus the target list per row.  The serial start of
 * every execution is in the total, so a rescanned ActiveScan (the inner
 * side of a nested loop, a correlated subquery) pays the whole disk scan
 * and the connections once per rescan, as it really does.  A table no Bloom
 * filter can ride on gets no ActiveScan the model predicts slower than the
 * host's own best plan at measured speed (ap_host_best_seconds,
 * ApHostSlower).  The optimizer, not a switch, picks pushdown;
 * active_pg.force_pushdown (a testing switch) makes ActiveScan the only path
 * of every eligible relation.
 *
 * Projection: the executor (activescan.c) runs ExecScan, which evaluates the plan's
 * target list over the scan slot, so the path sets CUSTOMPATH_SUPPORT_PROJECTION
 * and the planner puts computed targets into the scan instead of a Result
 * above it.  Such targets only reference Vars of rel->reltarget, which are in
 * the project list.
 *
 * Projection pushdown.  PlanCustomPath cannot see those computed targets:
 * create_projection_plan asks for the scan with CP_IGNORE_TLIST and assigns
 * the target list afterwards.  So a planner_hook looks at each finished
 * ActiveScan: when every entry of its target list is a Var, a Const or an
 * expression the disks compute exactly (shippable.c), the computed
 * expressions move into custom_scan_tlist behind the Vars the host still
 * needs (plain target entries and host quals), and the target list refers
 * to them as INDEX_VAR.  The disks then ship exactly the scan tuple.  All or
 * nothing: if one computed target stayed on the host, fallback tuples would
 * evaluate the shipped ones first and could raise a different error than
 * PostgreSQL's left-to-right order.  Not under row marks (EvalPlanQual hands
 * the node tuples of the relation's shape).
 *
 * Plan layout: see active_pg.h (custom_exprs = disk quals then host quals,
 * custom_private = shipped attributes and list lengths, custom_scan_tlist
 * for projection pushdown).
 */
#include "postgres.h"

#include <math.h>

#include "access/amapi.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class_d.h"
#include "catalog/pg_tablespace_d.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/spccache.h"
#include "utils/syscache.h"

#include "active_pg.h"
#include "model.h"
#include "plan_memo.h"
#include "shippable.h"
#include "transport.h"


static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;

/*
 * ActiveScan plans made so far in this backend: a planning that made none
 * has no projection to push (ap_planner skips its walk of the plan).
 */
static uint64 ap_scan_plans_made = 0;

static Plan *ap_plan_custom_path(PlannerInfo *root, RelOptInfo *rel,
								 CustomPath *best_path, List *tlist,
								 List *clauses, List *custom_plans);

static const CustomPathMethods ap_path_methods = {
	.CustomName = AP_SCAN_NAME,
	.PlanCustomPath = ap_plan_custom_path,
};

CustomScanMethods ApScanPlanMethods = {
	.CustomName = AP_SCAN_NAME,
	.CreateCustomScanState = ApCreateScanState,
};

/*
 * Is the extension created in this database?  The library may be preloaded
 * in a database without it, and then plans nothing.  The test is that the
 * extension's schema holds its function disks(): two catalog cache lookups
 * in caches a session has already opened, where get_extension_oid opens
 * pg_extension, whose relation cache entry a new session has to build
 * (108,000 instructions of every session's first plan, a tenth of what the
 * extension adds to planning TPC-DS 90).  A schema active_pg with a function
 * disks() created by hand would pass for the extension.  The answer is kept
 * until a schema or a function changes: CREATE and DROP EXTENSION create and
 * drop both, which sends those cache invalidations to every backend.
 */
static int	ap_extension_state = -1;	/* -1 unknown, 0 absent, 1 present */

static void
ap_extension_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	ap_extension_state = -1;
}

static bool
ap_extension_lookup(void)
{
	Oid			nsp = get_namespace_oid(AP_SCHEMA_NAME, true);
	oidvector  *noargs;
	bool		found;

	if (!OidIsValid(nsp))
		return false;
	noargs = buildoidvector(NULL, 0);
	found = SearchSysCacheExists3(PROCNAMEARGSNSP, CStringGetDatum("disks"),
								  PointerGetDatum(noargs), ObjectIdGetDatum(nsp));
	pfree(noargs);
	return found;
}

bool
ApExtensionCreated(void)
{
	if (ap_extension_state < 0)
		ap_extension_state = ap_extension_lookup() ? 1 : 0;
	return ap_extension_state == 1;
}

/* Number of disks a scan will use (at least one, for the model). */
static int
ap_disk_count(void)
{
	return Max(ApConfiguredDiskCount(), 1);
}

/* Cheap checks of the relation kind and session state, before any catalog access. */
static bool
ap_rel_candidate(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	if (rel->reloptkind != RELOPT_BASEREL &&
		rel->reloptkind != RELOPT_OTHER_MEMBER_REL)
		return false;
	if (rte->rtekind != RTE_RELATION || rte->inh || rte->tablesample != NULL)
		return false;
	if (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW)
		return false;
	if (rte->relid < FirstNormalObjectId)
		return false;
	if (rel->reltablespace == GLOBALTABLESPACE_OID)
		return false;
	if (IS_DUMMY_REL(rel))
		return false;

	/*
	 * A relation with lateral references needs paths parameterized by the
	 * relations it references (each of its paths has param_info with
	 * required_outer >= lateral_relids).  An ActiveScan is unparameterized:
	 * offered here it would let the join be planned with the referenced
	 * relation on either side and the lateral values would read as NULL.
	 * Rescanning the disks for every outer row would not pay anyway.
	 */
	if (!bms_is_empty(rel->lateral_relids))
		return false;
	if (IsolationIsSerializable() || RecoveryInProgress())
		return false;
	return true;
}

/*
 * Attribute numbers the disks must ship: those of the target list and of the
 * host quals (disk quals are evaluated at the disk; fallback tuples are read
 * whole on the host).  A whole-row reference ships every live column.
 * Returns false if a system column is needed.
 */
static bool
ap_project_list(RelOptInfo *rel, List *host_ri, TupleDesc tupdesc, List **project)
{
	Bitmapset  *attrs = NULL;
	bool		wholerow = false;
	ListCell   *lc;
	int			x;

	*project = NIL;
	pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attrs);
	foreach(lc, host_ri)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause,
					   rel->relid, &attrs);

	x = -1;
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	attno = x + FirstLowInvalidHeapAttributeNumber;

		if (attno < 0)
			return false;
		if (attno == InvalidAttrNumber)
			wholerow = true;
		else
			*project = lappend_int(*project, attno);
	}

	if (wholerow)
	{
		*project = NIL;
		for (int i = 0; i < tupdesc->natts; i++)
		{
			if (!TupleDescAttr(tupdesc, i)->attisdropped)
				*project = lappend_int(*project, i + 1);
		}
	}
	return true;
}

/*
 * Open the relation (the planner holds its lock) and check what only the
 * relcache knows; on success compute the project list.
 */
static bool
ap_rel_readable(RangeTblEntry *rte, RelOptInfo *rel, List *host_ri, List **project)
{
	Relation	relation = table_open(rte->relid, NoLock);
	bool		ok;

	ok = relation->rd_tableam == GetHeapamTableAmRoutine() &&
		relation->rd_rel->relpersistence != RELPERSISTENCE_TEMP &&
		ap_project_list(rel, host_ri, RelationGetDescr(relation), project);
	table_close(relation, NoLock);
	return ok;
}

/*
 * A pushed-down plan predicted this many times slower than the host's own
 * at measured speed is not offered (ApHostSlower) unless the host's time is
 * sure.  It is for a scan (ApModelSeqScanSeconds prices pattern matches,
 * which PostgreSQL counts as one operator, apart); not for a hash
 * aggregation that spills past hash_mem, which the measured constants leave
 * out.
 */
#define AP_SEQ_GUARD				2.0

/*
 * A scan kept for the Bloom paths only (ap_start_small) must take the host
 * at least this many times the disks' start to read itself.
 */
#define AP_BLOOM_BASE_START_SHARE	0.1

/* Operators per tuple of a per-tuple qual cost (PostgreSQL counts cpu_operator_cost each). */
static double
ap_operators(Cost per_tuple)
{
	return per_tuple / Max(cpu_operator_cost, 1e-9);
}

/*
 * PostgreSQL's parallel divisor for a partial path run by workers plus,
 * under parallel_leader_participation, the leader, which gives less of its
 * time the more workers it has to serve (30% less per worker).
 */
double
ApParallelDivisor(int workers)
{
	double		divisor = workers;
	double		leader = 1.0 - 0.3 * workers;

	if (parallel_leader_participation && leader > 0)
		divisor += leader;
	return divisor;
}

/*
 * One participant's share of the prediction (see the file header): the
 * disks' terms and the cores term are the whole scan's whoever consumes it;
 * the host's work on the shipped rows is divided.  The start stays: each
 * participant connects to the disks of the work items it claims, about as
 * many connections as one serial scan makes.
 */
static void
ap_model_share(ApModelResult *m, double divisor)
{
	m->a_host /= divisor;
	m->t_active = Max(Max(Max(m->a_read, m->a_disk_cpu), Max(m->a_net, m->a_host)),
					  m->a_cores) + m->a_serial;
}

/*
 * Cost the path with the throughput model (model.c); keep the prediction for
 * EXPLAIN.  divisor > 1: a partial path's share (ap_model_share).  Returns
 * the predicted seconds (t_active).
 */
static double
ap_cost_path(PlannerInfo *root, RelOptInfo *rel, List *disk_ri, List *host_ri,
			 CustomPath *cpath, double divisor)
{
	Path	   *path = &cpath->path;
	double		spc_seq_page_cost;
	QualCost	disk_qual;
	QualCost	host_qual;
	Selectivity disk_sel;
	ApModelInput in;
	ApModelResult m;
	Cost		host_cost;
	Cost		startup;

	get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
	cost_qual_eval(&disk_qual, disk_ri, root);
	cost_qual_eval(&host_qual, host_ri, root);
	disk_sel = clauselist_selectivity(root, disk_ri, rel->relid, JOIN_INNER, NULL);

	memset(&in, 0, sizeof(in));
	in.op = AP_MODEL_OP_SCAN;
	in.mode = active_pg_scan_mode;
	in.ndisks = ap_disk_count();
	in.pages = rel->pages;
	in.tuples = rel->tuples;
	in.disk_ops = ap_operators(disk_qual.per_tuple);
	in.rows_out = clamp_row_est(rel->tuples * disk_sel);
	/* the shipped columns (target and host quals) plus a row header and TID */
	in.width_out = rel->reltarget->width + AP_ROW_HEADER_BYTES + AP_ROW_TID_BYTES;
	in.host_ops = ap_operators(host_qual.per_tuple);
	ApModelPredict(&in, &m);
	if (divisor > 1.0)
		ap_model_share(&m, divisor);

	/* what cost_seqscan charges for the same input: the exchange rate */
	host_cost = spc_seq_page_cost * rel->pages +
		(cpu_tuple_cost + disk_qual.per_tuple + host_qual.per_tuple) * rel->tuples;
	startup = disk_qual.startup + host_qual.startup + rel->reltarget->cost.startup;

	path->rows = divisor > 1.0 ? clamp_row_est(rel->rows / divisor) : rel->rows;
	path->startup_cost = startup + ApModelCost(&m, host_cost) * m.a_serial /
		Max(m.t_active, 1e-9);
	path->total_cost = startup + ApModelCost(&m, host_cost) +
		rel->reltarget->cost.per_tuple * path->rows;
	list_nth_cell(cpath->custom_private, AP_PATH_PRIV_MODEL)->ptr_value =
		ApModelToList(&m);
	return m.t_active;
}

/*
 * The partial path for Gather's participants (see the file header), or NULL
 * if the relation is not scanned in parallel.  *guarded: the partial path
 * the host's Parallel Seq Scan would beat (then NULL is returned), which a
 * Bloom filter may still make pay.
 */
static CustomPath *
ap_partial_path(PlannerInfo *root, RelOptInfo *rel, List *disk_ri, List *host_ri,
				CustomPath *serial, double t_host, CustomPath **guarded)
{
	CustomPath *ppath;
	int			workers;
	double		divisor;

	*guarded = NULL;
	if (!serial->path.parallel_safe)
		return NULL;
	workers = compute_parallel_worker(rel, rel->pages, -1, max_parallel_workers_per_gather);
	if (workers <= 0)
		return NULL;

	ppath = makeNode(CustomPath);
	memcpy(ppath, serial, sizeof(CustomPath));
	ppath->custom_private = list_copy(serial->custom_private);
	ppath->path.parallel_aware = true;
	ppath->path.parallel_workers = workers;
	divisor = ApParallelDivisor(workers);
	if (ApHostSlower(ap_cost_path(root, rel, disk_ri, host_ri, ppath, divisor), t_host, true,
					 divisor))
	{
		*guarded = ppath;
		return NULL;			/* a Parallel Seq Scan would do better */
	}
	return ppath;
}

/*
 * Highest attribute number of rel that exprs (a List of expressions or
 * RestrictInfos) reference: how far the host's Seq Scan deforms.
 */
int
ApLastAttno(RelOptInfo *rel, List *exprs)
{
	Bitmapset  *attrs = NULL;
	ListCell   *lc;
	int			last;

	foreach(lc, exprs)
	{
		Node	   *n = lfirst(lc);

		if (IsA(n, RestrictInfo))
			n = (Node *) ((RestrictInfo *) n)->clause;
		pull_varattnos(n, rel->relid, &attrs);
	}
	last = bms_prev_member(attrs, -1);
	return last < 0 ? 0 : Max(last + FirstLowInvalidHeapAttributeNumber, 0);
}

/*
 * Is a pushed-down plan predicted t_active seconds slower than the host's
 * own, predicted t_host seconds at measured speed (ApModelSeqScanSeconds,
 * ApModelHostAggSeconds), by AP_SEQ_GUARD unless t_host is sure?  divisor:
 * a partial path's share.  Never under emulation (t_host 0) or
 * force_pushdown.
 */
bool
ApHostSlower(double t_active, double t_host, bool sure, double divisor)
{
	double		margin = sure ? 1.0 : AP_SEQ_GUARD;

	if (t_host <= 0 || active_pg_force)
		return false;
	return t_active >= margin * t_host / Max(divisor, 1.0);
}

/* Is op a pattern match (LIKE, ILIKE, a regular expression: ~~, ~, ~* ...)? */
static bool
ap_pattern_op(Oid opno)
{
	char	   *name = get_opname(opno);

	return name != NULL && strchr(name, '~') != NULL;
}

static bool
ap_count_patterns_walker(Node *node, double *count)
{
	if (node == NULL)
		return false;
	if ((IsA(node, OpExpr) && ap_pattern_op(((OpExpr *) node)->opno)) ||
		(IsA(node, ScalarArrayOpExpr) && ap_pattern_op(((ScalarArrayOpExpr *) node)->opno)))
		*count += 1;
	return expression_tree_walker(node, ap_count_patterns_walker, count);
}

/* Pattern matches in clauses (expressions or RestrictInfos), per tuple. */
double
ApPatternOps(List *clauses)
{
	double		count = 0;
	ListCell   *lc;

	foreach(lc, clauses)
	{
		Node	   *n = lfirst(lc);

		if (IsA(n, RestrictInfo))
			n = (Node *) ((RestrictInfo *) n)->clause;
		(void) ap_count_patterns_walker(n, &count);
	}
	return count;
}

/* What cost_seqscan charges for rel (its restriction clauses included). */
static Cost
ap_seq_scan_cost(RelOptInfo *rel)
{
	double		spc_seq_page_cost;

	get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
	return spc_seq_page_cost * rel->pages +
		(cpu_tuple_cost + rel->baserestrictcost.per_tuple) * rel->tuples;
}

/*
 * The host's best scan of rel at measured speed, given t_seq, its Seq Scan
 * at measured speed (ApModelSeqScanSeconds): that, or one of its other
 * unparameterized paths (index, bitmap and index-only scans) at the ratio
 * of its cost to the Seq Scan's.
 */
double
ApHostBestScan(RelOptInfo *rel, double t_seq)
{
	double		seq_cost = ap_seq_scan_cost(rel);
	double		best = t_seq;
	ListCell   *lc;

	if (seq_cost <= 0)
		return best;
	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (path->param_info == NULL &&
			(path->pathtype == T_IndexScan || path->pathtype == T_IndexOnlyScan ||
			 path->pathtype == T_BitmapHeapScan))
			best = Min(best, t_seq * path->total_cost / seq_cost);
	}
	return best;
}

/*
 * The host's best scan of rel that returns its rows ordered by pathkeys (an
 * index or index-only scan), at measured speed as in ApHostBestScan; -1 if
 * rel has none.
 */
double
ApHostSortedScan(RelOptInfo *rel, double t_seq, List *pathkeys)
{
	double		seq_cost = ap_seq_scan_cost(rel);
	double		best = -1;
	ListCell   *lc;

	if (seq_cost <= 0 || pathkeys == NIL)
		return best;
	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);
		double		t;

		if (path->param_info != NULL ||
			(path->pathtype != T_IndexScan && path->pathtype != T_IndexOnlyScan) ||
			!pathkeys_contained_in(pathkeys, path->pathkeys))
			continue;
		t = t_seq * path->total_cost / seq_cost;
		if (best < 0 || t < best)
			best = t;
	}
	return best;
}

/*
 * Probes PostgreSQL expects to visit fewer heap pages than this keep its
 * estimate (ap_price_index_paths): measured on TPC-H SF 1, Q5's and Q18's
 * lineitem_pkey probes, 7.6 pages each by PostgreSQL's estimate of 16 rows
 * (4 in truth), turned nested loops into hash joins 8% and 33% slower.
 * Their loops are cheap because they run for far fewer outer rows than
 * PostgreSQL expects, which no price of a probe can know.
 */
#define AP_INDEX_SCATTERED_PAGES	16.0

/*
 * Tuples and heap pages one execution of an index scan path fetches, by
 * cost_index's interpolation (see ap_price_index_paths).
 */
static void
ap_index_probe_pages(PlannerInfo *root, RelOptInfo *rel, IndexPath *ipath,
					 double *tuples, double *heap_pages)
{
	amcostestimate_function estimate;
	Cost		startup;
	Cost		total;
	Selectivity sel;
	double		correlation;
	double		index_pages;
	double		uncorrelated;
	double		correlated;

	estimate = (amcostestimate_function) ipath->indexinfo->amcostestimate;
	estimate(root, ipath, 1.0, &startup, &total, &sel, &correlation, &index_pages);
	*tuples = clamp_row_est(ipath->indexselectivity * rel->tuples);
	uncorrelated = Min(*tuples, rel->pages);
	correlated = ceil(ipath->indexselectivity * rel->pages);
	*heap_pages = uncorrelated + correlation * correlation * (correlated - uncorrelated);
	if (ipath->path.pathtype == T_IndexOnlyScan)
		*heap_pages *= 1.0 - rel->allvisfrac;
}

/*
 * One execution of rel's parameterized index or bitmap heap scan path at
 * measured speed (ApModelIndexScanSeconds), with the heap pages it visits
 * (PostgreSQL's own estimate, see ap_price_index_paths); per fetched tuple
 * rel's quals (qual_ops operators) and the join clauses the path checks,
 * priced as PostgreSQL prices them (a SubPlan among them costs what its
 * plan costs: TPC-H Q2's partsupp probed by part runs its correlated
 * minimum for every row).  -1 for any other path.
 */
static double
ap_probe_seconds(PlannerInfo *root, RelOptInfo *rel, Path *path, double miss_share,
				 double qual_ops, double *heap_pages)
{
	double		tuples;
	QualCost	join_quals;

	if (IsA(path, IndexPath))
		ap_index_probe_pages(root, rel, (IndexPath *) path, &tuples, heap_pages);
	else if (IsA(path, BitmapHeapPath))
	{
		Cost		index_cost;

		*heap_pages = compute_bitmap_pages(root, rel, ((BitmapHeapPath *) path)->bitmapqual,
										   1, &index_cost, &tuples);
	}
	else
		return -1;
	/* the join clauses the scan checks per fetched tuple (a SubPlan may be one) */
	cost_qual_eval(&join_quals, path->param_info->ppi_clauses, root);
	return ApModelIndexScanSeconds(tuples, *heap_pages, miss_share,
								   qual_ops + ap_operators(join_quals.per_tuple));
}

/*
 * Price rel's parameterized index scans, the inner sides of PostgreSQL's
 * nested loops, at measured speed where that is dearer than PostgreSQL's
 * own estimate: a probe, the heap pages it visits, the share of them not
 * in shared_buffers (ApModelIndexScanSeconds), converted at the exchange
 * rate of rel's ActiveScan (ApModelHostCost), so that the nested loop and
 * the hash join over the disks' scan stand in the ratio of their predicted
 * times.  PostgreSQL expects a probe repeated per outer row to find its
 * heap pages cached once a table fits effective_cache_size; beyond
 * shared_buffers they are in the page cache and each visit still costs a
 * read, so a nested loop that fetches hundreds of scattered rows per outer
 * row (TPC-H Q21's lineitem by l_suppkey) runs about nine times longer
 * than its cost says, and beats a hash join over a scan of the table only
 * on paper.  The heap pages a probe visits follow PostgreSQL's own
 * estimates: for an index scan cost_index's interpolation, one per tuple
 * when the index order is uncorrelated with the heap's, the selected
 * fraction of the table when it is, between them by the squared
 * correlation the index's cost estimator reports; for a bitmap heap scan
 * compute_bitmap_pages.  Costs only rise: lookups PostgreSQL already
 * prices above the model keep their cost.  Only for relations larger than shared_buffers: within them a probe's
 * pages are all buffers, and PostgreSQL's estimate stands (a table of a
 * few megabytes is read from the CPU's caches: measured, 100 rows a probe
 * on 100 pages took 0.5 us a row, not the model's 1.2, and the hash join
 * the model preferred was 10% slower).  Only for relations the disks may
 * scan, so that a table they take no part in is planned as without the
 * extension.
 */
static void
ap_price_index_paths(PlannerInfo *root, RelOptInfo *rel)
{
	double		seq_cost;
	double		miss_share;
	double		qual_ops;
	ListCell   *lc;

	if (rel->pages <= 0 || rel->tuples <= 0)
		return;
	miss_share = Max(1.0 - (double) NBuffers / rel->pages, 0.0);
	if (miss_share <= 0)
		return;					/* within shared_buffers: PostgreSQL's estimate */
	seq_cost = ap_seq_scan_cost(rel);
	qual_ops = ap_operators(rel->baserestrictcost.per_tuple);
	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);
		double		heap_pages;
		double		seconds;
		Cost		cost;

		if (path->param_info == NULL)
			continue;
		seconds = ap_probe_seconds(root, rel, path, miss_share, qual_ops, &heap_pages);
		if (seconds < 0 || heap_pages < AP_INDEX_SCATTERED_PAGES)
			continue;			/* a lookup of a few pages: PostgreSQL's estimate */
		cost = ApModelHostCost(seconds, rel->pages, rel->tuples, qual_ops, seq_cost);
		if (cost > path->total_cost)
			path->total_cost = cost;
	}
}

/*
 * Does path find its rows by descending its index to them: an index scan,
 * or a bitmap heap scan over one index scan, with a condition on the
 * index's first column?  Without one the scan reads the whole index at
 * every probe (TPC-DS's inventory probed by inv_item_sk, the second column
 * of its primary key: PostgreSQL's price of 170 a probe stands for 35,000
 * index pages), which ApModelIndexScanSeconds does not price.
 */
static bool
ap_probe_descends(Path *path)
{
	IndexPath  *ipath;
	ListCell   *lc;

	if (IsA(path, BitmapHeapPath))
		path = ((BitmapHeapPath *) path)->bitmapqual;
	if (!IsA(path, IndexPath))
		return false;
	ipath = (IndexPath *) path;
	foreach(lc, ipath->indexclauses)
	{
		if (lfirst_node(IndexClause, lc)->indexcol == 0)
			return true;
	}
	return false;
}

/*
 * ap_probe_seconds of a base relation's parameterized path, once per
 * planning: the Bloom chains ask ApIndexProbePath again for every small
 * side and chain level, each time over the same paths, and the index's
 * cost estimator it runs was a sixth of what the extension added to
 * planning TPC-DS's query 85 at SF 1 (184 estimates of a dozen paths).
 * Kept for a path in a base relation's pathlist during the join search,
 * which changes none of them, in the planner's memory (plan_memo.h).
 */
typedef struct ApProbeAnswer
{
	PlannerInfo *root;
	Index		relid;
	Path	   *path;
	double		seconds;
} ApProbeAnswer;

static ApMemo ap_probe_answers;

/* Is value the answer for arg's root, relation and path? */
static bool
ap_probe_answer_is(const void *value, const void *arg)
{
	const ApProbeAnswer *a = value;
	const ApProbeAnswer *want = arg;

	return a->path == want->path && a->root == want->root && a->relid == want->relid;
}

static double
ap_probe_seconds_kept(PlannerInfo *root, RelOptInfo *rel, Path *path, double miss_share,
					  double qual_ops)
{
	ApProbeAnswer want = {root, rel->relid, path, 0};
	ApProbeAnswer *a = ApMemoFind(&ap_probe_answers, ap_probe_answer_is, &want);
	double		heap_pages;

	if (a != NULL)
		return a->seconds;
	a = palloc(sizeof(ApProbeAnswer));
	*a = want;
	a->seconds = ap_probe_seconds(root, rel, path, miss_share, qual_ops, &heap_pages);
	ApMemoKeep(&ap_probe_answers, a);
	return a->seconds;
}

/*
 * rel's parameterized index or bitmap heap scan whose parameters the
 * relations outer supply and that descends its index (ap_probe_descends)
 * that is the cheapest at measured speed
 * (ap_probe_seconds: every heap page a visit, the share beyond
 * shared_buffers a read from the page cache), or NULL if it has none;
 * *probe_cost: one execution of it at that speed, in cost units at the
 * exchange rate of rel's ActiveScan.  A nested loop's inner side, priced to
 * stand beside a scan of all of rel (bloom_planner.c).
 */
Path *
ApIndexProbePath(PlannerInfo *root, RelOptInfo *rel, Relids outer, Cost *probe_cost)
{
	double		miss_share;
	double		qual_ops;
	double		best = -1;
	Path	   *best_path = NULL;
	ListCell   *lc;

	*probe_cost = 0;
	if (rel->pages <= 0 || rel->tuples <= 0)
		return NULL;
	miss_share = Max(1.0 - (double) NBuffers / rel->pages, 0.0);
	qual_ops = ap_operators(rel->baserestrictcost.per_tuple);
	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);
		double		seconds;

		if (path->param_info == NULL || !bms_is_subset(PATH_REQ_OUTER(path), outer) ||
			!ap_probe_descends(path))
			continue;
		seconds = ap_probe_seconds_kept(root, rel, path, miss_share, qual_ops);
		if (seconds >= 0 && (best_path == NULL || seconds < best))
		{
			best = seconds;
			best_path = path;
		}
	}
	if (best_path != NULL)
		*probe_cost = ApModelHostCost(best, rel->pages, rel->tuples, qual_ops,
									  ap_seq_scan_cost(rel));
	return best_path;
}

/*
 * Can a Bloom filter ever ride on rel's ActiveScan (bloom_planner.c's
 * rules)?  Not when no inner equi-join names it (no equivalence class joins
 * it to another relation) and every outer or anti join it takes part in
 * keeps all its rows (rel on the preserved side of a LEFT or ANTI join, or
 * either side of a FULL one): a NOT EXISTS's outer table, the preserved
 * side of a LEFT JOIN, a table alone in its query.
 */
static bool
ap_bloom_possible(PlannerInfo *root, RelOptInfo *rel)
{
	ListCell   *lc;

	if (rel->has_eclass_joins)
		return true;
	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sj = (SpecialJoinInfo *) lfirst(lc);
		bool		left = bms_overlap(rel->relids, sj->min_lefthand);
		bool		right = bms_overlap(rel->relids, sj->min_righthand);

		if (!left && !right)
			continue;
		if (sj->jointype == JOIN_FULL)
			continue;
		if ((sj->jointype == JOIN_LEFT || sj->jointype == JOIN_ANTI) && left && !right)
			continue;
		return true;
	}
	/* what is left in joininfo joins no other relation by an equality Bloom can use */
	foreach(lc, rel->joininfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (!ri->is_pushed_down)
			continue;			/* an outer join's own clause, seen above */
		if (ri->mergeopfamilies != NIL || OidIsValid(ri->hashjoinoperator))
			return true;
	}
	return false;
}

/*
 * The host's own best scan of rel at measured speed (ApHostBestScan).  A
 * plan whose disks ship most rows of a table alone in its query (ORDER BY
 * ... LIMIT, window functions, a host filter the disks cannot run), or that
 * reads a whole table for what an index finds, costs more than the host's
 * own, whatever the exchange rate of seconds to cost units says (model.c),
 * and ap_set_rel_pathlist does not offer it (ApHostSlower).  Pattern
 * matches are priced apart where the disks take them over; a host qual
 * costs both plans alike.
 */
static double
ap_host_best_seconds(RelOptInfo *rel, List *disk_ri, List *host_ri)
{
	return ApHostBestScan(rel,
						  ApModelSeqScanSeconds(rel->tuples,
												ApLastAttno(rel, list_concat(list_concat_copy(rel->reltarget->exprs,
																							  disk_ri),
																			 host_ri)),
												ap_operators(rel->baserestrictcost.per_tuple),
												ApPatternOps(disk_ri)));
}

/* The least cost any pushed-down scan of base relation rel can have (ApModelCostFloor). */
Cost
ApRelCostFloor(RelOptInfo *rel)
{
	return ApModelCostFloor(rel->pages, rel->tuples,
							ap_operators(rel->baserestrictcost.per_tuple),
							ap_seq_scan_cost(rel), ap_disk_count());
}

/*
 * Has rel an unparameterized path far cheaper than any ActiveScan could be?
 * Every ActiveScan pays its disks' start and their pass over every page;
 * ApModelCostFloor bounds its cost from below, and a path under a quarter
 * of that (an index lookup, a selective range of a big table's index) is
 * cheaper than any pushed-down plan of the relation could be.  Such a
 * relation gets no ActiveScan, and its quals are neither classified nor
 * costed: OLTP planning stays as cheap as without the extension (before
 * the pages counted, only the start did, and a range of 100 keys of
 * lineitem's index, cost 164 against a floor of 221, went on to a new
 * session's first look at pg_extension: 0.035 ms of a 0.5 ms plan).
 */
static bool
ap_cheap_path_exists(RelOptInfo *rel)
{
	double		floor = ApRelCostFloor(rel);
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (path->param_info == NULL && path->total_cost < 0.25 * floor)
			return true;
	}
	return false;
}

/* add_path's fuzz factor for total and startup costs (pathnode.c's STD_FUZZ_FACTOR) */
#define AP_PATH_FUZZ				1.01

/*
 * Would add_path (partial: add_partial_path) reject path, unparameterized
 * and unordered, because one of pathlist's paths dominates it?  True only
 * where PostgreSQL's rules surely reject it: an unparameterized old path,
 * fuzzily cheaper in total cost and, for add_path, no dearer to start,
 * with no fewer rows and no less parallel-safe (any pathkeys are at least
 * as good as none).  The callers skip what such a path would have cost
 * them (a new session's first ApExtensionCreated), so a "false" costs only
 * time, never a plan.
 */
bool
ApPathDominated(List *pathlist, Path *path, bool partial)
{
	ListCell   *lc;

	Assert(path->param_info == NULL && path->pathkeys == NIL);
	foreach(lc, pathlist)
	{
		Path	   *old = (Path *) lfirst(lc);

		if (old->param_info != NULL || !ApPathsDisabledAlike(old, path))
			continue;
		if (!(path->total_cost > old->total_cost * AP_PATH_FUZZ))
			continue;
		if (partial)
			return true;
		if (old->startup_cost > path->startup_cost * AP_PATH_FUZZ ||
			old->rows > path->rows || old->parallel_safe < path->parallel_safe)
			continue;
		return true;
	}
	return false;
}

/*
 * Would ap_set_rel_pathlist offer ActiveScan for rel with no host quals?
 * ActiveAgg asks: its input's ActiveScan path may have lost to a Seq Scan
 * in add_path while aggregating at the disks still pays.  Not over a
 * relation a host path reads in a quarter of the disks' start
 * (ap_cheap_path_exists): aggregating its few rows on the host costs
 * little more, and its planning then skips the aggregates' classification
 * and costing (a new session's grouped count of supplier planned 0.05 ms
 * longer than without the extension).
 */
bool
ApScanEligible(PlannerInfo *root, RelOptInfo *rel)
{
	RangeTblEntry *rte;
	List	   *project;

	if (!active_pg_enable || rel->relid == 0 || rel->relid >= root->simple_rel_array_size)
		return false;
	rte = planner_rt_fetch(rel->relid, root);
	return ap_rel_candidate(root, rel, rte) && ApDisksConfigured() &&
		(active_pg_force || !ap_cheap_path_exists(rel)) &&
		ap_rel_readable(rte, rel, NIL, &project);
}

/*
 * Is the disks' start (the model's a_serial, kept in path's prediction) less
 * than AP_BLOOM_BASE_START_SHARE of the host's own scan, t_host?  A scan
 * guarded out as a plan of its own is then kept for the filtered scans
 * whatever add_path would do with it.  A smaller table's is kept only where
 * add_path would have kept it (kept regardless, a table of 100,000 rows
 * within shared_buffers probed 200 times by an index, 2.8-3.1 ms, got a
 * Bloom-filtered scan of 3.8-4.5 ms), and no longer offered on its own: it
 * won on PostgreSQL's costs and lost on the clock (orders joined to
 * customer unfiltered, SF 0.1, a serial Hash Join over the disks'
 * projection 95 ms against stock's Parallel Hash Join 71 ms).  Pricing the
 * kept scans at the host's measured speed instead moved TPC-H Q7, Q8 and
 * Q12 into plans up to 2.9x slower.
 */
static bool
ap_start_small(CustomPath *path, double t_host)
{
	ApModelResult m;

	return ApModelFromList(list_nth(path->custom_private, AP_PATH_PRIV_MODEL), &m) &&
		m.a_serial < AP_BLOOM_BASE_START_SHARE * t_host;
}

/*
 * Does the host's work on the rows path ships (receiving and decoding
 * them) bound its predicted time, above each of the disks' terms?
 */
static bool
ap_host_bound(CustomPath *path)
{
	ApModelResult m;

	if (!ApModelFromList(list_nth(path->custom_private, AP_PATH_PRIV_MODEL), &m))
		return false;
	return m.a_host > Max(Max(m.a_read, m.a_disk_cpu), m.a_net);
}

/*
 * Serial ActiveScans kept for the Bloom paths only (ApBloomBasePath).  A
 * joined table's scan without a disk qual that the model predicts slower
 * than the host's own Seq Scan at measured speed is not offered as a plan
 * of its own, but a Bloom filter riding on it can still pay (TPC-H Q20's
 * partsupp).  add_path would discard such a path for the cheaper Seq Scan,
 * so it is kept here, found again by its relation.  The partial path of a
 * relation a filter may ride on is kept here too (the partial Bloom paths
 * are built from it), offered or not.  The paths live in the planner's
 * memory, and are forgotten when it is reset (plan_memo.h).
 */
static ApMemo ap_bloom_bases;

/* The ActiveScan kept for rel's Bloom paths, serial or partial, or NULL. */
CustomPath *
ApBloomBasePath(RelOptInfo *rel, bool partial)
{
	ListCell   *lc;

	foreach(lc, ap_bloom_bases.entries)
	{
		CustomPath *path = ((ApMemoEntry *) lfirst(lc))->value;

		if (path->path.parent == rel && path->path.parallel_aware == partial)
			return path;
	}
	return NULL;
}

/* A copy of an ActiveScan path that add_path and add_partial_path will not free. */
static CustomPath *
ap_path_copy(CustomPath *path)
{
	CustomPath *copy = makeNode(CustomPath);

	memcpy(copy, path, sizeof(CustomPath));
	copy->custom_private = list_copy(path->custom_private);
	return copy;
}

/* Offer ActiveScan for an eligible base relation. */
static void
ap_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					RangeTblEntry *rte)
{
	CustomPath *cpath;
	CustomPath *ppath;
	CustomPath *pguarded;
	CustomPath *pbase = NULL;
	List	   *disk_ri;
	List	   *host_ri;
	List	   *project;
	double		t_host;
	double		t_active;
	bool		bloom;
	bool		slower;
	bool		serial_ok;
	bool		bloom_only;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (!active_pg_enable || !ap_rel_candidate(root, rel, rte))
		return;
	/* no disk to ship to (library loaded without launcher or disk list) */
	if (!ApDisksConfigured())
		return;
	/* point lookups and small scans pay nothing more than this */
	if (!active_pg_force && ap_cheap_path_exists(rel))
		return;
	/*
	 * The library may be preloaded in a database without the extension,
	 * where it plans nothing: no repricing of index paths (only relations
	 * beyond shared_buffers get it) and no ActiveScan (checked where one
	 * would be offered).  ApExtensionCreated's first call in a session
	 * reads pg_extension; a small relation's plan that offers nothing does
	 * not pay it.
	 */
	if (rel->pages > NBuffers && !ApExtensionCreated())
		return;

	ApClassifyRestrictInfos(root, rel, rel->baserestrictinfo, &disk_ri, &host_ri);
	if (!ap_rel_readable(rte, rel, host_ri, &project))
		return;

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = active_pg_enable_parallel && rel->consider_parallel &&
		active_pg_interconnect_mbps == 0;
	cpath->path.parallel_workers = 0;
	cpath->path.pathkeys = NIL;
	/* ExecScan projects the plan's tlist over the scan slot (activescan.c) */
	/*
	 * A sequential scan runs backward too, so PostgreSQL makes a cursor over
	 * it scrollable; ActiveScan does the same (activescan.c keeps the tuples).
	 */
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION | CUSTOMPATH_SUPPORT_BACKWARD_SCAN;
	cpath->custom_paths = NIL;
	cpath->custom_private = list_make3(project, NIL, NIL);
	cpath->methods = &ap_path_methods;
	if (!active_pg_force)
		ap_price_index_paths(root, rel);
	/*
	 * Which plans must beat the host's own at measured speed.  A relation no
	 * Bloom filter can ride on: all of them.  One a filter may ride on keeps
	 * its serial path for the Bloom paths, which are built from it, and is
	 * guarded only where the disks have no qual to run and would only
	 * project.  Under Gather the participants' host work and the disks share
	 * the cores, and such a scan saves the host little while adding all of
	 * the disks' work (a join of orders and customer without a filter, SF 1:
	 * 290 against 189 ms with workers, 835 against 629 ms serially); its
	 * serial path is then kept for the Bloom paths only (bloom_only, below).
	 * Guarding filtered partial scans too cost more than it saved: TPC-H
	 * Q5's and Q13's orders scans lost their parallel pushdown and ran 0.79x
	 * and 1.04x where they had run 1.71x and 1.80x.
	 */
	bloom = ap_bloom_possible(root, rel);
	t_host = (!bloom || disk_ri == NIL) ? ap_host_best_seconds(rel, disk_ri, host_ri) : 0.0;
	t_active = ap_cost_path(root, rel, disk_ri, host_ri, cpath, 1.0);
	slower = ApHostSlower(t_active, t_host, true, 1.0);
	serial_ok = bloom || !slower;
	bloom_only = bloom && slower &&
		(ap_start_small(cpath, t_host) || !ApPathDominated(rel->pathlist, &cpath->path, false));
	ppath = ap_partial_path(root, rel, disk_ri, host_ri, cpath, t_host, &pguarded);

	/*
	 * Under Gather a parallel-safe path that is not partial runs in every
	 * participant on the inner side of a join, each building its own hash
	 * table of it.  For an ActiveScan that is the whole scan at the disks
	 * once per participant, work the disks share and PostgreSQL's costing
	 * does not multiply.  Where the disks have no qual to run and the
	 * partial path was not offered (above) the serial one is kept out of
	 * parallel plans: customer scanned so by three participants under a
	 * join with orders, SF 1, ran 0.73x stock's Parallel Hash Join.  (All
	 * serial ActiveScans kept out moved other plans, such as a filtered
	 * lineitem's joins, into slower parallel ones.)  Not under
	 * force_pushdown, whose tests run the serial node in workers.
	 */
	if (!active_pg_force && disk_ri == NIL && ppath == NULL)
		cpath->path.parallel_safe = false;

	/*
	 * A scan whose shipped rows the host handles slower than the disks
	 * produce them (ap_host_bound) leaves that work, and all the per-row
	 * work of the joins above, to one process when it runs serially, and
	 * PostgreSQL, which charges a hash join's probes far less than the
	 * scans its costs were made for, prices such a serial plan well under
	 * the parallel plans that divide exactly that work: a join of customer
	 * with the 729,413 orders a filter keeps, SF 1, ran 280 ms as a serial
	 * Hash Right Join over the disks' scan (cost 22,810) against 232 ms for
	 * stock's Parallel Hash Left Join (47,871), and TPC-H Q13 615 ms
	 * serially against 443 ms over the partial ActiveScan.  With workers
	 * allowed such a scan is offered as the partial path only (kept for
	 * the Bloom paths, which price their own joins).
	 */
	if (!active_pg_force && ppath != NULL && serial_ok && !bloom_only && ap_host_bound(cpath))
	{
		serial_ok = false;
		bloom_only = bloom;
	}

	if (active_pg_force)
	{
		if (!ApExtensionCreated())
			return;
		/* testing switch: the only way to scan this relation */
		rel->pathlist = list_make1(cpath);
		rel->partial_pathlist = ppath != NULL ? list_make1(ppath) : NIL;
		return;
	}

	/*
	 * The partial path the partial Bloom paths are built from: the one
	 * offered (a copy: add_partial_path may free it), or the one a Parallel
	 * Seq Scan beats, which a filter may still make pay.
	 */
	if (bloom && ppath != NULL)
		pbase = ap_path_copy(ppath);
	else if (bloom && pguarded != NULL)
		pbase = pguarded;

	/* what add_path and add_partial_path would keep (ApPathDominated) */
	serial_ok = serial_ok && !bloom_only &&
		!ApPathDominated(rel->pathlist, &cpath->path, false);
	if (ppath != NULL && ApPathDominated(rel->partial_pathlist, &ppath->path, true))
		ppath = NULL;
	if ((!bloom_only && !serial_ok && ppath == NULL) || !ApExtensionCreated())
		return;
	if (bloom_only)
		ApMemoKeep(&ap_bloom_bases, cpath);
	else if (serial_ok)
		add_path(rel, &cpath->path);
	if (pbase != NULL)
		ApMemoKeep(&ap_bloom_bases, pbase);
	if (ppath != NULL)
		add_partial_path(rel, &ppath->path);
}

/* Turn the chosen ActiveScan path into a CustomScan plan node. */
static Plan *
ap_plan_custom_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
					List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *disk_ri;
	List	   *host_ri;
	List	   *quals = NIL;
	List	   *disk_pos = NIL;
	ListCell   *lc;

	/*
	 * clauses are rel->baserestrictinfo (the path is unparameterized), so this
	 * classification equals the one the project list was computed with.
	 */
	ApClassifyRestrictInfos(root, rel, clauses, &disk_ri, &host_ri);

	cscan->scan.plan.targetlist = tlist;
	/* host quals are the node's own business: EXPLAIN calls them Host Filter */
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = rel->relid;
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	/*
	 * clauses come in order_qual_clauses' order: keep it (the host re-checks
	 * handed-back rows in it), and list the disk's positions in the disk's
	 * own evaluation order
	 */
	foreach(lc, clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (!ri->pseudoconstant)
			quals = lappend(quals, ri->clause);
	}
	foreach(lc, disk_ri)
	{
		Expr	   *clause = lfirst_node(RestrictInfo, lc)->clause;
		ListCell   *qc;

		foreach(qc, quals)
		{
			if (lfirst(qc) == clause)
			{
				disk_pos = lappend_int(disk_pos, foreach_current_index(qc));
				break;
			}
		}
	}
	cscan->custom_exprs = quals;
	cscan->custom_private = list_make4(copyObject(list_nth(best_path->custom_private,
															 AP_PATH_PRIV_PROJECT)),
									   disk_pos, makeInteger(0),
									   copyObject(list_nth(best_path->custom_private,
														   AP_PATH_PRIV_BLOOMS)));
	cscan->custom_private = lappend(cscan->custom_private,
									copyObject(list_nth(best_path->custom_private,
														AP_PATH_PRIV_MODEL)));
	cscan->custom_scan_tlist = NIL;
	cscan->methods = &ApScanPlanMethods;
	ap_scan_plans_made++;
	return &cscan->scan.plan;
}

/*
 * Projection pushdown on a finished ActiveScan (see the file header).  The
 * plan has been through setrefs: Vars carry the final range table index.
 */
static void
ap_push_projection(CustomScan *cscan, List *rtable)
{
	Index		relid = cscan->scan.scanrelid;
	Oid			reloid = rt_fetch(relid, rtable)->relid;
	List	   *project = (List *) linitial(cscan->custom_private);
	List	   *disk_pos = (List *) lsecond(cscan->custom_private);
	List	   *host_quals = NIL;
	Bitmapset  *qual_attrs = NULL;
	Bitmapset  *attrs = NULL;
	List	   *exprs = NIL;
	List	   *scan_tlist = NIL;
	List	   *new_project = NIL;
	List	   *new_tlist = NIL;
	ListCell   *lc;
	int			nattrs;
	int			x;

	if (cscan->custom_scan_tlist != NIL)
		return;
	foreach(lc, cscan->custom_exprs)
	{
		if (!list_member_int(disk_pos, foreach_current_index(lc)))
			host_quals = lappend(host_quals, lfirst(lc));
	}

	foreach(lc, cscan->scan.plan.targetlist)
	{
		Expr	   *e = lfirst_node(TargetEntry, lc)->expr;
		ApTypeKind	kind;

		if (IsA(e, Var))
		{
			Var		   *v = (Var *) e;

			if (v->varno != relid || v->varlevelsup != 0 || v->varattno <= 0 ||
				!list_member_int(project, v->varattno))
				return;
			attrs = bms_add_member(attrs, v->varattno);
		}
		else if (IsA(e, Const))
			continue;
		else if (!ApIsShippableValue(relid, e, &kind))
			return;
		else if (!list_member(exprs, e))
			exprs = lappend(exprs, e);
	}
	if (exprs == NIL)
		return;

	/* host quals read the shipped attributes too */
	pull_varattnos((Node *) host_quals, relid, &qual_attrs);
	x = -1;
	while ((x = bms_next_member(qual_attrs, x)) >= 0)
	{
		AttrNumber	attno = x + FirstLowInvalidHeapAttributeNumber;

		if (attno <= 0 || !list_member_int(project, attno))
			return;
		attrs = bms_add_member(attrs, attno);
	}

	/* the scan tuple: shipped attributes in attribute order, then the values */
	x = -1;
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		Oid			type;
		int32		typmod;
		Oid			collid;

		get_atttypetypmodcoll(reloid, (AttrNumber) x, &type, &typmod, &collid);
		new_project = lappend_int(new_project, x);
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) makeVar(relid, (AttrNumber) x, type,
															  typmod, collid, 0),
											 list_length(scan_tlist) + 1, NULL, false));
	}
	nattrs = list_length(scan_tlist);
	foreach(lc, exprs)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) lfirst(lc), list_length(scan_tlist) + 1,
											 NULL, false));

	/* the target list now reads the scan tuple */
	foreach(lc, cscan->scan.plan.targetlist)
	{
		TargetEntry *tle = flatCopyTargetEntry(lfirst_node(TargetEntry, lc));
		Expr	   *e = tle->expr;

		if (IsA(e, Var))
		{
			Var		   *v = (Var *) e;
			int			pos = 0;
			ListCell   *lc2;

			foreach(lc2, new_project)
			{
				pos++;
				if (lfirst_int(lc2) == v->varattno)
					break;
			}

			tle->expr = (Expr *) makeVar(INDEX_VAR, pos, v->vartype, v->vartypmod,
										 v->varcollid, 0);
		}
		else if (!IsA(e, Const))
		{
			int			pos = nattrs + 1;
			ListCell   *lc2;

			foreach(lc2, exprs)
			{
				if (equal(lfirst(lc2), e))
					break;
				pos++;
			}
			tle->expr = (Expr *) makeVar(INDEX_VAR, pos, exprType((Node *) e),
										 exprTypmod((Node *) e),
										 exprCollation((Node *) e), 0);
		}
		new_tlist = lappend(new_tlist, tle);
	}

	cscan->scan.plan.targetlist = new_tlist;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_private = list_make5(new_project, disk_pos,
									   makeInteger(list_length(exprs)),
									   list_nth(cscan->custom_private, AP_PRIV_BLOOMS),
									   list_nth(cscan->custom_private, AP_PRIV_MODEL));
}

/* Visit every plan node below plan, pushing projections into ActiveScans. */
static void
ap_walk_plans(Plan *plan, List *rtable)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	check_stack_depth();
	if (IsA(plan, CustomScan) && ((CustomScan *) plan)->methods == &ApScanPlanMethods)
		ap_push_projection((CustomScan *) plan, rtable);
	ap_walk_plans(plan->lefttree, rtable);
	ap_walk_plans(plan->righttree, rtable);
	switch (nodeTag(plan))
	{
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				ap_walk_plans(lfirst(lc), rtable);
			break;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				ap_walk_plans(lfirst(lc), rtable);
			break;
		case T_BitmapAnd:
			foreach(lc, ((BitmapAnd *) plan)->bitmapplans)
				ap_walk_plans(lfirst(lc), rtable);
			break;
		case T_BitmapOr:
			foreach(lc, ((BitmapOr *) plan)->bitmapplans)
				ap_walk_plans(lfirst(lc), rtable);
			break;
		case T_SubqueryScan:
			ap_walk_plans(((SubqueryScan *) plan)->subplan, rtable);
			break;
		case T_CustomScan:
			foreach(lc, ((CustomScan *) plan)->custom_plans)
				ap_walk_plans(lfirst(lc), rtable);
			break;
		default:
			break;
	}
}

/*
 * planner_hook: plan as usual, then push computed projections to the disks.
 * A planning that made no ActiveScan (every OLTP statement) is not walked;
 * the count also moves for plannings nested in this one, which only costs
 * a walk that finds nothing.
 */
static PlannedStmt *
ap_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	PlannedStmt *stmt;
	uint64		made = ap_scan_plans_made;
	ListCell   *lc;

	if (prev_planner_hook)
		stmt = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions, boundParams);

	if (ap_scan_plans_made != made && stmt->rowMarks == NIL)
	{
		ap_walk_plans(stmt->planTree, stmt->rtable);
		foreach(lc, stmt->subplans)
			ap_walk_plans(lfirst(lc), stmt->rtable);
	}
	return stmt;
}

/* Install the planner hook and register the plan methods (for readfuncs). */
void
ApPlannerInit(void)
{
	RegisterCustomScanMethods(&ApScanPlanMethods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = ap_set_rel_pathlist;
	CacheRegisterSyscacheCallback(NAMESPACEOID, ap_extension_inval, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, ap_extension_inval, (Datum) 0);
	prev_planner_hook = planner_hook;
	planner_hook = ap_planner;
	ApModelInit();
}
