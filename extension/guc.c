/*
 * guc.c
 *	  Configuration parameters of active_pg: one table, ap_settings, that
 *	  says of every active_pg.* setting its name, C variable, type, unit,
 *	  bounds, default, context and whether the launcher passes it to the
 *	  daemons it starts.  ApGucInit registers the settings from it, the
 *	  launcher builds the daemons' options from it (ApDaemonSettingArgs),
 *	  and t/013_settings_reference.pl holds README's configuration table
 *	  against what the server reports, so the three cannot drift apart.
 *
 * Every knob is bounded (min/max) so that a bad setting is refused by the
 * GUC machinery instead of reaching a disk.  Settings a disk must agree on
 * (stripe unit, disk list) are validated by check hooks; the disk list syntax
 * is parsed by the same function the client uses (ApParseDiskList), so a value
 * the GUC accepts is always one the client can use.  Bounds that are also
 * part of the wire contract (AP_STRIPE_PAGES_MAX, AP_QUEUE_DEPTH_MIN/MAX,
 * AP_NDISKS_MAX, the Bloom filter's sizes) come from proto/, since the
 * daemon checks requests against the same numbers.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "active_pg.h"
#include "activeagg.h"
#include "bloomjoin.h"
#include "transport.h"
#include "model.h"

/*
 * The variables behind the settings.  Each gets its default from the table
 * when ApGucInit runs (at _PG_init, before anything reads them).
 */
bool		active_pg_enable;
bool		active_pg_force;
bool		active_pg_enable_parallel;
int			active_pg_ndisks;
int			active_pg_stripe_pages;
char	   *active_pg_disks;
char	   *active_pg_disk_secret;
int			active_pg_batch_kb;
bool		active_pg_direct_io;
int			active_pg_queue_depth;
int			active_pg_connect_timeout_ms;
int			active_pg_disk_timeout_ms;
double		active_pg_disk_cpu_ratio;
int			active_pg_disk_media_mbps;
int			active_pg_disk_memory_mb;
int			active_pg_interconnect_mbps;
int			active_pg_scan_mode;
int			active_pg_host_cores;
bool		active_pg_enable_bloom;
bool		active_pg_enable_parallel_bloom;
bool		active_pg_force_bloom;
int			active_pg_bloom_max_bytes;
int			active_pg_bloom_bytes;
bool		active_pg_bloom_join_results;
bool		active_pg_enable_agg;
int			active_pg_disk_agg_mem;
double		active_pg_disk_scan_ns_per_byte;
double		active_pg_host_scan_ns_per_byte;
double		active_pg_disk_start_ms;

/* active_pg.scan_mode values */
static const struct config_enum_entry ap_scan_mode_options[] = {
	{"active", AP_SCAN_MODE_ACTIVE, false},
	{"pages", AP_SCAN_MODE_PAGES, false},
	{NULL, 0, false}
};

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

typedef enum ApSettingType
{
	AP_SET_BOOL,
	AP_SET_INT,
	AP_SET_REAL,
	AP_SET_STRING,
	AP_SET_ENUM
} ApSettingType;

/* When the launcher passes a setting to the daemons it starts. */
typedef enum ApDaemonPass
{
	AP_PASS_NEVER = 0,			/* the host's alone, or sent with each request */
	AP_PASS_IF_POSITIVE,		/* an int above 0 (0 means "off") */
	AP_PASS_IF_BELOW_ONE		/* a ratio below 1 (a disk is never faster than the host) */
} ApDaemonPass;

typedef struct ApSetting
{
	const char *name;
	ApSettingType type;
	void	   *var;			/* bool *, int *, double * or char ** by type */
	const char *desc;
	const char *long_desc;
	double		boot;			/* default of a bool, int, real or enum */
	const char *boot_string;	/* default of a string */
	double		min;
	double		max;
	GucContext	context;
	int			flags;			/* GUC_UNIT_*, GUC_SUPERUSER_ONLY */
	GucIntCheckHook int_check;
	GucStringCheckHook string_check;
	const struct config_enum_entry *options;	/* of an enum */
	bool		preload_only;	/* defined only while shared_preload_libraries loads */
	const char *daemon_flag;	/* the daemon's option, with daemon_pass */
	ApDaemonPass daemon_pass;
} ApSetting;

