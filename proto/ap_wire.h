/*
 * ap_wire.h
 *	  Framing rules and protocol constants shared by the extension and diskd.
 *
 * This is the only copy of these rules: both sides include it.  A frame is a
 * 4-byte big-endian length followed by that many bytes holding one serialized
 * active_pg.Frame (proto/active_pg.proto).  A receiver checks the length
 * against AP_FRAME_MAX_BYTES *before* allocating or reading the body; a
 * zero-length frame is malformed.
 */
#ifndef AP_WIRE_H
#define AP_WIRE_H

#include <stdint.h>

/* 2: mutual authentication (ap_auth.c); 3: Progress (takeover after delivery) */
#define AP_PROTOCOL_VERSION			3

#define AP_FRAME_HEADER_BYTES		4
/* Hard limit of one frame on both sides (the snapshot's xip dominates requests). */
#define AP_FRAME_MAX_BYTES			(64u * 1024u * 1024u)

/* Capabilities announced in HelloReply.capabilities */
#define AP_CAP_SELECT				0x0001	/* filter + projection */
/*
 * FuncCall, CaseExpr, CoalesceExpr and Program.project_exprs are implemented.
 * A host never ships a program using them to a disk without this bit; it
 * scans on the host instead (same rows, no pushdown).
 */
#define AP_CAP_EXPRESSIONS			0x0002
/*
 * Program.agg is implemented (AggPartial frames).  A host never ships an
 * aggregating program to a disk without this bit; it aggregates on the host
 * instead (same result, no pushdown).
 */
#define AP_CAP_AGG					0x0004

#define AP_CAP_PAGES				0x0008	/* distributed-device mode (PageBatch) */
#define AP_CAP_STATS				0x0010	/* StatsRequest */
#define AP_CAP_BLOOM				0x0100	/* Program.blooms (proto/ap_bloom.h) */

/* ScanRequest.mode */
#define AP_SCAN_MODE_ACTIVE			0	/* run the program at the disk */
#define AP_SCAN_MODE_PAGES			1	/* ship raw pages; the host does the work */

/*
 * A scanning disk that has sent nothing for this long sends an empty
 * Fallback frame, its heartbeat: the host's active_pg.disk_timeout (at least
 * four heartbeats) then tells a stopped disk from a slow one.
 */
#define AP_HEARTBEAT_MS				1000

/* Limits a daemon enforces on a ScanRequest */
#define AP_MAX_COLUMNS				1600	/* MaxHeapAttributeNumber */
#define AP_MAX_EXPR_DEPTH			200
#define AP_MAX_EXPR_NODES			100000
#define AP_STRIPE_PAGES_MAX			131072	/* one 1 GB segment of 8 kB pages */
#define AP_NDISKS_MAX				64
/* A daemon's --max-connections, at most (a thread each) */
#define AP_DISKD_MAX_CONNECTIONS	4096
#define AP_BATCH_BYTES_DEFAULT		(256u * 1024u)
#define AP_BATCH_BYTES_MAX			(8u * 1024u * 1024u)
#define AP_QUEUE_DEPTH_MIN			8
#define AP_QUEUE_DEPTH_MAX			256

/* PostgreSQL storage constants the daemon relies on (asserted in extension/active_pg.c). */
#define AP_BLCKSZ					8192
#ifndef AP_RELSEG_BLOCKS				/* diskd/test/reader_seg: small segments */
#define AP_RELSEG_BLOCKS			131072	/* RELSEG_SIZE: blocks per segment file */
#endif

/* Error.code values; the host maps each to one SQLSTATE (extension/transport.c). */
typedef enum ApErrCode
{
	AP_ERR_NONE = 0,
	AP_ERR_PROTOCOL = 1,		/* malformed frame or message out of order */
	AP_ERR_FRAME_TOO_BIG = 2,	/* length above AP_FRAME_MAX_BYTES */
	AP_ERR_UNSUPPORTED = 3,		/* unknown operator, type kind, version */
	AP_ERR_BAD_REQUEST = 4,		/* attribute out of range, bad geometry ... */
	AP_ERR_NO_RELATION = 5,		/* relation file does not exist */
	AP_ERR_IO = 6,				/* read failed */
	AP_ERR_AUTH = 7,			/* wrong or missing secret */
	AP_ERR_BUSY = 8,			/* connection limit reached */
	AP_ERR_OUT_OF_MEMORY = 9,	/* request does not fit the memory budget */
	AP_ERR_CANCELED = 10,		/* the host sent Cancel */
	AP_ERR_INTERNAL = 11
} ApErrCode;

/* XidStatusReply.status values, decided by the host for the scan's snapshot. */
typedef enum ApXidStatus
{
	AP_XID_COMMITTED = 1,		/* committed, and visible to the snapshot */
	AP_XID_NOT_COMMITTED = 2,	/* aborted, running, or committed after the snapshot */
	AP_XID_CURRENT = 3			/* the scanning transaction: hand the tuple to the host */
} ApXidStatus;

/* TIDs in Fallback.tids */
#define AP_TID_PACK(blk, off)		((((uint64_t) (blk)) << 16) | (uint64_t) (off))
#define AP_TID_BLOCK(tid)			((uint32_t) ((tid) >> 16))
#define AP_TID_OFFSET(tid)			((uint16_t) ((tid) & 0xFFFF))

static inline void
ap_put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char) (v >> 24);
	p[1] = (unsigned char) (v >> 16);
	p[2] = (unsigned char) (v >> 8);
	p[3] = (unsigned char) v;
}

static inline uint32_t
ap_get_be32(const unsigned char *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
		((uint32_t) p[2] << 8) | (uint32_t) p[3];
}

#endif							/* AP_WIRE_H */
