/*
 * active_pg.h
 *	  Shared declarations of the active_pg extension (the host side).
 *
 * The planner side (planner.c, shippable*.c, agg_planner.c,
 * bloom_planner.c, model.c) decides what runs at the disks; the executor
 * side (activescan.c for ActiveScan, agg_exec.c for ActiveAgg, bloom_exec.c,
 * disk_conversation.c for the conversation with the disks, transport.c for the
 * transport) runs it; launcher.c runs the daemons.  docs/ARCHITECTURE.md
 * has the map of every file.
 */
#ifndef ACTIVE_PG_H
#define ACTIVE_PG_H

#include "postgres.h"

#include "compat.h"

#include "datatype/timestamp.h"
#include "nodes/execnodes.h"
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "active_pg.pb-c.h"
#include "ap_rows.h"
#include "ap_types.h"
#include "ap_wire.h"

#define AP_SCAN_NAME				"ActiveScan"

/* ---------- GUCs (guc.c: the table of every setting, its bounds and default) ---------- */

extern bool active_pg_enable;			/* active_pg.enable */
extern bool active_pg_force;			/* active_pg.force_pushdown: testing switch */
extern bool active_pg_enable_parallel;	/* active_pg.enable_parallel */
extern int	active_pg_ndisks;			/* active_pg.ndisks (postmaster) */
extern int	active_pg_stripe_pages;		/* active_pg.stripe_pages */
extern char *active_pg_disks;			/* active_pg.disks: hand-started daemons */
extern char *active_pg_disk_secret;		/* active_pg.disk_secret */
extern int	active_pg_batch_kb;			/* active_pg.batch_size, kB */
extern bool active_pg_direct_io;		/* active_pg.direct_io */
extern int	active_pg_queue_depth;		/* active_pg.queue_depth */
extern int	active_pg_connect_timeout_ms;	/* active_pg.connect_timeout, ms */
extern int	active_pg_disk_timeout_ms;	/* active_pg.disk_timeout */
extern double active_pg_disk_cpu_ratio;	/* active_pg.disk_cpu_ratio (emulation, cost model) */
extern int	active_pg_disk_media_mbps;	/* active_pg.disk_media_mb_per_sec (0 = off) */
extern int	active_pg_disk_memory_mb;	/* active_pg.disk_memory, MB (0 = default) */
extern int	active_pg_interconnect_mbps;	/* active_pg.interconnect_mb_per_sec (0 = off) */
extern int	active_pg_scan_mode;		/* active_pg.scan_mode: AP_SCAN_MODE_* */
extern int	active_pg_host_cores;		/* active_pg.host_cores (0 = sysconf) */

void		ApGucInit(void);
/* The launcher's options for a daemon from the settings table (guc.c). */
#define AP_DAEMON_ARG_BYTES			32
#define AP_DAEMON_SETTINGS_MAX		8
int			ApDaemonSettingArgs(char **argv, int argc, char (*bufs)[AP_DAEMON_ARG_BYTES],
								int nbufs);

/* ---------- shippable.c ---------- */

/* ApTypeKind for a type oid, AP_TYPE_OTHER if the disk cannot evaluate it. */
ApTypeKind	ApTypeKindOf(Oid typid);

/*
 * Split a base relation's restriction clauses (RestrictInfo list) into those a
 * disk evaluates exactly (*disk, bare Expr list) and the rest (*host, bare
 * Expr list).  Classification happens once, at plan time.
 */
void		ApClassifyQuals(PlannerInfo *root, RelOptInfo *baserel, List *restrictinfos,
							List **disk, List **host);
bool		ApIsShippableExpr(PlannerInfo *root, RelOptInfo *baserel, Expr *expr);

/* ---------- planner.c ---------- */

/*
 * CustomScan layout produced by the planner:
 *   scan.scanrelid    the base relation
 *   plan.qual         NIL: host quals are evaluated by the node itself, so
 *                     that EXPLAIN can label them "Host Filter"
 *   custom_exprs      every qual, in PostgreSQL's evaluation order
 *                     (order_qual_clauses), over the relation's descriptor;
 *                     heap tuples (fallback, host mode) are checked against
 *                     all of them in that order, so they raise exactly the
 *                     errors a plain scan would
 *   custom_scan_tlist NIL: the scan tuple is the relation's descriptor, disk
 *                     rows fill the shipped attributes.  Or (projection
 *                     pushdown) the shipped attributes as Vars, then the
 *                     computed expressions the disks evaluate; disk rows map
 *                     onto it 1:1 and the targetlist references it (INDEX_VAR)
 *   custom_private    list indexed by ApScanPrivateIndex
 */
typedef enum ApScanPrivateIndex
{
	AP_PRIV_PROJECT = 0,		/* IntList: attribute numbers the disks ship */
	AP_PRIV_DISK_QUALS,			/* IntList: positions of the disk quals in custom_exprs */
	AP_PRIV_NEXPRS,				/* Integer: computed entries of custom_scan_tlist */
	AP_PRIV_BLOOMS,				/* List: Bloom filters the scan carries (bloomjoin.h), or NIL */
	AP_PRIV_MODEL,				/* List of Float: the cost model's prediction (model.h) */
	AP_PRIV_COUNT
} ApScanPrivateIndex;

/* The path's custom_private: the project list, then the Bloom filters. */
#define AP_PATH_PRIV_PROJECT		0
#define AP_PATH_PRIV_BLOOMS			1
#define AP_PATH_PRIV_MODEL			2	/* then the model's prediction */