/*
 * Every setting, grouped as README's configuration table explains them.
 *
 * The emulation settings of the disks (disk_cpu_ratio, disk_media_mb_per_sec,
 * disk_memory) are read by the launcher, which starts the daemons with them
 * and restarts the daemons when a reload changes them, and by the cost model.
 * They are reload-only (SIGHUP): a session could otherwise plan for disks
 * other than the ones it runs on.  Settings a scan may choose for itself
 * (queue_depth, batch_size, disk_agg_mem, direct_io, stripe_pages) travel in
 * each ScanRequest instead, so hand-started disks obey them too.
 *
 * The cost model's machine constants are settings, as PostgreSQL's own cost
 * constants are: measured by active_pg.calibrate(), the same for every
 * session unless set, never learned from what ran.  Their defaults were
 * measured on the development machine (2 cores).
 */
static const ApSetting ap_settings[] = {
	/* whether and how the planner offers pushdown */
	{.name = "active_pg.enable", .type = AP_SET_BOOL, .var = &active_pg_enable,
		.desc = "Offers ActiveScan (pushdown of scans to the disk daemons) to the planner.",
	.boot = true, .context = PGC_USERSET},
	{.name = "active_pg.force_pushdown", .type = AP_SET_BOOL, .var = &active_pg_force,
		.desc = "Pushes every scan down where it is possible, regardless of cost (testing).",
	.boot = false, .context = PGC_USERSET},
	{.name = "active_pg.enable_parallel", .type = AP_SET_BOOL, .var = &active_pg_enable_parallel,
		.desc = "Lets parallel workers share ActiveScan's disks (a partial path under Gather).",
		.long_desc = "Off: ActiveScan is neither parallel-aware nor run by parallel workers.",
	.boot = true, .context = PGC_USERSET},

	/*
	 * The disks: how many, where, how a scan talks to them.  PostgreSQL
	 * refuses (FATAL) to define a PGC_POSTMASTER variable after start-up;
	 * without preloading there is no launcher, so no ndisks either.
	 */
	{.name = "active_pg.ndisks", .type = AP_SET_INT, .var = &active_pg_ndisks,
		.desc = "Number of disk daemons the launcher starts.",
		.long_desc = "Ignored when active_pg.disks is set.",
		.boot = 4, .min = 1, .max = AP_NDISKS_MAX,
	.context = PGC_POSTMASTER, .preload_only = true},
	{.name = "active_pg.stripe_pages", .type = AP_SET_INT, .var = &active_pg_stripe_pages,
		.desc = "Stripe unit in pages: unit u of a relation belongs to disk u mod ndisks.",
		.long_desc = "Must be a power of two.",
		.boot = 32, .min = 1, .max = AP_STRIPE_PAGES_MAX,
	.context = PGC_SUSET, .int_check = ap_check_stripe_pages},
	{.name = "active_pg.disks", .type = AP_SET_STRING, .var = &active_pg_disks,
		.desc = "Disk daemons started by hand, e.g. 'unix:/path/sock,tcp:127.0.0.1:7400'.",
		.long_desc = "When set, these are the disks and the launcher starts none.",
	.boot_string = "", .context = PGC_SIGHUP, .string_check = ap_check_disks},
	{.name = "active_pg.disk_secret", .type = AP_SET_STRING, .var = &active_pg_disk_secret,
		.desc = "Shared secret of the hand-started disks: both sides prove they know it (HMAC-SHA256), it never crosses the wire.",
	.boot_string = "", .context = PGC_SIGHUP, .flags = GUC_SUPERUSER_ONLY},
	{.name = "active_pg.batch_size", .type = AP_SET_INT, .var = &active_pg_batch_kb,
		.desc = "Target size of one row batch sent by a disk.",
		.long_desc = "Each disk holds about two batches per scan in memory.",
		.boot = 256, .min = 8, .max = 8192,
	.context = PGC_SUSET, .flags = GUC_UNIT_KB},
	{.name = "active_pg.direct_io", .type = AP_SET_BOOL, .var = &active_pg_direct_io,
		.desc = "Disks read with O_DIRECT (off: through the kernel page cache).",
		.long_desc = "O_DIRECT emulates cold disks faithfully; the default reads warm "
		"pages from the page cache, as PostgreSQL does.",
	.boot = false, .context = PGC_SUSET},
	{.name = "active_pg.queue_depth", .type = AP_SET_INT, .var = &active_pg_queue_depth,
		.desc = "Reads each disk keeps in flight.",
		.boot = 32, .min = AP_QUEUE_DEPTH_MIN, .max = AP_QUEUE_DEPTH_MAX,
	.context = PGC_SUSET},
	{.name = "active_pg.disk_timeout", .type = AP_SET_INT, .var = &active_pg_disk_timeout_ms,
		.desc = "How long a scanning disk may send nothing before the host takes its work over.",
		.long_desc = "A scanning disk sends a heartbeat every second; 0 waits forever.",
		.boot = 30000, .min = 0, .max = 3600000,
	.context = PGC_USERSET, .flags = GUC_UNIT_MS, .int_check = ap_check_disk_timeout},
	{.name = "active_pg.connect_timeout", .type = AP_SET_INT, .var = &active_pg_connect_timeout_ms,
		.desc = "How long a backend keeps trying to reach a disk.",
		.boot = 5000, .min = 10, .max = 600000,
	.context = PGC_USERSET, .flags = GUC_UNIT_MS},

	/* the emulation of slow drives, interconnects and the distributed-device baseline */
	{.name = "active_pg.disk_cpu_ratio", .type = AP_SET_REAL, .var = &active_pg_disk_cpu_ratio,
		.desc = "Speed of a disk's CPU relative to the host's (emulated by the disks and used by the cost model).",
		.long_desc = "Values other than 1 are passed to the launched disks as --cpu-ratio.",
		.boot = 1.0, .min = 0.01, .max = 1.0,
		.context = PGC_SIGHUP,
	.daemon_flag = "--cpu-ratio", .daemon_pass = AP_PASS_IF_BELOW_ONE},
	{.name = "active_pg.disk_media_mb_per_sec", .type = AP_SET_INT, .var = &active_pg_disk_media_mbps,
		.desc = "Emulated media rate of each disk in megabytes (2^20 bytes) per second (0 = off, full speed).",
		.long_desc = "Passed to the launched disks as --media-mbps; used by the cost model.",
		.boot = 0, .min = 0, .max = 100000,
		.context = PGC_SIGHUP,
	.daemon_flag = "--media-mbps", .daemon_pass = AP_PASS_IF_POSITIVE},
	{.name = "active_pg.disk_memory", .type = AP_SET_INT, .var = &active_pg_disk_memory_mb,
		.desc = "Emulated memory of each disk (0 = the daemon's default).",
		.long_desc = "Passed to the launched disks as --memory-mb; used by the cost model.",
		.boot = 0, .min = 0, .max = 65536,
		.context = PGC_SIGHUP, .flags = GUC_UNIT_MB,
	.daemon_flag = "--memory-mb", .daemon_pass = AP_PASS_IF_POSITIVE},
	/* the interconnect is emulated by each backend: a session may set it */
	{.name = "active_pg.interconnect_mb_per_sec", .type = AP_SET_INT, .var = &active_pg_interconnect_mbps,
		.desc = "Emulated interconnect rate in megabytes (2^20 bytes) per second: a backend reads the disks no faster than this in total (0 = off).",
		.boot = 0, .min = 0, .max = 1000000,
	.context = PGC_USERSET},
	{.name = "active_pg.scan_mode", .type = AP_SET_ENUM, .var = &active_pg_scan_mode,
		.desc = "How ActiveScan uses the disks: 'active' runs the scan at the disks, 'pages' ships raw pages and does all the work on the host (distributed-device baseline).",
	.boot = AP_SCAN_MODE_ACTIVE, .options = ap_scan_mode_options, .context = PGC_SUSET},

	/* the cost model's machine constants */
	{.name = "active_pg.disk_scan_ns_per_byte", .type = AP_SET_REAL, .var = &active_pg_disk_scan_ns_per_byte,
		.desc = "Cost model: a disk's CPU time to scan one byte of heap (ns, at host speed).",
		.long_desc = "Measured by active_pg.calibrate().",
		.boot = 0.4, .min = 0.001, .max = 1000.0,
	.context = PGC_USERSET},
	{.name = "active_pg.host_scan_ns_per_byte", .type = AP_SET_REAL, .var = &active_pg_host_scan_ns_per_byte,
		.desc = "Cost model: the host's CPU time for a sequential scan of one byte of heap (ns).",
		.long_desc = "Measured by active_pg.calibrate().",
		.boot = 1.8, .min = 0.001, .max = 1000.0,
	.context = PGC_USERSET},
	{.name = "active_pg.disk_start_ms", .type = AP_SET_REAL, .var = &active_pg_disk_start_ms,
		.desc = "Cost model: time per disk to start a scan (connect, handshake, request; ms).",
		.long_desc = "Measured by active_pg.calibrate().",
		.boot = 0.45, .min = 0.001, .max = 1000.0,
	.context = PGC_USERSET},
	{.name = "active_pg.host_cores", .type = AP_SET_INT, .var = &active_pg_host_cores,
		.desc = "CPU cores the host and unemulated disks share, for the cost model (0 = what the system reports).",
		.boot = 0, .min = 0, .max = 1024,
	.context = PGC_USERSET},

	/* aggregation at the disks (ActiveAgg) */
	{.name = "active_pg.enable_agg", .type = AP_SET_BOOL, .var = &active_pg_enable_agg,
		.desc = "Aggregate at the disks (ActiveAgg) where the optimizer finds it cheaper.",
	.boot = true, .context = PGC_USERSET},
	{.name = "active_pg.disk_agg_mem", .type = AP_SET_INT, .var = &active_pg_disk_agg_mem,
		.desc = "Memory for the hash table of an aggregation at each disk.",
		.long_desc = "When it fills up, the disk ships its partial groups and starts again.",
		.boot = 64 * 1024, .min = 64, .max = 1024 * 1024,
	.context = PGC_SUSET, .flags = GUC_UNIT_KB},

	/* Bloom semi-join filters */
	{.name = "active_pg.enable_bloom", .type = AP_SET_BOOL, .var = &active_pg_enable_bloom,
		.desc = "Offers joins whose big side's scan carries a Bloom filter of the small side's keys.",
	.boot = true, .context = PGC_USERSET},
	{.name = "active_pg.enable_parallel_bloom", .type = AP_SET_BOOL, .var = &active_pg_enable_parallel_bloom,
		.desc = "Offers Bloom-filtered scans under Gather, each participant building its own filters.",
	.boot = true, .context = PGC_USERSET},
	{.name = "active_pg.force_bloom", .type = AP_SET_BOOL, .var = &active_pg_force_bloom,
		.desc = "Uses a Bloom-filtered join wherever one is possible, regardless of cost (testing).",
	.boot = false, .context = PGC_USERSET},
	{.name = "active_pg.bloom_join_results", .type = AP_SET_BOOL, .var = &active_pg_bloom_join_results,
		.desc = "Lets the result of a join be the small side of a Bloom filter.",
		.long_desc = "Off: only a table (with its restrictions) is a small side.",
	.boot = true, .context = PGC_USERSET},
	{.name = "active_pg.bloom_max_bytes", .type = AP_SET_INT, .var = &active_pg_bloom_max_bytes,
		.desc = "Largest Bloom filter shipped with a scan.",
		.long_desc = "Filters are sized for the small side's distinct keys, up to this size.",
		.boot = 1024 * 1024, .min = AP_BLOOM_BLOCK_BYTES, .max = (int) AP_BLOOM_BYTES_MAX,
	.context = PGC_USERSET, .flags = GUC_UNIT_BYTE},
	{.name = "active_pg.bloom_bytes", .type = AP_SET_INT, .var = &active_pg_bloom_bytes,
		.desc = "Fixed size of every Bloom filter built (benchmarks); 0 sizes filters from their keys.",
		.long_desc = "8, 16 or 32 bytes is one narrow block; otherwise a multiple of 64 bytes. "
		"Overrides active_pg.bloom_max_bytes at execution; plans do not change with it.",
		.boot = 0, .min = 0, .max = (int) AP_BLOOM_BYTES_MAX,
	.context = PGC_USERSET, .flags = GUC_UNIT_BYTE, .int_check = ap_check_bloom_bytes},
};

