/*
 * diskscan.h
 *	  One pushed-down scan's conversation with the disks: flush and ship the
 *	  ScanRequest, multiplex the disks' streams, answer xid questions, queue
 *	  fallback TIDs and blocks and turn them into heap tuples, collect Done
 *	  statistics.  The caller consumes the data frames (RowBatch, AggPartial)
 *	  through a callback.
 *
 * Used by ActiveAgg (agg_exec.c); written to be shared with ActiveScan.
 */
#ifndef AP_DISKSCAN_H
#define AP_DISKSCAN_H

#include "exec.h"

/*
 * Data frame callback: return true if the callee took ownership of the frame
 * (it then frees it with ApFreeFrame), false to let the driver free it.
 */
typedef bool (*ApDiskFrameFn) (void *arg, ApDiskConn *conn, ActivePg__Frame *frame);

typedef struct ApDiskScan
{
	/* set by ApDiskScanInit */
	Relation	rel;
	Snapshot	snapshot;
	MemoryContext cxt;			/* per execution; sockets close when it is reset */
	ApDiskFrameFn on_data;
	void	   *on_data_arg;
	ActivePg__ScanStats *disk_stats;	/* AP_NDISKS_MAX entries, summed by the caller's lifetime */
	bool	   *disk_stats_valid;
	int		   *stats_ndisks;
	ApHostStats *host;

	/* per execution */
	ApConnSet  *conns;
	BlockNumber nblocks;
	int			ndisks_done;
	bool		shipped;
	uint64	   *tids;			/* fallback TIDs, FIFO */
	int			ntids;
	int			tids_head;
	int			tids_cap;
	uint32	   *blocks;			/* fallback blocks, FIFO */
	int			nblocks_fb;
	int			blocks_head;
	int			blocks_cap;
} ApDiskScan;

/* Prepare ds for one execution (no disk contact). */
void		ApDiskScanInit(ApDiskScan *ds, Relation rel, Snapshot snapshot,
						   MemoryContext cxt, ApDiskFrameFn on_data, void *arg,
						   ActivePg__ScanStats *disk_stats, bool *disk_stats_valid,
						   int *stats_ndisks, ApHostStats *host);

/*
 * May this execution run on the disks (MVCC snapshot, not SERIALIZABLE, not
 * in recovery, disks configured)?  Otherwise the caller scans on the host.
 */
bool		ApDiskScanPossible(Snapshot snapshot);

/*
 * Flush the relation, fix nblocks, connect and ship prog to every disk.  An
 * empty relation ships nothing (ApDiskScanDisksDone is then true).  Returns
 * false, having shipped nothing, if a disk lacks one of the capability bits
 * caps (AP_CAP_*): the caller then scans on the host.
 */
bool		ApDiskScanShip(ApDiskScan *ds, ActivePg__Program *prog, uint32 caps);

/* Read what the disks sent; wait: block until something arrives. */
void		ApDiskScanPoll(ApDiskScan *ds, bool wait);

/* Every disk sent Done. */
bool		ApDiskScanDisksDone(ApDiskScan *ds);

/*
 * Next fallback tuple visible to the snapshot, stored in heap_slot (a buffer
 * heap slot of the relation); false when no fallback work is queued now.
 */
bool		ApDiskScanNextFallback(ApDiskScan *ds, TupleTableSlot *heap_slot);


#endif							/* AP_DISKSCAN_H */