extern CustomScanMethods ApScanPlanMethods;
void		ApPlannerInit(void);
/* Would ActiveScan be offered for this base rel (planner.c)? */
bool		ApScanEligible(PlannerInfo *root, RelOptInfo *rel);
/* Is the extension created in this database (cached until DDL)? */
bool		ApExtensionCreated(void);
/* the extension's schema (active_pg.control) */
#define AP_SCHEMA_NAME				"active_pg"
/* The least cost any pushed-down scan of base relation rel can have (planner.c). */
Cost		ApRelCostFloor(RelOptInfo *rel);
/* Would add_path (partial: add_partial_path) surely reject this unordered path? */
bool		ApPathDominated(List *pathlist, Path *path, bool partial);
/* Highest attribute of rel that exprs (expressions or RestrictInfos) read. */
int			ApLastAttno(RelOptInfo *rel, List *exprs);
/* rel's cheapest index probe by outer's values at measured speed, or NULL (planner.c). */
Path	   *ApIndexProbePath(PlannerInfo *root, RelOptInfo *rel, Relids outer, Cost *probe_cost);
/* The host's best scan of rel at measured speed, its Seq Scan taking t_seq. */
double		ApHostBestScan(RelOptInfo *rel, double t_seq);
/* ... of its scans ordered by pathkeys, or -1 if it has none (planner.c). */
double		ApHostSortedScan(RelOptInfo *rel, double t_seq, List *pathkeys);
/* Pattern matches (LIKE, regular expressions) in clauses, per tuple. */
double		ApPatternOps(List *clauses);
/* Is the pushed-down plan the host's own beats at measured speed (planner.c)? */
bool		ApHostSlower(double t_active, double t_host, bool sure, double divisor);
/*
 * The ActiveScan of rel kept for its Bloom paths (planner.c): the serial one
 * not offered on its own, or (partial) the partial one, offered or not; NULL
 * if none.
 */
CustomPath *ApBloomBasePath(RelOptInfo *rel, bool partial);
/* PostgreSQL's parallel divisor of a path with this many workers (planner.c). */
double		ApParallelDivisor(int workers);

/* ---------- encode.c ---------- */

/*
 * Encode the disk quals (AND of the list; NULL if empty) as a protobuf Expr.
 * Params are evaluated now in econtext (called at the first Exec and on
 * rescan).  Allocates in CurrentMemoryContext.
 */
ActivePg__Expr *ApEncodeQuals(List *disk_quals, ExprContext *econtext);
/* Computed projections (Program.project_exprs), Params evaluated as above. */
ActivePg__Expr **ApEncodeValues(List *exprs, ExprContext *econtext,
								size_t *nexprs);
/*
 * Does an encoded program need AP_CAP_EXPRESSIONS (it holds a FuncCall,
 * CaseExpr or CoalesceExpr)?
 */
bool		ApExprNeedsExpressions(const ActivePg__Expr *e);
/* Columns of the relation's descriptor. */
ActivePg__Column **ApEncodeColumns(TupleDesc tupdesc, size_t *ncols);

/* ---------- activescan.c ---------- */
Node	   *ApCreateScanState(CustomScan *cscan);
void		ApExecInit(void);

/* ---------- transport.c ---------- */
/*
 * Does this backend have any disk: the launcher's (library preloaded) or
 * active_pg.disks?  The planner offers ActiveScan only if so.
 */
bool		ApDisksConfigured(void);

/* ---------- monitor.c ---------- */
/* Request the shared memory of the counters (_PG_init, preloading only). */
void		ApStatsShmemRequest(void);
/* The launcher restarted disk i. */
void		ApStatsCountRestart(int disk);

/*
 * A scan saw disk fail (why); its backend quarantined it until then (0: it
 * was skipped because already quarantined).  For active_pg.disks().
 */
void		ApStatsDiskFailed(int disk, const char *why, TimestampTz until);

/*
 * Why the host read blocks itself, unfiltered, for
 * active_pg.host_fallback_stats (the view's cause names are in monitor.c).
 */
typedef enum ApFallbackCause
{
	AP_FALLBACK_TAKEN_OVER,		/* a disk failed after delivering part */
	AP_FALLBACK_UNREACHABLE,	/* a disk failed before delivering anything */
	AP_FALLBACK_QUARANTINED,	/* a disk skipped: it had failed recently */
	AP_FALLBACK_ALL_FAILED,		/* every disk of a scan failed */
	AP_FALLBACK_HANDED_BACK,	/* a disk could not decide: visibility, checksum */
	AP_FALLBACK_PAGES,			/* pages shipped to the host (scan_mode = 'pages') */
	AP_FALLBACK_NCAUSES
} ApFallbackCause;

/* Count blocks (and tuples) the host read itself for cause, in events. */
void		ApStatsCountFallback(ApFallbackCause cause, uint64 events, uint64 blocks,
								 uint64 tuples);

/* ---------- launcher.c ---------- */
void		ApLauncherRegister(void);
/*
 * Was the launcher registered (library in shared_preload_libraries)?  The
 * launcher says so at registration (diskaddr.c keeps the flag).
 */
bool		ApLauncherRegistered(void);
void		ApLauncherSetRegistered(void);
/* Socket path (relative to the data directory) of the launcher's disk i (diskaddr.c). */
void		ApDiskSocketPath(int disk, char *buf, size_t buflen);
#define AP_SOCKET_DIR				"active_pg"
/* the disk daemon's name in PostgreSQL's bin directory (Makefile installs it) */
#define AP_DISKD_PROGRAM			"active_pg_diskd"

#endif							/* ACTIVE_PG_H */
