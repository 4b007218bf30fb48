#!/usr/bin/env python3
"""Scaling experiment of issue 7: throughput vs number of disks, with drives
emulated the way seed 000's prototype was built (slow media, slow disk CPUs, a
shared interconnect), in the two modes over the same throttled disks:

  pages   distributed devices (003's FNBD baseline, Riedel's "traditional
          system"): the disks ship raw pages, the host does all the work
  active  Active Disks: the disks filter and project, the host gets the rest

for the select (Q6's filter), the aggregation (a Q1-style group by, with the
aggregate on the host over the scan) and the two-way join of 000 Figures 6-8.
Each curve is plotted beside the prediction of the cost model (model.c),
read from EXPLAIN (VERBOSE) of the same plan.

The cluster is restarted with active_pg.ndisks = d for each point; the
emulation settings are ALTER SYSTEM settings, so the launcher passes them to
the disks and the planner's model sees the same values.

The emulation is faithful only while the real CPU is not the bottleneck: a
CPU-bound emulated disk keeps a core busy cpu_ratio of its time and the host
needs a core, so d * cpu_ratio + 1 must not exceed the cores.  Points beyond
that are marked (hollow markers, "unfaithful" in the table) and a warning is
printed.

Usage (started by bench/tpcd/scaling, which prepares the venv):
  scaling.py [--disks 1,2,4,8,16] [--media 15] [--cpu-ratio 0.25]
             [--interconnect 60] [--rows 300000] [--runs 2]
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

QUERIES = {
    # Q6's filter, the aggregate on the host over the shipped rows
    "select": "SELECT count(*), sum(l_extendedprice * l_discount) FROM lineitem "
              "WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01' "
              "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
    # 000's Q1 aggregate (Figure 7)
    "aggregation": "SELECT l_returnflag, l_linestatus, sum(l_quantity), "
                   "sum(l_extendedprice * (1 - l_discount)), count(*) FROM lineitem "
                   "WHERE l_shipdate <= date '1998-09-02' GROUP BY 1, 2 ORDER BY 1, 2",
    # 000's two-way join (Figure 8)
    "join": "SELECT sum(l_quantity), count(*) FROM part, lineitem "
            "WHERE p_partkey = l_partkey AND p_name LIKE '%green%'",
}

# The pushed-down nodes of a plan (as bench/tpcd/tpcd.py counts them).
PUSHDOWN_PROVIDERS = ("ActiveScan", "ActiveAgg")

SESSION = ("SET active_pg.force_pushdown = on; SET active_pg.enable_agg = off; "
           "SET active_pg.enable_bloom = off; SET max_parallel_workers_per_gather = 0; "
           "SET active_pg.direct_io = off; SET jit = off; ")


def log(msg):
    print(msg, flush=True)


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
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, check=True, capture_output=True)

    def ensure(self):
        if not os.path.exists(os.path.join(self.datadir, "PG_VERSION")):
            os.makedirs(self.datadir, exist_ok=True)
            if os.geteuid() == 0:
                subprocess.run(["chown", "postgres", os.path.dirname(self.datadir), self.datadir],
                               check=True)
            init = ["initdb", "-D", self.datadir, "-A", "trust", "-U", "postgres"]
            if os.geteuid() == 0:
                init = ["runuser", "-u", "postgres", "--"] + init
            subprocess.run(init, check=True, capture_output=True)
            with open(os.path.join(self.datadir, "postgresql.conf"), "a") as f:
                f.write("port = %d\nunix_socket_directories = '%s'\n"
                        "shared_preload_libraries = 'active_pg'\nshared_buffers = 256MB\n"
                        "jit = off\nfsync = off\n" % (self.args.port, self.args.host))
        status = ["pg_ctl", "-D", self.datadir, "status"]
        if os.geteuid() == 0:
            status = ["runuser", "-u", "postgres", "--"] + status
        if subprocess.run(status, capture_output=True).returncode != 0:
            self.pg_ctl("start")

    def set_disks(self, d, a):
        self.psql("ALTER SYSTEM SET active_pg.ndisks = %d" % d)
        self.psql("ALTER SYSTEM SET active_pg.disk_media_mbps = %d" % a.media)
        self.psql("ALTER SYSTEM SET active_pg.disk_cpu_ratio = %g" % a.cpu_ratio)
        self.psql("ALTER SYSTEM SET active_pg.interconnect_mbps = %d" % a.interconnect)
        self.pg_ctl("restart")
        for _ in range(100):
            r = self.psql("SELECT count(*) FILTER (WHERE alive) FROM active_pg.disks()",
                          db=a.db, check=False)
            if r == str(d):
                return
            time.sleep(0.1)
        sys.exit("the %d disks did not come up" % d)


def load(cl, a):
    if cl.psql("SELECT 1 FROM pg_database WHERE datname = '%s'" % a.db) != "1":
        cl.psql("CREATE DATABASE %s" % a.db)
    cl.psql("CREATE EXTENSION IF NOT EXISTS active_pg", db=a.db)
    state = "rows=%d" % a.rows
    if cl.psql("SELECT obj_description('lineitem'::regclass, 'pg_class')", db=a.db,
               check=False) == state:
        return
    log("loading lineitem (%d rows) and part from %s" % (a.rows, a.data))
    schema = open(os.path.join(HERE, "schema.sql")).read()
    cl.psql(schema, db=a.db)
    for t, limit in (("part", None), ("lineitem", a.rows)):
        src = os.path.join(a.data, t + ".tbl")
        pipeline = "sed 's/|$//' %s%s" % (src, " | head -n %d" % limit if limit else "")
        p = subprocess.Popen(pipeline, shell=True, stdout=subprocess.PIPE)
        subprocess.run(["psql", "-X", "-q", "-h", a.host, "-p", str(a.port), "-U", "postgres",
                        "-d", a.db, "-c", "COPY %s FROM STDIN WITH (FORMAT text, DELIMITER '|')" % t],
                       stdin=p.stdout, check=True)
        p.wait()
    cl.psql("VACUUM ANALYZE part", db=a.db)
    cl.psql("VACUUM ANALYZE lineitem", db=a.db)
    cl.psql("COMMENT ON TABLE lineitem IS '%s'" % state, db=a.db)


def walk(plan):
    yield plan
    for p in plan.get("Plans", []):
        yield from walk(p)


def run_point(cl, a, mode, q):
    """Median execution time (s) of q, the model's predicted time (s; None if
    a pushed-down node carries no prediction) and the bytes scanned."""
    sql = SESSION + "SET active_pg.scan_mode = '%s'; " % mode + \
        "EXPLAIN (ANALYZE, VERBOSE, TIMING OFF, FORMAT JSON) " + QUERIES[q]
    times = []
    pred = None
    inb = 0.0
    for _ in range(a.runs):
        out = cl.psql(sql, db=a.db)
        j = json.loads(out[out.index("["):])
        times.append(j[0]["Execution Time"] / 1000.0)
        nodes = [n for n in walk(j[0]["Plan"]) if n.get("Custom Plan Provider") in PUSHDOWN_PROVIDERS]
        # the scans of a hash join run one after the other: their times add up;
        # a node without a prediction (ActiveAgg has none) leaves the sum unknown
        pred = sum(n["Model Active Time"] for n in nodes) \
            if all("Model Active Time" in n for n in nodes) else None
        # bytes in: the model's, else what the disks read (ANALYZE)
        inb = sum(n.get("Model Bytes In", n.get("Disk Bytes Read", 0.0)) for n in nodes)
    return statistics.median(times), pred, inb


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--disks", default="1,2,4,8,16")
    ap.add_argument("--media", type=int, default=15, help="MB/s per disk")
    ap.add_argument("--cpu-ratio", type=float, default=0.25)
    ap.add_argument("--interconnect", type=int, default=60, help="MB/s, shared")
    ap.add_argument("--rows", type=int, default=300000, help="lineitem rows (SF 0.05 = 300000)")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--queries", default="select,aggregation,join")
    ap.add_argument("--data", default=os.path.join(HERE, "data", "sf0.1"))
    ap.add_argument("--datadir", default="/tmp/active_pg-scaling/data")
    ap.add_argument("--host", default="/tmp")
    ap.add_argument("--port", type=int, default=5451)
    ap.add_argument("--db", default="scaling")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    disks = [int(x) for x in a.disks.split(",")]
    queries = a.queries.split(",")
    cores = os.cpu_count() or 1

    cl = Cluster(a)
    cl.ensure()
    load(cl, a)
    res = []
    t0 = time.time()
    for d in disks:
        faithful = d * a.cpu_ratio + 1 <= cores
        if not faithful:
            log("WARNING: %d disks x cpu ratio %.2f + 1 host core = %.1f cores > %d: the "
                "emulation is not faithful (the disks wait for the real CPU)"
                % (d, a.cpu_ratio, d * a.cpu_ratio + 1, cores))
        cl.set_disks(d, a)
        for q in queries:
            for mode in ("pages", "active"):
                t, pred, inb = run_point(cl, a, mode, q)
                r = dict(disks=d, query=q, mode=mode, seconds=t, predicted=pred,
                         bytes_in=inb, mbps=inb / t / 2**20, pred_mbps=inb / pred / 2**20 if pred else None,
                         faithful=faithful)
                res.append(r)
                log("d=%2d %-11s %-6s %7.3f s %6.1f MB/s  model %7.3f s %6.1f MB/s  %s"
                    % (d, q, mode, t, r["mbps"], pred or 0, r["pred_mbps"] or 0,
                       "" if faithful else "(unfaithful)"))
    log("sweep took %.0f s" % (time.time() - t0))
    # leave the cluster at full speed
    for g in ("disk_media_mbps", "disk_cpu_ratio", "interconnect_mbps", "ndisks"):
        cl.psql("ALTER SYSTEM RESET active_pg.%s" % g)
    cl.pg_ctl("restart")
    write(a, res, disks, queries, cores)


def write(a, res, disks, queries, cores):
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, datetime.date.today().isoformat() + "-scaling")
    with open(base + ".json", "w") as f:
        json.dump(dict(settings=vars(a), cores=cores, results=res), f, indent=1)
    lines = ["# Scaling: throughput vs number of disks (issue 7)", "",
             "Emulated drives: media %d MB/s per disk, disk CPU %.2f x host, interconnect %d MB/s "
             "(shared, enforced at the host); lineitem %d rows (+ part for the join); %d cores; "
             "median of %d runs; throughput = heap bytes scanned / execution time. Model = "
             "extension/model.c's prediction from EXPLAIN (VERBOSE) of the same plan. "
             "Unfaithful = d x cpu ratio + 1 > cores."
             % (a.media, a.cpu_ratio, a.interconnect, a.rows, cores, a.runs), "",
             "| query | disks | mode | measured s | model s | measured MB/s | model MB/s | error | faithful |",
             "|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in res:
        err = (r["predicted"] - r["seconds"]) / r["seconds"] * 100 if r["predicted"] else float("nan")
        lines.append("| %s | %d | %s | %.3f | %.3f | %.1f | %.1f | %+.0f%% | %s |"
                     % (r["query"], r["disks"], r["mode"], r["seconds"], r["predicted"] or 0,
                        r["mbps"], r["pred_mbps"] or 0, err, "yes" if r["faithful"] else "no"))
    lines.append("")
    for q in queries:
        cross = None
        for d in disks:
            p = [r for r in res if r["query"] == q and r["disks"] == d]
            pg = next(r for r in p if r["mode"] == "pages")
            ac = next(r for r in p if r["mode"] == "active")
            if cross is None and ac["seconds"] < pg["seconds"]:
                cross = d
        lines.append("- %s: active disks overtake the server at %s disks (measured); "
                     "000 predicts about host speed / disk speed = %.1f" %
                     (q, cross if cross else "no tested number of", 1 / a.cpu_ratio))
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    log("wrote %s.md/.json" % base)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plot")
        return
    fig, axes = plt.subplots(1, len(queries), figsize=(5 * len(queries), 4))
    if len(queries) == 1:
        axes = [axes]
    for ax, q in zip(axes, queries):
        for mode, color in (("pages", "tab:blue"), ("active", "tab:red")):
            p = [r for r in res if r["query"] == q and r["mode"] == mode]
            xs = [r["disks"] for r in p]
            ax.plot(xs, [r["mbps"] for r in p], "-", color=color,
                    label="%s measured" % ("server (pages)" if mode == "pages" else "active disks"))
            for r in p:
                ax.plot(r["disks"], r["mbps"], "o", color=color,
                        fillstyle="full" if r["faithful"] else "none")
            ax.plot(xs, [r["pred_mbps"] or 0 for r in p], "--", color=color,
                    label="%s model" % mode)
        ax.set_title(q)
        ax.set_xlabel("number of disks")
        ax.set_ylabel("throughput (MB/s)")
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=7)
    fig.suptitle("media %d MB/s, cpu ratio %.2f, interconnect %d MB/s (hollow = unfaithful)"
                 % (a.media, a.cpu_ratio, a.interconnect), fontsize=9)
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=110)
    log("wrote %s.png" % base)


if __name__ == "__main__":
    main()
