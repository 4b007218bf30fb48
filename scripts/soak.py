#!/usr/bin/env python3
"""Soak test: writers, pushed-down reads checked against stock, failing disks.

For SECONDS, on a temporary cluster with 4 launched disks:
  - pgbench runs a TPC-B-like script with savepoints, rollbacks to them and
    whole-transaction rollbacks (2 clients);
  - a checker runs pushed-down queries (ActiveScan, ActiveAgg, a Bloom join,
    a parallel scan) with active_pg.force_pushdown = on and again with
    active_pg.enable = off, both in one REPEATABLE READ transaction, so both
    see the same snapshot, and compares the results;
  - every few seconds a random disk daemon is killed (-9) or stopped (SIGSTOP,
    continued a few seconds later).
It prints the checks, mismatches (must be 0), failed queries (must be 0) and
the takeovers the server log reports, and exits non-zero on a mismatch or a
failed query.  Run as root (the cluster runs as postgres) or as the cluster's
user; PostgreSQL's bin directory must be on PATH and active_pg installed.

    scripts/soak.py [SECONDS] [WORKDIR]      (default 600 s in /tmp/active_pg-soak)
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

SECS = int(sys.argv[1]) if len(sys.argv) > 1 else 600
WORK = sys.argv[2] if len(sys.argv) > 2 else "/tmp/active_pg-soak"
PORT = int(os.environ.get("ACTIVE_PG_SOAK_PORT", "54397"))
DATA = os.path.join(WORK, "data")
ROOT = os.geteuid() == 0

# (name, query): each pushed down when forced, each with a deterministic result
CHECKS = [
    ("scan", "SELECT count(*), sum(abalance), min(aid), max(aid) FROM pgbench_accounts "
             "WHERE abalance <> 0 OR aid % 997 = 1"),
    ("agg", "SELECT bid, count(*), sum(abalance) FROM pgbench_accounts GROUP BY bid ORDER BY bid"),
    ("bloom", "SELECT count(*), sum(a.abalance) FROM pgbench_accounts a JOIN pgbench_branches b "
              "ON a.bid = b.bid WHERE b.bbalance > 0"),
    ("parallel", "SELECT count(*), sum(abalance) FROM pgbench_accounts WHERE aid % 7 = 3"),
]

TPCB = """\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
\\set undo random(0, 3)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SAVEPOINT s1;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
\\if :undo = 0
ROLLBACK TO SAVEPOINT s1;
\\endif
\\if :undo = 1
ROLLBACK;
\\else
COMMIT;
\\endif
"""


def as_pg(cmd, **kw):
    if ROOT:
        cmd = ["runuser", "-u", "postgres", "--", "env", "PATH=" + os.environ["PATH"]] + cmd
    return subprocess.run(cmd, **kw)


def psql(sql, check=True):
    r = as_pg(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", WORK, "-p", str(PORT),
               "-d", "postgres", "-c", sql], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return r


def disk_pids():
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            argv = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"diskd") and DATA.encode() in argv:
            pids.append(int(p))
    return pids


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    if ROOT:
        shutil.chown(WORK, "postgres", "postgres")
    as_pg(["initdb", "-A", "trust", "-D", DATA], check=True, capture_output=True)
    with open(os.path.join(DATA, "postgresql.conf"), "a") as f:
        f.write("shared_preload_libraries = 'active_pg'\nactive_pg.ndisks = 4\n"
                "active_pg.connect_timeout = 1000\nactive_pg.disk_timeout = '4s'\n"
                "fsync = off\nlog_min_messages = log\n")
    as_pg(["pg_ctl", "-D", DATA, "-l", os.path.join(WORK, "server.log"), "-w",
           "-o", "-p %d -k %s -c listen_addresses=''" % (PORT, WORK), "start"],
          check=True, capture_output=True)
    stopped = set()
    try:
        psql("CREATE EXTENSION active_pg")
        as_pg(["pgbench", "-h", WORK, "-p", str(PORT), "-i", "-s", "5", "-q", "postgres"],
              check=True, capture_output=True)
        script = os.path.join(WORK, "tpcb.sql")
        with open(script, "w") as f:
            f.write(TPCB)
        os.chmod(script, 0o644)
        # every check really runs at the disks when forced
        for name, q in CHECKS:
            plan = psql("SET active_pg.force_pushdown = on; SET active_pg.force_bloom = on; "
                        "SET max_parallel_workers_per_gather = %d; EXPLAIN (COSTS OFF) %s"
                        % (2 if name == "parallel" else 0, q)).stdout
            if "Active" not in plan:
                print("soak: the %s check is not pushed down:\n%s" % (name, plan))
                return 1
        bench = as_pg_popen(["pgbench", "-h", WORK, "-p", str(PORT), "-n", "-c", "2", "-j", "2",
                             "-T", str(SECS), "-f", script, "postgres"])
        checks = mismatches = failed = 0
        end = time.time() + SECS
        next_fault = time.time() + 3
        while time.time() < end:
            if time.time() >= next_fault:
                pids = disk_pids()
                for pid in list(stopped):
                    os.kill(pid, signal.SIGCONT) if pid in pids else None
                    stopped.discard(pid)
                if pids:
                    pid = random.choice(pids)
                    if random.random() < 0.5:
                        os.kill(pid, signal.SIGKILL)
                    else:
                        os.kill(pid, signal.SIGSTOP)
                        stopped.add(pid)
                next_fault = time.time() + random.uniform(3, 8)
            name, q = random.choice(CHECKS)
            settings = "SET max_parallel_workers_per_gather = %d;" % (2 if name == "parallel" else 0)
            sql = ("BEGIN ISOLATION LEVEL REPEATABLE READ; %s "
                   "SET LOCAL active_pg.force_pushdown = on; SET LOCAL active_pg.force_bloom = on; %s; "
                   "SET LOCAL active_pg.enable = off; %s; COMMIT;" % (settings, q, q))
            r = psql(sql, check=False)
            checks += 1
            if r.returncode != 0:
                failed += 1
                print("FAILED %s: %s" % (name, r.stderr.strip().splitlines()[-1:]), flush=True)
                continue
            lines = [l for l in r.stdout.splitlines() if l]
            half = len(lines) // 2
            if len(lines) % 2 != 0 or lines[:half] != lines[half:]:
                mismatches += 1
                print("MISMATCH %s:\n%s" % (name, r.stdout), flush=True)
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        bench.wait()
    finally:
        as_pg(["pg_ctl", "-D", DATA, "-m", "immediate", "stop"], capture_output=True)
    log = open(os.path.join(WORK, "server.log"), errors="replace").read()
    takeovers = log.count("failed before sending rows") + log.count("failed during a scan")
    restarts = log.count("active_pg launcher started disk")
    print("soak: %d s, %d checks, %d mismatches, %d failed queries, %d takeovers, %d daemon starts, "
          "pgbench rc %d" % (SECS, checks, mismatches, failed, takeovers, restarts, bench.returncode))
    return 1 if mismatches or failed or checks == 0 or bench.returncode != 0 else 0


def as_pg_popen(cmd):
    if ROOT:
        cmd = ["runuser", "-u", "postgres", "--", "env", "PATH=" + os.environ["PATH"]] + cmd
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
