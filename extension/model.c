/*
 * model.c
 *	  Riedel's Active Disks throughput model as the cost model of
 *	  active_pg, and the host's interconnect emulation.
 *
 * The model (Riedel's "modified performance model"):
 *
 *	traditional  t = max(N_in/(d*r_d), N_in/r_n, N_in*w/s_cpu)
 *	active       t = max(N_in/(d*r_d'), N_out/r_n', N_in*w/(d*s_cpu')) + serial
 *
 * Time is in seconds; w*s_cpu is expressed directly as the host's time per
 * input byte (ns), so s_cpu' = s_cpu * active_pg.disk_cpu_ratio.
 *
 * What the real machine adds, learned from TPC-H at SF 0.1, where pushdown
 * lost on hash joins whose big input shipped most of its rows and on a correlated
 * subquery's scan re-run per outer row:
 *	- a_host: the host still handles every shipped row (receive, unpack,
 *	  decode into a slot, host quals): rows_out * AP_HOST_ROW_NS plus
 *	  N_out * AP_RECV_NS_PER_BYTE.  The host does this in parallel with the
 *	  disks (a term of the max), but it is never free.
 *	- a_cores: unemulated disks are processes on the host's own cores.  The
 *	  disks' real work (N_in*w, whatever the emulated ratio) plus the host's
 *	  cannot run faster than the cores allow: (N_in*w + host work) / cores.
 *	  With no emulation and 4 disks on a 2-core machine the effective disk
 *	  parallelism is min(ndisks, cores) = 2.
 *	- a_serial: every execution (every rescan too) connects to each disk,
 *	  flushes the relation's buffers and ships the program: measured at
 *	  about 0.5 ms + 0.45 ms per disk on the development machine.  A
 *	  correlated subquery pays it, and the whole disk scan, once per outer
 *	  row; PostgreSQL's rescan cost of a custom path is its total cost, so
 *	  charging both in the total is what makes an index scan win there.
 *	- r_d when the media is not emulated: the disks read with O_DIRECT from
 *	  one real device (or the page cache without direct I/O); all disks share
 *	  its rate (AP_DEVICE_MBPS_*), so the read term is N_in / r_device.
 *	- N_in/(d*r_d) when it is emulated is refined by the stripes: units go to
 *	  the disks round robin, so the busiest disk reads ceil(units/d) of them
 *	  (a table of 13 units on 16 disks keeps 13 busy with one unit each), and
 *	  its bucket (diskd/throttle.c) holds one unit of read-ahead when the scan
 *	  starts on an idle drive.  The disk CPU term is scaled by the same
 *	  imbalance.  For a table of many units per disk this is N_in/(d*r_d).
 *	- the traditional system reads from shared buffers (no read term) unless
 *	  the media is emulated, in which case it is the distributed-device
 *	  baseline over the same drives: the pages cross the (emulated)
 *	  interconnect and the host pays AP_RECV_NS_PER_BYTE for them too.
 *
 * Aggregation at the disks (AP_MODEL_OP_AGG, ActiveAgg):
 *	- N_out is the partial groups the disks ship: with G groups and n rows
 *	  per disk, a disk sees G*(1 - exp(-n/G)) distinct groups; if they do not
 *	  fit its table (disk_agg_mem), it ships a full table at every flush,
 *	  every 'fill' rows, where -G*ln(1 - capacity/G) rows fill an empty table.
 *	  A GROUP BY with about one group per row ships about every row.  Where
 *	  the rows lie in the order of a grouping key (its correlation c in
 *	  PostgreSQL's statistics: partsupp by ps_partkey, lineitem by
 *	  l_orderkey as loaded), a stripe unit holds a run of groups and a group
 *	  reaches a second disk only across a unit's edge: a disk sees G/d
 *	  groups plus one per unit it reads.  Between the two by c^2, as
 *	  cost_index interpolates heap pages (partsupp's 200,000 groups over 4
 *	  disks, SF 1: 514,940 partial groups predicted at random, 209,600 so,
 *	  201,507 shipped).
 *	- the disks' work is N_in*w (w of aggregation) plus AP_DISK_GROUP_NS per
 *	  shipped group, plus AP_DISK_AGG_MISS_NS per aggregated row for the
 *	  share of a disk's groups beyond AP_DISK_AGG_CACHED_GROUPS (a lookup in
 *	  a table of many groups misses the cache), less the share c^2 of rows
 *	  in key order, whose group is the one the row before found.
 *	- the groups cross when a disk finishes its scan (flushed tables while it
 *	  scans): what is shipped at the end, and the host's merge of it (decode,
 *	  lookup, combine), follow the scan instead of overlapping it, then every
 *	  group is finalized.  That tail is a_merge, added to the model's max like the
 *	  start.  The streamed fraction stays in the max.
 *	- past hash_mem, the host's merge table spills (agg_spill.c): the share
 *	  of the shipped partial groups whose keys do not fit is written to
 *	  partitions and merged again after the scan, AP_HOST_SPILL_NS each,
 *	  in a_merge.
 *	- the traditional server runs PostgreSQL's HashAggregate on the host:
 *	  per passing row a lookup and the transition functions, per group a new
 *	  entry and its finalization (AP_HOST_AGG_*), within t_cpu.
 *
 * w, the disks' work per input byte, is a constant per operator measured
 * from the disks' own statistics (Done: cpu_us per bytes_read, the scanning
 * thread's CPU time; the CPU throttle, blocking sends and preemption
 * excluded) on the development machine.  It is not learned from the
 * session's scans: plans must not depend on what ran before.  The disk quals add
 * AP_NS_PER_OP per operator evaluation per tuple (PostgreSQL's own qual cost
 * divided by cpu_operator_cost counts them).
 *
 * Cost units.  The optimizer compares ActiveScan with the host's own plans
 * (Seq Scan, index scans, ...), which PostgreSQL costs in seq_page_cost /
 * cpu_tuple_cost units.  The model predicts the host's Seq Scan of the same
 * input too (t_trad), so the exchange rate between seconds and cost units is
 * taken from that one plan both sides know:
 *		cost(ActiveScan) = cost(Seq Scan) * t_active / t_trad
 * where cost(Seq Scan) = seq_page_cost * pages + (cpu_tuple_cost + quals) *
 * tuples, exactly what cost_seqscan charges.  Then ActiveScan beats the Seq
 * Scan precisely when the model says the disks are faster, and it stands to
 * index scans in the proportion PostgreSQL itself sees between a full scan
 * and an index scan.  The serial term makes a tiny table's pushdown many
 * times the cost of its Seq Scan, and ties (both media-bound) go to the host.
 */
