/*
 * bloom_share.c
 *	  The small side of a Bloom-filtered join, computed once for both of its
 *	  users: the Hash Join's hash table and the filter on the big side's scan.
 *
 * Without it the small side runs twice: once as the Hash's input, once as
 * the child plan the ActiveScan builds its filter from (bloom_exec.c).  For a
 * join result as the small side (Q3's customer JOIN orders) that second run
 * cost as much as the scan it filtered.  A Bloom level whose small side is
 * the Hash's input (the big side is the outer, probing side) gets a Custom
 * Scan (BloomShare) above the small side's plan in the Hash: it passes the
 * rows up and keeps them in a tuplestore registered under a share id that the
 * filter's plan entry names, with the positions of the filter's keys in its
 * rows (bloom_planner.c).
 *
 * Rules of this file:
 * The same holds when the small side is the probe side and the filtered
 * scan is hashed (Q4's orders EXISTS lineitem: the semi join hashes the
 * filtered lineitem and probes it with orders): the BloomShare sits above the
 * small side's plan on the probe side and is "eager": the first row asked of
 * it runs its child to the end into the store.  ExecHashJoin asks the probe
 * side for a row before it builds the Hash when the probe side's startup
 * cost is below the Hash's; the filter's build then finds the rows complete.
 * If the Hash is built first, the build runs the child itself, as below.
 *
 *   - Sharing is an optimization, never a condition: the ActiveScan uses the
 *     stored rows when the share ran to completion in the same executor
 *     state, or had not started yet: ExecHashJoin fetches the probe side's
 *     first row before it builds the Hash when the probe side's startup cost
 *     is below the Hash's, and the filter's build then runs the share's
 *     child to its end itself; the Hash replays the stored rows afterwards.
 *     A share whose child has parameters, or that stopped half-way, is not
 *     used: the ActiveScan runs its own child plan instead.  So the small
 *     side runs once whichever side starts first, and the planner charges
 *     its cost once (bloom_planner.c).
 *   - The stored rows are exactly what the child returned; a rescan with
 *     changed parameters empties the store and runs the child again, any
 *     other rescan replays it.
 *   - The registry lives as long as the executor state: entries are removed
 *     by a reset callback of es_query_cxt, so an error cannot leave one
 *     behind.
 *   - Under a Parallel Hash (ApBloomShareParallelPath, a partial chain) a
 *     participant's rows are only its part of the small side and are never
 *     a filter's build: with the query's shared memory the node keeps no
 *     store, hashes the filter's keys of the rows it passes up and adds them
 *     to a list in the query's dsa area when its part ends.  That is before
 *     its Hash arrives at the Parallel Hash's build barrier, and the probe
 *     side starts in no participant before every participant that hashed
 *     rows has passed it (a participant that attaches later runs no part),
 *     so the filtered scan reads all of them (ApBloomShareHashes).  More
 *     than work_mem of hashes in one participant make the filter one that
 *     every row passes.  Without shared memory (the plan run serially) the
 *     partial child scans everything and the node is an ordinary share.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "storage/spin.h"
#include "utils/dsa.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "active_pg.h"
#include "bloomjoin.h"

/* Did this plan node run (ANALYZE)?  Ends its loop as ExplainNode would. */
bool
ApPlanStateRan(PlanState *ps)
{
	if (ps == NULL || ps->instrument == NULL)
		return false;
	InstrEndLoop(ps->instrument);
	return ps->instrument->nloops > 0;
}

/* Execution state of a BloomShare node. */
typedef struct ApShareState
{
	CustomScanState css;
	int			id;
	PlanState  *child;
	Tuplestorestate *store;
	TupleTableSlot *replay;		/* a stored row, as the minimal tuple it is kept as */
	bool		started;		/* rows were pulled from the child since the last (re)start */
	bool		done;			/* the child ran to its end into store */
	bool		replaying;		/* reading store instead of the child */
	bool		eager;			/* probe side: the first row fills the store */
	int			reader;			/* read pointer of the ActiveScan's build */

	/* under a Parallel Hash (ApBloomShareParallelPath) */
	bool		parallel;		/* planned so: hash the keys for the filter */
	int			filter;			/* the filter's index in the scan: its seed */
	int			nkeys;
	int			key_at[AP_BLOOM_KEYS_MAX];	/* from 0 */
	int			host_kinds[AP_BLOOM_KEYS_MAX];
	struct ApShareShared *sh;	/* in the query's shared memory; NULL without */
	dsa_area   *area;
	MemoryContext row_cxt;		/* detoasted keys of one row */
	uint64	   *local;			/* this participant's hashes, not yet published */
	int64		nlocal;
	int64		cap_local;
	bool		overflow;		/* more than work_mem of them: stopped */
} ApShareState;

