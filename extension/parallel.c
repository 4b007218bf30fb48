/*
 * parallel.c
 *	  A parallel-aware ActiveScan (the partial path of planner.c under Gather
 *	  or Gather Merge): the CustomScan DSM callbacks and the shared state.
 *
 * Rules of this file:
 *   - The leader sets everything up before any worker starts
 *     (InitializeDSMCustomScan, and ReInitializeDSMCustomScan before a
 *     rescan's workers start): it decides once for all participants whether
 *     the scan is pushed down (ApDiskScanPossible with its snapshot, which
 *     the workers share) and, if so, flushes the relation, fixes nblocks and
 *     cuts the scan into work items (disk_conversation.h: virtual disks of the
 *     striping geometry, claimed with an atomic counter).  Otherwise the
 *     participants share a parallel heap scan, as a Parallel Seq Scan does.
 *   - Each participant runs its own conversation with the disks of the items
 *     it claims: it evaluates the Params (PARAM_EXTERN values and the
 *     Gather's init-plan values are restored in workers; the planner offers
 *     the path only for a relation whose quals and target are parallel-safe),
 *     answers the xid questions of its items with the leader's snapshot and
 *     transaction (restored in workers, so TransactionIdIsCurrentTransactionId
 *     and XidInMVCCSnapshot give the leader's answers), and fetches the
 *     fallback TIDs and blocks it received through the buffer manager.
 *   - Statistics for EXPLAIN ANALYZE: a worker adds its disk and host
 *     counters to its own slot of the shared state (by worker number, so no
 *     lock: a rescan's workers start after the previous ones finished) when
 *     it shuts the node down; the leader adds every slot to its own counters
 *     when the segment is detached (ExecParallelCleanup,
 *     after the workers finished; custom scans have no instrumentation
 *     callback).  The executor state is still allocated then: Gather ends its
 *     child before cleaning up, and on error the transaction's parallel
 *     contexts are destroyed before any portal memory is released.
 *   - A parallel-aware plan run without a parallel context (no DSM) has no
 *     shared state and scans everything, as a Parallel Seq Scan does.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/tableam.h"
#include "optimizer/optimizer.h"
#include "storage/dsm.h"
#include "utils/rel.h"

#include "active_pg.h"
#include "activescan.h"

/* Layout: the state, host mode's heap scan descriptor, one statistics slot per worker. */
static Size
ap_parallel_layout(CustomScanState *node, int nworkers, Size *heap_offset,
				   Size *stats_offset)
{
	Size		heap = table_parallelscan_estimate(node->ss.ss_currentRelation,
												   node->ss.ps.state->es_snapshot);

	*heap_offset = MAXALIGN(sizeof(ApParallelShared));
	*stats_offset = add_size(*heap_offset, MAXALIGN(heap));
	return add_size(*stats_offset, mul_size(sizeof(ApWorkerStats), Max(nworkers, 0)));
}

/* EstimateDSMCustomScan: size of the shared state. */
Size
ApScanEstimateDSM(CustomScanState *node, ParallelContext *pcxt)
{
	Size		heap_offset;
	Size		stats_offset;

	return ap_parallel_layout(node, pcxt->nworkers, &heap_offset, &stats_offset);
}

/* Host mode's shared heap scan descriptor. */
ParallelTableScanDesc
ApParallelHeapScan(ApParallelShared *sh)
{
	return (ParallelTableScanDesc) ((char *) sh + sh->heap_offset);
}

/* Statistics slot of worker number i. */
static ApWorkerStats *
ap_worker_stats(ApParallelShared *sh, int i)
{
	return (ApWorkerStats *) ((char *) sh + sh->stats_offset) + i;
}

/* Add one set of node statistics into another. */
static void
ap_add_stats(ApHostStats *host, ActivePg__ScanStats *disk_stats, bool *disk_stats_valid,
			 int *stats_ndisks, const ApHostStats *from_host,
			 const ActivePg__ScanStats *from_disk, const bool *from_valid, int from_ndisks)
{
	ApAddHostStats(host, from_host);
	for (int i = 0; i < from_ndisks && i < AP_NDISKS_MAX; i++)
	{
		if (!from_valid[i])
			continue;
		ApAddScanStats(&disk_stats[i], &from_disk[i]);
		disk_stats_valid[i] = true;
	}
	*stats_ndisks = Max(*stats_ndisks, Min(from_ndisks, AP_NDISKS_MAX));
}

