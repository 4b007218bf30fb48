/*
 * guc.c
 *	  Configuration parameters of active_pg.
 *
 * Every knob is bounded (DEFAULT/MIN/MAX) so that a bad setting is refused by
 * the GUC machinery instead of reaching a disk.  Settings a disk must agree on
 * (stripe unit, disk list) are validated by check hooks; the disk list syntax
 * is parsed by the same function the client uses (ApParseDiskList), so a value
 * the GUC accepts is always one the client can use.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "active_pg.h"
#include "agg.h"
#include "bloom.h"
#include "client.h"
#include "model.h"

#define AP_ENABLE_DEFAULT			true
#define AP_FORCE_DEFAULT			false
#define AP_NDISKS_MIN				1
#define AP_STRIPE_PAGES_MIN			1
#define AP_DIRECT_IO_DEFAULT		false
#define AP_CONNECT_TIMEOUT_MS_MIN	10
#define AP_DISK_TIMEOUT_MS_DEFAULT	30000
#define AP_DISK_TIMEOUT_MS_MAX		3600000
#define AP_CONNECT_TIMEOUT_MS_MAX	600000
#define AP_DISK_CPU_RATIO_MIN		0.01
#define AP_DISK_CPU_RATIO_MAX		1.0	/* an emulated disk is never faster than the host */
#define AP_MEDIA_MBPS_MAX			100000
#define AP_DISK_MEMORY_MB_MAX		65536
#define AP_INTERCONNECT_MBPS_MAX	1000000
#define AP_HOST_CORES_MAX			1024

/* active_pg.scan_mode values */
static const struct config_enum_entry ap_scan_mode_options[] = {
	{"active", AP_SCAN_MODE_ACTIVE, false},
	{"pages", AP_SCAN_MODE_PAGES, false},
	{NULL, 0, false}
};

bool		active_pg_enable = AP_ENABLE_DEFAULT;
bool		active_pg_force = AP_FORCE_DEFAULT;
bool		active_pg_enable_parallel = AP_ENABLE_PARALLEL_DEFAULT;
int			active_pg_ndisks = AP_NDISKS_DEFAULT;
int			active_pg_stripe_pages = AP_STRIPE_PAGES_DEFAULT;
char	   *active_pg_disks = NULL;
char	   *active_pg_disk_secret = NULL;
int			active_pg_batch_kb = AP_BATCH_KB_DEFAULT;
bool		active_pg_direct_io = AP_DIRECT_IO_DEFAULT;
int			active_pg_queue_depth = AP_QUEUE_DEPTH_DEFAULT;
int			active_pg_connect_timeout_ms = AP_CONNECT_TIMEOUT_MS_DEFAULT;
int			active_pg_disk_timeout_ms = AP_DISK_TIMEOUT_MS_DEFAULT;
double		active_pg_disk_cpu_ratio = AP_DISK_CPU_RATIO_DEFAULT;
int			active_pg_disk_media_mbps = 0;
int			active_pg_disk_memory_mb = 0;
int			active_pg_interconnect_mbps = 0;
int			active_pg_scan_mode = AP_SCAN_MODE_ACTIVE;
int			active_pg_host_cores = 0;
bool		active_pg_enable_bloom = AP_ENABLE_BLOOM_DEFAULT;
bool		active_pg_force_bloom = AP_FORCE_BLOOM_DEFAULT;
int			active_pg_bloom_max_bytes = AP_BLOOM_MAX_BYTES_DEFAULT;
int			active_pg_bloom_bytes = AP_BLOOM_BYTES_DEFAULT;
bool		active_pg_bloom_join_results = true;

/* The stripe unit must be a power of two: disks map blocks to units by shifting. */
static bool
ap_check_stripe_pages(int *newval, void **extra, GucSource source)
{
	if (*newval <= 0 || (*newval & (*newval - 1)) != 0)
	{
		GUC_check_errdetail("active_pg.stripe_pages must be a power of two.");
		return false;
	}
	return true;
}