/*
 * The participants' key hashes of a share under a Parallel Hash, in the
 * query's DSM: a list of chunks in its dsa area, one per participant and
 * execution, added when that participant's part of the small side ends.
 */
typedef struct ApShareShared
{
	slock_t		mutex;
	bool		overflow;		/* a participant stopped: the filter must pass all */
	int64		nhashes;
	dsa_pointer chunks;			/* ApShareChunk list */
} ApShareShared;

typedef struct ApShareChunk
{
	dsa_pointer next;
	int64		n;
	uint64		h[FLEXIBLE_ARRAY_MEMBER];
} ApShareChunk;

/* One registered share: a node of an executor state. */
typedef struct ApShareEntry
{
	EState	   *estate;
	int			id;
	uint64		seq;			/* registration order */
	ApShareState *node;
} ApShareEntry;

static List *ap_shares = NIL;	/* of ApShareEntry *, in TopMemoryContext */
static int	ap_share_next_id = 0;
static uint64 ap_share_seq = 0; /* shares registered so far in this backend */

static Plan *ap_share_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
								List *tlist, List *clauses, List *custom_plans);
static Node *ap_share_create_state(CustomScan *cscan);
static void ap_share_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ap_share_exec(CustomScanState *node);
static void ap_share_end(CustomScanState *node);
static void ap_share_rescan(CustomScanState *node);
static void ap_share_explain(CustomScanState *node, List *ancestors, ExplainState *es);
static Size ap_share_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void ap_share_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
									void *coordinate);
static void ap_share_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
									  void *coordinate);
static void ap_share_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate);

static CustomPathMethods ap_share_path_methods = {
	.CustomName = "BloomShare",
	.PlanCustomPath = ap_share_plan_path,
};

static CustomScanMethods ap_share_plan_methods = {
	.CustomName = "BloomShare",
	.CreateCustomScanState = ap_share_create_state,
};

static CustomExecMethods ap_share_exec_methods = {
	.CustomName = "BloomShare",
	.BeginCustomScan = ap_share_begin,
	.ExecCustomScan = ap_share_exec,
	.EndCustomScan = ap_share_end,
	.ReScanCustomScan = ap_share_rescan,
	.EstimateDSMCustomScan = ap_share_estimate_dsm,
	.InitializeDSMCustomScan = ap_share_initialize_dsm,
	.ReInitializeDSMCustomScan = ap_share_reinitialize_dsm,
	.InitializeWorkerCustomScan = ap_share_initialize_worker,
	.ExplainCustomScan = ap_share_explain,
};

/* A new share id for a planned level (unique within this backend). */
int
ApBloomShareNewId(void)
{
	if (ap_share_next_id == PG_INT32_MAX)
		ap_share_next_id = 0;
	return ++ap_share_next_id;
}

/*
 * The path: the small side's path, its rows kept for the filter.  Costs one
 * tuplestore write per row on top of the child.
 */
Path *
ApBloomSharePath(PlannerInfo *root, Path *child, int id, bool probe)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = child->parent;
	cpath->path.pathtarget = child->pathtarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	/* a participant's share and its filter's build meet in its own executor state */
	cpath->path.parallel_safe = child->parallel_safe;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = child->rows;
	cpath->path.startup_cost = child->startup_cost;
	cpath->path.total_cost = child->total_cost + cpu_tuple_cost * child->rows;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = list_make1(child);
	cpath->custom_private = list_make2(makeInteger(id), makeBoolean(probe));
	cpath->methods = &ap_share_path_methods;
	return &cpath->path;
}

/*
 * Under a Parallel Hash: each participant passes its part of the small side
 * (child, a partial path) up to the Hash and hashes the filter's keys as
 * they pass (see bloomjoin.h).  Parallel-aware: its shared memory holds the
 * hashes.  Costs what ApBloomSharePath costs; the hashing is the filter's
 * build, which the chain charges (bloom_planner.c).
 */
