#!/usr/bin/env python3
"""TPC-D benchmark driver for active_pg.  Started by bench/tpcd/run.

One run compares, on the same data, for each TPC-H query Q1-Q22 (--modes):
  serial         stock PostgreSQL, active_pg.enable = off, max_parallel_workers_per_gather = 0
  parallel       stock PostgreSQL, active_pg.enable = off, 2 workers per gather
  active         the extension's and PostgreSQL's defaults (2 workers per gather): the
                 optimizer decides what to push down and whether Gather's participants
                 share the disks' work
  active-serial  the same without workers
  active-direct  as active, the disks reading with O_DIRECT (cold-disk emulation)
  device         distributed devices (003's FNBD baseline, active_pg.scan_mode = 'pages'):
                 every full scan ships raw pages from the disks and the host does all the
                 work; index scans stay on the host; 2 workers per gather
Warm timings are the median of --runs after one warm-up, the modes taking turns
run by run (each mode keeps its own session for a query's runs); --cold adds one
run per query and mode after restarting the cluster and dropping the kernel page
cache.

Checks built in: every mode's full result set must equal the serial one, as
text, row by row (numeric columns exactly).  Columns of type real / double
precision compare with a relative tolerance of FLOAT_REL_TOL.  Rows compare in
order; if only the order of rows differs (ties in ORDER BY), the result is
accepted and marked "ties".  Any other difference prints a diff and makes the
run exit with status 1 after writing the report.

Only the Python standard library is used here; matplotlib (from the venv) is
imported only to draw the plots.
"""

import argparse
import csv
import datetime
import difflib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

from tpcd_common import (FIELD_SEP, FLOAT_REL_TOL, HERE, MODES, PUSHDOWN_PROVIDERS, TABLES,
                         PsqlSession, as_pguser, die, log, pg_initdb, pg_stop, psql,
                         run_interleaved, run_session)
from tpcd_pgbench import PGBENCH_MIX, TPCB_CHECKS, pgbench_streams, tpcb_concurrent


# Selectivity savings reported by the papers, for comparison with our
# reduction factor (disk bytes read / bytes shipped to the host).
#
# 000 = Riedel et al., seed /work/shared/seeds/000_581f78cd10fe0f57.txt,
# Table 5 "Details of selected TPC-D queries" (SF 1 validation data,
# PostgreSQL 6.5 plans).  The seed's text extraction lists the table column by
# column; the cells below were re-assembled from it: lineitem/order "scan"
# savings (projection only), "qual" (qualification), "agg" (aggregation).  The
# savings are not cumulative (Q1 overall: 2.3 x 1.1 x 6104 > 15,000, as the
# caption says, which confirms the Q1 cells).  Q5's join saving of 490.7 is
# the "near 500 times for Q5" of the text.  TPC-D's Q13 (sales clerk) is not
# TPC-H's Q13, so that row does not compare.
# 001 = the slides, seed /work/shared/seeds/001_875614f020bf5e6e.txt, table
# "TPC-D Benchmark" (SF 1): "scan only" and "entire query" selectivity.
PAPER = {
    1: "000: lineitem scan 2.3, qual 1.1, agg 6104; 001: scan 3.3, query 4.8M",
    3: "000: orders scan 3.8, qual 2.1, agg 81",
    4: "000: orders scan 2.9, qual 30.5, agg 41",
    5: "000: lineitem scan 3.6, orders 3.8, join 490.7, agg 9; 001: scan 3.5, query 9.7M",
    6: "000: lineitem scan 3.2, qual 68.6, agg 73",
    7: "001: scan 4.0, query 3.5M",
    9: "000: lineitem scan 2.8, orders 4.5, agg 75; 001: scan 2.2, query 154,000",
    10: "000: lineitem scan 3.2, orders 4.5, qual 4.6, agg 1088",
    11: "001: scan 7.2, query 453,000",
    13: "(000's Q13 is TPC-D's clerk query: qual 1250, agg 1.0; not comparable)",
    17: "000: lineitem scan 3.6, agg 5.8",
}

# ---------------------------------------------------------------- cluster --

