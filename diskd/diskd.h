/*
 * diskd.h
 *	  Internal interfaces of the disk daemon.
 *
 * The daemon is built in layers, bottom to top: the page and tuple
 * decoders (page.c, tuple.c, varlena.c, numeric.c, and visibility in
 * ../common/), the expression VM (vm*.c, prefilter.c), Bloom filters and
 * partial aggregation (bloom.c, agg*.c), the row encoder (rowenc.c), then
 * the server: the io_uring reader (ioring.c), the emulation throttles
 * (throttle.c), one connection (conn.c), one scan (scan*.c), the session
 * that runs a client's requests (session.c), counters (counters.c), the
 * process's configuration and log (process.c) and main.c.  Each file calls
 * only into its own layer and those below it.
 * docs/ARCHITECTURE.md has the map of every file.
 *
 * Pure layers (page .. rowenc) never allocate per tuple, never block, never
 * exit; they return status codes.  Nothing here raises SQL errors: whatever
 * cannot be done exactly is handed to the host (AP_FALLBACK).
 */
#ifndef DISKD_H
#define DISKD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ap_rows.h"
#include "ap_heap.h"
#include "ap_numeric.h"
#include "ap_visibility.h"
#include "ap_types.h"
#include "ap_wire.h"
#include "active_pg.pb-c.h"

