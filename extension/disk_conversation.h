/*
 * disk_conversation.h
 *	  One pushed-down scan's conversation with the disks, shared by ActiveScan
 *	  (activescan.c) and ActiveAgg (agg_exec.c): flush, connect and ship the
 *	  ScanRequest, multiplex the disks' streams under the interconnect
 *	  throttle, answer xid questions, queue fallback TIDs and blocks and turn
 *	  them into heap tuples, collect Done statistics.  The caller consumes the
 *	  data frames (RowBatch, PageBatch, AggPartial) through a callback.
 *
 * Rules of this file: declarations only.  An execution is Init, then either
 * Ship (or Connect, Capable, Send when the program depends on the disks'
 * capabilities), then Poll / NextFallback until DisksDone and no fallback
 * work is left, then Close.  Everything lives in the caller's per-execution
 * memory context, whose reset also closes the sockets.
 */
#ifndef AP_DISKSCAN_H
#define AP_DISKSCAN_H

#include "transport.h"
#include "rowview.h"

#include "port/atomics.h"
#include "storage/block.h"
#include "utils/snapshot.h"

/* Counters of what the host did for one node (EXPLAIN ANALYZE). */
/* Room for why a disk was taken over, as EXPLAIN ANALYZE shows it. */
#define AP_TAKEOVER_REASON_BYTES	160

typedef struct ApHostStats
{
	uint64		rows_from_disks;
	uint64		batches;
	uint64		bytes_received;
	uint64		fallback_tids;		/* TIDs the disks handed back */
	uint64		fallback_blocks;	/* whole blocks handed back */
	uint64		fallback_fetched;	/* heap_fetch calls for fallbacks */
	uint64		fallback_visible;	/* of those, visible to the snapshot */
	uint64		xid_requests;
	uint64		xids_answered;
	uint64		host_mode_scans;	/* executions run as a plain heap scan */
	uint64		host_mode_tuples;
	uint64		host_mode_no_cap;	/* of those, disks lacking a needed capability */
	uint64		pushdown_scans;		/* executions shipped to the disks */
	double		wait_ms;			/* time blocked waiting for disks */
	uint64		work_items;			/* parallel: work items claimed */
	uint64		items_on_host;		/* of those, read on the host (disk lacked a capability) */
	uint64		disks_taken_over;	/* disks whose units the host read after they failed */
	uint64		blocks_taken_over;	/* blocks of theirs the host read (not delivered) */
	uint64		pages_received;		/* pages mode: pages the disks shipped */
	uint64		page_tuples;		/* pages mode: tuples on them */
	uint64		page_tuples_visible;	/* pages mode: of those, visible */
	uint64		connections_opened; /* connections to disks made for this node */
	uint64		connections_reused; /* of the backend's kept ones, taken */
	char		takeover_reason[AP_TAKEOVER_REASON_BYTES];	/* the first disk taken
																 * over, and why */
} ApHostStats;

/* What the data frame callback did with a frame. */
typedef enum ApFrameUse
{
	AP_FRAME_FREE,				/* consumed: the driver frees it */
	AP_FRAME_KEPT,				/* the callee owns it and frees it with ApFreeFrame */
	AP_FRAME_UNEXPECTED			/* not a frame of this kind of scan: protocol violation */
} ApFrameUse;

/* Data frame callback (RowBatch, PageBatch, AggPartial). */
typedef ApFrameUse (*ApDiskFrameFn) (void *arg, ApDiskConn *conn, ActivePg__Frame *frame);

/* Optional: a fallback block passed its bounds check (pages mode counts it). */
typedef void (*ApDiskBlockFn) (void *arg, ApDiskConn *conn, uint32 blk);

/*
 * The shared work of a parallel scan, in dynamic shared memory.  The scan is
 * cut into nitems work items, each a virtual disk of the striping geometry:
 * item j is shipped as ScanRequest{ndisks = nitems, disk_id = j} to disk
 * j mod ndisks and reads the stripe units u with u mod nitems = j.  nitems is
 * a multiple of ndisks, so those units are all disk j mod ndisks's own (its
 * media throttle stays faithful) and every unit belongs to exactly one item.
 * With fine > 1 the last round of items (one per disk) is claimed in fine
 * pieces, as a Parallel Seq Scan's chunks shrink towards the end: item j of
 * them is split into the items j + nitems * m (m < fine) of the geometry
 * nitems * fine, which are still disk j mod ndisks's and together read
 * exactly item j's units.  Participants claim with next_item and keep up to
 * inflight claims shipped at once; a claim is never shared, so each row
 * arrives once.
 */
