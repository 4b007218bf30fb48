#!/usr/bin/env python3
"""Scaling experiment: throughput vs number of disks, with drives
emulated the way Riedel et al.'s prototype was built (slow media, slow disk CPUs, a
shared interconnect), in the two modes over the same throttled disks:

  pages   distributed devices (003's FNBD baseline, Riedel's "traditional
          system"): the disks ship raw pages, the host does all the work
  active  Active Disks: the disks filter, project and aggregate, the host
          gets the rest

for the queries of 000 Figures 6-9:

  select       Q6's filter (Figure 6); the disks filter, the host sums the
               rows they ship (ActiveAgg off, so the query stays a selection)
  aggregation  Q1's group by (Figure 7); in active mode the disks aggregate
               (ActiveAgg), in pages mode PostgreSQL's HashAggregate on the host
  join         the two-way join of part and lineitem (Figure 8)
  q9           TPC-H Q9, the six-way join (Figure 9)

Every relation is scanned by ActiveScan (force_pushdown): in pages mode it
ships pages and the host does everything.  Bloom filters are off (their cost
is not in the model).

The model.  Each pushed-down node carries model.c's prediction (EXPLAIN
VERBOSE: "Model Active Time", and "Model Host Time", the host's share).
The plan's time is predicted from those and the plan's estimated rows
(plan_model below): a pipeline is driven by one scan; the host work of the
joins and aggregations it feeds (hash builds, probes, join output, transition
functions; per-row constants measured on this machine with --calibrate)
overlaps that scan, so a pipeline takes max(scan, host share + its join
work); pipelines run one after the other (a hash join builds before it
probes); the work after a blocking node (sorting, emitting groups) is
serial.  For one scan and no joins this is model.c's prediction itself.

The cluster is restarted with active_pg.ndisks = d for each point; the
emulation settings are ALTER SYSTEM settings, so the launcher passes them to
the disks and the planner's model sees the same values.

Faithfulness.  A CPU-bound emulated disk keeps a core busy cpu_ratio of its
time and the host needs a core, so d * cpu_ratio + 1 <= cores guarantees the
emulation is faithful (static rule; "no" in the table's static column).
What the disks really use is usually much less (a media-bound disk works a
few percent of the time), so each point also records the CPU time the
cluster's processes (postmaster tree: backend, disks) really used during
the query, in cores; a point where that reaches 85% of the cores is marked
CPU-bound: there the disks also queue for the real CPU and the emulation is
not faithful.  The machine is shared: the busy cores of the whole machine
(/proc/stat) are recorded per run too.  A run during which other work used
15% of the cores or more is not quiet: other processes take the CPU the
emulated disks' wake-ups need.  A point's time is the median of its quiet
runs (--quiet-wait waits for quiet moments), or of all runs, marked noisy,
if none was quiet.

Usage (started by bench/tpcd/scaling, which prepares the venv):
  scaling.py [--disks 1,2,4,8,16] [--media 15] [--cpu-ratio 0.25]
             [--interconnect 60] [--rows 300000] [--runs 3]
             [--queries select,aggregation,join,q9] [--quiet-wait 5]
             [--min-quiet 3 --max-runs 15] [--calibrate]
"""

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

QUERIES = {
    "select": "SELECT count(*), sum(l_extendedprice * l_discount) FROM lineitem "
              "WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01' "
              "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
    "aggregation": "SELECT l_returnflag, l_linestatus, sum(l_quantity), "
                   "sum(l_extendedprice * (1 - l_discount)), count(*) FROM lineitem "
                   "WHERE l_shipdate <= date '1998-09-02' GROUP BY 1, 2 ORDER BY 1, 2",
    "join": "SELECT sum(l_quantity), count(*) FROM part, lineitem "
            "WHERE p_partkey = l_partkey AND p_name LIKE '%green%'",
    "q9": open(os.path.join(HERE, "queries", "9.sql")).read(),
}
# 000's figure of each query
FIGURES = {"select": 6, "aggregation": 7, "join": 8, "q9": 9}
# tables each query reads (loaded on demand)
TABLES = {"select": ["lineitem"], "aggregation": ["lineitem"], "join": ["part", "lineitem"],
          "q9": ["nation", "supplier", "part", "partsupp", "orders", "lineitem"]}