#include "postgres.h"

#include <math.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#include "active_pg.h"
#include "ap_stripe.h"
#include "activescan.h"
#include "model.h"

/*
 * Disk work per input byte at host speed, per operator, relative to the
 * scan's (active_pg.disk_scan_ns_per_byte), net of the quals' operators and
 * of shipping, which the model charges apart.  On the development machine
 * over TPC-H SF1 (the disks' cpu_us per bytes_read): scan 0.35-0.39 ns,
 * aggregation 0.30-0.33 ns.  Nothing here is learned from the session's
 * own scans: the same query with the same statistics and settings gets the
 * same plan in every session, whatever ran before.
 */
static const double ap_w_rel[AP_MODEL_NOPS] = {1.0, 0.875, 1.125};

/*
 * The machine constants a calibration measures (active_pg.calibrate()):
 * settings, so that plans depend on nothing but statistics and settings.
 *   disk_scan_ns_per_byte: a disk's scan per input byte (the scan
 *     operator's w; the others' are fixed ratios of it, ap_w_rel);
 *   host_scan_ns_per_byte: the host's Seq Scan per input byte (visibility,
 *     deform through the buffer manager);
 *   disk_start_ms: per disk and execution (connect, handshake, request).
 * Their variables, defaults and bounds are in guc.c's settings table.
 */

/* One operator (comparison, arithmetic) per tuple, disk or host. */
#define AP_NS_PER_OP				15.0
/* Host work per shipped row: unpack, decode into the slot, ExecScan. */
#define AP_HOST_ROW_NS				150.0
/* PostgreSQL's HashAggregate per input row (hash, lookup), operators apart. */
#define AP_HOST_AGG_ROW_NS			60.0
/* ... and per group (new entry and states, table growth, finalize, return). */
#define AP_HOST_AGG_GROUP_NS		550.0
/*
 * PostgreSQL's GroupAggregate over rows already ordered by its keys, per
 * input row (the key comparisons with the group's first row, the slot's
 * copy), its transitions apart; measured over orders' index-only scan by
 * o_custkey at SF 1 (1.5 million rows, 100,000 groups): count(*) 41 ns a
 * row beyond the scan, count, min and max 52 ns.
 */
#define AP_HOST_GROUPAGG_ROW_NS		30.0
/* ... and per group (finalize, return). */
#define AP_HOST_GROUPAGG_GROUP_NS	100.0
/* ActiveAgg's finalization and return of one merged group. */
#define AP_HOST_FINAL_NS			150.0
/*
 * ActiveAgg's merge past hash_mem (agg_spill.c): a partial group of a key
 * the full table has not is written to a partition, read back and merged
 * into the partition's table.  Measured on TPC-H SF1's GROUP BY l_orderkey
 * (1.5M groups, hash_mem 8 MB, 128 partitions): the spilling merge took no
 * longer than one table of all groups, whose lookups miss the cache; the
 * writes and reads are charged all the same.
 */
#define AP_HOST_SPILL_NS			100.0
/* A disk's work per group it ships (new table entry, encoding), host speed. */
#define AP_DISK_GROUP_NS			450.0
/*
 * A disk's lookup of a tuple's group in a table of many groups, which misses
 * the CPU cache (measured with the batch prefetch of diskd/agg_table.c:
 * GROUP BY o_custkey over orders, 95,000 groups per disk, about 80-100 ns),
 * charged for the share of groups beyond those the cache holds.
 */
