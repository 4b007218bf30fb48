/*
 * model.h
 *	  Riedel's Active Disks throughput model as active_pg's cost model.
 *
 *	traditional  t = max(N_in/(d*r_d), N_in/r_n, N_in*w/s_cpu)
 *	active       t = max(N_in/(d*r_d'), N_out/r_n', N_in*w/(d*s_cpu')) + serial
 *
 * extended with what the real machine adds (see model.c): the host's work
 * on the rows the disks ship, and the cores the disks share with the host
 * when they are processes on the same machine.
 *
 * Callers (ActiveScan in planner.c, ActiveAgg in agg_planner.c; the Bloom
 * paths may use it too) fill an ApModelInput from the planner's estimates, call
 * ApModelPredict, and turn the prediction into PostgreSQL cost units with
 * ApModelCost.
 */
#ifndef AP_MODEL_H
#define AP_MODEL_H

#include "postgres.h"

#include "nodes/pg_list.h"

#include "active_pg.pb-c.h"

/*
 * The machine constants of the model, settings measured by
 * active_pg.calibrate() (defaults in guc.c's table: the development
 * machine, 2 cores).
 */
extern double active_pg_disk_scan_ns_per_byte;	/* active_pg.disk_scan_ns_per_byte */
extern double active_pg_host_scan_ns_per_byte;	/* active_pg.host_scan_ns_per_byte */
extern double active_pg_disk_start_ms;	/* active_pg.disk_start_ms */

/* The operator the disks run: each has its own cycles-per-byte estimate. */
typedef enum ApModelOp
{
	AP_MODEL_OP_SCAN = 0,		/* visibility, filter, projection */
	AP_MODEL_OP_AGG,			/* the above plus grouping and aggregation */
	AP_MODEL_OP_BLOOM,			/* the above plus Bloom probes */
	AP_MODEL_NOPS
} ApModelOp;

typedef struct ApModelInput
{
	ApModelOp	op;
	int			mode;			/* AP_SCAN_MODE_*: active, or pages (host does all) */
	int			ndisks;
	double		pages;			/* N_in, in heap pages */
	double		tuples;			/* tuples in those pages */
	double		disk_ops;		/* operator evaluations per tuple at the disk */
	double		rows_out;		/* rows the disks ship (AGG: computed by the model) */
	double		width_out;		/* bytes of one shipped row (AGG: one partial group) */
	double		host_ops;		/* host operator evaluations per shipped row */

	/* AP_MODEL_OP_AGG only */
	double		rows_passed;	/* tuples that pass the disk quals and are aggregated */
	double		groups;			/* groups of the whole input */
	double		key_order;		/* 0..1: how far the rows lie in key order (correlation^2) */
	double		agg_ops;		/* host operator evaluations per aggregated row */
	double		merge_ops;		/* host operator evaluations per partial group merged */
	double		disk_group_bytes;	/* one group in a disk's hash table */
	double		disk_mem_bytes; /* a disk's hash table budget */
	double		host_group_bytes;	/* one group in the host's merge table */
	double		host_mem_bytes; /* the merge table's budget (hash_mem) */
} ApModelInput;

typedef struct ApModelResult
{
	/* the chosen path: active disks (or distributed devices in pages mode) */
	double		t_active;		/* seconds, serial included */
	double		a_read;			/* N_in / (d * r_d') */
	double		a_disk_cpu;		/* N_in * w / (d * s_cpu'), bounded by real cores */
	double		a_net;			/* N_out / r_n' */
	double		a_host;			/* host work on the shipped rows */
	double		a_cores;		/* all real CPU work over the real cores */
	double		a_serial;		/* per-scan start: connect, flush, ship */
	double		a_merge;		/* AGG: after the disks finish, the groups still to
								 * cross and be merged, and finalization */
	/* the traditional server: the host scans (over the same drives if emulated) */
	double		t_trad;
	double		t_read;
	double		t_net;
	double		t_cpu;
	/* the resolved system parameters */
	double		r_d;			/* per-disk media rate, bytes/s (0 = not limiting) */
	double		r_n;			/* interconnect, bytes/s (0 = off) */
	double		cpu_ratio;		/* s_cpu' / s_cpu */
	double		w_ns;			/* disk work per input byte at host speed, ns */
	double		w_ops_ns;		/* the part of w_ns that is the disk quals' operators */
	double		n_in;			/* bytes */
	double		n_out;			/* bytes */
	double		partials;		/* AGG: partial groups the disks ship */
	double		streamed;		/* AGG: fraction of them shipped during the scan */
	int			op;				/* ApModelOp */
	int			cores;
	bool		emulated;		/* media or CPU emulation set */
} ApModelResult;