/* active_pg.disk_timeout: 0 (no bound) or at least four disk heartbeats. */
static bool
ap_check_disk_timeout(int *newval, void **extra, GucSource source)
{
	if (*newval == 0 || *newval >= 4 * AP_HEARTBEAT_MS)
		return true;
	GUC_check_errdetail("active_pg.disk_timeout must be 0 or at least %d ms (four heartbeats of a disk).",
						4 * AP_HEARTBEAT_MS);
	return false;
}

/* active_pg.bloom_bytes: 0 or a filter size both sides can lay out (ap_bloom.h). */
static bool
ap_check_bloom_bytes(int *newval, void **extra, GucSource source)
{
	if (*newval == 0 || ap_bloom_len_valid((size_t) *newval))
		return true;
	GUC_check_errdetail("active_pg.bloom_bytes must be 0, 8, 16, 32 or a multiple of %d bytes.",
						AP_BLOOM_BLOCK_BYTES);
	return false;
}

/* Validate the disk list with the client's own parser. */
static bool
ap_check_disks(char **newval, void **extra, GucSource source)
{
	const char *errmsg = NULL;

	if (*newval == NULL)
		return true;
	if (ApParseDiskList(*newval, NULL, &errmsg) < 0)
	{
		GUC_check_errdetail("%s", errmsg);
		GUC_check_errhint("Use a comma-separated list of unix:/path/to/socket or tcp:127.0.0.1:port.");
		return false;
	}
	return true;
}