Path *
ApBloomShareParallelPath(PlannerInfo *root, Path *child, int id, int filter, List *key_at,
						 List *host_kinds)
{
	CustomPath *cpath = (CustomPath *) ApBloomSharePath(root, child, id, false);

	Assert(list_length(key_at) == list_length(host_kinds));
	cpath->path.parallel_aware = true;
	cpath->path.parallel_workers = child->parallel_workers;
	cpath->custom_private = lappend(cpath->custom_private, makeInteger(filter));
	cpath->custom_private = lappend(cpath->custom_private, list_copy(key_at));
	cpath->custom_private = lappend(cpath->custom_private, list_copy(host_kinds));
	return &cpath->path;
}

/*
 * The plan: a scan of no relation whose scan tuple is the child's output
 * (custom_scan_tlist = the child's target list, in order), projected to
 * tlist.  The rel's restrictions are the child's, which already applies them.
 */
static Plan *
ap_share_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *child = linitial(custom_plans);
	List	   *scan_tlist = NIL;
	ListCell   *lc;

	foreach(lc, child->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(tle->expr),
											 list_length(scan_tlist) + 1, NULL, false));
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = NIL;
	cscan->custom_private = best_path->custom_private;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = rel->relids;
	cscan->methods = &ap_share_plan_methods;
	return &cscan->scan.plan;
}

static Node *
ap_share_create_state(CustomScan *cscan)
{
	ApShareState *st = (ApShareState *) newNode(sizeof(ApShareState), T_CustomScanState);

	st->css.methods = &ap_share_exec_methods;
	st->id = intVal(linitial(cscan->custom_private));
	st->eager = boolVal(lsecond(cscan->custom_private));
	if (list_length(cscan->custom_private) == 5)
	{
		List	   *at = list_nth(cscan->custom_private, 3);
		List	   *kinds = list_nth(cscan->custom_private, 4);

		st->parallel = true;
		st->filter = intVal(list_nth(cscan->custom_private, 2));
		st->nkeys = list_length(at);
		if (st->nkeys < 1 || st->nkeys > AP_BLOOM_KEYS_MAX || list_length(kinds) != st->nkeys)
			elog(ERROR, "BloomShare plan has inconsistent keys");
		for (int k = 0; k < st->nkeys; k++)
		{
			st->key_at[k] = list_nth_int(at, k) - 1;
			st->host_kinds[k] = list_nth_int(kinds, k);
		}
	}
	else if (list_length(cscan->custom_private) != 2)
		elog(ERROR, "BloomShare plan has %d items", list_length(cscan->custom_private));
	return (Node *) st;
}

/* Remove the registered shares of estate (all of them if node is NULL) or of node. */
static void
ap_share_unregister(EState *estate, ApShareState *node)
{
	ListCell   *lc;

	foreach(lc, ap_shares)
	{
		ApShareEntry *e = lfirst(lc);

		if (node != NULL ? e->node == node : e->estate == estate)
		{
			ap_shares = foreach_delete_current(ap_shares, lc);
			pfree(e);
		}
	}
}

/* es_query_cxt is going away: forget its shares. */
static void
ap_share_forget(void *arg)
{
	ap_share_unregister((EState *) arg, NULL);
}