# The pushed-down nodes of a plan (as bench/tpcd/tpcd.py counts them).
PUSHDOWN_PROVIDERS = ("ActiveScan", "ActiveAgg")

SESSION = ("SET active_pg.force_pushdown = on; SET active_pg.enable_bloom = off; "
           "SET max_parallel_workers_per_gather = 0; SET active_pg.direct_io = off; "
           "SET jit = off; SET work_mem = '64MB'; ")
# aggregation at the disks only where the query is about it (and only in
# active mode: pages mode never offers ActiveAgg)
QUERY_SESSION = {"select": "SET active_pg.enable_agg = off; ",
                 "aggregation": "SET active_pg.enable_agg = on; ",
                 "join": "SET active_pg.enable_agg = off; ",
                 "q9": "SET active_pg.enable_agg = off; "}

# Host work per row of the nodes above the scans, ns (plan_model).  Measured
# on the development machine (2 cores, PostgreSQL 15, SF 0.05 subset) with
# --calibrate: exclusive times of EXPLAIN ANALYZE of the four queries run on
# the host, minus two clock reads per row and node; rounded within the spread
# of repeated runs on the shared machine (Aggregate 20-600 ns per row
# depending on its transition functions: Q1's numeric sums ~300; Hash Join
# 50-170 per outer row with its output; Hash 100-230; Sort 40-70 x log2).
HOST_NS = {
    "hash_build": 150.0,    # Hash: per input row (hash, insert, copy)
    "probe": 60.0,          # Hash Join: per outer row
    "join_out": 80.0,       # any join: per output row (projection)
    "agg_row": 250.0,       # Aggregate: per input row (transition functions)
    "agg_group": 300.0,     # Aggregate: per group (finalize, emit)
    "sort": 50.0,           # Sort: per row and log2(rows)
    "other": 30.0,          # any other node: per row
}
NOISE = 0.05                # relative margin below which two times tie
FAITHFUL_CPU = 0.85         # cluster CPU / cores above which a point is CPU-bound
BUSY_MACHINE = 0.95         # machine busy / cores above which a point is noisy


def log(msg):
    print(msg, flush=True)


def as_postgres(cmd):
    return (["runuser", "-u", "postgres", "--"] + cmd) if os.geteuid() == 0 else cmd


class Cluster:
    def __init__(self, args):
        self.args = args
        self.datadir = args.datadir

    def psql(self, sql, db="postgres", check=True):
        cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.args.host,
               "-p", str(self.args.port), "-U", "postgres", "-d", db, "-c", sql]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if check and r.returncode != 0:
            sys.exit("psql failed: %s\n%s" % (sql[:200], r.stderr))
        return r.stdout.strip()

    def pg_ctl(self, *a):
        cmd = ["pg_ctl", "-D", self.datadir, "-l", self.datadir + "/../scaling.log", "-w"] + list(a)
        subprocess.run(as_postgres(cmd), check=True, capture_output=True)

    def ensure(self):
        if not os.path.exists(os.path.join(self.datadir, "PG_VERSION")):
            os.makedirs(self.datadir, exist_ok=True)
            if os.geteuid() == 0:
                subprocess.run(["chown", "postgres", os.path.dirname(self.datadir), self.datadir],
                               check=True)
            subprocess.run(as_postgres(["initdb", "-D", self.datadir, "-A", "trust", "-U", "postgres"]),
                           check=True, capture_output=True)
            with open(os.path.join(self.datadir, "postgresql.conf"), "a") as f:
                f.write("port = %d\nunix_socket_directories = '%s'\n"
                        "shared_preload_libraries = 'active_pg'\nshared_buffers = 256MB\n"
                        "jit = off\nfsync = off\n" % (self.args.port, self.args.host))
        if subprocess.run(as_postgres(["pg_ctl", "-D", self.datadir, "status"]),
                          capture_output=True).returncode != 0:
            self.pg_ctl("start")

    def postmaster_pid(self):
        with open(os.path.join(self.datadir, "postmaster.pid")) as f:
            return int(f.readline())

    def set_disks(self, d, a):
        self.psql("ALTER SYSTEM SET active_pg.ndisks = %d" % d)
        self.psql("ALTER SYSTEM SET active_pg.disk_media_mb_per_sec = %d" % a.media)
        self.psql("ALTER SYSTEM SET active_pg.disk_cpu_ratio = %g" % a.cpu_ratio)
        self.psql("ALTER SYSTEM SET active_pg.interconnect_mb_per_sec = %d" % a.interconnect)
        self.pg_ctl("restart")
        for _ in range(100):
            r = self.psql("SELECT count(*) FILTER (WHERE alive) FROM active_pg.disks()",
                          db=a.db, check=False)
            if r == str(d):
                return
            time.sleep(0.1)
        sys.exit("the %d disks did not come up" % d)