#define AP_DISK_AGG_MISS_NS			80.0
#define AP_DISK_AGG_CACHED_GROUPS	4096.0
/* A disk's work per byte of rows it ships (encoding, framing, send), host speed. */
#define AP_DISK_SEND_NS_PER_BYTE	1.6
/* Host work per byte crossing the socket (recv copy, protobuf unpack). */
#define AP_RECV_NS_PER_BYTE			1.0
/* A disk shipping raw pages (pages mode) only copies them. */
#define AP_PAGE_SHIP_NS_PER_BYTE	0.2
/* The real device the unemulated disks share, MB/s: O_DIRECT vs page cache. */
#define AP_DEVICE_MBPS_DIRECT		700.0
#define AP_DEVICE_MBPS_BUFFERED		3000.0
/* The host's Seq Scan per tuple and per attribute deformed (ApModelSeqScanSeconds). */
#define AP_SEQ_TUPLE_NS				40.0
#define AP_SEQ_ATTR_NS				5.5
#define AP_SEQ_PATTERN_NS			140.0
/* The host's index scan (ApModelIndexScanSeconds): probe, heap page, its read, tuple. */
#define AP_IDX_PROBE_NS				2400.0
#define AP_IDX_PAGE_NS				1000.0
#define AP_IDX_MISS_NS				2800.0
#define AP_IDX_TUPLE_NS				200.0
/* Per-execution start: fixed part and per disk (connect, handshake), seconds. */
#define AP_SERIAL_BASE_S			0.0005

#define AP_MB						(1024.0 * 1024.0)

/* Share of a disk's group lookups that miss the cache with g groups in its table. */
static double
ap_agg_miss_share(double g)
{
	return g > AP_DISK_AGG_CACHED_GROUPS ? 1.0 - AP_DISK_AGG_CACHED_GROUPS / g : 0.0;
}

/* Interconnect bucket of this backend: bytes of credit (negative = debt). */
static double ap_ic_tokens = 0.0;
static instr_time ap_ic_last;
static bool ap_ic_started = false;

/*
 * Cores online.  sysconf reads /sys on every call: asked once per process,
 * and ApModelInit asks in the postmaster when the library is preloaded, so
 * that backends inherit the answer instead of paying it in their first plan.
 */
static int	ap_online_cores = 0;

void
ApModelInit(void)
{
	if (ap_online_cores == 0)
	{
		long		n = sysconf(_SC_NPROCESSORS_ONLN);

		ap_online_cores = n > 0 ? (int) n : 1;
	}
}

/* Cores the host and unemulated disks share. */
int
ApModelCores(void)
{
	if (active_pg_host_cores > 0)
		return active_pg_host_cores;
	ApModelInit();
	return ap_online_cores;
}

/* Max of two doubles. */
static inline double
ap_max(double a, double b)
{
	return a > b ? a : b;
}

/*
 * Partial groups the disks of an aggregation ship, and the fraction of them
 * shipped while the disks still scan (memory flushes); see the file header.
 */
static void
ap_model_partials(const ApModelInput *in, int d, double *partials, double *streamed)
{
	double		g = Max(in->groups, 1.0);
	double		rows_pd = Max(in->rows_passed, 0.0) / d;
	double		gpd;			/* distinct groups one disk sees */
	double		cap;			/* groups one disk's table holds */
	double		ship_pd = 0.0;

	gpd = g * -expm1(-rows_pd / g);
	if (in->key_order > 0)
	{
		double		stripe = Max(active_pg_stripe_pages, 1);
		double		units = (double) ap_stripe_nunits((uint64) Max(in->pages, 0.0),
													  (uint32) stripe);
		double		ordered = Min(gpd, g / d + ceil(units / d));
		double		c2 = Min(in->key_order, 1.0);

		gpd = c2 * ordered + (1.0 - c2) * gpd;
	}
	cap = in->disk_group_bytes > 0 ? Max(in->disk_mem_bytes, 0.0) / in->disk_group_bytes : gpd;
	cap = Max(cap, 1.0);
	*streamed = 0.0;
	if (rows_pd <= 0)
		ship_pd = 0.0;
	else if (gpd <= cap || cap >= g)
		ship_pd = gpd;
	else
	{
		/* rows that fill an empty table, then a flush of cap groups each time */
		double		fill = -g * log1p(-cap / g);

		ship_pd = Min(rows_pd, rows_pd * cap / Max(fill, 1.0));
		ship_pd = Max(ship_pd, cap);
		*streamed = 1.0 - cap / ship_pd;
	}
	*partials = ship_pd * d;
}

/*
 * Bytes the busiest of d disks reads: stripe units go round robin, so the
 * first disk holds ceil(units / d) of them (the last one maybe partial).
 */
static double
ap_busiest_disk_bytes(double pages, int d)
{
	double		stripe = Max(active_pg_stripe_pages, 1);
	double		units = (double) ap_stripe_nunits((uint64) Max(pages, 0.0), (uint32) stripe);

	return Min(Max(pages, 0.0), ceil(units / d) * stripe) * BLCKSZ;
}

/*
 * Seconds an emulated drive at r_d bytes/s needs for a scan: the busiest
 * disk's bytes, less what its token bucket holds when the scan starts on an
 * idle drive (diskd/throttle.c: one unit of read-ahead, at least 50 ms of the
 * rate, at most a second's worth).
 */
static double
ap_emulated_read_s(double pages, int d, double r_d)
{
	double		unit = (double) Max(active_pg_stripe_pages, 1) * BLCKSZ;
	double		credit = Min(Max(unit, 0.05 * r_d), r_d);

	return Max(ap_busiest_disk_bytes(pages, d) - credit, 0.0) / r_d;
}