/* Participants the leader plans for: the workers, and itself if it takes part. */
static int
ap_participants(ParallelContext *pcxt)
{
	return pcxt->nworkers + (parallel_leader_participation ? 1 : 0);
}

/* Set up (or set up again, before a rescan) the work every participant shares. */
static void
ap_parallel_prepare(ApScanState *s, ApParallelShared *sh, ParallelContext *pcxt,
					bool reinit)
{
	Relation	rel = s->css.ss.ss_currentRelation;
	Snapshot	snapshot = s->css.ss.ps.state->es_snapshot;

	if (sh->host_mode)
	{
		if (reinit)
			table_parallelscan_reinitialize(rel, ApParallelHeapScan(sh));
		else
			table_parallelscan_initialize(rel, ApParallelHeapScan(sh), snapshot);
	}
	else
		ApDiskScanParallelInit(&sh->work, rel, ap_participants(pcxt));
}

/*
 * on_dsm_detach callback of the leader: add the workers' statistics to the
 * node's and forget the shared state (see the file header).
 */
static void
ap_parallel_collect(dsm_segment *seg, Datum arg)
{
	ApScanState *s = (ApScanState *) DatumGetPointer(arg);
	ApParallelShared *sh = s->pshared;

	if (sh == NULL)
		return;
	for (int w = 0; w < sh->nworkers; w++)
	{
		ApWorkerStats *ws = ap_worker_stats(sh, w);

		ap_add_stats(&s->host, s->disk_stats, s->disk_stats_valid, &s->stats_ndisks,
					 &ws->host, ws->disk_stats, ws->disk_stats_valid, ws->stats_ndisks);
		if (s->bloom != NULL)
			ApBloomStatsAdd(s->bloom, &ws->bloom);
	}
	s->pshared = NULL;
}

/* InitializeDSMCustomScan: the leader's decisions, before the workers start. */
void
ApScanInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ApScanState *s = (ApScanState *) node;
	ApParallelShared *sh = (ApParallelShared *) coordinate;
	Size		size;

	memset(sh, 0, sizeof(ApParallelShared));
	size = ap_parallel_layout(node, pcxt->nworkers, &sh->heap_offset, &sh->stats_offset);
	sh->nworkers = pcxt->nworkers;
	memset((char *) sh + sh->stats_offset, 0, size - sh->stats_offset);
	for (int w = 0; w < sh->nworkers; w++)
	{
		ApWorkerStats *ws = ap_worker_stats(sh, w);

		for (int i = 0; i < AP_NDISKS_MAX; i++)
			active_pg__scan_stats__init(&ws->disk_stats[i]);
	}
	sh->host_mode = !ApDiskScanPossible(node->ss.ps.state->es_snapshot);
	ap_parallel_prepare(s, sh, pcxt, false);
	s->pshared = sh;
	/* no segment: no worker can start, the leader scans alone */
	if (pcxt->seg != NULL)
		on_dsm_detach(pcxt->seg, ap_parallel_collect, PointerGetDatum(s));
}

/* ReInitializeDSMCustomScan: before a rescan's workers start, all work is claimable again. */
void
ApScanReInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ApScanState *s = (ApScanState *) node;
	ApParallelShared *sh = (ApParallelShared *) coordinate;

	ap_parallel_prepare(s, sh, pcxt, true);
	s->pshared = sh;
}

/* InitializeWorkerCustomScan: a worker finds the leader's state. */
void
ApScanInitializeWorker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	ApScanState *s = (ApScanState *) node;

	s->pshared = (ApParallelShared *) coordinate;
	s->stats_reported = false;
}

/* ShutdownCustomScan: a worker adds its statistics to its slot, once. */
void
ApScanShutdown(CustomScanState *node)
{
	ApScanState *s = (ApScanState *) node;
	ApParallelShared *sh = s->pshared;
	ApWorkerStats *ws;

	if (!IsParallelWorker() || sh == NULL || s->stats_reported)
		return;
	if (ParallelWorkerNumber < 0 || ParallelWorkerNumber >= sh->nworkers)
		elog(ERROR, "parallel worker number %d is not below %d",
			 ParallelWorkerNumber, sh->nworkers);
	ws = ap_worker_stats(sh, ParallelWorkerNumber);
	ap_add_stats(&ws->host, ws->disk_stats, ws->disk_stats_valid, &ws->stats_ndisks,
				 &s->host, s->disk_stats, s->disk_stats_valid, s->stats_ndisks);
	if (s->bloom != NULL)
		ApBloomStatsSave(s->bloom, &ws->bloom);
	s->stats_reported = true;
}