typedef struct ApParallelScan
{
	pg_atomic_uint32 next_item;	/* next claim (past the last: none left) */
	uint32		nitems;
	uint32		fine;			/* pieces of each last-round item (1: whole) */
	uint32		ndisks;			/* configured disks when the leader set it up */
	uint32		inflight;		/* items a participant keeps shipped at once */
	uint32		stripe_pages;	/* the leader's active_pg.stripe_pages */
	BlockNumber nblocks;		/* fixed by the leader after flushing */
} ApParallelScan;

/*
 * Optional: conn's disk failed; the consumer knows which of its blocks it
 * received (the distributed-device mode, in activescan.c) and queues the others as
 * fallback blocks (ApDiskScanPushBlock).  Returns their number.
 */
typedef uint64 (*ApDiskTakeOverFn) (void *arg, ApDiskConn *conn);

/* Optional: a disk's Done statistics (after they were added to disk_stats). */
typedef void (*ApDiskStatsFn) (void *arg, ApDiskConn *conn, const ActivePg__ScanStats *st);

typedef struct ApDiskScan
{
	/* set by ApDiskScanInit */
	Relation	rel;
	Snapshot	snapshot;
	MemoryContext cxt;			/* per execution; sockets close when it is reset */
	ApDiskFrameFn on_data;
	void	   *arg;			/* of on_data, on_block and on_stats */
	ActivePg__ScanStats *disk_stats;	/* AP_NDISKS_MAX entries, summed by the caller's lifetime */
	bool	   *disk_stats_valid;
	int		   *stats_ndisks;
	ApHostStats *host;

	/* optional, set by the caller after ApDiskScanInit */
	ApDiskBlockFn on_block;		/* NULL: none */
	ApDiskStatsFn on_stats;		/* NULL: none */
	bool	   *flushed;		/* the node's: relation flushed in this run of
								 * the plan (a rescan has the same snapshot);
								 * NULL: flush every execution */
	ApDiskTakeOverFn on_take_over;	/* NULL: Progress reports decide */

	/* per execution */
	ApConnSet  *conns;
	BlockNumber nblocks;
	uint32		stripe_pages;	/* of every request of this execution */
	int			nstreams;		/* requests shipped at once (at most) */
	uint64		blocks_requested;	/* blocks of the stripe units shipped to disks */
	int			ndisks_done;
	ActivePg__ScanRequest *req; /* built once, sent per disk or work item */

	/* per execution of a parallel participant (ApDiskScanConnectParallel) */
	ApParallelScan *par;		/* NULL: every disk at once (ApDiskScanConnect) */
	uint32		caps;			/* capabilities the shipped program needs */
	int			nactive;		/* items shipped and not Done */
	bool		claims_done;	/* the shared counter is exhausted */
	int			backlog;		/* row batches waiting for the consumer (ApDiskScanBacklog) */
	/* blocks whose disk reported them delivered (Progress), a bit each */
	uint8	   *covered;
	/* TIDs a taken-over block's expansion skips (delivered), sorted */
	uint64	   *skip;
	int			nskip;
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
bool		ApInitPlansAllowPushdown(Relation rel, Snapshot snapshot, List *quals,
									 List *disk_quals, Node *shipped,
									 ExprContext *econtext);

/*
 * Flush the relation, fix nblocks and connect to every disk.  False for an
 * empty relation: nothing is connected or shipped, and the execution counts
 * as pushed down (ApDiskScanDisksDone is then true).
 */
bool		ApDiskScanConnect(ApDiskScan *ds);

/* Does every connected disk announce every capability bit of caps (AP_CAP_*)? */
bool		ApDiskScanCapable(ApDiskScan *ds, uint32 caps);

/* Ship prog in mode (AP_SCAN_MODE_*) to every connected disk. */
void		ApDiskScanSend(ApDiskScan *ds, ActivePg__Program *prog, uint32 mode);

/* ---------- parallel participants (a partial ActiveScan) ---------- */

/*
 * Leader, before any participant runs: flush the relation (everything
 * committed before the snapshot is then in the files), fix nblocks and cut
 * the scan into work items for nparticipants.  Again before each rescan.
 */
void		ApDiskScanParallelInit(ApParallelScan *ps, Relation rel, int nparticipants);

/*
 * A participant's ApDiskScanConnect: nblocks from ps, an empty connection set
 * (connections are made per claimed item).  False for an empty relation.
 */
bool		ApDiskScanConnectParallel(ApDiskScan *ds, ApParallelScan *ps);

/*
 * Claim work items and ship prog in mode to their disks, keeping up to
 * ps->inflight of them shipped (more are claimed as items finish, in
 * ApDiskScanPoll).  An item whose disk lacks a capability bit of caps is
 * read on the host: its blocks are queued as fallback blocks.  prog must
 * live as long as the execution (it is shipped again with later items).
 */
void		ApDiskScanSendParallel(ApDiskScan *ds, ActivePg__Program *prog, uint32 mode,
								   uint32 caps);

/* Blocks of [0, nblocks) in the stripe units of request disk_id of ndisks. */
uint64		ApStripeBlocks(BlockNumber nblocks, uint32 stripe_pages, uint32 ndisks,
						   uint32 disk_id);

/*
 * Connect, and ship prog if every disk has the capability bits caps.  False,
 * having shipped nothing, if one lacks them: the caller scans on the host.
 */
bool		ApDiskScanShip(ApDiskScan *ds, ActivePg__Program *prog, uint32 caps);

/*
 * Read what the disks sent, at the emulated interconnect's rate (model.c);
 * wait: block until something arrives.  No-op once every disk is done.
 */
void		ApDiskScanPoll(ApDiskScan *ds, bool wait);

/*
 * Every disk sent Done (or nothing was shipped); for a parallel participant,
 * every item it claimed, and no item is left to claim.
 */
bool		ApDiskScanDisksDone(ApDiskScan *ds);

/*
 * The consumer's row batches not yet started.  A parallel participant claims
 * its next work item only while at most one waits: one that cannot keep up
 * with its disks leaves the remaining items to the other participants, so
 * that they end together (its rows would otherwise pile up unread).  What is
 * due is claimed by the next ApDiskScanPoll, or as an item finishes.
 */
void		ApDiskScanBacklog(ApDiskScan *ds, int batches);

/* Close the sockets (idempotent); queued frames stay valid. */
void		ApDiskScanClose(ApDiskScan *ds);

/*
 * Next fallback tuple visible to the snapshot, stored in heap_slot (a buffer
 * heap slot of the relation); false when no fallback work is queued now.
 */
bool		ApDiskScanNextFallback(ApDiskScan *ds, TupleTableSlot *heap_slot);

/* Is fallback work (TIDs or blocks) queued? */
bool		ApDiskScanFallbackPending(ApDiskScan *ds);

/* Queue a fallback TID or block found on the host (the pages mode); no bounds check. */
void		ApDiskScanPushTid(ApDiskScan *ds, uint64 tid);
void		ApDiskScanPushBlock(ApDiskScan *ds, uint32 blk);

/*
 * Status of xid for snapshot (AP_XID_*), decided as HeapTupleSatisfiesMVCC
 * does; the answer to a disk's XidStatusRequest and the pages mode's visibility.
 */
uint32		ApXidStatusOf(TransactionId xid, Snapshot snapshot);

/* Add one set of disk statistics to another, every field. */
void		ApAddScanStats(ActivePg__ScanStats *d, const ActivePg__ScanStats *st);

/* Add one node's host counters to another's, every field. */
void		ApAddHostStats(ApHostStats *d, const ApHostStats *h);

/* Sum the valid entries of per-disk statistics into *sum. */
/* Count a pushed-down scan's tuples and pages in the relation's pgstat entry. */
void		ApCountScanStats(Relation rel, uint64 tuples, uint64 blocks);
void		ApDiskScanSumStats(const ActivePg__ScanStats *disk_stats,
							   const bool *valid, int ndisks, ActivePg__ScanStats *sum);

#endif							/* AP_DISKSCAN_H */
