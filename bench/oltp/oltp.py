#!/usr/bin/env python3
"""OLTP with and without active_pg: pgbench's built-in select-only (-S) and
TPC-B workloads against one cluster restarted alternately with and without
active_pg in shared_preload_libraries (the extension created in the database
either way), rounds interleaved so that drift hits both alike.  Reports the
median TPS of each and the ratio, and the server's CPU time per transaction
(every process of the cluster: postmaster, backends, the launcher and the
disk daemons), which the machine's steal time and drift move far less than
TPS.  Started by bench/oltp/run.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

# the TPC-D driver's cluster helpers
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tpcd"))
from tpcd_common import as_pguser, pg_initdb, pg_stop  # noqa: E402

CONFIGS = ("without", "with")
TICK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print("[%7.1fs] %s" % (time.time() - START, msg), flush=True)


class Cluster:
    def __init__(self, args):
        self.datadir = args.datadir
        self.port = args.port
        self.disks = args.disks
        self.user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")

    def conn(self, db="oltp"):
        return "host=/tmp port=%d user=%s dbname=%s" % (self.port, self.user, db)

    def psql(self, sql, db="oltp"):
        return subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
                               "-d", self.conn(db), "-c", sql],
                              check=True, capture_output=True, text=True).stdout.strip()

    def stop(self):
        pg_stop(self.datadir)

    def configure(self, config):
        """Write the configuration: the same server, active_pg preloaded or not."""
        conf = os.path.join(self.datadir, "active_pg_oltp.conf")
        with open(conf, "w") as f:
            f.write("port = %d\nunix_socket_directories = '/tmp'\nlisten_addresses = ''\n"
                    "shared_buffers = 256MB\nmax_wal_size = 4GB\njit = off\n" % self.port)
            if config == "with":
                f.write("shared_preload_libraries = 'active_pg'\nactive_pg.ndisks = %d\n"
                        % self.disks)
        if os.geteuid() == 0:
            shutil.chown(conf, "postgres", "postgres")

    def start(self, config):
        self.stop()
        self.configure(config)
        subprocess.run(as_pguser(["pg_ctl", "-D", self.datadir, "-l",
                                  os.path.join(self.datadir, "server.log"), "-w", "start"]),
                       check=True, stdout=subprocess.DEVNULL)

    def setup(self, scale):
        self.stop()
        if not os.path.exists(os.path.join(self.datadir, "PG_VERSION")):
            log("initdb %s" % self.datadir)
            pg_initdb(self.datadir, self.user, "active_pg_oltp.conf")
        self.start("with")
        if self.psql("SELECT count(*) FROM pg_database WHERE datname = 'oltp'",
                     "postgres") != "1":
            self.psql("CREATE DATABASE oltp", "postgres")
        self.psql("CREATE EXTENSION IF NOT EXISTS active_pg")
        have = self.psql("SELECT count(*) FROM pg_class WHERE relname = 'pgbench_accounts'")
        rows = int(self.psql("SELECT count(*) FROM pgbench_accounts")) if have == "1" else 0
        if rows != scale * 100000:
            log("pgbench -i -s %d" % scale)
            subprocess.run(["pgbench", "-i", "-q", "-s", str(scale), self.conn()], check=True,
                           capture_output=True)


def report_context(out):
    """Make the report folder out; the date stamp and the server's version."""
    os.makedirs(out, exist_ok=True)
    version = subprocess.run(["pg_config", "--version"], capture_output=True,
                             text=True).stdout.strip()
    return time.strftime("%Y-%m-%d"), version