class Cluster:
    """Either our own temporary cluster (initdb under /tmp) or a given DSN."""

    def __init__(self, args):
        self.dsn = args.dsn
        self.own = args.dsn is None
        self.port = args.port
        self.disks = args.disks
        self.jit = args.jit
        self.datadir = args.datadir
        self.db = "tpcd"
        self.user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")

    def conn(self, db=None):
        """Connection argument for psql/pgbench (-d)."""
        if self.own:
            return "host=/tmp port=%d user=%s dbname=%s" % (self.port, self.user, db or self.db)
        if db and db != self.db:
            return self.dsn + " dbname=" + db
        return self.dsn

    def running(self):
        r = subprocess.run(as_pguser(["pg_ctl", "-D", self.datadir, "status"]),
                           capture_output=True, text=True)
        return r.returncode == 0

    def setup(self):
        if not self.own:
            return
        if self.running():
            self.stop()
        if not os.path.exists(os.path.join(self.datadir, "PG_VERSION")):
            log("initdb %s" % self.datadir)
            pg_initdb(self.datadir, self.user, "active_pg_tpcd.conf")
        conf = os.path.join(self.datadir, "active_pg_tpcd.conf")
        with open(conf, "w") as f:
            f.write("""port = %d
unix_socket_directories = '/tmp'
listen_addresses = ''
shared_preload_libraries = 'active_pg'
active_pg.ndisks = %d
shared_buffers = 256MB
max_parallel_workers_per_gather = 2
max_wal_size = 4GB
jit = %s
""" % (self.port, self.disks, self.jit))
        if os.geteuid() == 0:
            shutil.chown(conf, "postgres", "postgres")
        pgconf = os.path.join(self.datadir, "postgresql.conf")
        with open(pgconf) as f:
            have = "include_if_exists = 'active_pg_tpcd.conf'" in f.read()
        if not have:
            with open(pgconf, "a") as f:
                f.write("include_if_exists = 'active_pg_tpcd.conf'\n")
        self.start()
        psql("CREATE EXTENSION IF NOT EXISTS active_pg", self.conn("postgres"))
        r = psql("SELECT 1 FROM pg_database WHERE datname = 'tpcd'", self.conn("postgres"))
        if r.stdout.strip() != "1":
            psql("CREATE DATABASE tpcd", self.conn("postgres"))

    def ensure_extension(self, db=None):
        """The planner offers ActiveScan only in databases that have the extension."""
        psql("CREATE EXTENSION IF NOT EXISTS active_pg", self.conn(db))

    def start(self):
        log("start cluster (port %d, %d disks)" % (self.port, self.disks))
        subprocess.run(as_pguser(["pg_ctl", "-D", self.datadir, "-l",
                                  os.path.join(self.datadir, "server.log"), "-w", "start"]),
                       check=True, stdout=subprocess.DEVNULL)
        self.wait_disks()

    def stop(self):
        pg_stop(self.datadir)

    def wait_disks(self):
        """The launcher starts the daemons after the postmaster: wait until all answer."""
        for _ in range(100):
            r = psql("CREATE EXTENSION IF NOT EXISTS active_pg; "
                     "SELECT count(*) FILTER (WHERE alive) || '/' || count(*) FROM active_pg.disks()",
                     self.conn("postgres"), check=False)
            out = r.stdout.strip()
            if r.returncode == 0 and "/" in out:
                alive, total = out.split("/")
                if alive == total and int(total) > 0:
                    return
            time.sleep(0.2)
        log("warning: not all disks answer: %s" % r.stdout.strip())

    def restart_cold(self):
        """Cold cache: stop, drop the kernel page cache, start.  False if not permitted."""
        if not self.own:
            return False
        self.stop()
        ok = drop_caches()
        self.start()
        return ok


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


# ------------------------------------------------------------------- data --

def generate(sf, cache):
    """dbgen-compatible .tbl files from tpchgen-cli, cached per scale factor."""
    d = os.path.join(cache, "sf%s" % sf)
    if all(os.path.exists(os.path.join(d, t + ".tbl")) for t in TABLES):
        log("data sf%s: cached in %s" % (sf, d))
        return d
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    gen = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
    if not os.path.exists(gen):
        gen = shutil.which("tpchgen-cli") or die("tpchgen-cli not found (bench/tpcd/run installs it)")
    log("generating sf%s with %s" % (sf, subprocess.run([gen, "--version"], capture_output=True,
                                                         text=True).stdout.strip()))
    subprocess.run([gen, "-s", str(sf), "-o", tmp], check=True)
    shutil.rmtree(d, ignore_errors=True)
    os.rename(tmp, d)
    return d


def load(cl, sf, vacuum, datadir, reload):
    """Schema, COPY, keys and indexes, VACUUM ANALYZE unless --no-vacuum."""
    state = "sf=%s vacuum=%s" % (sf, "on" if vacuum else "off")
    conn = cl.conn()
    r = psql("SELECT obj_description('lineitem'::regclass, 'pg_class')", conn, check=False)
    # Never-vacuumed data is always loaded afresh, so it really is never vacuumed.
    if not reload and vacuum and r.returncode == 0 and r.stdout.strip() == state:
        log("data already loaded (%s)" % state)
        return
    log("loading sf%s (%s)" % (sf, state))
    psql(open(os.path.join(HERE, "schema.sql")).read(), conn)
    for t in TABLES:
        t1 = time.time()
        path = os.path.join(datadir, t + ".tbl")
        # dbgen ends every line with the delimiter: strip it before COPY.
        with subprocess.Popen(["sed", "s/|$//", path], stdout=subprocess.PIPE) as sed:
            subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", conn, "-c",
                            "COPY %s FROM STDIN WITH (FORMAT text, DELIMITER '|')" % t],
                           stdin=sed.stdout, check=True)
        if sed.returncode:
            die("sed failed on %s" % path)
        log("  COPY %-8s %6.1f s" % (t, time.time() - t1))
    t1 = time.time()
    psql(open(os.path.join(HERE, "indexes.sql")).read(), conn)
    log("  keys and indexes %.1f s" % (time.time() - t1))
    if vacuum:
        t1 = time.time()
        psql("VACUUM ANALYZE", conn)
        log("  VACUUM ANALYZE %.1f s" % (time.time() - t1))
    else:
        # Keep autovacuum away so the data stays never-vacuumed for this run.
        psql("".join("ALTER TABLE %s SET (autovacuum_enabled = false);" % t for t in TABLES), conn)
        log("  no VACUUM, no ANALYZE (--no-vacuum); autovacuum off for these tables")
    psql("COMMENT ON TABLE lineitem IS '%s'" % state, conn)