static void
ap_share_begin(CustomScanState *node, EState *estate, int eflags)
{
	ApShareState *st = (ApShareState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	MemoryContext oldcxt;
	ApShareEntry *e;
	bool		first = true;
	ListCell   *lc;

	st->child = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make1(st->child);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	if (st->parallel)
		st->row_cxt = AllocSetContextCreate(estate->es_query_cxt, "active_pg share row",
											ALLOCSET_SMALL_SIZES);
	/* random access: the filter's build reads the rows from the start */
	st->store = tuplestore_begin_heap(true, false, work_mem);
	st->reader = tuplestore_alloc_read_pointer(st->store, 0);
	st->replay = ExecAllocTableSlot(&estate->es_tupleTable,
									node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
									&TTSOpsMinimalTuple);

	foreach(lc, ap_shares)
	{
		if (((ApShareEntry *) lfirst(lc))->estate == estate)
			first = false;
	}
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	e = palloc(sizeof(ApShareEntry));
	e->estate = estate;
	e->id = st->id;
	e->seq = ++ap_share_seq;
	e->node = st;
	ap_shares = lappend(ap_shares, e);
	MemoryContextSwitchTo(oldcxt);
	if (first)
	{
		MemoryContextCallback *cb = MemoryContextAlloc(estate->es_query_cxt,
													   sizeof(MemoryContextCallback));

		cb->func = ap_share_forget;
		cb->arg = estate;
		MemoryContextRegisterResetCallback(estate->es_query_cxt, cb);
	}
}

static bool ap_share_fill(ApShareState *st);

/* Under a Parallel Hash: the filter's hash of a row's keys, kept (see ApShareState). */
static void
ap_share_hash_row(ApShareState *st, TupleTableSlot *slot)
{
	ApBloomHash hash;
	MemoryContext oldcxt;
	bool		notnull;

	if (st->overflow)
		return;
	slot_getsomeattrs(slot, slot->tts_tupleDescriptor->natts);
	oldcxt = MemoryContextSwitchTo(st->row_cxt);
	ap_bloom_hash_init(&hash, AP_BLOOM_SEED(st->filter));
	notnull = ApBloomHashKeys(&hash, slot, st->nkeys, st->key_at, st->host_kinds);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(st->row_cxt);
	if (!notnull)
		return;
	if (st->nlocal == st->cap_local)
	{
		int64		limit = Max((int64) work_mem * 1024 / (int64) sizeof(uint64), 1024);

		if (st->cap_local >= limit)
		{
			/* too many to ship as a filter worth its probes: every row passes */
			st->overflow = true;
			return;
		}
		st->cap_local = Min(Max(st->cap_local * 2, 1024), limit);
		st->local = st->local == NULL ?
			MemoryContextAllocHuge(st->css.ss.ps.state->es_query_cxt,
								   sizeof(uint64) * st->cap_local) :
			repalloc_huge(st->local, sizeof(uint64) * st->cap_local);
	}
	st->local[st->nlocal++] = ap_bloom_hash_final(&hash);
}

/*
 * This participant's part of the small side ended: add its hashes to the
 * shared list.  That happens before its Hash reaches the Parallel Hash's
 * build barrier, and the probe side (the filtered scan) starts only after
 * every participant passed it, so the scan finds every participant's keys.
 */
static void
ap_share_publish(ApShareState *st)
{
	dsa_pointer dp = InvalidDsaPointer;
	ApShareChunk *chunk = NULL;

	if (!st->overflow && st->nlocal > 0)
	{
		dp = dsa_allocate_extended(st->area,
								   offsetof(ApShareChunk, h) + sizeof(uint64) * st->nlocal,
								   DSA_ALLOC_HUGE);
		chunk = dsa_get_address(st->area, dp);
		chunk->n = st->nlocal;
		memcpy(chunk->h, st->local, sizeof(uint64) * st->nlocal);
	}
	SpinLockAcquire(&st->sh->mutex);
	if (st->overflow)
		st->sh->overflow = true;
	if (DsaPointerIsValid(dp))
	{
		chunk->next = st->sh->chunks;
		st->sh->chunks = dp;
		st->sh->nhashes += st->nlocal;
	}
	SpinLockRelease(&st->sh->mutex);
	st->nlocal = 0;
}

/* The next row of the share: from the store when replaying, else from the child. */
static TupleTableSlot *
ap_share_next(ScanState *ss)
{
	ApShareState *st = (ApShareState *) ss;
	TupleTableSlot *scan = ss->ss_ScanTupleSlot;
	TupleTableSlot *slot;

	if (st->eager && st->store != NULL && !st->started)
		(void) ap_share_fill(st);
	if (st->replaying)
	{
		tuplestore_select_read_pointer(st->store, 0);
		if (!tuplestore_gettupleslot(st->store, true, false, st->replay))
			return ExecClearTuple(scan);
		/*
		 * The parent's expressions take this node's slot to be virtual and
		 * read its values without deforming (ExecComputeSlotInfo): copy.
		 */
		ExecCopySlot(scan, st->replay);
		return scan;
	}
	st->started = true;
	slot = ExecProcNode(st->child);
	if (TupIsNull(slot))
	{
		if (st->sh != NULL && !st->done)
			ap_share_publish(st);
		st->done = true;
		return ExecClearTuple(scan);
	}
	if (st->store != NULL)
		tuplestore_puttupleslot(st->store, slot);
	if (st->sh != NULL)
		ap_share_hash_row(st, slot);
	ExecCopySlot(scan, slot);
	return scan;
}

static bool
ap_share_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
ap_share_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, ap_share_next, ap_share_recheck);
}