/* ---------- the process: configuration and log (process.c) ---------- */
extern int	diskd_disk_id;
void		diskd_log(const char *level, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
/* Test failpoints from ACTIVE_PG_DISKD_FAILPOINTS, if set (failpoint.c). */
void		ap_failpoints_init(void);

/* ---------- page.c ---------- */

/*
 * The PostgreSQL major versions whose data directories diskd reads: the heap
 * page and tuple format above, the visibility rules (common/visibility.c), the
 * varlena/TOAST and numeric formats and the page checksum are the same in
 * each.  A new major is added here only after checking those against its
 * headers (docs/COMPATIBILITY.md).  main.c refuses any other at startup.
 */
#define AP_PG_MAJOR_MIN			15
#define AP_PG_MAJOR_MAX			18

/*
 * Is dir a data directory diskd reads (datadir.c): its PostgreSQL major (its
 * PG_VERSION file, returned in *major) supported and expect_major unless
 * that is 0, and its storage layout (global/pg_control) AP_BLCKSZ-byte
 * blocks in AP_RELSEG_BLOCKS-block segment files?  If not false, with a
 * message for the log in msg.
 */
bool		ap_check_data_directory(const char *dir, uint32_t expect_major, uint32_t *major,
									char *msg, size_t msglen);

typedef enum ApPageStatus
{
	AP_PAGE_OK = 0,
	AP_PAGE_NEW = 1,			/* all zeroes: an empty page, no tuples */
	AP_PAGE_BAD = 2				/* fails checks: hand the whole block to the host */
} ApPageStatus;

/*
 * Check page structure (pd_lower/pd_upper/pd_special/version/line pointers
 * inside the page) and, when checksums is true, pd_checksum for blkno
 * (the block number within the relation, as PostgreSQL computes it).
 */
ApPageStatus ap_page_check(const unsigned char *page, uint32_t blkno, bool checksums);
uint16_t	ap_page_checksum(const unsigned char *page, uint32_t blkno);
int			ap_page_nitems(const unsigned char *page);
/* All zeroes (what ap_page_check calls AP_PAGE_NEW), without the other checks. */
bool		ap_page_is_new(const unsigned char *page);
bool		ap_page_all_visible(const unsigned char *page);
/* Line pointer `off` (1-based): fills flags, byte offset and length. */
void		ap_page_item(const unsigned char *page, int off,
						 unsigned *lp_flags, unsigned *lp_off, unsigned *lp_len);

/* ---------- tuple.c ---------- */

/* Tuple descriptor as the disk needs it (from ScanRequest.columns). */
typedef struct ApColumn
{
	int16_t		attlen;			/* >0, -1 varlena, -2 cstring */
	char		attalign;		/* 'c' 's' 'i' 'd' */
	bool		attbyval;
	bool		attisdropped;
	uint8_t		type_kind;		/* ApTypeKind */
	uint32_t	cacheoff;		/* offset in a tuple without nulls (see ncached) */
} ApColumn;

typedef struct ApTupleDesc
{
	int			natts;
	ApColumn   *cols;			/* natts entries, index 0 = attnum 1 */
	/*
	 * Leading fixed-length attributes whose cols[].cacheoff is valid in any
	 * tuple without nulls (PostgreSQL's attcacheoff); 0 until
	 * ap_tupdesc_cache_offsets computes it.
	 */
	int			ncached;
} ApTupleDesc;

/* One attribute value: a pointer into the page (valid while the page is). */
typedef struct ApValue
{
	const unsigned char *ptr;	/* first byte of the stored datum; NULL if isnull */
	uint32_t	len;			/* stored bytes: attlen, or VARSIZE_ANY for varlena */
	bool		isnull;
} ApValue;

typedef enum ApStatus
{
	AP_OK = 0,
	AP_FALLBACK = 1				/* cannot decide/decode exactly: send the TID to the host */
} ApStatus;

/* Compute desc->ncached and the cached offsets (after the columns are set). */
void		ap_tupdesc_cache_offsets(ApTupleDesc *desc);

/* Read the tuple header; AP_FALLBACK if it is structurally invalid for len. */
ApStatus	ap_tuple_header(const unsigned char *tup, uint32_t len, ApTupleHeader *hdr);

/*
 * Deform attributes 1..upto of the tuple into values[0..upto-1].  Attributes
 * beyond the tuple's natts are "missing": AP_FALLBACK (the host applies
 * defaults).  Any pointer/length running outside len is AP_FALLBACK.
 */
ApStatus	ap_tuple_deform(const ApTupleDesc *desc, const unsigned char *tup,
							uint32_t len, const ApTupleHeader *hdr,
							int upto, ApValue *values);
/* The same for attributes from+1..upto when values[0..from-1] are deformed already. */
ApStatus	ap_tuple_deform_more(const ApTupleDesc *desc, const unsigned char *tup,
								 uint32_t len, const ApTupleHeader *hdr,
								 int from, int upto, ApValue *values);

/*
 * The data area of a tuple with a valid header hdr when ap_tuple_deform
 * reads attributes 1..upto at their cached offsets (no nulls, upto <=
 * desc->ncached, all within len); else NULL.
 */
const unsigned char *ap_tuple_fixed_data(const ApTupleDesc *desc, const unsigned char *tup,
										 uint32_t len, const ApTupleHeader *hdr, int upto);

/*
 * A stored integer-like datum's value (the VM's comparisons and flat form,
 * the Bloom filter's fixed-width keys).
 */
static inline int64_t
ap_int_datum(int kind, const unsigned char *p)
{
	switch (kind)
	{
		case AP_TYPE_BOOL:
			return p[0] != 0;
		case AP_TYPE_INT2:
			{
				int16_t		y;

				memcpy(&y, p, sizeof(y));
				return y;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		y;

				memcpy(&y, p, sizeof(y));
				return y;
			}
		default:
			{
				int64_t		y;

				memcpy(&y, p, sizeof(y));
				return y;
			}
	}
}

/* ---------- varlena.c ---------- */
/* varlena header facts (varatt.h / postgres.h, little-endian layout). */
bool		ap_varlena_is_1b(const unsigned char *p);		/* short or external */
bool		ap_varlena_is_external(const unsigned char *p);
bool		ap_varlena_is_compressed(const unsigned char *p);
uint32_t	ap_varlena_size_any(const unsigned char *p);	/* VARSIZE_ANY */

/*
 * Payload of a varlena for evaluation: for plain values a pointer into the
 * datum; for inline-compressed pglz values the payload is decompressed into
 * scratch (scratch_cap bytes).  AP_FALLBACK for external values, lz4, a
 * result that does not fit, or corrupt compressed data.
 */
ApStatus	ap_varlena_payload(const unsigned char *p, unsigned char *scratch,
							   uint32_t scratch_cap, const unsigned char **data,
							   uint32_t *datalen);
/* pglz decompression; returns decompressed bytes or -1 on corrupt input. */
int32_t		ap_pglz_decompress(const unsigned char *src, int32_t srclen,
							   unsigned char *dst, int32_t rawsize);

/* ---------- numeric.c ---------- */

/* ApNumeric and its parsing: common/ap_numeric.h */

/* Decode from a varlena payload (after the varlena header). */
ApStatus	ap_numeric_decode(const unsigned char *payload, uint32_t len, ApNumeric *out);
/* Compare as numeric_cmp does: -1, 0, 1 (NaN = NaN, NaN > +inf > finite > -inf). */
int			ap_numeric_cmp(const ApNumeric *a, const ApNumeric *b);

/*
 * Exact fixed-point numerics for computed values: value = coef * 10^-dscale,
 * |coef| < 10^38.  Every operation returns AP_FALLBACK when the exact result
 * leaves that range (the host computes it with arbitrary precision).
 */
typedef __int128 ap_i128;
typedef unsigned __int128 ap_u128;

typedef struct ApFixed
{
	ap_i128		coef;
	int			dscale;
} ApFixed;

/* Largest payload ap_numeric_encode_* writes (header + 11 digits). */
#define AP_NUMERIC_FIXED_MAX_BYTES	32

ApStatus	ap_numeric_to_fixed(const ApNumeric *n, ApFixed *out);
/*
 * Payload straight to fixed point: ap_numeric_decode + ap_numeric_to_fixed
 * in one pass.  AP_OK with *sp the special value, or AP_NUM_FINITE and *out;
 * AP_FALLBACK if corrupt or beyond 38 digits.
 */
ApStatus	ap_numeric_payload_fixed(const unsigned char *payload, uint32_t len,
									 ApFixed *out, ApNumSpecial *sp);
/* Encode as a numeric payload (no varlena header), as make_result() would. */
uint32_t	ap_numeric_encode_fixed(const ApFixed *f, unsigned char *buf);
uint32_t	ap_numeric_encode_special(ApNumSpecial s, unsigned char *buf);
/* a + b, or a - b when negate_b; dscale max(a, b). */
ApStatus	ap_fixed_add(const ApFixed *a, const ApFixed *b, bool negate_b, ApFixed *r);
/* a * b; dscale a + b. */
ApStatus	ap_fixed_mul(const ApFixed *a, const ApFixed *b, ApFixed *r);
/* a / b with numeric_div's result scale and rounding; b = 0 is AP_FALLBACK. */
ApStatus	ap_fixed_div(const ApFixed *a, const ApFixed *b, ApFixed *r);
/* Round half away from zero to scale (negative: to 10^-scale, dscale 0). */
ApStatus	ap_fixed_round(const ApFixed *a, int scale, ApFixed *r);
/* numeric(p,s) coercion for typmod ((p << 16) | s) + 4; overflow is AP_FALLBACK. */
ApStatus	ap_fixed_typmod(const ApFixed *a, int32_t typmod, ApFixed *r);
int			ap_fixed_cmp(const ApFixed *a, const ApFixed *b);

/* ---------- visibility: common/ap_visibility.h ---------- */

/* ---------- vm_compile.c ---------- */

typedef enum ApTri
{
	AP_FALSE = 0,
	AP_TRUE = 1,
	AP_NULL = 2,
	AP_TRI_FALLBACK = 3			/* cannot evaluate exactly: host decides */
} ApTri;

typedef struct ApExpr ApExpr;	/* compiled expression (opaque, vm_compile.c) */

/*
 * A necessary condition of a filter, read off its leading comparisons of an
 * integer-like column (int2/int4/int8, date, timestamp[tz]) with a constant
 * or another column of its kind (vm_opt.c): a tuple whose column is NULL, or whose value lies in
 * [dom_lo, dom_hi] but outside [lo, hi], or outside the domain and outside
 * [olo, ohi], does not pass the filter.  A domain narrower than int64 comes
 * from a date compared with a timestamp, which converts plainly only inside
 * it.  A range with lo > hi holds no value.
 *
 * A numeric column compared with numeric constants (type_kind
 * AP_TYPE_NUMERIC) has bounds lo and hi that are coefficients at scale
 * nscale, each excluded when its *_open is set, INT64_MIN and INT64_MAX
 * standing for no bound; only a value ap_numeric_range_verdict reads is
 * decided (numeric_i64.h), any other is left to the filter.
 */
#define AP_MAX_RANGE_CHECKS		8

typedef struct ApRangeCheck
{
	int			attno;
	uint8_t		type_kind;		/* the column's ApTypeKind */
	int64_t		dom_lo;
	int64_t		dom_hi;
	int64_t		lo;				/* inside the domain */
	int64_t		hi;
	int64_t		olo;			/* outside it */
	int64_t		ohi;
	/*
	 * attno2 > 0: instead, the column compared with column attno2 of the
	 * same kind (l_commitdate < l_receiptdate): passes iff mask has the bit
	 * of the comparison's sign (1: <, 2: =, 4: >).
	 */
	int			attno2;
	uint8_t		mask;
	/* a numeric check's scale and open bounds */
	int16_t		nscale;
	bool		lo_open;
	bool		hi_open;
} ApRangeCheck;
typedef struct ApArena ApArena; /* per-tuple scratch of a program (vm_internal.h) */

typedef struct ApProgram
{
	ApExpr	   *filter;			/* NULL = every visible tuple passes */
	int			max_attno;		/* highest attribute the filter or projection reads */
	int		   *project;		/* attribute numbers to ship */
	int			nproject;
	ApExpr	  **exprs;			/* computed projections, shipped after project[] */
	ApColumn   *expr_cols;		/* their datum layout (AP_KIND_ATTLEN/ALIGN of the kind) */
	int			nexprs;
	/* server encoding is UTF8; set by the caller after compiling (default: ASCII only) */
	bool		encoding_utf8;
	ApArena    *arena;
	/* necessary conditions of the filter, checked before it (ap_prefilter_*) */
	ApRangeCheck ranges[AP_MAX_RANGE_CHECKS];
	int			nranges;
	/* and sufficient: the filter is their AND (ap_program_filter's shortcut) */
	bool		ranges_exact;
	char		error[256];		/* why compilation failed */
} ApProgram;

/*
 * Compile the protobuf program against the tuple descriptor.  Returns 0, or
 * an ApErrCode (AP_ERR_UNSUPPORTED / AP_ERR_BAD_REQUEST) with prog->error set.
 * Checks every attribute number, operator, function signature, type kind and
 * constant size.
 */
int			ap_program_compile(const ActivePg__Program *msg, const ApTupleDesc *desc,
							   ApProgram *prog);
void		ap_program_free(ApProgram *prog);
/* Evaluate the filter on deformed values (values[i] = attnum i+1). */
ApTri		ap_program_filter(const ApProgram *prog, const ApValue *values);
/*
 * Evaluate the computed projections into out[0..nexprs-1]: datums of each
 * result kind (4-byte-header varlenas for text and numeric) in the program's
 * arena, valid until the next filter or project call.  AP_FALLBACK if any of
 * them cannot be computed exactly: the tuple goes to the host.
 */
ApStatus	ap_program_project(const ApProgram *prog, const ApValue *values, ApValue *out);

/* ---------- rowenc.c ---------- */

/* A RowBatch being filled (the host reads it as ApRowBatch, rowview.c). */
typedef struct ApRowBatchBuf
{
	unsigned char *data;
	uint32_t	len;
	uint32_t	cap;
	uint32_t	nrows;
} ApRowBatchBuf;

int			ap_rowbatch_init(ApRowBatchBuf *b, uint32_t cap);	/* 0 or -ENOMEM */
void		ap_rowbatch_reset(ApRowBatchBuf *b);
void		ap_rowbatch_free(ApRowBatchBuf *b);
/*
 * Append one row holding values[project[i]-1] for i < nproject in the
 * proto/ap_rows.h layout.  Grows the buffer as needed; -ENOMEM on failure.
 */
int			ap_rowbatch_append(ApRowBatchBuf *b, const ApTupleDesc *desc,
							 const int *project, int nproject, const ApValue *values);
/*
 * The same followed by nexprs computed values evals[i] laid out as ecols[i]
 * (natts = nproject + nexprs), and, if tid >= 0, the heap tuple's
 * AP_TID_PACK(block, offset) (AP_ROW_HASTID).
 */
int			ap_rowbatch_append_exprs(ApRowBatchBuf *b, const ApTupleDesc *desc,
								   const int *project, int nproject, const ApValue *values,
								   const ApColumn *ecols, int nexprs, const ApValue *evals,
								   int64_t tid);

/* ---------- ioring.c ---------- */

typedef struct ApReader ApReader;	/* opaque (ioring.c) */

/* A block range read into memory, delivered in completion order. */
typedef struct ApChunk
{
	uint32_t	first_block;
	uint32_t	nblocks;
	unsigned char *data;		/* nblocks * AP_BLCKSZ bytes, 4096-aligned */
	uint64_t	io_us;			/* time spent waiting for this chunk */
} ApChunk;

/*
 * At start: whether readers use pread instead of io_uring (force_pread, or
 * io_uring refused here: EPERM, ENOSYS); logged once.
 */
void		ap_reader_init(bool force_pread);

/*
 * Open a reader over the relation's main fork at relpath (the daemon-built
 * path without segment suffix) for this disk's stripe units.  Returns NULL
 * and sets *err (ApErrCode) and errbuf on failure.
 */
ApReader   *ap_reader_open(const char *relpath, uint32_t nblocks, uint32_t ndisks,
						   uint32_t stripe_pages, uint32_t disk_id,
						   uint32_t queue_depth, bool direct_io,
						   int *err, char *errbuf, size_t errlen);
/*
 * Next completed chunk (1), end of stripe (0), or an error (-errno, errbuf set).
 * The chunk stays valid until the next call, which recycles its buffer.
 */
int			ap_reader_next(ApReader *r, ApChunk *chunk, char *errbuf, size_t errlen);
/* Blocks of one read: the stripe unit, or a piece of at most 1 MB of it. */
uint32_t	ap_reader_piece_blocks(uint32_t stripe_pages);
/* Reads (pieces) a disk makes of its units; a reader of queue depth q holds min(q, this) buffers. */
uint64_t	ap_reader_pieces(uint32_t nblocks, uint32_t ndisks, uint32_t stripe_pages,
							 uint32_t disk_id);
void		ap_reader_close(ApReader *r);

/* ---------- throttle.c ---------- */

/*
 * A token bucket in bytes.  rate 0 = off.  tokens may be negative (debt that
 * chargers are waiting out).  Guarded by lock.
 */
typedef struct ApBucket
{
	pthread_mutex_t lock;
	double		rate;			/* bytes per second */
	double		burst;			/* base depth, bytes */
	double		tokens;
	uint64_t	last_ns;		/* CLOCK_MONOTONIC of the last refill */
} ApBucket;

uint64_t	ap_mono_ns(void);

/* Microseconds of CLOCK_MONOTONIC. */
static inline uint64_t
ap_mono_us(void)
{
	return ap_mono_ns() / 1000;
}

uint64_t	ap_thread_cpu_ns(void);
void		ap_sleep_us(uint64_t us);
/* Set rate (0 = off) and fill to the base burst at now_ns; lock must be initialized. */
void		ap_bucket_set(ApBucket *b, uint64_t bytes_per_sec, uint64_t now_ns);
/* Charge bytes delivered at now_ns; microseconds the caller must wait. */
uint64_t	ap_bucket_charge(ApBucket *b, uint64_t bytes, uint64_t now_ns);
/* cpu_ns * (1/ratio - 1) in microseconds; 0 when ratio is 0 or >= 1. */
uint64_t	ap_cpu_wait_us(double ratio, uint64_t cpu_ns);
/* The daemon's drive (one per process, shared by all connections). */
void		ap_throttle_configure(uint32_t media_mbps, double cpu_ratio);
uint64_t	ap_media_throttle_us(uint64_t bytes);
uint64_t	ap_cpu_throttle_us(uint64_t cpu_ns);
bool		ap_cpu_throttle_on(void);

/* ---------- counters.c ---------- */

void		ap_stats_start(void);
/* Add a finished scan's statistics to the daemon's counters. */
void		ap_stats_add_scan(const ActivePg__ScanStats *st);
void		ap_stats_fill(ActivePg__StatsReply *r);

/* ---------- the connection (conn.c), the scan (scan.c), the session (session.c) ---------- */

typedef struct ApConn ApConn;	/* one client connection (conn.c) */

/* Frame I/O used by the scan (conn.c).  0 on success, -errno on failure. */
int			ap_conn_send(ApConn *c, const ActivePg__Frame *frame);
/* Wait for the next frame; caller frees with active_pg__frame__free_unpacked. */
int			ap_conn_recv(ApConn *c, ActivePg__Frame **frame, int timeout_ms);
/* Non-blocking check for a Cancel or lost connection: true if scan must stop. */
bool		ap_conn_cancel_requested(ApConn *c);
/* Send Error{code, formatted message}; 0 or -errno. */
int			ap_conn_send_error(ApConn *c, uint32_t code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
/*
 * Take an accepted socket and run the handshake; NULL (fd closed) if out of
 * memory or the client failed it.  ap_conn_close closes and frees.
 */
ApConn	   *ap_conn_open(int fd);
void		ap_conn_close(ApConn *c);
/* No more frames: an error was sent or the peer is gone. */
bool		ap_conn_broken(const ApConn *c);
/* Report a protocol violation once (Error frame, log), break; returns rc. */
int			ap_conn_fail(ApConn *c, uint32_t code, int rc, const char *message);
/* Shut the connection down in both directions (a test's failpoint). */
void		ap_conn_shutdown(ApConn *c);
/* Best-effort Error frame on a socket that will not be served (e.g. BUSY). */
void		ap_conn_reject(int fd, uint32_t code, const char *message);

/* Serve one accepted socket until it closes (session.c); closes fd. */
void		ap_session_serve(int fd);

/* Daemon-wide configuration (process.c; filled by main.c before any thread). */
typedef struct ApConfig
{
	const char *data_dir;
	uint32_t	disk_id;
	uint32_t	queue_depth;
	/*
	 * Per-scan memory budget: read buffers and batches, and it also caps the
	 * aggregation table and the Bloom filters of a scan.
	 */
	uint64_t	memory_bytes;
	uint32_t	max_connections;
	const char *secret;			/* NULL = none */
	bool		direct_io_default;
	/* emulation (0 = off): see throttle.c and diskd --help */
	uint32_t	media_mbps;		/* MB/s (2^20 bytes) the drive delivers */
	double		cpu_ratio;		/* disk CPU speed relative to the host */
	uint32_t	pg_major;		/* the data directory's PostgreSQL major (PG_VERSION) */
} ApConfig;

extern ApConfig diskd_config;

/*
 * Run one scan for the request; sends RowBatch/Fallback/XidStatusRequest
 * frames and finally Done or Error.  Returns 0 if the connection is still
 * usable, -1 if it must be closed.
 */
int			ap_scan_run(ApConn *c, const ActivePg__ScanRequest *req);

/* Build "<data_dir-relative path>" for a locator; -1 if invalid. */
int			ap_relpath(const ActivePg__RelLocator *loc, char *buf, size_t buflen);

#endif							/* DISKD_H */