/*
 * A plain active scan's disk work, seconds at host speed: the pass over
 * n_in bytes at w_ns a byte, and the encoding and sending of the n_out
 * bytes of rows it ships.
 */
static double
ap_scan_disk_work(double n_in, double w_ns, double n_out)
{
	return (n_in * w_ns + n_out * AP_DISK_SEND_NS_PER_BYTE) * 1e-9;
}

/*
 * The model's active time from r's terms: the slowest of reading, the disks'
 * CPU, the interconnect and the host while the disks scan (net and host:
 * what overlaps the scan), and the cores all of it needs, plus what follows
 * the scan (the groups' merge) and the start.
 */
static double
ap_model_t_active(const ApModelResult *r, double net, double host)
{
	return ap_max(ap_max(ap_max(r->a_read, r->a_disk_cpu), ap_max(net, host)), r->a_cores) +
		r->a_merge + r->a_serial;
}

/* Predict the active (or pages) path and the traditional server; see file header. */
void
ApModelPredict(const ApModelInput *in, ApModelResult *r)
{
	int			d = Max(in->ndisks, 1);
	double		ratio = active_pg_disk_cpu_ratio > 0 ? active_pg_disk_cpu_ratio : 1.0;
	bool		agg = (in->op == AP_MODEL_OP_AGG);
	double		rows_out = Max(in->rows_out, 0.0);
	double		op_ns;
	double		host_scan_ns;
	double		disk_work;
	double		host_work;
	double		net_during_scan;
	double		imbalance;
	int			op = (in->op >= 0 && in->op < AP_MODEL_NOPS) ? in->op : AP_MODEL_OP_SCAN;

	memset(r, 0, sizeof(*r));
	r->op = op;
	r->cores = ApModelCores();
	r->cpu_ratio = ratio;
	r->n_in = Max(in->pages, 0.0) * BLCKSZ;
	if (agg)
	{
		ap_model_partials(in, d, &r->partials, &r->streamed);
		rows_out = r->partials;
	}
	r->n_out = rows_out * Max(in->width_out, 0.0);
	r->r_d = active_pg_disk_media_mbps > 0 ? active_pg_disk_media_mbps * AP_MB : 0.0;
	r->r_n = active_pg_interconnect_mbps > 0 ? active_pg_interconnect_mbps * AP_MB : 0.0;
	r->emulated = active_pg_disk_media_mbps > 0 || ratio != 1.0;
	op_ns = Max(in->disk_ops, 0.0) * AP_NS_PER_OP * Max(in->tuples, 0.0);
	r->w_ops_ns = r->n_in > 0 ? op_ns / r->n_in : 0.0;
	r->w_ns = active_pg_disk_scan_ns_per_byte * ap_w_rel[op] + r->w_ops_ns;

	/* ---- traditional server ---- */
	host_scan_ns = r->n_in * active_pg_host_scan_ns_per_byte + op_ns;
	if (agg)
		/* PostgreSQL's hash aggregation of the passing rows, then its groups */
		host_scan_ns += Max(in->rows_passed, 0.0) *
			(AP_HOST_AGG_ROW_NS + Max(in->agg_ops, 0.0) * AP_NS_PER_OP) +
			Max(in->groups, 0.0) * AP_HOST_AGG_GROUP_NS;
	else
		host_scan_ns += rows_out * Max(in->host_ops, 0.0) * AP_NS_PER_OP;
	if (r->r_d > 0)
	{
		/* distributed devices: same drives, pages cross the interconnect */
		r->t_read = ap_emulated_read_s(in->pages, d, r->r_d);
		host_scan_ns += r->n_in * AP_RECV_NS_PER_BYTE;
	}
	r->t_net = r->r_n > 0 ? r->n_in / r->r_n : 0.0;
	r->t_cpu = host_scan_ns * 1e-9;
	r->t_trad = ap_max(ap_max(r->t_read, r->t_net), r->t_cpu);

	/* ---- the path itself ---- */
	if (r->r_d > 0)
		r->a_read = r->t_read;
	else
		r->a_read = r->n_in / ((active_pg_direct_io ? AP_DEVICE_MBPS_DIRECT :
								AP_DEVICE_MBPS_BUFFERED) * AP_MB);
	/* the busiest disk's share of the work (stripe units go round robin) */
	imbalance = r->n_in > 0 ? ap_busiest_disk_bytes(in->pages, d) * d / r->n_in : 1.0;
	r->a_serial = AP_SERIAL_BASE_S + active_pg_disk_start_ms * 1e-3 * d;
	r->a_net = r->r_n > 0 ? r->n_out / r->r_n : 0.0;
	net_during_scan = r->a_net;
	if (in->mode == AP_SCAN_MODE_PAGES)
	{
		/* the host does everything on pages that all cross the interconnect */
		disk_work = r->n_in * AP_PAGE_SHIP_NS_PER_BYTE * 1e-9;
		host_work = r->t_cpu + (r->r_d > 0 ? 0.0 : r->n_in * AP_RECV_NS_PER_BYTE * 1e-9);
		r->a_net = r->r_n > 0 ? r->n_in / r->r_n : 0.0;
		net_during_scan = r->a_net;
		r->n_out = r->n_in;
		r->a_host = host_work;
	}
	else if (agg)
	{
		/*
		 * The disks ship their groups when they finish (and on memory
		 * flushes, while scanning): the host merges them as they cross, then
		 * finalizes every group.  What is shipped at the end is serial.
		 */
		double		f = r->streamed;

		/* rows in key order find their group where the row before left it */
		disk_work = (r->n_in * r->w_ns + rows_out * AP_DISK_GROUP_NS +
					 Max(in->rows_passed, 0.0) * AP_DISK_AGG_MISS_NS *
					 ap_agg_miss_share(rows_out / d) *
					 (1.0 - Min(Max(in->key_order, 0.0), 1.0))) * 1e-9;
		/* a partial group is decoded as a shipped row, then looked up */
		r->a_host = (rows_out * (AP_HOST_ROW_NS + AP_HOST_AGG_ROW_NS +
								 Max(in->merge_ops, 0.0) * AP_NS_PER_OP) +
					 r->n_out * AP_RECV_NS_PER_BYTE) * 1e-9;
		host_work = f * r->a_host;
		net_during_scan = f * r->a_net;
		r->a_merge = ap_max((1 - f) * r->a_net, (1 - f) * r->a_host) +
			Max(in->groups, 0.0) * AP_HOST_FINAL_NS * 1e-9;
		/* the partial groups of the keys the full merge table has not */
		if (in->host_mem_bytes > 0 && in->host_group_bytes > 0 &&
			in->groups * in->host_group_bytes > in->host_mem_bytes)
			r->a_merge += rows_out * AP_HOST_SPILL_NS * 1e-9 *
				(1.0 - in->host_mem_bytes / (in->groups * in->host_group_bytes));
	}
	else
	{
		disk_work = ap_scan_disk_work(r->n_in, r->w_ns, r->n_out);
		host_work = (rows_out * (AP_HOST_ROW_NS + Max(in->host_ops, 0.0) * AP_NS_PER_OP) +
					 r->n_out * AP_RECV_NS_PER_BYTE) * 1e-9;
		r->a_host = host_work;
	}
	/* the emulated disk CPU is 1/ratio slower; the real work needs real cores */
	r->a_disk_cpu = ap_max(disk_work * Max(imbalance, 1.0) / (d * ratio),
						   disk_work / Min(d, r->cores));
	r->a_cores = (disk_work + host_work) / r->cores;
	r->t_active = ap_model_t_active(r, net_during_scan, host_work);
}