# ---------------------------------------------------------------- queries --

def read_query(q):
    text = open(os.path.join(HERE, "queries", "%d.sql" % q)).read()
    lines = [l for l in text.splitlines() if not l.strip().startswith("--")]
    return "\n".join(lines).strip().rstrip(";")


def column_types(cl, sql):
    r = psql(MODES["serial"] + "\n" + sql + "\n\\gdesc", cl.conn(), check=False)
    if r.returncode != 0:
        return []
    return [l.split(FIELD_SEP)[1] for l in r.stdout.splitlines() if FIELD_SEP in l]


def same_rows(a, b, types):
    """Row lists equal?  Text equality; float columns within FLOAT_REL_TOL."""
    if len(a) != len(b):
        return False
    floats = [t in ("double precision", "real") for t in types]
    for ra, rb in zip(a, b):
        if ra == rb:
            continue
        fa, fb = ra.split(FIELD_SEP), rb.split(FIELD_SEP)
        if len(fa) != len(fb):
            return False
        for i, (x, y) in enumerate(zip(fa, fb)):
            if x == y:
                continue
            if i < len(floats) and floats[i]:
                try:
                    fx, fy = float(x), float(y)
                except ValueError:
                    return False
                if abs(fx - fy) <= FLOAT_REL_TOL * max(abs(fx), abs(fy)):
                    continue
            return False
    return True


def compare(ref, other, types):
    """'ok', 'ties' (same rows, different order among ties) or 'MISMATCH'."""
    if same_rows(ref, other, types):
        return "ok"
    if same_rows(sorted(ref), sorted(other), types):
        return "ties"
    return "MISMATCH"


def walk(plan):
    yield plan
    for p in plan.get("Plans", []):
        yield from walk(p)


def explain_active(cl, sql, timeout_s, analyze=True):
    """Pushed operators from EXPLAIN, disk counters from EXPLAIN ANALYZE (active mode)."""
    info = {"pushed": 0, "relations": [], "bytes_read": None, "bytes_shipped": None,
            "pages_read": None, "rows_from_disks": None, "plan": None}
    pre = MODES["active"] + "\nSET statement_timeout = '%ds';\n" % timeout_s
    r = psql(pre + "EXPLAIN (FORMAT JSON) " + sql + ";", cl.conn(), check=False)
    if r.returncode != 0:
        return info
    plan = json.loads(r.stdout)[0]["Plan"]
    nodes = [n for n in walk(plan) if n.get("Custom Plan Provider") in PUSHDOWN_PROVIDERS]
    info["pushed"] = len(nodes)
    info["relations"] = sorted({n.get("Relation Name", "?") for n in nodes})
    if not analyze:
        return info
    r = psql(pre + "EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " + sql + ";", cl.conn(), check=False)
    if r.returncode != 0:
        return info
    aplan = json.loads(r.stdout)[0]["Plan"]
    info["plan"] = aplan
    nodes = [n for n in walk(aplan) if n.get("Custom Plan Provider") in PUSHDOWN_PROVIDERS]
    for key, name in (("bytes_read", "Disk Bytes Read"), ("bytes_shipped", "Interconnect Bytes Shipped"),
                      ("pages_read", "Disk Pages Read"), ("rows_from_disks", "Rows From Disks")):
        vals = [n[name] for n in nodes if name in n]
        info[key] = sum(vals) if vals else None
    return info


def show_plans(cl, queries, timeout_s):
    """Print what the disks did for Q1 and Q6 (EXPLAIN ANALYZE in active mode)."""
    for q in (1, 6):
        if q not in queries:
            continue
        pre = MODES["active"] + "\nSET statement_timeout = '%ds';\n" % timeout_s
        r = psql(pre + "EXPLAIN (ANALYZE, COSTS OFF) " + read_query(q) + ";", cl.conn(), check=False)
        print("\n== Q%d with pushdown: EXPLAIN ANALYZE" % q)
        print(r.stdout.rstrip() or r.stderr.rstrip())


# Queries of other shapes a session may run before a TPC-H query: selective
# and unselective scans, aggregates, joins, a long IN list over a computed
# string (a slow filter at the disks).  The planner must not learn from them.
OTHER_QUERIES = [
    "SELECT count(*) FROM lineitem WHERE l_quantity > 49",
    "SELECT l_returnflag, count(*), avg(l_discount) FROM lineitem GROUP BY 1",
    "SELECT o_orderpriority, count(*) FROM orders WHERE o_totalprice > 100000 GROUP BY 1",
    "SELECT count(*) FROM part JOIN partsupp ON p_partkey = ps_partkey WHERE p_size = 3",
    "SELECT count(*) FROM customer WHERE substring(c_phone, 1, 5) IN (%s)"
    % ", ".join("'%02d-%02d'" % (10 + i % 25, i % 100) for i in range(400)),
    "SELECT * FROM nation WHERE n_nationkey = 7",
]