# ---------------- CPU accounting (/proc) ----------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(root):
    """CPU seconds (user + system) of root and all its descendants."""
    children = {}
    cpu = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                s = f.read()
        except OSError:
            continue
        fields = s[s.rindex(")") + 2:].split()
        ppid = int(fields[1])
        children.setdefault(ppid, []).append(int(p))
        cpu[int(p)] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    total, stack = 0.0, [root]
    while stack:
        p = stack.pop()
        total += cpu.get(p, 0.0)
        stack.extend(children.get(p, []))
    return total


def wait_for_quiet(a):
    """On a shared machine: wait (at most a.quiet_wait seconds) until the
    whole machine's busy cores over one second drop below a.quiet."""
    deadline = time.time() + a.quiet_wait
    while True:
        b0, t0 = machine_busy_s(), time.time()
        time.sleep(1.0)
        if (machine_busy_s() - b0) / (time.time() - t0) < a.quiet or time.time() >= deadline:
            return


def machine_busy_s():
    """Busy CPU seconds of the whole machine (all cores) from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return (sum(v[:8]) - idle) / CLK_TCK


# ---------------- data ----------------

def load(cl, a, tables):
    if cl.psql("SELECT 1 FROM pg_database WHERE datname = '%s'" % a.db) != "1":
        cl.psql("CREATE DATABASE %s" % a.db)
    cl.psql("CREATE EXTENSION IF NOT EXISTS active_pg", db=a.db)
    state = "rows=%d tables=%s" % (a.rows, ",".join(sorted(tables)))
    if cl.psql("SELECT obj_description('lineitem'::regclass, 'pg_class')", db=a.db,
               check=False) == state:
        return
    log("loading %s (lineitem %d rows) from %s" % (", ".join(sorted(tables)), a.rows, a.data))
    cl.psql(open(os.path.join(HERE, "schema.sql")).read(), db=a.db)
    for t in tables:
        src = os.path.join(a.data, t + ".tbl")
        limit = a.rows if t == "lineitem" else None
        pipeline = "sed 's/|$//' %s%s" % (src, " | head -n %d" % limit if limit else "")
        p = subprocess.Popen(pipeline, shell=True, stdout=subprocess.PIPE)
        subprocess.run(["psql", "-X", "-q", "-h", a.host, "-p", str(a.port), "-U", "postgres",
                        "-d", a.db, "-c", "COPY %s FROM STDIN WITH (FORMAT text, DELIMITER '|')" % t],
                       stdin=p.stdout, check=True)
        p.wait()
    if "orders" in tables:
        # the orders of the loaded lineitems (dbgen writes both in order key order)
        cl.psql("DELETE FROM orders WHERE o_orderkey > (SELECT max(l_orderkey) FROM lineitem)",
                db=a.db)
    for t in tables:
        cl.psql("VACUUM ANALYZE %s" % t, db=a.db)
    cl.psql("COMMENT ON TABLE lineitem IS '%s'" % state, db=a.db)


# ---------------- the plan-level model ----------------

def walk(plan):
    yield plan
    for p in plan.get("Plans", []):
        yield from walk(p)


def readahead_s(n, stripe_pages):
    """Seconds of reading model.c credits a scan for the read-ahead its drives'
    buckets hold when it starts on idle drives (model.c's
    ap_emulated_read_s: one stripe unit, at least 50 ms of the rate)."""
    r_d = n.get("Model Media Rate", 0.0)
    if r_d <= 0:
        return 0.0
    unit = stripe_pages * 8192.0
    credit = min(max(unit, 0.05 * r_d), r_d)
    pages = n.get("Model Bytes In", 0.0) / 8192.0
    d = max(n.get("Disks", 1), 1)
    busiest = min(pages, math.ceil(math.ceil(pages / stripe_pages) / d) * stripe_pages) * 8192.0
    return min(busiest, credit) / r_d


def plan_model(plan, stripe_pages=32):
    """Predicted seconds of a plan (see the module docstring), and the
    pipelines as [scan time, host share + join work] pairs.

    model.c predicts each scan as if it started on idle drives, whose media
    buckets hold a unit of read-ahead; the scans of one plan follow each
    other (or overlap) on the same drives, so only the first gets it: every
    later pushed-down scan is charged its read-ahead back."""
    phases = []                 # [scan seconds, host seconds] per pipeline
    serial = [0.0]
    pushed = [0]

    def work(phase, ns):
        if phase is None:
            serial[0] += ns * 1e-9
        else:
            phases[phase][1] += ns * 1e-9

    def rows(n):
        return max(float(n.get("Plan Rows", 0)), 0.0)

    def model_s(n, key):
        # EXPLAIN gives the model's times in ms
        return n.get(key, 0.0) / 1000.0

    def visit(n):
        kids = n.get("Plans", [])
        kind = n["Node Type"]
        if n.get("Custom Plan Provider") in PUSHDOWN_PROVIDERS:
            host = 0.0 if n["Custom Plan Provider"] == "ActiveAgg" else model_s(n, "Model Host Time")
            t = model_s(n, "Model Active Time")
            if pushed[0] > 0:
                # only where reading is what bounds the scan
                rd = model_s(n, "Model Disk Read Time")
                other = max(model_s(n, "Model Disk CPU Time"), model_s(n, "Model Interconnect Time"),
                            model_s(n, "Model Host Time"))
                t += max(rd + readahead_s(n, stripe_pages) - other, 0.0) - max(rd - other, 0.0)
            pushed[0] += 1
            phases.append([t, host])
            return len(phases) - 1
        if not kids:
            # a scan on the host (not pushed down): its rows as host work
            phases.append([0.0, rows(n) * HOST_NS["other"] * 1e-9])
            return len(phases) - 1
        if kind == "Hash":
            d = visit(kids[0])
            work(d, rows(kids[0]) * HOST_NS["hash_build"])
            return None
        if kind in ("Hash Join", "Merge Join", "Nested Loop"):
            d = visit(kids[0])
            for k in kids[1:]:
                visit(k)
            work(d, rows(kids[0]) * HOST_NS["probe"] + rows(n) * HOST_NS["join_out"])
            return d
        if kind == "Aggregate":
            d = visit(kids[0])
            work(d, rows(kids[0]) * HOST_NS["agg_row"])
            work(None, rows(n) * HOST_NS["agg_group"])
            return None
        if kind == "Sort":
            visit(kids[0])
            r = rows(kids[0])
            work(None, r * max(math.log2(max(r, 2.0)), 1.0) * HOST_NS["sort"])
            return None
        d = visit(kids[0])
        for k in kids[1:]:
            visit(k)
        work(d, rows(n) * HOST_NS["other"])
        return d

    visit(plan)
    return sum(max(s, h) for s, h in phases) + serial[0], phases


def compact_plan(n):
    """What plan_model reads of a plan (kept in the results to recompute it)."""
    c = {k: v for k, v in n.items() if k.startswith("Model") or
         k in ("Node Type", "Custom Plan Provider", "Relation Name", "Disks", "Plan Rows",
               "Actual Rows")}
    if n.get("Plans"):
        c["Plans"] = [compact_plan(k) for k in n["Plans"]]
    return c


def quiet_run(cluster, machine, cores):
    """Was a run measured while other work left the machine alone?"""
    return machine - cluster < (1 - FAITHFUL_CPU) * cores and machine < BUSY_MACHINE * cores


def run_point(cl, a, mode, q):
    """Execution time (s): the median of the runs measured while the shared
    machine was quiet, or of all runs if none was (a noisy point); the
    model's prediction (s; None if a pushed-down node carries none), the
    bytes scanned, and the cores the cluster and the machine used."""
    sql = SESSION + QUERY_SESSION[q] + "SET active_pg.scan_mode = '%s'; " % mode + \
        "EXPLAIN (ANALYZE, VERBOSE, TIMING OFF, FORMAT JSON) " + QUERIES[q]
    times, cl_cores, busy = [], [], []
    pred, inb, nodes, phases, last_plan = None, 0.0, [], [], {}
    pm = cl.postmaster_pid()
    cores = os.cpu_count() or 1
    while len(times) < a.runs or \
            (len(times) < a.max_runs and
             sum(quiet_run(c, b, cores) for c, b in zip(cl_cores, busy)) < a.min_quiet):
        if a.quiet_wait > 0:
            wait_for_quiet(a)
        c0, b0, t0 = tree_cpu_s(pm), machine_busy_s(), time.time()
        out = cl.psql(sql, db=a.db)
        wall = time.time() - t0
        c1, b1 = tree_cpu_s(pm), machine_busy_s()
        j = json.loads(out[out.index("["):])
        last_plan = j[0]["Plan"]
        times.append(j[0]["Execution Time"] / 1000.0)
        # psql's connection and planning are in the wall time, at most a few ms
        cl_cores.append((c1 - c0) / wall)
        busy.append((b1 - b0) / wall)
        nodes = [n for n in walk(j[0]["Plan"]) if n.get("Custom Plan Provider") in PUSHDOWN_PROVIDERS]
        if nodes and all("Model Active Time" in n for n in nodes):
            pred, phases = plan_model(j[0]["Plan"], a.stripe_pages)
        # bytes in: the model's, else what the disks read (ANALYZE)
        inb = sum(n.get("Model Bytes In", n.get("Disk Bytes Read", 0.0)) for n in nodes)
    quiet = [i for i in range(len(times)) if quiet_run(cl_cores[i], busy[i], cores)]
    use = quiet if quiet else list(range(len(times)))
    return dict(seconds=statistics.median([times[i] for i in use]), runs=times,
                quiet_runs=len(quiet), predicted=pred, bytes_in=inb,
                cluster_cores=statistics.median([cl_cores[i] for i in use]),
                machine_cores=statistics.median([busy[i] for i in use]),
                run_cluster_cores=cl_cores, run_machine_cores=busy,
                phases=phases, plan=compact_plan(last_plan),
                pushed=[n.get("Custom Plan Provider") + (" on " + n.get("Relation Name", "?"))
                        for n in nodes])


# ---------------- calibration of HOST_NS ----------------

def timing_overhead_ns():
    r = subprocess.run(["pg_test_timing", "-d", "1"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if "Per loop time" in line:
            return float(line.split(":")[1].split()[0])
    return 30.0


def calibrate(cl, a, queries):
    """Per-row host costs of the nodes above the scans: the queries run on
    the host (active_pg.enable = off), EXPLAIN ANALYZE with timing, exclusive
    time of each node minus two clock reads per row it handles."""
    ovh = timing_overhead_ns()
    acc = {}
    for q in queries:
        for _ in range(a.runs):
            out = cl.psql("SET active_pg.enable = off; SET max_parallel_workers_per_gather = 0; "
                          "SET jit = off; SET work_mem = '64MB'; "
                          "EXPLAIN (ANALYZE, FORMAT JSON) " + QUERIES[q], db=a.db)
            plan = json.loads(out[out.index("["):])[0]["Plan"]
            for n in walk(plan):
                kids = n.get("Plans", [])
                if not kids:
                    continue
                excl = n["Actual Total Time"] * n["Actual Loops"] - \
                    sum(k["Actual Total Time"] * k["Actual Loops"] for k in kids)
                rin = kids[0]["Actual Rows"] * kids[0]["Actual Loops"]
                rout = n["Actual Rows"] * n["Actual Loops"]
                ns = excl * 1e6 - 2 * ovh * (rin + rout)
                key = n["Node Type"]
                per = rin * (max(math.log2(max(rin, 2)), 1) if key == "Sort" else 1)
                cost = n["Total Cost"] - sum(k["Total Cost"] for k in kids)
                acc.setdefault(key, []).append((ns, per, cost))
    log("timing overhead %.1f ns per clock read" % ovh)
    for k, v in sorted(acc.items()):
        ns = sum(x[0] for x in v)
        per = sum(x[1] for x in v)
        cost = sum(x[2] for x in v)
        log("%-12s %8.1f ns per input row%s, %8.1f ns per cost unit   (%d samples, %.1f ms)"
            % (k, ns / max(per, 1), " x log2" if k == "Sort" else "", ns / max(cost, 1e-9),
               len(v), ns / 1e6))


# ---------------- the sweep ----------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--disks", default="1,2,4,8,16")
    ap.add_argument("--media", type=int, default=15, help="MB/s per disk")
    ap.add_argument("--cpu-ratio", type=float, default=0.25)
    ap.add_argument("--interconnect", type=int, default=60, help="MB/s, shared")
    ap.add_argument("--rows", type=int, default=300000, help="lineitem rows (SF 0.05 = 300000)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", default="select,aggregation,join,q9")
    ap.add_argument("--data", default=os.path.join(HERE, "data", "sf0.1"))
    ap.add_argument("--datadir", default="/tmp/active_pg-scaling/data")
    ap.add_argument("--host", default="/tmp")
    ap.add_argument("--port", type=int, default=5451)
    ap.add_argument("--db", default="scaling")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--tag", default="", help="suffix of the result files")
    ap.add_argument("--quiet-wait", type=float, default=0.0,
                    help="before each run, wait up to this many seconds for the shared machine "
                         "to be quiet (fewer than --quiet busy cores)")
    ap.add_argument("--quiet", type=float, default=0.5)
    ap.add_argument("--min-quiet", type=int, default=0,
                    help="keep running a point (up to --max-runs) until this many runs were quiet")
    ap.add_argument("--max-runs", type=int, default=0)
    ap.add_argument("--calibrate", action="store_true",
                    help="measure the host's per-row costs of the plan model (HOST_NS) and exit")
    a = ap.parse_args()
    disks = [int(x) for x in a.disks.split(",")]
    queries = a.queries.split(",")
    for q in queries:
        if q not in QUERIES:
            sys.exit("unknown query %s (one of %s)" % (q, ", ".join(QUERIES)))
    cores = os.cpu_count() or 1

    cl = Cluster(a)
    cl.ensure()
    load(cl, a, sorted({t for q in QUERIES for t in TABLES[q]}))
    a.stripe_pages = int(cl.psql("SHOW active_pg.stripe_pages", db=a.db))
    if a.calibrate:
        calibrate(cl, a, queries)
        return
    res = []
    t0 = time.time()
    for d in disks:
        static = d * a.cpu_ratio + 1 <= cores
        if not static:
            log("WARNING: %d disks x cpu ratio %.2f + 1 host core = %.1f cores > %d: the "
                "emulation is faithful only while the disks' real work leaves the host a core "
                "(checked per point from /proc)" % (d, a.cpu_ratio, d * a.cpu_ratio + 1, cores))
        cl.set_disks(d, a)
        for q in queries:
            for mode in ("pages", "active"):
                r = run_point(cl, a, mode, q)
                r.update(disks=d, query=q, mode=mode, static_faithful=static)
                r["mbps"] = r["bytes_in"] / r["seconds"] / 2**20
                r["pred_mbps"] = r["bytes_in"] / r["predicted"] / 2**20 if r["predicted"] else None
                r["cpu_bound"] = r["cluster_cores"] >= FAITHFUL_CPU * cores
                r["noisy"] = r["quiet_runs"] == 0
                res.append(r)
                log("d=%2d %-11s %-6s %7.3f s %6.1f MB/s  model %7.3f s %6.1f MB/s  cpu %.2f machine %.2f%s%s"
                    % (d, q, mode, r["seconds"], r["mbps"], r["predicted"] or 0, r["pred_mbps"] or 0,
                       r["cluster_cores"], r["machine_cores"],
                       "  CPU-BOUND (unfaithful)" if r["cpu_bound"] else "",
                       "  (noisy)" if r["noisy"] else ""))
    log("sweep took %.0f s" % (time.time() - t0))
    # leave the cluster at full speed
    for g in ("disk_media_mb_per_sec", "disk_cpu_ratio", "interconnect_mb_per_sec", "ndisks"):
        cl.psql("ALTER SYSTEM RESET active_pg.%s" % g)
    cl.pg_ctl("restart")
    write(a, res, disks, queries, cores)


# ---------------- the report ----------------

def crossover(xs, pages, active):
    """Where active disks pull ahead of the server: the first tested d at
    which they are faster by more than NOISE, and the d at which the speedup
    pages/active reaches 1 + NOISE, interpolated on log2 d (None, None if it
    never does)."""
    ratio = [p / ac for p, ac in zip(pages, active)]
    for i, r in enumerate(ratio):
        if r > 1 + NOISE:
            if i == 0:
                return xs[0], float(xs[0])
            l0, l1 = math.log(ratio[i - 1]), math.log(r)
            f = (math.log(1 + NOISE) - l0) / (l1 - l0) if l1 > l0 else 1.0
            f = min(max(f, 0.0), 1.0)
            return xs[i], 2 ** (math.log2(xs[i - 1]) + f * (math.log2(xs[i]) - math.log2(xs[i - 1])))
    return None, None


def fmt_cross(c):
    first, cross = c
    if first is None:
        return "none of the tested counts"
    return "%d disks (speedup reaches %.2f at d = %.1f)" % (first, 1 + NOISE, cross)


def write(a, res, disks, queries, cores):
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, datetime.date.today().isoformat() + "-scaling" + a.tag)
    with open(base + ".json", "w") as f:
        json.dump(dict(settings=vars(a), cores=cores, host_ns=HOST_NS, results=res), f, indent=1)
    lines = ["# Scaling: throughput vs number of disks", "",
             "Emulated drives: media %d MB/s per disk, disk CPU %.2f x host, interconnect %d MB/s "
             "(shared, enforced at the host); lineitem %d rows (+ part, partsupp, supplier, nation "
             "and the matching orders for the joins); %d cores; %d runs per point, more (up to %d) "
             "until %d were quiet; measured s = "
             "the median of the quiet runs (other work on the shared machine under %.1f cores "
             "during the run; quiet = how many), or of all runs if none was (noisy); spread = "
             "(max - min) / median of all runs; throughput = heap bytes scanned / execution time.  Model = extension/model.c's predictions from "
             "EXPLAIN (VERBOSE) of the same plan, combined over the plan by bench/tpcd/scaling.py's "
             "plan_model (pipelines driven by one scan each, host join work from the plan's "
             "estimated rows).  cpu = cores the cluster (backend and disks) really used during the "
             "query; machine = busy cores of the whole (shared) machine.  static = d x cpu ratio + 1 "
             "<= cores (faithful even if every disk were CPU-bound)."
             % (a.media, a.cpu_ratio, a.interconnect, a.rows, cores, a.runs,
                max(a.max_runs, a.runs), a.min_quiet, (1 - FAITHFUL_CPU) * cores), "",
             "| query | disks | mode | measured s | quiet | spread | model s | measured MB/s "
             "| model MB/s | error | cpu | machine | static | faithful |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in res:
        err = (r["predicted"] - r["seconds"]) / r["seconds"] * 100 if r["predicted"] else float("nan")
        r["error"] = err
        spread = (max(r["runs"]) - min(r["runs"])) / r["seconds"] * 100
        lines.append("| %s | %d | %s | %.3f | %d/%d | %.0f%% | %.3f | %.1f | %.1f | %+.0f%% | %.2f | %.2f "
                     "| %s | %s |"
                     % (r["query"], r["disks"], r["mode"], r["seconds"], r["quiet_runs"],
                        len(r["runs"]), spread, r["predicted"] or 0,
                        r["mbps"], r["pred_mbps"] or 0, err, r["cluster_cores"], r["machine_cores"],
                        "yes" if r["static_faithful"] else "no",
                        "no (CPU-bound)" if r["cpu_bound"] else
                        ("noisy" if r["noisy"] else "yes")))
    lines += ["", "## Model vs measurement", ""]
    ok = [r for r in res if r["predicted"] and not r["cpu_bound"]]
    within = [r for r in ok if abs(r["error"]) <= 15]
    lines.append("Points where the emulation is faithful (not CPU-bound): %d; within 15%% of the "
                 "model: %d." % (len(ok), len(within)))
    for r in ok:
        if abs(r["error"]) > 15:
            lines.append("- outside 15%%: %s, %d disks, %s: measured %.3f s, model %.3f s (%+.0f%%)%s"
                         % (r["query"], r["disks"], r["mode"], r["seconds"], r["predicted"],
                            r["error"], " (noisy)" if r["noisy"] else ""))
    bad = [r for r in res if r["cpu_bound"]]
    if bad:
        lines.append("")
        lines.append("CPU-bound (unfaithful) points: " + ", ".join(
            "%s/%d/%s (%.2f cores)" % (r["query"], r["disks"], r["mode"], r["cluster_cores"])
            for r in bad))
    lines += ["", "## Crossover", "",
              "First number of disks at which active disks beat the server by more than %d%%, "
              "and the number of disks at which the speedup reaches 1.05 (interpolated on log2 d). "
              "000 predicts the crossover at about host speed / disk speed = %.1f when the "
              "server's CPU is its limit; when the interconnect is, 001's model puts it at "
              "r_n / r_d = %.1f." % (NOISE * 100, 1 / a.cpu_ratio, a.interconnect / a.media), ""]
    for q in queries:
        pg = [r for r in res if r["query"] == q and r["mode"] == "pages"]
        ac = [r for r in res if r["query"] == q and r["mode"] == "active"]
        xs = [r["disks"] for r in pg]
        meas = crossover(xs, [r["seconds"] for r in pg], [r["seconds"] for r in ac])
        line = "- %s (000 Figure %d): measured %s" % (q, FIGURES[q], fmt_cross(meas))
        if all(r["predicted"] for r in pg + ac):
            model = crossover(xs, [r["predicted"] for r in pg], [r["predicted"] for r in ac])
            line += "; model %s" % fmt_cross(model)
        lines.append(line)
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    log("wrote %s.md/.json" % base)
    plot(a, res, queries, base)


def plot(a, res, queries, base):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plot")
        return
    ncols = min(len(queries), 2)
    nrows = (len(queries) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.5 * ncols, 4.2 * nrows), squeeze=False)
    for ax in axes.flat[len(queries):]:
        ax.set_visible(False)
    for ax, q in zip(axes.flat, queries):
        for mode, color in (("pages", "tab:blue"), ("active", "tab:red")):
            p = [r for r in res if r["query"] == q and r["mode"] == mode]
            xs = [r["disks"] for r in p]
            ax.plot(xs, [r["mbps"] for r in p], "-", color=color,
                    label="%s measured" % ("server (pages)" if mode == "pages" else "active disks"))
            for r in p:
                ax.plot(r["disks"], r["mbps"], "x" if r["cpu_bound"] else "o", color=color,
                        fillstyle="full" if r["static_faithful"] else "none")
            ax.plot(xs, [r["pred_mbps"] or 0 for r in p], "--", color=color,
                    label="%s model" % mode)
        ax.set_title("%s (000 Fig. %d)" % (q, FIGURES[q]))
        ax.set_xlabel("number of disks")
        ax.set_ylabel("throughput (MB/s)")
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=7)
    fig.suptitle("media %d MB/s, cpu ratio %.2f, interconnect %d MB/s "
                 "(hollow: d x ratio + 1 > cores; x: CPU-bound)"
                 % (a.media, a.cpu_ratio, a.interconnect), fontsize=9)
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=110)
    log("wrote %s.png" % base)


if __name__ == "__main__":
    main()