/*
 * The traditional server's Seq Scan of pages holding tuples with qual_ops
 * operators each, unemulated, as ApModelPredict prices it (every operator
 * on every tuple): the seconds side of the exchange rate.
 */
static double
ap_trad_scan_seconds(double pages, double tuples, double qual_ops)
{
	return (Max(pages, 0.0) * BLCKSZ * active_pg_host_scan_ns_per_byte +
			Max(tuples, 0.0) * Max(qual_ops, 0.0) * AP_NS_PER_OP) * 1e-9;
}

/*
 * A host plan of a relation predicted to take seconds, in cost units at the
 * exchange rate ApModelCost uses for the relation's ActiveScan (its Seq
 * Scan's cost host_cost over the traditional server's time for it), so that
 * the two stand in the ratio of their predicted times.  0 under emulation.
 */
double
ApModelHostCost(double seconds, double pages, double tuples, double qual_ops, double host_cost)
{
	double		t_trad;

	if (active_pg_disk_media_mbps > 0 || active_pg_interconnect_mbps > 0)
		return 0.0;
	t_trad = ap_trad_scan_seconds(pages, tuples, qual_ops);
	return t_trad > 0 ? Max(host_cost, 1.0) * Max(seconds, 0.0) / t_trad : 0.0;
}

/*
 * The least cost any pushed-down scan of a relation can have (see model.h):
 * its start plus the disks' pass over every page, the larger of reading
 * them and the least CPU that takes (the cheapest operator's w, no
 * operator, or a pages-mode copy, on all the cores there are), converted
 * at the exchange rate of the host's Seq Scan as ApModelCost converts.
 * ApModelPredict's t_active is never below that: its read and disk CPU
 * terms only grow with quals, shipped rows, groups, filters and emulation,
 * and a partial path keeps them whole.  The traditional time is bounded from above (every qual
 * operator on every tuple), so the floor is never above the cost
 * ApModelPredict's path gets.  Emulated drives or interconnects slow the
 * traditional server beyond that bound: no floor then.
 */
double
ApModelCostFloor(double pages, double tuples, double qual_ops, double host_cost, int ndisks)
{
	int			d = Max(ndisks, 1);
	double		n_in = Max(pages, 0.0) * BLCKSZ;
	double		w_min = ap_w_rel[0];
	double		read_s;
	double		cpu_s;

	for (int op = 1; op < AP_MODEL_NOPS; op++)
		w_min = Min(w_min, ap_w_rel[op]);
	read_s = n_in / ((active_pg_direct_io ? AP_DEVICE_MBPS_DIRECT : AP_DEVICE_MBPS_BUFFERED) *
					 AP_MB);
	/* pages mode only copies pages */
	cpu_s = n_in * Min(active_pg_disk_scan_ns_per_byte * w_min, AP_PAGE_SHIP_NS_PER_BYTE) *
		1e-9 / Min(d, ApModelCores());
	return ApModelHostCost(AP_SERIAL_BASE_S + active_pg_disk_start_ms * 1e-3 * d +
						   ap_max(read_s, cpu_s),
						   pages, tuples, qual_ops, host_cost);
}

