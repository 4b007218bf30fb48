/*
 * exec.h
 *	  Executor-side declarations of active_pg: disk addresses and connections
 *	  (client.c), the ActiveScan scan state (exec.c) and its EXPLAIN output
 *	  (explain.c).
 *
 * Only exec.c, explain.c, client.c, guc.c and launcher.c include this file;
 * the shared interface of the extension stays in active_pg.h.
 */
#ifndef AP_EXEC_H
#define AP_EXEC_H

#include "active_pg.h"

#include "access/relscan.h"
#include "access/tableam.h"
#include "commands/explain.h"
#include "storage/latch.h"
#include "utils/snapshot.h"

/* ---------- disk addresses (client.c) ---------- */

#define AP_ADDR_HOST_MAX			64

/* One disk, from active_pg.disks or the launcher's socket directory. */
typedef struct ApDiskAddr
{
	bool		is_tcp;
	char		path[MAXPGPATH];	/* unix socket path (relative to DataDir or absolute) */
	char		host[AP_ADDR_HOST_MAX];	/* tcp: IPv4 literal or "localhost" */
	int			port;			/* tcp: 1..65535 */
} ApDiskAddr;

/*
 * Parse an active_pg.disks value.  Returns the number of disks (0 for an
 * empty list) or -1 with *errmsg set (a static string) on bad syntax.  out may
 * be NULL to only validate (the GUC check hook does so); otherwise it has room
 * for AP_NDISKS_MAX entries.  Never allocates, never throws.
 */
int			ApParseDiskList(const char *value, ApDiskAddr *out, const char **errmsg);

/* Human-readable address ("unix:active_pg/disk0.sock"), palloc'd. */
char	   *ApDiskAddrString(const ApDiskAddr *addr);

/* ---------- disk connections (client.c) ---------- */

/* One connection to one disk for one scan. */
typedef struct ApDiskConn
{
	int			disk;			/* index 0..n-1 within the scan */
	char	   *address;		/* for messages */
	pgsocket	sock;
	uint32		disk_id;		/* from HelloReply */
	uint32		capabilities;	/* AP_CAP_* bits from HelloReply */
	char	   *server_version; /* from HelloReply */

	/* receive buffer: bytes [rstart, rend) not yet consumed */
	char	   *rbuf;
	size_t		rcap;
	size_t		rstart;
	size_t		rend;

	bool		scanning;		/* ScanRequest sent, Done/Error not yet seen */
	bool		done;			/* Done received */
	bool		have_stats;
	ActivePg__ScanStats stats;	/* copied from Done */
} ApDiskConn;

/* All connections of one scan; lives in (and dies with) its memory context. */
typedef struct ApConnSet
{
	MemoryContext cxt;			/* per-scan context; the callback closes sockets */
	MemoryContextCallback cb;
	ProtobufCAllocator allocator;	/* palloc/pfree in cxt */
	int			nconns;
	ApDiskConn *conns;
	WaitEventSet *wes;			/* sockets, then MyLatch, then postmaster death */
	int			wes_latch_pos;
} ApConnSet;

/* Number of disks a scan would use now (0 if none is configured). */
int			ApConfiguredDiskCount(void);

/* Connect to every configured disk and handshake; ERROR on failure. */
ApConnSet  *ApConnectAll(MemoryContext cxt);

/* Close all sockets of the set (idempotent; also run by the context callback). */
void		ApCloseAll(ApConnSet *set);

/* Send one frame, waiting (interruptibly) while the socket is full. */
void		ApSendFrame(ApConnSet *set, ApDiskConn *conn, const ActivePg__Frame *frame);

/*
 * Read what the socket has without blocking.  Returns false once the socket
 * would block.  EOF or a socket error raises ERRCODE_CONNECTION_FAILURE.
 */
bool		ApConnFill(ApDiskConn *conn);

/*
 * Next complete frame from the receive buffer, unpacked in the set's
 * allocator, or NULL if the buffer holds no complete frame.
 */
ActivePg__Frame *ApConnNextFrame(ApConnSet *set, ApDiskConn *conn);
void		ApFreeFrame(ApConnSet *set, ActivePg__Frame *frame);

/* One-off requests to each disk (stats.c): an unconnected set, one connection. */
ApConnSet  *ApOpenDiskSet(MemoryContext cxt, ApDiskAddr **addrs);
bool		ApConnectOne(ApConnSet *set, int i, const ApDiskAddr *addr, char **err);
int			ApConnTryFill(ApDiskConn *conn, char **err);
int			ApConnTryNextFrame(ApConnSet *set, ApDiskConn *conn, ActivePg__Frame **out,
							   char **err);

/* The one mapping from a disk's Error to an ereport(ERROR) with SQLSTATE. */
pg_attribute_noreturn() void ApReportDiskError(ApDiskConn *conn, const ActivePg__Error *err);

/* ERRCODE_PROTOCOL_VIOLATION naming the disk. */
pg_attribute_noreturn() void ApProtocolError(ApDiskConn *conn, const char *detail);