/* Predict both systems' time for one scan. */
/*
 * A lower bound of the cost of any ActiveScan of a relation of pages and
 * tuples whose quals cost qual_ops operators per tuple and whose Seq Scan
 * costs host_cost, with ndisks disks: the planner leaves a relation alone
 * when it already has a much cheaper path (point lookups, small scans).
 * 0 when there is no such bound (emulation).
 */
double		ApModelCostFloor(double pages, double tuples, double qual_ops, double host_cost,
							 int ndisks);
void		ApModelPredict(const ApModelInput *in, ApModelResult *out);

/*
 * Seconds of the host's own serial Seq Scan of tuples deformed up to
 * attribute last_attno with qual_ops operators per tuple, pattern_ops of
 * them pattern matches, at measured speed (not at the exchange rate
 * ApModelCost uses); 0 under emulation.
 */
double		ApModelSeqScanSeconds(double tuples, int last_attno, double qual_ops,
								  double pattern_ops);
/*
 * Seconds of one execution of the host's own index scan fetching tuples
 * from heap_pages page visits, miss_share of them read from the page cache,
 * with qual_ops operators per tuple, at measured speed; 0 under emulation.
 */
double		ApModelIndexScanSeconds(double tuples, double heap_pages, double miss_share,
									double qual_ops);
/*
 * Cost units of a host plan of a relation taking seconds, at the exchange
 * rate of the relation's ActiveScan (host_cost: its Seq Scan's cost); 0
 * under emulation.
 */
double		ApModelHostCost(double seconds, double pages, double tuples, double qual_ops,
							double host_cost);
/* Seconds of PostgreSQL's HashAggregate above that scan (see model.c). */
double		ApModelHostAggSeconds(double rows_passed, double groups, double agg_ops);
/* PostgreSQL's GroupAggregate over input ordered by its keys, beyond its scan. */
double		ApModelHostGroupAggSeconds(double rows_passed, double groups, double trans_ops);

/*
 * PostgreSQL cost of the prediction: host_cost is what PostgreSQL charges
 * for the host's own plan of the same input (a Seq Scan: seq_page_cost per
 * page plus cpu_tuple_cost and the quals per tuple); the path costs
 * host_cost * t_active / t_trad.  See model.c for why.
 */
double		ApModelCost(const ApModelResult *r, double host_cost);

/*
 * The prediction of a scan whose disks also drop rows before shipping them
 * (Bloom filters): of the rows it shipped, the share keep still crosses and
 * reaches the host, and each disk does extra_disk_s more work in total (the
 * probes, at host speed).  Scans in active mode only; anything else is
 * copied unchanged.
 */
void		ApModelFilterOutput(const ApModelResult *in, double keep,
								double extra_disk_s, ApModelResult *out);

/*
 * The prediction as a List of Float nodes (plan-copyable, for EXPLAIN) and
 * back.
 */
List	   *ApModelToList(const ApModelResult *r);
bool		ApModelFromList(List *l, ApModelResult *r);

/* "active 0.42 s (disk read ..., ...) vs traditional 1.10 s", palloc'd. */
char	   *ApModelDescribe(const ApModelResult *r, int mode);

/*
 * EXPLAIN (VERBOSE) of a plan's prediction (a list from ApModelToList):
 * "Model:" and "Model Inputs:" lines in text, properties otherwise.  Nothing
 * if model is not such a list.
 */
struct ExplainState;
void		ApModelExplain(List *model, int mode, struct ExplainState *es);

/* Cores the host and unemulated disks share (active_pg.host_cores or sysconf). */
int			ApModelCores(void);
/* Ask the machine what ApModelCores needs (the postmaster, for its backends). */
void		ApModelInit(void);

/* ---------- interconnect emulation (model.c) ---------- */

/*
 * Token bucket of active_pg.interconnect_mb_per_sec for this backend: before
 * reading a disk's socket, ApInterconnectWait sleeps on the latch while the
 * bucket is in debt (interrupts are served); after reading, charge the bytes.
 * Both are no-ops when the setting is 0.
 */
void		ApInterconnectWait(void);
void		ApInterconnectCharge(size_t bytes);

#endif							/* AP_MODEL_H */