/*
 * The host's own serial Seq Scan of a relation, in seconds, from what it
 * measurably costs rather than from host_scan_ns_per_byte (which prices the
 * host's plans at the exchange rate, see the file header): per tuple its
 * visibility check and slot, per attribute up to the last one the scan
 * needs the deform, per qual operator AP_NS_PER_OP.  Measured warm on the
 * development machine (TPC-H SF 1, max_parallel_workers_per_gather = 0):
 * count(*) of orders 60 ms for 1.5 M tuples (40 ns a tuple, the same for
 * customer, partsupp and lineitem); lineitem with l_receiptdate >
 * l_commitdate 684 ms for 6 M tuples deformed to attribute 13 (114 ns);
 * part deformed to attribute 6, 17 ms for 200,000 (87 ns).  A pattern
 * match (LIKE, a regular expression), which PostgreSQL prices as one
 * operator, costs AP_SEQ_PATTERN_NS: orders' o_comment NOT LIKE
 * '%special%requests%' took 349 ms for the same 1.5 M tuples.  0 under
 * emulated drives or interconnects, where the host's scan is slower.
 */
double
ApModelSeqScanSeconds(double tuples, int last_attno, double qual_ops, double pattern_ops)
{
	double		ops = Max(qual_ops, 0.0);
	double		patterns = Min(Max(pattern_ops, 0.0), ops);

	if (active_pg_disk_media_mbps > 0 || active_pg_interconnect_mbps > 0)
		return 0.0;
	return Max(tuples, 0.0) * (AP_SEQ_TUPLE_NS + AP_SEQ_ATTR_NS * Max(last_attno, 0) +
							   (ops - patterns) * AP_NS_PER_OP +
							   patterns * AP_SEQ_PATTERN_NS) * 1e-9;
}

/*
 * One execution of the host's own index scan at measured speed, in seconds:
 * the descent to the first leaf (AP_IDX_PROBE_NS, paid again at every
 * rescan of a nested loop's inner side), heap_pages visits of heap pages at
 * random places, of which the share miss_share is not in shared_buffers and
 * is read from the page cache into a buffer another page leaves
 * (AP_IDX_MISS_NS more), and per fetched tuple its visibility, deform and
 * qual_ops operators.  Measured warm on the development machine (TPC-H SF 1,
 * 256 MB shared_buffers, serial nested loops over 200,000 random order keys):
 * orders by its primary key, index only 2.4 us a probe, with the heap 1.0 us
 * more (all in shared_buffers); lineitem by l_suppkey, 601 tuples a probe on
 * as many pages, 72% of them read from the page cache, 2.9-3.0 us a tuple,
 * which makes a read 3.8 us.  PostgreSQL prices the latter at a ninth of
 * that: it expects repeated probes to find the pages cached
 * (effective_cache_size), as they are, but in the page cache, whose pages
 * each still cost a read.  0 under emulation, as ApModelSeqScanSeconds.
 */
double
ApModelIndexScanSeconds(double tuples, double heap_pages, double miss_share, double qual_ops)
{
	if (active_pg_disk_media_mbps > 0 || active_pg_interconnect_mbps > 0)
		return 0.0;
	return (AP_IDX_PROBE_NS +
			Max(heap_pages, 0.0) * (AP_IDX_PAGE_NS + Min(Max(miss_share, 0.0), 1.0) * AP_IDX_MISS_NS) +
			Max(tuples, 0.0) * (AP_IDX_TUPLE_NS + Max(qual_ops, 0.0) * AP_NS_PER_OP)) * 1e-9;
}


/*
 * An aggregation on the host beyond its scan: row_ns and ops operators per
 * passing row, group_ns per group.  0 under emulation, as
 * ApModelSeqScanSeconds.
 */
static double
ap_host_agg_seconds(double rows_passed, double groups, double ops, double row_ns,
					double group_ns)
{
	if (active_pg_disk_media_mbps > 0 || active_pg_interconnect_mbps > 0)
		return 0.0;
	return (Max(rows_passed, 0.0) * (row_ns + Max(ops, 0.0) * AP_NS_PER_OP) +
			Max(groups, 0.0) * group_ns) * 1e-9;
}

/*
 * PostgreSQL's HashAggregate on the host, beyond its scan: per passing row a
 * lookup and the transitions (agg_ops operators), per group an entry and its
 * finalization; the constants of the traditional server's prediction.
 */
double
ApModelHostAggSeconds(double rows_passed, double groups, double agg_ops)
{
	return ap_host_agg_seconds(rows_passed, groups, agg_ops, AP_HOST_AGG_ROW_NS,
							   AP_HOST_AGG_GROUP_NS);
}

/*
 * PostgreSQL's GroupAggregate on the host over input ordered by its keys,
 * beyond its scan: per passing row the comparison of the keys and the
 * transitions (trans_ops operators), per group its finalization; no hash
 * table, so no cache misses and no spill.
 */