def session_plans(sess, queries):
    """EXPLAIN (COSTS OFF) of each query in an open PsqlSession."""
    plans = {}
    for q in queries:
        plans[q] = "\n".join(sess.execute("EXPLAIN (COSTS OFF) " + read_query(q) + ";"))
    return plans


def plan_stability(cl, queries, timeout_s):
    """Plans of the defaults in a fresh session, in that session after it ran
    every query and OTHER_QUERIES, and in a new session: all must be the same.
    Returns (summary line, failures)."""
    pre = MODES["active"] + "\nSET statement_timeout = '%ds';" % timeout_s
    sess = PsqlSession(cl.conn(), pre)
    try:
        fresh = session_plans(sess, queries)
        for q in queries:
            sess.execute(read_query(q) + ";")
        for sql in OTHER_QUERIES:
            sess.execute(sql + ";")
        after = session_plans(sess, queries)
    finally:
        sess.close()
    sess = PsqlSession(cl.conn(), pre)
    try:
        again = session_plans(sess, queries)
    finally:
        sess.close()
    failures = []
    for q in queries:
        if fresh[q] != after[q]:
            failures.append("Q%d: plan changed after the session ran other queries:\n%s\n-- became --\n%s"
                            % (q, fresh[q], after[q]))
        elif fresh[q] != again[q]:
            failures.append("Q%d: plan differs between two fresh sessions" % q)
        elif any(PsqlSession.error_line(l) for l in fresh[q].splitlines()):
            failures.append("Q%d: EXPLAIN failed: %s" % (q, fresh[q]))
    line = ("Plans: EXPLAIN (COSTS OFF) of the %d queries with the defaults in a fresh session, again "
            "in that session after it ran all of them and %d other queries, and in a new session: %s."
            % (len(queries), len(OTHER_QUERIES),
               "identical" if not failures else "**%d differ**" % len(failures)))
    log(line)
    return line, failures


def text_plan(cl, sql):
    r = psql(MODES["active"] + "\nEXPLAIN (VERBOSE, COSTS OFF) " + sql + ";", cl.conn(), check=False)
    return r.stdout + r.stderr


def bench_queries(cl, args, queries, modes):
    res = {}
    failures = []
    for q in queries:
        sql = read_query(q)
        types = column_types(cl, sql)
        row = {"q": q, "time": {}, "status": {}, "rows": {}, "cold": {}, "check": "ok", "nrows": None}
        t1 = time.time()
        by_mode = run_interleaved(cl, list(modes), sql, 1 + args.runs, args.timeout_s,
                                  min_ms=args.min_time_s * 1000.0,
                                  max_exec=1 + max(args.runs, args.max_runs))
        for mode in modes:
            status, execs, err = by_mode[mode]
            row["status"][mode] = status
            if status == "ok":
                times = [ms for _, ms in execs[1:]] or [execs[0][1]]
                row["time"][mode] = statistics.median(times)
                row.setdefault("runs", {})[mode] = times
                row.setdefault("range", {})[mode] = (min(times), max(times))
                row["rows"][mode] = execs[0][0]
                for rows, _ in execs[1:]:
                    if compare(execs[0][0], rows, types) == "MISMATCH":
                        row["check"] = "MISMATCH"
                        failures.append("Q%d %s: results differ between runs of the same mode" % (q, mode))
                log("Q%-2d %-8s warm median %10.1f ms  (runs %s)" % (
                    q, mode, row["time"][mode], ", ".join("%.1f" % ms for _, ms in execs[1:])))
            else:
                log("Q%-2d %-8s %s %s" % (q, mode, status.upper(),
                                          err.splitlines()[0] if err else ""))
                if status == "error":
                    failures.append("Q%d %s: error: %s" % (q, mode, err))
                    row["check"] = "ERROR"
        log("Q%-2d all modes, runs in turn: %.1f s" % (q, time.time() - t1))
        ok_modes = [m for m in modes if row["status"][m] == "ok"]
        if ok_modes:
            ref_mode = ok_modes[0]
            ref = row["rows"][ref_mode]
            row["nrows"] = len(ref)
            for m in ok_modes[1:]:
                c = compare(ref, row["rows"][m], types)
                if c == "MISMATCH":
                    row["check"] = "MISMATCH"
                    failures.append("Q%d: %s result differs from %s" % (q, m, ref_mode))
                    print("\n!!! RESULT MISMATCH Q%d: %s vs %s\n" % (q, ref_mode, m), file=sys.stderr)
                    sys.stderr.writelines(difflib.unified_diff(
                        [l + "\n" for l in ref], [l + "\n" for l in row["rows"][m]],
                        fromfile=ref_mode, tofile=m, n=1))
                    print("--- plan in active mode:\n" + text_plan(cl, sql), file=sys.stderr)
                elif c == "ties" and row["check"] == "ok":
                    row["check"] = "ok (ties)"
        row["explain"] = None
        if "active" in modes:
            row["explain"] = explain_active(cl, sql, args.timeout_s,
                                            analyze=row["status"].get("active") == "ok")
        res[q] = row
    if args.cold:
        for q in queries:
            sql = read_query(q)
            for mode in modes:
                if not cl.restart_cold():
                    res[q]["cold"][mode] = None
                    continue
                status, execs, _ = run_session(cl, mode, sql, 1, args.timeout_s)
                res[q]["cold"][mode] = execs[0][1] if status == "ok" else status
                log("Q%-2d %-8s cold %s" % (q, mode, fmt_ms(res[q]["cold"][mode])))
    return res, failures


