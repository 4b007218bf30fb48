"""What the TPC-D driver (tpcd.py) and its companions (tpcd_pgbench.py,
bloom.py, scaling.py) share: paths and modes, logging, psql, and the
sessions that time queries."""

import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FLOAT_REL_TOL = 1e-9
FIELD_SEP = "\x1f"
TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]
PUSHDOWN_PROVIDERS = ("ActiveScan", "ActiveAgg")

MODES = {
    "serial": "SET active_pg.enable = off; SET max_parallel_workers_per_gather = 0;",
    "parallel": "SET active_pg.enable = off; SET max_parallel_workers_per_gather = 2;",
    # what a user gets: the extension's defaults and PostgreSQL's (the disks
    # read through the page cache, as stock PostgreSQL does; parallel plans
    # allowed as in "parallel")
    "active": "SET active_pg.enable = on;",
    # the same with PostgreSQL's parallel workers off, as "serial"
    "active-serial": "SET active_pg.enable = on; SET max_parallel_workers_per_gather = 0;",
    # emulation of cold disks: O_DIRECT reads, never the warm page cache
    "active-direct": "SET active_pg.enable = on; SET active_pg.direct_io = on;",
    # Sequential scans are disabled, so every full scan is an ActiveScan in the
    # page-shipping mode (index scans stay PostgreSQL's); Bloom filters and
    # aggregation are the disks' computation, which devices do not have.
    "device": "SET active_pg.enable = on; SET active_pg.scan_mode = 'pages'; "
              "SET active_pg.enable_bloom = off; SET active_pg.enable_agg = off; "
              "SET active_pg.direct_io = off; SET enable_seqscan = off; "
              "SET max_parallel_workers_per_gather = 2;",
}

# An experiment's own mode: "active-try" runs with the defaults plus the
# settings in ACTIVE_PG_BENCH_TRY (e.g. "SET active_pg.host_scan_ns_per_byte = 0.9;"),
# so a changed constant can be measured beside the defaults in one run.
if os.environ.get("ACTIVE_PG_BENCH_TRY"):
    MODES["active-try"] = "SET active_pg.enable = on; " + os.environ["ACTIVE_PG_BENCH_TRY"]

T0 = time.time()


def log(msg):
    print("[%7.1fs] %s" % (time.time() - T0, msg), flush=True)