/* Whether and how the planner offers pushdown. */
static void
ap_define_planner_settings(void)
{
	DefineCustomBoolVariable("active_pg.enable",
							 "Offers ActiveScan (pushdown of scans to the disk daemons) to the planner.",
							 NULL,
							 &active_pg_enable,
							 AP_ENABLE_DEFAULT,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("active_pg.force_pushdown",
							 "Pushes every scan down where it is possible, regardless of cost (testing).",
							 NULL,
							 &active_pg_force,
							 AP_FORCE_DEFAULT,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("active_pg.enable_parallel",
							 "Lets parallel workers share ActiveScan's disks (a partial path under Gather).",
							 "Off: ActiveScan is neither parallel-aware nor run by parallel workers.",
							 &active_pg_enable_parallel,
							 AP_ENABLE_PARALLEL_DEFAULT,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/* The disks: how many, where, how a scan talks to them. */
static void
ap_define_disk_settings(void)
{
	/*
	 * PostgreSQL refuses (FATAL) to define a PGC_POSTMASTER variable after
	 * start-up; without preloading there is no launcher, so no ndisks either.
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("active_pg.ndisks",
								"Number of disk daemons the launcher starts.",
								"Ignored when active_pg.disks is set.",
								&active_pg_ndisks,
								AP_NDISKS_DEFAULT, AP_NDISKS_MIN, AP_NDISKS_MAX,
								PGC_POSTMASTER, 0,
								NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.stripe_pages",
							"Stripe unit in pages: unit u of a relation belongs to disk u mod ndisks.",
							"Must be a power of two.",
							&active_pg_stripe_pages,
							AP_STRIPE_PAGES_DEFAULT, AP_STRIPE_PAGES_MIN, AP_STRIPE_PAGES_MAX,
							PGC_SUSET, 0,
							ap_check_stripe_pages, NULL, NULL);

	DefineCustomStringVariable("active_pg.disks",
							   "Disk daemons started by hand, e.g. 'unix:/path/sock,tcp:127.0.0.1:7400'.",
							   "When set, these are the disks and the launcher starts none.",
							   &active_pg_disks,
							   "",
							   PGC_SIGHUP, 0,
							   ap_check_disks, NULL, NULL);

	DefineCustomStringVariable("active_pg.disk_secret",
							   "Shared secret of the hand-started disks: both sides prove they know it (HMAC-SHA256), it never crosses the wire.",
							   NULL,
							   &active_pg_disk_secret,
							   "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.batch_size",
							"Target size of one row batch sent by a disk.",
							"Each disk holds about two batches per scan in memory.",
							&active_pg_batch_kb,
							AP_BATCH_KB_DEFAULT, AP_BATCH_KB_MIN, AP_BATCH_KB_MAX,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("active_pg.direct_io",
							 "Disks read with O_DIRECT (off: through the kernel page cache).",
							 "O_DIRECT emulates cold disks faithfully; the default reads warm "
							 "pages from the page cache, as PostgreSQL does.",
							 &active_pg_direct_io,
							 AP_DIRECT_IO_DEFAULT,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.queue_depth",
							"Reads each disk keeps in flight.",
							NULL,
							&active_pg_queue_depth,
							AP_QUEUE_DEPTH_DEFAULT, AP_QUEUE_DEPTH_MIN, AP_QUEUE_DEPTH_MAX,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.disk_timeout",
							"How long a scanning disk may send nothing before the host takes its work over.",
							"A scanning disk sends a heartbeat every second; 0 waits forever.",
							&active_pg_disk_timeout_ms,
							AP_DISK_TIMEOUT_MS_DEFAULT, 0, AP_DISK_TIMEOUT_MS_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							ap_check_disk_timeout, NULL, NULL);

	DefineCustomIntVariable("active_pg.connect_timeout",
							"How long a backend keeps trying to reach a disk.",
							NULL,
							&active_pg_connect_timeout_ms,
							AP_CONNECT_TIMEOUT_MS_DEFAULT,
							AP_CONNECT_TIMEOUT_MS_MIN, AP_CONNECT_TIMEOUT_MS_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/* The emulation of slow drives, interconnects and the distributed-device baseline. */
static void
ap_define_emulation_settings(void)
{
	/*
	 * The disks' emulation settings are read by the launcher, which starts
	 * the daemons with them and restarts the daemons when a reload changes
	 * them, and by the cost model.  They are reload-only (SIGHUP): a session
	 * could otherwise plan for disks other than the ones it runs on.
	 */
	DefineCustomRealVariable("active_pg.disk_cpu_ratio",
							 "Speed of a disk's CPU relative to the host's (emulated by the disks and used by the cost model).",
							 "Values other than 1 are passed to the launched disks as --cpu-ratio.",
							 &active_pg_disk_cpu_ratio,
							 AP_DISK_CPU_RATIO_DEFAULT,
							 AP_DISK_CPU_RATIO_MIN, AP_DISK_CPU_RATIO_MAX,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.disk_media_mb_per_sec",
							"Emulated media rate of each disk in megabytes (2^20 bytes) per second (0 = off, full speed).",
							"Passed to the launched disks as --media-mbps; used by the cost model.",
							&active_pg_disk_media_mbps,
							0, 0, AP_MEDIA_MBPS_MAX,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.disk_memory",
							"Emulated memory of each disk (0 = the daemon's default).",
							"Passed to the launched disks as --memory-mb; used by the cost model.",
							&active_pg_disk_memory_mb,
							0, 0, AP_DISK_MEMORY_MB_MAX,
							PGC_SIGHUP, GUC_UNIT_MB,
							NULL, NULL, NULL);

	/* the interconnect is emulated by each backend: a session may set it */
	DefineCustomIntVariable("active_pg.interconnect_mb_per_sec",
							"Emulated interconnect rate in megabytes (2^20 bytes) per second: a backend reads the disks no faster than this in total (0 = off).",
							NULL,
							&active_pg_interconnect_mbps,
							0, 0, AP_INTERCONNECT_MBPS_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("active_pg.scan_mode",
							 "How ActiveScan uses the disks: 'active' runs the scan at the disks, 'pages' ships raw pages and does all the work on the host (distributed-device baseline).",
							 NULL,
							 &active_pg_scan_mode,
							 AP_SCAN_MODE_ACTIVE,
							 ap_scan_mode_options,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
}

/* The cost model's machine constants. */
static void
ap_define_model_settings(void)
{
	/*
	 * The cost model's machine constants, as PostgreSQL's own cost
	 * constants are settings: measured by active_pg.calibrate(), the same
	 * for every session unless set, never learned from what ran.
	 */
	DefineCustomRealVariable("active_pg.disk_scan_ns_per_byte",
							 "Cost model: a disk's CPU time to scan one byte of heap (ns, at host speed).",
							 "Measured by active_pg.calibrate().",
							 &active_pg_disk_scan_ns_per_byte,
							 AP_DISK_SCAN_NS_PER_BYTE_DEFAULT,
							 AP_MODEL_CONSTANT_MIN, AP_MODEL_CONSTANT_MAX,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("active_pg.host_scan_ns_per_byte",
							 "Cost model: the host's CPU time for a sequential scan of one byte of heap (ns).",
							 "Measured by active_pg.calibrate().",
							 &active_pg_host_scan_ns_per_byte,
							 AP_HOST_SCAN_NS_PER_BYTE_DEFAULT,
							 AP_MODEL_CONSTANT_MIN, AP_MODEL_CONSTANT_MAX,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("active_pg.disk_start_ms",
							 "Cost model: time per disk to start a scan (connect, handshake, request; ms).",
							 "Measured by active_pg.calibrate().",
							 &active_pg_disk_start_ms,
							 AP_DISK_START_MS_DEFAULT,
							 AP_MODEL_CONSTANT_MIN, AP_MODEL_CONSTANT_MAX,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.host_cores",
							"CPU cores the host and unemulated disks share, for the cost model (0 = what the system reports).",
							NULL,
							&active_pg_host_cores,
							0, 0, AP_HOST_CORES_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
}

/* Aggregation at the disks (ActiveAgg). */
static void
ap_define_agg_settings(void)
{
	DefineCustomBoolVariable("active_pg.enable_agg",
							 "Aggregate at the disks (ActiveAgg) where the optimizer finds it cheaper.",
							 NULL,
							 &active_pg_enable_agg,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.disk_agg_mem",
							"Memory for the hash table of an aggregation at each disk.",
							"When it fills up, the disk ships its partial groups and starts again.",
							&active_pg_disk_agg_mem,
							AP_DISK_AGG_MEM_DEFAULT, AP_DISK_AGG_MEM_MIN, AP_DISK_AGG_MEM_MAX,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/* Bloom semi-join filters. */
static void
ap_define_bloom_settings(void)
{
	DefineCustomBoolVariable("active_pg.enable_bloom",
							 "Offers joins whose big side's scan carries a Bloom filter of the small side's keys.",
							 NULL,
							 &active_pg_enable_bloom,
							 AP_ENABLE_BLOOM_DEFAULT,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("active_pg.force_bloom",
							 "Uses a Bloom-filtered join wherever one is possible, regardless of cost (testing).",
							 NULL,
							 &active_pg_force_bloom,
							 AP_FORCE_BLOOM_DEFAULT,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("active_pg.bloom_join_results",
							 "Lets the result of a join be the small side of a Bloom filter.",
							 "Off: only a table (with its restrictions) is a small side.",
							 &active_pg_bloom_join_results,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.bloom_max_bytes",
							"Largest Bloom filter shipped with a scan.",
							"Filters are sized for the small side's distinct keys, up to this size.",
							&active_pg_bloom_max_bytes,
							AP_BLOOM_MAX_BYTES_DEFAULT, AP_BLOOM_MAX_BYTES_MIN, AP_BLOOM_MAX_BYTES_MAX,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("active_pg.bloom_bytes",
							"Fixed size of every Bloom filter built (benchmarks); 0 sizes filters from their keys.",
							"8, 16 or 32 bytes is one narrow block; otherwise a multiple of 64 bytes. "
							"Overrides active_pg.bloom_max_bytes at execution; plans do not change with it.",
							&active_pg_bloom_bytes,
							AP_BLOOM_BYTES_DEFAULT, 0, AP_BLOOM_BYTES_GUC_MAX,
							PGC_USERSET, GUC_UNIT_BYTE,
							ap_check_bloom_bytes, NULL, NULL);
}

/* Define all GUCs; called once from _PG_init. */
void
ApGucInit(void)
{
	ap_define_planner_settings();
	ap_define_disk_settings();
	ap_define_emulation_settings();
	ap_define_model_settings();
	ap_define_agg_settings();
	ap_define_bloom_settings();
	MarkGUCPrefixReserved("active_pg");
}