# ----------------------------------------------------------------- report --

def fmt_ms(v):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return "%.1f" % v


def fmt_x(a, b):
    if not isinstance(a, float) or not isinstance(b, float) or b <= 0:
        return "n/a"
    return "%.2fx" % (a / b)


def fmt_bytes(v):
    if v is None:
        return "n/a"
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if v >= div:
            return "%.1f %s" % (v / div, unit)
    return "%d B" % v


def paired_ratio(row, stock, mine):
    """The median over rounds of stock's time over mine within a round, or
    None.  The modes of a round run back to back (run_interleaved), so a
    change of the machine's speed between rounds, which moves the medians of
    two modes apart when it falls unevenly on their runs, cancels within
    each round's ratio."""
    # runs are kept only for the modes that ran every round
    a = row.get("runs", {}).get(stock)
    b = row.get("runs", {}).get(mine)
    if not a or not b:
        return None
    ratios = [x / y for x, y in zip(a, b) if y > 0]
    return statistics.median(ratios) if ratios else None


def ratio_summary(ratios):
    """'geometric mean G over N queries, worst Qn R; below 0.95x: ...' of
    {query: ratio} (stock's time over pushdown's)."""
    worst = min(ratios, key=ratios.get)
    slower = sorted(q for q in ratios if ratios[q] < 0.95)
    return "geometric mean **%.2fx** over %d queries, worst Q%d %.2fx; below 0.95x: %s" % (
        statistics.geometric_mean(list(ratios.values())), len(ratios), worst, ratios[worst],
        ", ".join("Q%d %.2fx" % (q, ratios[q]) for q in slower) or "none")


def mode_time(row, mode):
    if mode not in row["status"]:
        return None
    return row["time"].get(mode, row["status"][mode])