/* ---------- ActiveScan state (exec.c, explain.c) ---------- */

/* Counters of what the host did for one scan (EXPLAIN ANALYZE). */
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
	uint64		host_mode_no_cap;	/* of those, disks lacking AP_CAP_EXPRESSIONS */
	uint64		pushdown_scans;		/* executions shipped to the disks */
	double		wait_ms;			/* time blocked waiting for disks */
	uint64		pages_received;		/* pages mode: pages the disks shipped */
	uint64		page_tuples;		/* pages mode: tuples on them */
	uint64		page_tuples_visible;	/* pages mode: of those, visible */
} ApHostStats;

/* A RowBatch waiting to be decoded. */
typedef struct ApBatch
{
	ActivePg__Frame *frame;		/* owns the bytes */
	const char *data;			/* MAXALIGN'd rows */
	size_t		len;
	uint32		nrows;
	int			disk;
} ApBatch;

typedef struct ApScanState
{
	CustomScanState css;

	/* from the plan */
	List	   *disk_quals;		/* leading custom_exprs (for EXPLAIN) */
	List	   *host_quals;		/* the other custom_exprs */
	ExprState  *host_qual_state;	/* disk rows, over raw_slot */
	ExprState  *all_qual_state;	/* heap tuples: every qual in plan order */
	List	   *project;		/* IntList of shipped attnos */
	struct ApBloomState *bloom; /* Bloom filters the scan carries, or NULL */
	int			nproject;
	AttrNumber *project_attnos;
	List	   *value_exprs;	/* computed projections the disks ship */
	int			nvalues;
	bool		proj_mode;		/* scan tuple = custom_scan_tlist */
	TupleTableSlot *raw_slot;	/* relation-shaped virtual tuple: quals read it */
	ProjectionInfo *raw_proj;	/* proj_mode: raw_slot -> scan tuple on the host */

	/* per execution */
	bool		started;		/* first Exec happened since Begin/ReScan */
	bool		finished;
	bool		host_mode;		/* plain heap scan on the host */
	MemoryContext scan_cxt;		/* child of the query context; reset per execution */
	ApConnSet  *conns;
	BlockNumber nblocks;
	int			ndisks_done;
	TableScanDesc host_scan;	/* host mode */
	TupleTableSlot *heap_slot;	/* host mode and fallback tuples */

	/* queued work */
	List	   *batches;		/* of ApBatch *, FIFO */
	size_t		queued_bytes;
	ApBatch    *cur;			/* being decoded */
	size_t		cur_off;
	uint32		cur_row;
	uint64	   *tids;			/* fallback TIDs, FIFO */
	int			ntids;
	int			tids_head;
	int			tids_cap;
	uint32	   *blocks;			/* fallback blocks, FIFO */
	int			nblocks_fb;
	int			blocks_head;
	int			blocks_cap;

	/* distributed-device mode (pages.c): per execution, in scan_cxt */
	struct ApPageState *pages;
	TupleTableSlot *page_slot;	/* heap tuples on page copies */

	/* statistics for EXPLAIN ANALYZE, kept across rescans */
	int			stats_ndisks;
	ActivePg__ScanStats *disk_stats;	/* per disk, summed over executions */
	bool	   *disk_stats_valid;
	ApHostStats host;
} ApScanState;

/* explain.c */
void		ApExplainScan(CustomScanState *node, List *ancestors, ExplainState *es);
/* Bytes as "123 B", "4.5 kB", "6.7 MB" or "8.9 GB". */
char	   *ApFormatBytes(double bytes);
/* Start a text-format line "label: " at the current indentation. */
void		ApExplainTextLine(ExplainState *es, const char *label);

/* diskscan.c: statistics shared by ActiveScan and ActiveAgg */
/* Add one set of disk statistics to another, every field. */
void		ApAddScanStats(ActivePg__ScanStats *d, const ActivePg__ScanStats *st);
/* Sum the valid entries of per-disk statistics into *sum. */
void		ApDiskScanSumStats(const ActivePg__ScanStats *disk_stats,
							   const bool *valid, int ndisks, ActivePg__ScanStats *sum);

/* exec.c, for pages.c */
uint32		ApXidStatusOf(TransactionId xid, Snapshot snapshot);
void		ApScanPushTid(ApScanState *s, uint64 tid);
void		ApScanPushBlock(ApScanState *s, uint32 blk);
/* Quals and projection of the heap tuple in slot into the scan slot; false if rejected. */
bool		ApHeapToScanSlot(ApScanState *s, TupleTableSlot *heap);

/* pages.c: the distributed-device mode (active_pg.scan_mode = 'pages') */
void		ApPagesBegin(ApScanState *s, int ndisks);
void		ApPagesQueue(ApScanState *s, ApDiskConn *conn, ActivePg__Frame *f);
void		ApPagesFallbackBlock(ApScanState *s, ApDiskConn *conn, uint32 blk);
bool		ApPagesNext(ApScanState *s);
void		ApPagesCheckComplete(ApScanState *s);

#endif							/* AP_EXEC_H */