static void
ap_share_rescan(CustomScanState *node)
{
	ApShareState *st = (ApShareState *) node;

	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(st->child, node->ss.ps.chgParam);
	if (st->done && st->child->chgParam == NULL && st->store != NULL)
	{
		/* the same rows: replay them */
		st->replaying = true;
		tuplestore_select_read_pointer(st->store, 0);
		tuplestore_rescan(st->store);
		return;
	}
	/* new parameters, or stopped half-way: the child again, from the start */
	st->nlocal = 0;
	st->overflow = false;
	st->started = false;
	st->done = false;
	st->replaying = false;
	if (st->store != NULL)
		tuplestore_clear(st->store);
	if (st->child->chgParam == NULL)
		ExecReScan(st->child);
}

static void
ap_share_end(CustomScanState *node)
{
	ApShareState *st = (ApShareState *) node;

	ap_share_unregister(NULL, st);
	ExecEndNode(st->child);
	if (st->store != NULL)
		tuplestore_end(st->store);
	st->store = NULL;
}

/*
 * Make the share complete for a filter's build that comes before the Hash:
 * run the child to its end into the store, which the Hash then replays.
 * False if the share is under way (rows already went up without the rest).
 */
static bool
ap_share_fill(ApShareState *st)
{
	if (st->done)
		return true;
	if (st->started || st->replaying)
		return false;
	st->started = true;
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(st->child);

		if (TupIsNull(slot))
			break;
		tuplestore_puttupleslot(st->store, slot);
	}
	st->done = true;
	st->replaying = true;
	tuplestore_select_read_pointer(st->store, 0);
	tuplestore_rescan(st->store);
	return true;
}

/* The registration count now: an ActiveScan takes it before its children start. */
uint64
ApBloomShareMark(void)
{
	return ap_share_seq;
}

/*
 * The rows of share id in estate for a filter's build, or NULL when they
 * cannot be used (see the file header).  *slot: a slot of their row type,
 * made in the caller's memory context.  Read with ApBloomShareRead.
 *
 * One share id can be in a plan twice: a join result planned both as the
 * Hash's input and as the child plan of a filter above it carries the
 * nested level's BloomShare in both copies.  The one of the asking scan's
 * own copy is the first registered after the scan itself started (mark):
 * the filtered scan is the probe side, started before its Hash Joins'
 * Hashes, and a filter child's copy starts, whole, inside the scan that
 * owns it.  A probe-side (eager) share is started before the Hash that
 * holds the scan: its copy is the last registered before the mark.  A
 * level's share is one or the other in every copy.
 */
Tuplestorestate *
ApBloomShareRows(EState *estate, int id, uint64 mark, TupleTableSlot **slot, bool *probe)
{
	ListCell   *lc;
	ApShareState *st = NULL;

	*probe = false;
	if (id <= 0)
		return NULL;
	foreach(lc, ap_shares)
	{
		ApShareEntry *e = lfirst(lc);

		if (e->estate != estate || e->id != id || (e->seq <= mark) != e->node->eager)
			continue;
		st = e->node;
		if (!st->eager)
			break;
	}
	if (st != NULL)
	{
		if (st->store == NULL || st->child->plan->allParam != NULL ||
			!ap_share_fill(st))
			return NULL;
		*slot = MakeSingleTupleTableSlot(st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor,
										 &TTSOpsMinimalTuple);
		*probe = st->eager;
		tuplestore_select_read_pointer(st->store, st->reader);
		tuplestore_rescan(st->store);
		return st->store;
	}
	return NULL;
}

/* The next stored row into slot; false at the end (the share's own reader restored). */
bool
ApBloomShareRead(Tuplestorestate *store, TupleTableSlot *slot)
{
	if (tuplestore_gettupleslot(store, true, false, slot))
		return true;
	tuplestore_select_read_pointer(store, 0);
	return false;
}