double
ApModelHostGroupAggSeconds(double rows_passed, double groups, double trans_ops)
{
	return ap_host_agg_seconds(rows_passed, groups, trans_ops, AP_HOST_GROUPAGG_ROW_NS,
							   AP_HOST_GROUPAGG_GROUP_NS);
}

/*
 * A scan's prediction with fewer rows shipped (see model.h).  The disks no
 * longer encode and send the rows they drop: their work is the pass over
 * the pages, the probes and the kept share of the sending.  (Scaling the
 * unfiltered work by the probes alone kept sending every row in it: a
 * filter keeping 0.7% of lineitem's 252 MB of rows at SF 1 was predicted
 * 477 ms of disk CPU, 0.2 s of it sending rows that never left the disk, and
 * index probes half as fast as the scan beat it on cost: TPC-H Q8.)
 */
void
ApModelFilterOutput(const ApModelResult *in, double keep, double extra_disk_s,
					ApModelResult *out)
{
	double		work_before;
	double		work_after;
	double		scale;

	*out = *in;
	if (in->op != AP_MODEL_OP_SCAN || in->a_merge > 0 || in->n_out >= in->n_in)
		return;					/* not a plain active scan (pages mode ships n_in) */
	keep = Min(Max(keep, 0.0), 1.0);
	work_before = ap_scan_disk_work(in->n_in, in->w_ns, in->n_out);
	work_after = ap_scan_disk_work(in->n_in, in->w_ns, in->n_out * keep) +
		Max(extra_disk_s, 0.0);
	scale = work_before > 0 ? work_after / work_before : 1.0;
	out->n_out = in->n_out * keep;
	out->a_net = in->a_net * keep;
	out->a_host = in->a_host * keep;
	out->a_disk_cpu = in->a_disk_cpu * scale;
	out->a_cores = (work_after + out->a_host) / Max(in->cores, 1);
	out->t_active = ap_model_t_active(out, out->a_net, out->a_host);
}

/* Cost units of the prediction, at the exchange rate of the host's Seq Scan. */
double
ApModelCost(const ApModelResult *r, double host_cost)
{
	double		t_trad = Max(r->t_trad, 1e-9);

	return Max(host_cost, 1.0) * r->t_active / t_trad;
}

/* Fields of ApModelResult carried in a plan, in this order. */
#define AP_MODEL_NFIELDS			19

/*
 * The prediction for the plan (EXPLAIN VERBOSE): a List holding one bytea
 * Const of the fields' doubles, exact through copyObject and a parallel
 * worker's plan string, and cheap, since every path the planner costs
 * carries one (printing 19 Float nodes per path halved pgbench's select-only
 * rate).
 */
List *
ApModelToList(const ApModelResult *r)
{
	double		v[AP_MODEL_NFIELDS] = {
		r->t_active, r->a_read, r->a_disk_cpu, r->a_net, r->a_host, r->a_serial,
		r->t_trad, r->r_d, r->r_n, r->cpu_ratio, r->w_ns, r->n_in, r->n_out,
		(double) r->cores, r->a_merge, r->partials, r->streamed, (double) r->op,
		r->w_ops_ns
	};
	bytea	   *b = palloc(VARHDRSZ + sizeof(v));

	SET_VARSIZE(b, VARHDRSZ + sizeof(v));
	memcpy(VARDATA(b), v, sizeof(v));
	return list_make1(makeConst(BYTEAOID, -1, InvalidOid, -1, PointerGetDatum(b), false, false));
}

/* Read back what ApModelToList wrote; false if l is not such a list. */
bool
ApModelFromList(List *l, ApModelResult *r)
{
	double		v[AP_MODEL_NFIELDS];
	Const	   *c;
	bytea	   *b;

	memset(r, 0, sizeof(*r));
	if (list_length(l) != 1 || !IsA(linitial(l), Const))
		return false;
	c = linitial_node(Const, l);
	if (c->consttype != BYTEAOID || c->constisnull)
		return false;
	b = DatumGetByteaPP(c->constvalue);
	if (VARSIZE_ANY_EXHDR(b) != sizeof(v))
		return false;
	memcpy(v, VARDATA_ANY(b), sizeof(v));
	r->t_active = v[0];
	r->a_read = v[1];
	r->a_disk_cpu = v[2];
	r->a_net = v[3];
	r->a_host = v[4];
	r->a_serial = v[5];
	r->t_trad = v[6];
	r->r_d = v[7];
	r->r_n = v[8];
	r->cpu_ratio = v[9];
	r->w_ns = v[10];
	r->n_in = v[11];
	r->n_out = v[12];
	r->cores = (int) v[13];
	r->a_merge = v[14];
	r->partials = v[15];
	r->streamed = v[16];
	r->op = (int) v[17];
	r->w_ops_ns = v[18];
	return true;
}

/* Seconds as "0.42 s" or "3.1 ms". */
static char *
ap_secs(double s)
{
	if (s >= 1.0)
		return psprintf("%.2f s", s);
	if (s >= 0.001)
		return psprintf("%.1f ms", s * 1000.0);
	return psprintf("%.3f ms", s * 1000.0);
}

/*
 * One line for EXPLAIN: the prediction and its terms (the max of read, disk
 * cpu, interconnect and host, plus start; an aggregation adds what follows
 * the scan: "then merge").
 */