def report(args, cl, res, modes, streams, tpcb, failures, env_info):
    queries = sorted(res)
    today = datetime.date.today().isoformat()
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "%s-sf%s%s" % (today, args.sf, "" if args.vacuum else "-novacuum"))
    # CSV: one row per query
    with open(base + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        hdr = ["query"] + ["%s_ms" % m for m in modes] + ["%s_cold_ms" % m for m in modes if args.cold] + \
            ["speedup_vs_serial", "speedup_vs_parallel", "pushed_ops", "pushed_relations",
             "disk_bytes_read", "bytes_shipped", "disk_pages_read", "rows_from_disks",
             "reduction", "rows", "check", "paper", "paired_vs_serial", "paired_vs_parallel"]
        w.writerow(hdr)
        for q in queries:
            r = res[q]
            e = r["explain"] or {}
            red = (e["bytes_read"] / e["bytes_shipped"]) if e.get("bytes_read") and e.get("bytes_shipped") else None
            w.writerow(["Q%d" % q] + [fmt_ms(mode_time(r, m)) for m in modes] +
                       [fmt_ms(r["cold"].get(m)) for m in modes if args.cold] +
                       [fmt_x(r["time"].get("serial"), r["time"].get("active")),
                        fmt_x(r["time"].get("parallel"), r["time"].get("active")),
                        e.get("pushed", ""), " ".join(e.get("relations", [])),
                        e.get("bytes_read") if e.get("bytes_read") is not None else "n/a",
                        e.get("bytes_shipped") if e.get("bytes_shipped") is not None else "n/a",
                        e.get("pages_read") if e.get("pages_read") is not None else "n/a",
                        e.get("rows_from_disks") if e.get("rows_from_disks") is not None else "n/a",
                        "%.1f" % red if red else "n/a", r["nrows"], r["check"], PAPER.get(q, "")] +
                       ["%.2fx" % v if v is not None else "n/a" for v in (paired_ratio(r, "serial", "active"),
                                                             paired_ratio(r, "parallel", "active"))])
    # Markdown
    L = []
    L.append("# TPC-D (TPC-H Q1-Q22) on active_pg, SF %s, %s" % (args.sf, today))
    L.append("")
    L.append("Machine: %s. %s" % (env_info["machine"], env_info["settings"]))
    L.append("Warm: median of %d runs after one warm-up (of more for a short query: while every "
             "mode's runs add up to less than %g s, at most %d), in ms, the modes taking turns run by "
             "run (each in its own session). Speedups are active vs serial / "
             "active vs parallel (>1 = pushdown faster). Disk bytes read, bytes shipped and "
             "reduction come from `EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON)` of the active mode "
             "(sum over its ActiveScan nodes). Check: every mode's full result equals serial's. "
             "Each comparison below is given twice: as the ratio of the two modes' medians, and as "
             "the median of the ratios within each round, where a drift of the machine's speed "
             "between rounds cancels."
             % (args.runs, args.min_time_s, max(args.runs, args.max_runs)))
    if env_info.get("plans"):
        L.append("")
        L.append(env_info["plans"])
    L.append("")
    cols = ["Q"] + ["%s ms" % m for m in modes]
    if args.cold:
        cols += ["%s cold ms" % m for m in modes]
    cols += ["active/serial", "active/parallel", "pushed (relations)", "disk read", "shipped",
             "reduction", "rows", "check", "papers (000 Table 5 / 001)"]
    L.append("| " + " | ".join(cols) + " |")
    L.append("|" + "|".join(["---"] + ["---:"] * (len(cols) - 4) + ["---", "---", "---"]) + "|")
    for q in queries:
        r = res[q]
        e = r["explain"] or {}
        red = (e["bytes_read"] / e["bytes_shipped"]) if e.get("bytes_read") and e.get("bytes_shipped") else None
        pushed = "%d (%s)" % (e.get("pushed", 0), ", ".join(e.get("relations", []))) if e.get("pushed") else "0"
        cells = ["Q%d" % q] + [fmt_ms(mode_time(r, m)) for m in modes]
        if args.cold:
            cells += [fmt_ms(r["cold"].get(m)) for m in modes]
        cells += [fmt_x(r["time"].get("serial"), r["time"].get("active")),
                  fmt_x(r["time"].get("parallel"), r["time"].get("active")),
                  pushed, fmt_bytes(e.get("bytes_read")), fmt_bytes(e.get("bytes_shipped")),
                  "%.1f" % red if red else "n/a", str(r["nrows"]), r["check"], PAPER.get(q, "")]
        L.append("| " + " | ".join(cells) + " |")
    # totals: all queries, and the 17 TPC-D queries
    for label, qs in (("Q1-Q17 (TPC-D)", [q for q in queries if q <= 17]), ("all", queries)):
        ok = [q for q in qs if all(isinstance(res[q]["time"].get(m), float) for m in modes)]
        if not ok:
            continue
        tot = {m: sum(res[q]["time"][m] for q in ok) for m in modes}
        cells = ["**%s** (%d)" % (label, len(ok))] + ["%.1f" % tot[m] for m in modes]
        if args.cold:
            # the cold totals over the queries every mode ran cold
            cok = [q for q in qs if all(isinstance(res[q]["cold"].get(m), float) for m in modes)]
            cells += ["%.1f" % sum(res[q]["cold"][m] for q in cok) if cok else "" for m in modes]
        cells += [fmt_x(tot.get("serial"), tot.get("active")), fmt_x(tot.get("parallel"), tot.get("active")),
                  "", "", "", "", "", "", ""]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    # do no harm: each pushdown mode against stock under the same PostgreSQL
    # settings, over every query both ran (geometric mean and the worst)
    pairs = (("active", "parallel", "PostgreSQL defaults (parallel workers allowed)"),
             ("active-serial", "serial", "max_parallel_workers_per_gather = 0"),
             ("active", "serial", "pushdown (defaults) vs stock serial"))
    for mine, stock, label in pairs:
        if mine not in modes or stock not in modes:
            continue
        ratios = {q: res[q]["time"][stock] / res[q]["time"][mine] for q in queries
                  if isinstance(res[q]["time"].get(mine), float) and
                  isinstance(res[q]["time"].get(stock), float) and res[q]["time"][mine] > 0}
        if not ratios:
            continue
        L.append("- %s vs %s (%s): %s" % (mine, stock, label, ratio_summary(ratios)))
        paired = {q: paired_ratio(res[q], stock, mine) for q in ratios}
        paired = {q: v for q, v in paired.items() if v is not None}
        if paired:
            L.append("  - the same, each query's ratio the median of its rounds' ratios (the modes "
                     "of a round run back to back): %s" % ratio_summary(paired))
    L.append("")
    if args.cold and not cl.own:
        L.append("Cold columns: n/a with --dsn (the bench cannot restart a server it did not start).")
    L.append("Papers: 000 = seed 000_581f78cd10fe0f57 (Riedel et al.), Table 5 selectivity savings "
             "(factors, not cumulative; re-assembled from the seed's column-wise text); 001 = seed "
             "001_875614f020bf5e6e (slides), table \"TPC-D Benchmark\": scan-only and entire-query "
             "selectivity. Our reduction is disk bytes read / bytes shipped of the pushed scans: it "
             "compares with their scan x qual savings until aggregation runs at the disks.")
    if streams:
        L.append("")
        L.append("## pgbench throughput: Q%s mix (%d s per point)" % (
            "/Q".join(map(str, PGBENCH_MIX)), args.pgbench_seconds))
        L.append("")
        L.append("| clients | mode | TPS | latency avg ms | latency stddev ms | transactions | failed |")
        L.append("|---:|---|---:|---:|---:|---:|---:|")
        for p in streams:
            L.append("| %d | %s | %s | %s | %s | %s | %s |" % (
                p["clients"], p["mode"], p["tps"], p["lat_ms"], p["lat_std_ms"], p["txs"],
                p["failed"] if p["rc"] == 0 else "rc=%d" % p["rc"]))
    if tpcb:
        L.append("")
        L.append("## TPC-B (pgbench -c 2, scale %d, %d s) with concurrent pushed-down scans of pgbench_accounts"
                 % (args.tpcb_scale, args.pgbench_seconds))
        L.append("")
        L.append("TPC-B TPS %s, latency %s ms. Scan checks: %d REPEATABLE READ transactions, each running %d "
                 "queries with `active_pg.force_pushdown = on` and again with pushdown off in the same "
                 "snapshot, plus TPC-B's invariant sum(abalance) = sum(delta) + constant; **%d mismatches**. "
                 "Scans pushed down: %s." % (tpcb["tps"], tpcb["lat_ms"], tpcb["checks"], len(TPCB_CHECKS),
                                             tpcb["mismatches"], "yes" if tpcb["pushed"] else "NO"))
        for d in tpcb["details"]:
            L.append("    " + d)
    if failures:
        L.append("")
        L.append("## FAILURES")
        L.append("")
        for f_ in failures:
            L.append("- " + f_.replace("\n", " "))
    md = "\n".join(L) + "\n"
    with open(base + ".md", "w") as f:
        f.write(md)
    with open(base + ".json", "w") as f:
        json.dump({"args": vars(args), "env": env_info,
                   "queries": {q: {k: v for k, v in res[q].items() if k != "rows"} for q in queries},
                   "pgbench": streams, "tpcb": tpcb, "failures": failures}, f, indent=1, default=str)
    plots(base, res, modes)
    return base, md


def plots(base, res, modes):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not available: no plots")
        return
    queries = sorted(res)
    x = list(range(len(queries)))
    labels = ["Q%d" % q for q in queries]
    # the baseline is what a user runs without the extension: stock
    # PostgreSQL with its default parallel settings when that mode ran
    base_mode = "parallel" if "parallel" in modes else "serial"
    shown = [m for m in modes if m != base_mode]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / max(1, len(shown))
    for i, m in enumerate(shown):
        ys, lo, hi = [], [], []
        for q in queries:
            s, t = res[q]["time"].get(base_mode), res[q]["time"].get(m)
            r = res[q].get("range", {})
            if s and t:
                y = s / t
                tmin, tmax = r.get(m, (t, t))
                ys.append(y)
                # the spread of this mode's runs around the baseline's median
                lo.append(max(0.0, y - s / tmax))
                hi.append(max(0.0, s / tmin - y))
            else:
                ys.append(0)
                lo.append(0)
                hi.append(0)
        ax.bar([xi + (i - (len(shown) - 1) / 2) * width for xi in x], ys, width, label=m,
               yerr=[lo, hi], capsize=2, error_kw={"elinewidth": 0.8})
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(labels)
    ax.set_ylabel("speedup over stock %s (warm)" % base_mode)
    ax.set_title("TPC-H %s, warm: each mode's speedup over stock PostgreSQL (%s) per query\n"
                 "bar = median of the runs, whisker = fastest to slowest run"
                 % (os.path.basename(base).split("-")[-1].upper(),
                    "PostgreSQL's default parallel settings" if base_mode == "parallel"
                    else "no parallel workers"))
    ax.legend()
    fig.tight_layout()
    fig.savefig(base + "-speedup.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(12, 4.5))
    rd = [(res[q]["explain"] or {}).get("bytes_read") or 0 for q in queries]
    sh = [(res[q]["explain"] or {}).get("bytes_shipped") or 0 for q in queries]
    ax.bar([xi - 0.2 for xi in x], [v if v > 0 else float("nan") for v in rd], 0.4, label="read at the disks")
    ax.bar([xi + 0.2 for xi in x], [v if v > 0 else float("nan") for v in sh], 0.4, label="shipped to the host")
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(labels)
    ax.set_ylabel("bytes (log scale)")
    ax.set_title("TPC-H %s: bytes the disks read and bytes they shipped to the host, per query, "
                 "pushdown with the defaults\n(no bar: nothing was pushed down)"
                 % os.path.basename(base).split("-")[-1].upper())
    ax.legend()
    fig.tight_layout()
    fig.savefig(base + "-bytes.png", dpi=110)
    plt.close(fig)


def machine_info():
    cpu = "?"
    try:
        for l in open("/proc/cpuinfo"):
            if l.startswith("model name"):
                cpu = l.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    return "%s, %d cores, %.0f GiB RAM, %s" % (cpu, os.cpu_count(), mem, platform.platform())


def parse_list(s, conv=int):
    out = []
    for part in s.split(","):
        part = part.strip()
        if "-" in part and conv is int:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(conv(part))
    return out


def main():
    ap = argparse.ArgumentParser(prog="bench/tpcd/run", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", default="0.1", help="TPC-H scale factor (default 0.1)")
    ap.add_argument("--disks", type=int, default=4, help="active_pg.ndisks of the own cluster (default 4)")
    ap.add_argument("--modes", default="serial,parallel,active,active-serial",
                    help="comma list of %s (default serial,parallel,active,active-serial)" % ", ".join(MODES))
    ap.add_argument("--queries", default="1-22", help="e.g. 1,6 or 1-22 (default)")
    ap.add_argument("--runs", type=int, default=5, help="warm runs after one warm-up (default 5); median reported")
    ap.add_argument("--min-time-s", type=float, default=2.0,
                    help="more runs of a short query while every mode's warm runs add up to less "
                    "than this many seconds (default 2)")
    ap.add_argument("--max-runs", type=int, default=25,
                    help="at most this many warm runs of a short query (default 25)")
    ap.add_argument("--cold", action="store_true", help="also one cold run per query and mode "
                    "(cluster restart + drop caches)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="output directory")
    ap.add_argument("--dsn", help="use this server (conninfo) instead of starting a cluster")
    ap.add_argument("--timeout-s", type=int, default=300, help="per-query statement_timeout")
    ap.add_argument("--vacuum", dest="vacuum", action="store_true", default=True,
                    help="VACUUM ANALYZE after loading (default)")
    ap.add_argument("--no-vacuum", dest="vacuum", action="store_false",
                    help="skip VACUUM ANALYZE: pushdown on never-vacuumed data")
    ap.add_argument("--reload", action="store_true", help="reload the data even if already loaded")
    ap.add_argument("--pgbench", action="store_true", help="also run the pgbench streams and TPC-B")
    ap.add_argument("--pgbench-seconds", type=int, default=20, help="-T of each pgbench run")
    ap.add_argument("--pgbench-clients", default="1,2,4", help="client counts of the streams")
    ap.add_argument("--tpcb-scale", type=int, default=10, help="pgbench -i -s for the TPC-B part")
    ap.add_argument("--jit", choices=("off", "on"), default="off",
                    help="jit of the own cluster, for every mode alike (default off; on is "
                    "PostgreSQL's default, compiling the expressions of any plan above "
                    "jit_above_cost)")
    ap.add_argument("--port", type=int, default=5498, help="port of the own cluster")
    ap.add_argument("--datadir", default=os.environ.get("ACTIVE_PG_TPCD_DIR", "/tmp/active_pg-tpcd"))
    ap.add_argument("--data-cache", default=os.path.join(HERE, "data"), help="generated .tbl files")
    ap.add_argument("--keep", action="store_true", help="leave the own cluster running")
    ap.add_argument("--no-build", action="store_true", help="(run wrapper) skip build and install")
    args = ap.parse_args()
    args.out = os.path.abspath(args.out)
    modes = parse_list(args.modes, str)
    for m in modes:
        if m not in MODES:
            die("unknown mode %s (known: %s)" % (m, ", ".join(MODES)))
    queries = parse_list(args.queries)
    args.pgbench_clients = parse_list(args.pgbench_clients)

    cl = Cluster(args)
    datadir = generate(args.sf, args.data_cache)
    cl.setup()
    try:
        cl.ensure_extension()
        load(cl, args.sf, args.vacuum, datadir, args.reload)
        ver = psql("SELECT version()", cl.conn()).stdout.strip().split(",")[0]
        nd = psql("SHOW active_pg.ndisks", cl.conn(), check=False).stdout.strip() or "?"
        env_info = {"machine": machine_info(),
                    "settings": "%s; %s disks; data %s; %s; shared_buffers %s; jit %s; timeout %d s." % (
                        ver, nd, "VACUUM ANALYZEd" if args.vacuum else "never vacuumed (--no-vacuum)",
                        "tpchgen-cli 4.0.0",
                        psql("SHOW shared_buffers", cl.conn()).stdout.strip(),
                        psql("SHOW jit", cl.conn()).stdout.strip(), args.timeout_s)}
        log("running Q%s in modes %s" % (",".join(map(str, queries)), ", ".join(modes)))
        res, failures = bench_queries(cl, args, queries, modes)
        stability, unstable = plan_stability(cl, queries, args.timeout_s)
        failures += unstable
        env_info["plans"] = stability
        streams, tpcb = [], None
        if args.pgbench:
            streams = pgbench_streams(cl, args, [m for m in ("active", "serial", "parallel") if m in modes])
            tpcb = tpcb_concurrent(cl, args)
            if tpcb["mismatches"] or not tpcb["pushed"] or tpcb["rc"] != 0:
                failures.append("TPC-B concurrent scans: %d mismatches, pushed=%s, pgbench rc=%d %s" % (
                    tpcb["mismatches"], tpcb["pushed"], tpcb["rc"], tpcb.get("error", "")))
            for p in streams:
                if p["rc"] != 0:
                    failures.append("pgbench -c %d %s failed: %s" % (p["clients"], p["mode"], p.get("error")))
        if "active" in modes:
            show_plans(cl, queries, args.timeout_s)
        base, md = report(args, cl, res, modes, streams, tpcb, failures, env_info)
    finally:
        if cl.own and not args.keep:
            cl.stop()
    print()
    print(md)
    log("wrote %s.md, .csv, .json, -speedup.png, -bytes.png" % base)
    if failures:
        print("\nFAILED: %d problem(s):" % len(failures), file=sys.stderr)
        for f_ in failures:
            print("  " + f_.splitlines()[0], file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