/* Give the variable its default, then register the setting. */
static void
ap_define_setting(const ApSetting *s)
{
	switch (s->type)
	{
		case AP_SET_BOOL:
			*(bool *) s->var = s->boot != 0;
			if (s->preload_only && !process_shared_preload_libraries_in_progress)
				return;
			DefineCustomBoolVariable(s->name, s->desc, s->long_desc, (bool *) s->var,
									 s->boot != 0, s->context, s->flags, NULL, NULL, NULL);
			break;
		case AP_SET_INT:
			*(int *) s->var = (int) s->boot;
			if (s->preload_only && !process_shared_preload_libraries_in_progress)
				return;
			DefineCustomIntVariable(s->name, s->desc, s->long_desc, (int *) s->var,
									(int) s->boot, (int) s->min, (int) s->max,
									s->context, s->flags, s->int_check, NULL, NULL);
			break;
		case AP_SET_REAL:
			*(double *) s->var = s->boot;
			if (s->preload_only && !process_shared_preload_libraries_in_progress)
				return;
			DefineCustomRealVariable(s->name, s->desc, s->long_desc, (double *) s->var,
									 s->boot, s->min, s->max,
									 s->context, s->flags, NULL, NULL, NULL);
			break;
		case AP_SET_STRING:
			if (s->preload_only && !process_shared_preload_libraries_in_progress)
				return;
			DefineCustomStringVariable(s->name, s->desc, s->long_desc, (char **) s->var,
									   s->boot_string, s->context, s->flags,
									   s->string_check, NULL, NULL);
			break;
		case AP_SET_ENUM:
			*(int *) s->var = (int) s->boot;
			if (s->preload_only && !process_shared_preload_libraries_in_progress)
				return;
			DefineCustomEnumVariable(s->name, s->desc, s->long_desc, (int *) s->var,
									 (int) s->boot, s->options,
									 s->context, s->flags, NULL, NULL, NULL);
			break;
	}
}