/* Parallel query: the shared hashes (planned parallel-aware only under a Parallel Hash). */
static Size
ap_share_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return sizeof(ApShareShared);
}

/*
 * A participant with shared memory: its rows go up to the Parallel Hash
 * and its keys to the shared list; its own rows are only part of the small
 * side and are never a filter's build (no store).
 */
static void
ap_share_attach(ApShareState *st, ApShareShared *sh)
{
	if (st->area == NULL)
		elog(ERROR, "BloomShare under a Parallel Hash without the query's shared memory area");
	st->sh = sh;
	if (st->store != NULL)
		tuplestore_end(st->store);
	st->store = NULL;
}

static void
ap_share_initialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ApShareState *st = (ApShareState *) node;
	ApShareShared *sh = coordinate;

	SpinLockInit(&sh->mutex);
	sh->overflow = false;
	sh->nhashes = 0;
	sh->chunks = InvalidDsaPointer;
	st->area = node->ss.ps.state->es_query_dsa;
	if (st->parallel)
		ap_share_attach(st, sh);
}

/* Before a rescan's workers start: forget the last execution's hashes. */
static void
ap_share_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ApShareState *st = (ApShareState *) node;
	ApShareShared *sh = coordinate;
	dsa_pointer dp = sh->chunks;

	while (st->area != NULL && DsaPointerIsValid(dp))
	{
		dsa_pointer next = ((ApShareChunk *) dsa_get_address(st->area, dp))->next;

		dsa_free(st->area, dp);
		dp = next;
	}
	sh->chunks = InvalidDsaPointer;
	sh->nhashes = 0;
	sh->overflow = false;
}

static void
ap_share_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	ApShareState *st = (ApShareState *) node;

	st->area = node->ss.ps.state->es_query_dsa;
	if (st->parallel)
		ap_share_attach(st, coordinate);
}

/* The participants' hashes of a parallel share (see bloomjoin.h). */
bool
ApBloomShareHashes(EState *estate, int id, uint64 mark, MemoryContext cxt, uint64 **h,
				   int64 *n, bool *overflow)
{
	ApShareState *st = NULL;
	ListCell   *lc;
	dsa_pointer dp;
	int64		at = 0;

	if (id <= 0)
		return false;
	foreach(lc, ap_shares)
	{
		ApShareEntry *e = lfirst(lc);

		if (e->estate == estate && e->id == id && e->seq > mark && !e->node->eager)
		{
			st = e->node;
			break;
		}
	}
	if (st == NULL || !st->parallel || st->sh == NULL)
		return false;
	SpinLockAcquire(&st->sh->mutex);
	*n = st->sh->nhashes;
	*overflow = st->sh->overflow;
	dp = st->sh->chunks;
	SpinLockRelease(&st->sh->mutex);
	*h = MemoryContextAllocHuge(cxt, sizeof(uint64) * Max(*n, 1));
	while (DsaPointerIsValid(dp))
	{
		ApShareChunk *chunk = dsa_get_address(st->area, dp);

		if (at + chunk->n > *n)
			elog(ERROR, "BloomShare's shared key hashes changed during a build");
		memcpy(*h + at, chunk->h, sizeof(uint64) * chunk->n);
		at += chunk->n;
		dp = chunk->next;
	}
	if (at != *n)
		elog(ERROR, "BloomShare's shared key hashes are incomplete");
	return true;
}

/* Register the plan methods (plans are copied through nodeToString in workers). */
void
ApBloomShareInit(void)
{
	RegisterCustomScanMethods(&ap_share_plan_methods);
}

/*
 * ExplainCustomScan: when ANALYZE saw this node run but not its child, the
 * rows came from the filtered scan's copy of the small side, which EXPLAIN
 * shows there (ApBloomExplainChildren); this copy is left out.
 */
static void
ap_share_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ApShareState *st = (ApShareState *) node;

	if (es->analyze && ApPlanStateRan(&node->ss.ps) && !ApPlanStateRan(st->child))
	{
		node->custom_ps = NIL;
		ExplainPropertyText("Rows From", "the filtered scan's run of this input", es);
	}
}
