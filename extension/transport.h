/*
 * transport.h
 *	  A backend's connections to the disk daemons (transport.c): disk addresses
 *	  (diskaddr.c),
 *	  the per-scan connection set, framed send and receive, the mapping of a
 *	  disk's errors to SQLSTATEs, and the short one-off connections of the
 *	  monitoring functions (monitor.c).
 *
 * Rules of this file: declarations only; every function that can fail either
 * raises an ERROR with a SQLSTATE naming the disk, or (the "Try" and one-off
 * variants, for monitoring) returns a failure with a message and never throws.
 */
#ifndef AP_CLIENT_H
#define AP_CLIENT_H

#include "active_pg.h"
#include "ap_auth.h"

#include "storage/latch.h"

/* ---------- disk addresses (diskaddr.c) ---------- */

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

/* The disks of this backend (palloc'd array in *out); returns their number. */
int			ApGetDiskAddrs(ApDiskAddr **out);

/* Number of disks a scan would use now (0 if none is configured). */
int			ApConfiguredDiskCount(void);

/* ---------- disk connections (transport.c) ---------- */

/* One connection to one disk for one scan. */
typedef struct ApDiskConn
{
	int			disk;			/* the disk: index 0..n-1 of the configured disks */
	uint32		vdisk;			/* the request's disk_id: disk, or a parallel work item */
	uint32		nvdisks;		/* the request's ndisks: disks, or work items' geometry */
	char	   *address;		/* for messages */
	pgsocket	sock;
	uint32		disk_id;		/* from HelloReply */
	uint32		capabilities;	/* AP_CAP_* bits from HelloReply */
	char	   *server_version; /* from HelloReply */
	unsigned char client_nonce[AP_AUTH_NONCE_BYTES];	/* of our Hello */

	/* receive buffer: bytes [rstart, rend) not yet consumed */
	char	   *rbuf;
	size_t		rcap;
	size_t		rstart;
	size_t		rend;

	bool		reused;			/* kept from an earlier scan: no handshake */
	bool		scanning;		/* ScanRequest sent, Done/Error not yet seen */
	bool		done;			/* Done received, or taken over by the host */

	/*
	 * A disk that could not be reached, refused, failed or stopped making
	 * progress: failure says why.  Until it has delivered anything (rows,
	 * groups, pages, fallback work) the host can take its units over.
	 */
	bool		failed;
	char	   *failure;
	bool		quarantined;	/* skipped: this backend saw it fail recently */
	bool		delivered;
	TimestampTz last_heard;		/* when bytes last arrived (or the request left) */

	/*
	 * What the disk delivered beyond its Progress reports (disk_conversation.c), for
	 * a takeover after delivery: the tuples of partial_block below
	 * partial_offset (0: none); fallback TIDs and blocks received for
	 * blocks not yet reported; AggPartial frames of a flush not yet ended.
	 */
	BlockNumber partial_block;
	uint32		partial_offset;
	uint64	   *open_tids;
	int			nopen_tids;
	int			open_tids_cap;
	uint32	   *open_blocks;
	int			nopen_blocks;
	int			open_blocks_cap;
	List	   *held;
} ApDiskConn;

/* All connections of one scan; lives in (and dies with) its memory context. */
typedef struct ApConnSet
{
	MemoryContext cxt;			/* per-scan context; the callback closes sockets */
	MemoryContextCallback cb;
	ProtobufCAllocator allocator;	/* palloc/pfree in cxt */
	ApDiskAddr *addrs;			/* the configured disks */
	int			naddrs;
	int			nconns;			/* connections made (open or closed) */
	int			capacity;		/* room in conns: pointers into it stay valid */
	ApDiskConn *conns;
	WaitEventSet *wes;			/* sockets, then MyLatch, then postmaster death;
								 * NULL until the next wait builds it */
	int			wes_latch_pos;
} ApConnSet;

/*
 * Connect to every configured disk and handshake.  A disk that cannot be
 * reached or refuses (busy, out of memory) is marked failed; a wrong secret
 * or protocol version raises ERROR.
 */
ApConnSet  *ApConnectAll(MemoryContext cxt);

/*
 * A parallel participant's set: no connection yet, room for capacity.  Its
 * connections are made one at a time by ApConnectNext as it claims work.
 */
