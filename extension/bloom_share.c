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
 */
#include "postgres.h"

#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
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
} ApShareState;

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
		st->done = true;
		return ExecClearTuple(scan);
	}
	if (st->store != NULL)
		tuplestore_puttupleslot(st->store, slot);
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