char *
ApModelDescribe(const ApModelResult *r, int mode)
{
	return psprintf("%s %s (disk read %s, disk cpu %s, interconnect %s, host %s,%s start %s) vs traditional %s",
					mode == AP_SCAN_MODE_PAGES ? "pages" : "active",
					ap_secs(r->t_active), ap_secs(r->a_read), ap_secs(r->a_disk_cpu),
					ap_secs(r->a_net), ap_secs(r->a_host),
					r->op == AP_MODEL_OP_AGG ?
					psprintf(" then merge %s,", ap_secs(r->a_merge)) : "",
					ap_secs(r->a_serial), ap_secs(r->t_trad));
}

/* EXPLAIN (VERBOSE) of a plan's prediction; see model.h. */
void
ApModelExplain(List *model, int mode, ExplainState *es)
{
	ApModelResult m;

	if (!ApModelFromList(model, &m))
		return;
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ApExplainTextLine(es, "Model");
		appendStringInfo(es->str, "%s\n", ApModelDescribe(&m, mode));
		ApExplainTextLine(es, "Model Inputs");
		appendStringInfo(es->str, "in %s, out %s, media %s, interconnect %s, cpu ratio %.2f, w %.2f ns/B, cores %d",
						 ApFormatBytes(m.n_in), ApFormatBytes(m.n_out),
						 m.r_d > 0 ? psprintf("%.0f MB/s", m.r_d / AP_MB) : "off",
						 m.r_n > 0 ? psprintf("%.0f MB/s", m.r_n / AP_MB) : "off",
						 m.cpu_ratio, m.w_ns, m.cores);
		if (m.op == AP_MODEL_OP_AGG)
			appendStringInfo(es->str, ", partial groups %.0f (%.0f%% during the scan)",
							 m.partials, m.streamed * 100.0);
		appendStringInfoChar(es->str, '\n');
		return;
	}
	ExplainPropertyFloat("Model Active Time", "ms", m.t_active * 1000.0, 3, es);
	ExplainPropertyFloat("Model Disk Read Time", "ms", m.a_read * 1000.0, 3, es);
	ExplainPropertyFloat("Model Disk CPU Time", "ms", m.a_disk_cpu * 1000.0, 3, es);
	ExplainPropertyFloat("Model Interconnect Time", "ms", m.a_net * 1000.0, 3, es);
	ExplainPropertyFloat("Model Host Time", "ms", m.a_host * 1000.0, 3, es);
	if (m.op == AP_MODEL_OP_AGG)
	{
		ExplainPropertyFloat("Model Merge Time", "ms", m.a_merge * 1000.0, 3, es);
		ExplainPropertyFloat("Model Partial Groups", NULL, m.partials, 0, es);
		ExplainPropertyFloat("Model Partials During Scan", NULL, m.streamed, 3, es);
	}
	ExplainPropertyFloat("Model Start Time", "ms", m.a_serial * 1000.0, 3, es);
	ExplainPropertyFloat("Model Traditional Time", "ms", m.t_trad * 1000.0, 3, es);
	ExplainPropertyFloat("Model Bytes In", "bytes", m.n_in, 0, es);
	ExplainPropertyFloat("Model Bytes Out", "bytes", m.n_out, 0, es);
	ExplainPropertyFloat("Model Media Rate", "bytes/s", m.r_d, 0, es);
	ExplainPropertyFloat("Model Interconnect Rate", "bytes/s", m.r_n, 0, es);
	ExplainPropertyFloat("Model CPU Ratio", NULL, m.cpu_ratio, 3, es);
	ExplainPropertyFloat("Model Disk Work", "ns/byte", m.w_ns, 3, es);
	ExplainPropertyInteger("Model Cores", NULL, m.cores, es);
}

/* ---------------- interconnect emulation ---------------- */

/* Refill the bucket for the time since the last call; depth 50 ms of the rate. */
static void
ap_ic_refill(double rate)
{
	instr_time	now;
	double		dt;

	INSTR_TIME_SET_CURRENT(now);
	if (!ap_ic_started)
	{
		ap_ic_started = true;
		ap_ic_last = now;
		ap_ic_tokens = 0.0;
		return;
	}
	dt = INSTR_TIME_GET_DOUBLE(now) - INSTR_TIME_GET_DOUBLE(ap_ic_last);
	ap_ic_last = now;
	if (dt > 0)
		ap_ic_tokens = Min(ap_ic_tokens + dt * rate, rate * 0.05);
}

/* Sleep on the latch while the bucket is in debt (cancel is served). */
void
ApInterconnectWait(void)
{
	double		rate = active_pg_interconnect_mbps * AP_MB;

	if (active_pg_interconnect_mbps <= 0)
		return;
	for (;;)
	{
		long		ms;
		int			rc;

		ap_ic_refill(rate);
		if (ap_ic_tokens >= 0)
			return;
		ms = (long) ceil(-ap_ic_tokens / rate * 1000.0);
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					   Max(ms, 1), PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
		{
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
}

/* Charge bytes read from a disk's socket. */
void
ApInterconnectCharge(size_t bytes)
{
	if (active_pg_interconnect_mbps <= 0)
		return;
	ap_ic_refill(active_pg_interconnect_mbps * AP_MB);
	ap_ic_tokens -= (double) bytes;
}