ApConnSet  *ApConnSetCreate(MemoryContext cxt, int capacity);

/* Number of configured disks the set's connections may go to. */
int			ApConnSetDisks(ApConnSet *set);

/*
 * Connect the set's next connection to disk and handshake (failed or ERROR
 * as ApConnectAll); its request will carry disk_id vdisk of nvdisks.  The
 * set's wait events are rebuilt over its open sockets.
 */
ApDiskConn *ApConnectNext(ApConnSet *set, int disk, uint32 vdisk, uint32 nvdisks);

/*
 * Disk failed: for AP_QUARANTINE_MS this backend's scans do not try it and
 * take its units over at once.  Returns the quarantine's end (0: no such
 * disk), which the caller publishes for active_pg.disks() (monitor.c).
 */
#define AP_QUARANTINE_MS			10000
TimestampTz ApDiskQuarantine(int disk);

/*
 * The set's wait events (its open sockets, the latch, postmaster death),
 * built first if a connection came or went since the last wait.
 */
WaitEventSet *ApConnSetWaitEvents(ApConnSet *set);

/* Close all sockets of the set (idempotent; also run by the context callback). */
void		ApCloseAll(ApConnSet *set);

/* Send one frame, waiting (interruptibly) while the socket is full. */
void		ApSendFrame(ApConnSet *set, ApDiskConn *conn, const ActivePg__Frame *frame);
bool		ApTrySendFrame(ApConnSet *set, ApDiskConn *conn, const ActivePg__Frame *frame,
						   char **err);

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

/*
 * Wait up to ms (-1: no limit, 0: poll) for events (WL_SOCKET_*) on conn's
 * socket or the latch; a latch wake-up is reset and interrupts are served.
 * Returns WaitLatchOrSocket's result.
 */
int			ApConnWait(ApDiskConn *conn, int events, long ms);

/* ---------- one-off requests to each disk (monitor.c) ---------- */

/* The configured disks as an unconnected set in cxt; *addrs gets their addresses. */
ApConnSet  *ApOpenDiskSet(MemoryContext cxt, ApDiskAddr **addrs);
/* Connect (no retry) and handshake with disk i; false with *err on failure. */
bool		ApConnectOne(ApConnSet *set, int i, const ApDiskAddr *addr, char **err);
/* The same within ms (the launcher's probe of its disks). */
bool		ApConnectOneWithin(ApConnSet *set, int i, const ApDiskAddr *addr, int ms,
							   char **err);
/* Close one connection's socket, if open. */
void		ApConnClose(ApDiskConn *conn);

/*
 * A scan's connection after its Done: kept (one per disk, per backend) for
 * the next scan of that disk, which then skips connect and handshake, or
 * closed if it cannot be reused.  Either way it leaves set.
 */
void		ApConnKeepIdle(ApConnSet *set, ApDiskConn *conn);

/*
 * Replace conn's socket by a new connection to its disk (connect and
 * handshake): a kept connection that turned out dead when the scan's request
 * was sent.  False with *err if the disk cannot be reached.
 */
bool		ApConnReconnect(ApConnSet *set, ApDiskConn *conn, char **err);
/* Non-throwing ApConnFill: 1 read some, 0 would block, -1 EOF/error (*err). */
int			ApConnTryFill(ApDiskConn *conn, char **err);
/* Non-throwing ApConnNextFrame: 1 got *out, 0 need more, -1 malformed (*err). */
int			ApConnTryNextFrame(ApConnSet *set, ApDiskConn *conn, ActivePg__Frame **out,
							   char **err);

/*
 * May the host take over the units of a disk that sent this Error code?
 * Yes for a disk that is busy, out of memory, cannot read or open the
 * relation, or failed internally; not for protocol, version, secret,
 * request or cancel errors, which another reader would meet too.
 */
bool		ApDiskErrorRecoverable(uint32 code);

/* The one mapping from a disk's Error to an ereport(ERROR) with SQLSTATE. */
pg_noreturn extern void ApReportDiskError(ApDiskConn *conn, const ActivePg__Error *err);

/* ERRCODE_PROTOCOL_VIOLATION naming the disk. */
pg_noreturn extern void ApProtocolError(ApDiskConn *conn, const char *detail);

#endif							/* AP_CLIENT_H */