/* Define all GUCs; called once from _PG_init. */
void
ApGucInit(void)
{
	for (size_t i = 0; i < lengthof(ap_settings); i++)
		ap_define_setting(&ap_settings[i]);
	MarkGUCPrefixReserved("active_pg");
}

/*
 * Append to argv, from argc on, the daemon option and value of every setting
 * the table passes to launched daemons and whose value asks for it now;
 * bufs hold the values (nbufs of them, enough for the table).  Returns the
 * new argc.
 */
int
ApDaemonSettingArgs(char **argv, int argc, char (*bufs)[AP_DAEMON_ARG_BYTES], int nbufs)
{
	int			used = 0;

	for (size_t i = 0; i < lengthof(ap_settings); i++)
	{
		const ApSetting *s = &ap_settings[i];
		bool		pass = false;

		if (s->daemon_flag == NULL)
			continue;
		if (s->daemon_pass == AP_PASS_IF_POSITIVE && s->type == AP_SET_INT)
			pass = *(int *) s->var > 0;
		else if (s->daemon_pass == AP_PASS_IF_BELOW_ONE && s->type == AP_SET_REAL)
			pass = *(double *) s->var < 1.0;
		if (!pass)
			continue;
		if (used >= nbufs)
			elog(ERROR, "too many daemon settings for the launcher's buffers");
		if (s->type == AP_SET_INT)
			snprintf(bufs[used], AP_DAEMON_ARG_BYTES, "%d", *(int *) s->var);
		else
			snprintf(bufs[used], AP_DAEMON_ARG_BYTES, "%.4f", *(double *) s->var);
		argv[argc++] = (char *) s->daemon_flag;
		argv[argc++] = bufs[used++];
	}
	return argc;
}