def proc_stat(pid):
    """(ppid, CPU ticks of the process and of its reaped children), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    # the command name is in parentheses and may hold spaces
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is the state (stat's field 3); utime, stime, cutime and cstime
    # are stat's fields 14 to 17
    return int(fields[1]), sum(int(x) for x in fields[11:15])


def server_cpu_seconds(datadir):
    """CPU seconds used so far by the cluster's processes: the postmaster and
    every live descendant, each with its reaped children (a backend that
    exited and was reaped is in the postmaster's children's time)."""
    with open(os.path.join(datadir, "postmaster.pid")) as f:
        root = int(f.readline())
    stats = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(int(d))
            if st is not None:
                stats[int(d)] = st
    children = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total / TICK


def pgbench(cl, workload, args):
    cmd = ["pgbench", "-c", str(args.clients), "-j", str(args.clients),
           "-T", str(args.seconds)]
    if workload == "select-only":
        cmd.append("-S")
    cpu0 = server_cpu_seconds(cl.datadir)
    r = subprocess.run(cmd + [cl.conn()], capture_output=True, text=True)
    m = re.search(r"tps = ([0-9.]+) \(without initial", r.stdout)
    n = re.search(r"number of transactions actually processed: ([0-9]+)", r.stdout)
    if r.returncode != 0 or m is None or n is None:
        sys.exit("pgbench failed (%s): %s" % (workload, r.stderr[-500:]))
    # let the postmaster reap the backends, whose time then counts as its children's
    time.sleep(0.3)
    cpu = server_cpu_seconds(cl.datadir) - cpu0
    return float(m.group(1)), cpu * 1e6 / int(n.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=10, help="pgbench -i -s (default 10)")
    ap.add_argument("--clients", type=int, default=2, help="pgbench -c and -j (default 2)")
    ap.add_argument("--seconds", type=int, default=10, help="pgbench -T per run (default 10)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of both configurations")
    ap.add_argument("--disks", type=int, default=4, help="active_pg.ndisks (default 4)")
    ap.add_argument("--port", type=int, default=5496)
    ap.add_argument("--datadir", default="/tmp/active_pg-oltp")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results"))
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = ap.parse_args()

    cl = Cluster(args)
    cl.setup(args.scale)
    tps = {(c, w): [] for c in CONFIGS for w in ("select-only", "tpc-b")}
    cpu = {(c, w): [] for c in CONFIGS for w in ("select-only", "tpc-b")}
    try:
        for r in range(args.rounds):
            # alternate which configuration goes first
            order = CONFIGS if r % 2 == 0 else tuple(reversed(CONFIGS))
            for config in order:
                cl.start(config)
                preloaded = cl.psql("SHOW shared_preload_libraries")
                if ("active_pg" in preloaded) != (config == "with"):
                    sys.exit("configuration %s not in effect (%s)" % (config, preloaded))
                # warm the cache and the connection path before measuring
                subprocess.run(["pgbench", "-S", "-c", str(args.clients), "-T", "3",
                                cl.conn()], capture_output=True, check=True)
                for w in ("select-only", "tpc-b"):
                    t, us = pgbench(cl, w, args)
                    tps[(config, w)].append(t)
                    cpu[(config, w)].append(us)
                    log("round %d %-7s %-11s tps %.0f, server CPU %.1f us per transaction"
                        % (r + 1, config, w, t, us))
    finally:
        if not args.keep:
            cl.stop()

    stamp, version = report_context(args.out)
    lines = ["# OLTP with and without active_pg, %s" % stamp, "",
             "%s; pgbench scale %d, %d clients, %d s per run, %d rounds alternating the "
             "configurations (server restarted each time, 3 s warm-up); shared_buffers 256MB; "
             "%d disks when preloaded. Command: `bench/oltp/run --scale %d --clients %d "
             "--seconds %d --rounds %d`." % (version, args.scale, args.clients, args.seconds,
                                             args.rounds, args.disks, args.scale, args.clients,
                                             args.seconds, args.rounds), "",
             "The TPS ratio is of the medians; the paired ratio is the median of each "
             "round's ratio (the two configurations ran back to back). Server CPU is the time "
             "the cluster's processes (postmaster, backends, launcher, disk daemons) spent per "
             "transaction, from /proc: the machine's steal time and drift move it far less "
             "than TPS.", "",
             "| workload | without active_pg (median tps) | with active_pg (median tps) | ratio "
             "| paired ratio | server CPU per transaction without / with (median us) "
             "| CPU with / without | runs without (tps) | runs with (tps) |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    summary = {}
    for w in ("select-only", "tpc-b"):
        a = statistics.median(tps[("without", w)])
        b = statistics.median(tps[("with", w)])
        paired = statistics.median(y / x for x, y in zip(tps[("without", w)],
                                                         tps[("with", w)]))
        ca = statistics.median(cpu[("without", w)])
        cb = statistics.median(cpu[("with", w)])
        summary[w] = {"without": a, "with": b, "ratio": b / a, "paired_ratio": paired,
                      "cpu_us_without": ca, "cpu_us_with": cb,
                      "runs_without": tps[("without", w)], "runs_with": tps[("with", w)],
                      "cpu_runs_without": cpu[("without", w)],
                      "cpu_runs_with": cpu[("with", w)]}
        lines.append("| %s | %.0f | %.0f | %.3fx | %.3fx | %.1f / %.1f | %.3f | %s | %s |" % (
            w, a, b, b / a, paired, ca, cb, cb / ca,
            ", ".join("%.0f" % x for x in tps[("without", w)]),
            ", ".join("%.0f" % x for x in tps[("with", w)])))
    md = os.path.join(args.out, "%s-oltp.md" % stamp)
    with open(md, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "%s-oltp.json" % stamp), "w") as f:
        json.dump({"args": vars(args), "summary": summary}, f, indent=1)
    print("\n".join(lines))
    log("wrote %s" % md)


START = time.time()
if __name__ == "__main__":
    main()