def as_pguser(cmd):
    """PostgreSQL refuses to run as root: server commands run as postgres."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + cmd
    return cmd


def callgrind_single_user(bindir, datadir, db, opts, script, out):
    """Run the SQL file script in a single-user backend (postgres --single,
    settings opts as ["-c", "name=value", ...]) on the stopped cluster
    datadir under valgrind's callgrind, its profile written to out: the
    instructions it took.  Exits on a failure or an ERROR in the script."""
    with open(script) as stdin:
        r = subprocess.run(as_pguser(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                                      os.path.join(bindir, "postgres"), "--single",
                                      "-D", datadir] + opts + [db]),
                           stdin=stdin, capture_output=True, text=True)
    if r.returncode != 0 or "ERROR" in r.stdout or "ERROR" in r.stderr:
        sys.exit("single-user backend failed (%s): %s" % (script, (r.stdout + r.stderr)[-800:]))
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    sys.exit("no instruction count in %s" % out)


def pg_stop(datadir):
    """Stop the cluster in datadir (fast), if it runs."""
    subprocess.run(as_pguser(["pg_ctl", "-D", datadir, "-m", "fast", "-w", "stop"]),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pg_initdb(datadir, user, include):
    """initdb datadir (as postgres when run as root), its postgresql.conf
    including the file include, which the caller writes."""
    os.makedirs(datadir, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(datadir, "postgres", "postgres")
    subprocess.run(as_pguser(["initdb", "-D", datadir, "-A", "trust", "-U", user]),
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(datadir, "postgresql.conf"), "a") as f:
        f.write("include_if_exists = '%s'\n" % include)


def die(msg):
    print("tpcd: " + msg, file=sys.stderr, flush=True)
    sys.exit(2)


def psql(sql, conn, check=True, settings="", extra=()):
    """Run an SQL script with psql, unaligned, tuples only; returns CompletedProcess."""
    cmd = ["psql", "-X", "-q", "-A", "-t", "-F", FIELD_SEP, "-v", "ON_ERROR_STOP=1", "-d", conn]
    cmd += list(extra)
    r = subprocess.run(cmd, input=settings + "\n" + sql + "\n", capture_output=True, text=True)
    if check and r.returncode != 0:
        die("psql failed: %s\n%s" % (sql[:200], r.stderr))
    return r



# ---------------------------------------------------------------- sessions --

def run_session(cl, mode, sql, nexec, timeout_s):
    """Run SQL nexec times in one session.  Returns (status, [(rows, ms)], error text).

    status is "ok", "timeout" or "error"; the runs stop at the first error."""
    return run_interleaved(cl, [mode], sql, nexec, timeout_s)[mode]


class PsqlSession:
    """One psql process kept open for one mode of one query.

    The warm runs of the modes take turns (serial, parallel, active, ...,
    then again), each mode in its own backend for all its runs: a machine
    whose speed drifts during a query's measurement then slows every mode
    alike, where runs grouped by mode gave the drift to whichever mode ran
    then.  The backend lives through the runs as before (warm caches, the
    cost model's learned rates).  psql runs line-buffered (stdbuf) so each
    statement's output can be read as soon as it is printed; stderr comes
    with it."""

    END = "@@end-of-statement@@"

    def __init__(self, conn, preamble):
        cmd = ["stdbuf", "-oL", "-eL", "psql", "-X", "-q", "-A", "-t", "-F", FIELD_SEP,
               "-d", conn]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.alive = True
        out = self.execute(preamble)
        if any(self.error_line(l) for l in out):
            self.close()
            die("psql session setup failed: %s" % "\n".join(out))

    @staticmethod
    def error_line(line):
        return re.match(r"^(psql:[^ ]*: )?(ERROR|FATAL|PANIC):", line) is not None

    def execute(self, sql):
        """The lines psql prints for sql (results, Time:, messages)."""
        if not self.alive:
            return ["ERROR:  psql session ended"]
        self.p.stdin.write(sql + "\n\\echo " + self.END + "\n")
        self.p.stdin.flush()
        lines = []
        while True:
            line = self.p.stdout.readline()
            if line == "":
                self.alive = False
                lines.append("ERROR:  psql session ended")
                break
            line = line.rstrip("\n")
            if line == self.END:
                break
            lines.append(line)
        return lines

    def close(self):
        if self.alive:
            try:
                self.p.stdin.close()
            except OSError:
                pass
        self.p.wait()
        self.alive = False


def run_interleaved(cl, modes, sql, nexec, timeout_s, min_ms=0.0, max_exec=None):
    """Run sql nexec times per mode, the modes taking turns, each mode in its
    own session; then more rounds (up to max_exec in all) while every mode's
    runs after the first add up to less than min_ms, so that a short query's
    median is taken over enough runs to stand above the machine's noise.
    Returns {mode: (status, [(rows, ms)], error text)} as run_session does;
    a mode stops at its first error or timeout."""
    out = {}
    sessions = {}
    for mode in modes:
        sessions[mode] = PsqlSession(cl.conn(), MODES[mode] +
                                     "\nSET statement_timeout = '%ds';\n\\pset null '<NULL>'\n"
                                     "\\timing on" % timeout_s)
        out[mode] = ["ok", [], ""]

    def short_of_time():
        sums = [sum(ms for _, ms in st[1][1:]) for st in out.values() if st[0] == "ok"]
        return bool(sums) and max(sums) < min_ms

    try:
        i = 0
        while i < nexec or (i < (max_exec or nexec) and short_of_time()):
            # a different mode leads each round
            order = modes[i % len(modes):] + modes[:i % len(modes)]
            for mode in order:
                st = out[mode]
                if st[0] != "ok":
                    continue
                lines = sessions[mode].execute(sql + ";")
                errs = [l for l in lines if PsqlSession.error_line(l)]
                if errs:
                    st[0] = "timeout" if any("statement timeout" in l for l in errs) else "error"
                    st[2] = "\n".join(errs)
                    continue
                rows, ms = [], None
                for line in lines:
                    m = re.match(r"^Time: ([0-9.]+) ms", line)
                    if m:
                        ms = float(m.group(1))
                    else:
                        rows.append(line)
                if ms is None:
                    st[0] = "error"
                    st[2] = "no timing in psql's output"
                    continue
                st[1].append((rows, ms))
            i += 1
    finally:
        for sess in sessions.values():
            sess.close()
    return {m: tuple(v) for m, v in out.items()}
