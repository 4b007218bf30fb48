"""The pgbench part of the TPC-D driver (tpcd.py --pgbench): the query mix as
pgbench custom scripts in concurrent streams, and stock TPC-B writing while
pushed-down scans of the same table are checked against pushdown off."""

import os
import re
import subprocess

from tpcd_common import FIELD_SEP, HERE, MODES, PUSHDOWN_PROVIDERS, log, psql

PGBENCH_MIX = [1, 6, 14]


def parse_pgbench(out):
    tps = re.search(r"tps = ([0-9.]+) \(without initial", out)
    lat = re.search(r"latency average = ([0-9.]+) ms", out)
    std = re.search(r"latency stddev = ([0-9.]+) ms", out)
    txs = re.search(r"number of transactions actually processed: ([0-9]+)", out)
    fail = re.search(r"number of failed transactions: ([0-9]+)", out)
    return {"tps": float(tps.group(1)) if tps else None,
            "lat_ms": float(lat.group(1)) if lat else None,
            "lat_std_ms": float(std.group(1)) if std else None,
            "txs": int(txs.group(1)) if txs else None,
            "failed": int(fail.group(1)) if fail else 0}


def pgbench_env(mode):
    """The mode's settings (MODES) as PGOPTIONS for pgbench's sessions."""
    env = dict(os.environ)
    opts = re.findall(r"SET (\S+) = ([^;]+);", MODES[mode])
    env["PGOPTIONS"] = " ".join("-c %s=%s" % (k, v.strip().strip("'")) for k, v in opts)
    return env


def pgbench_streams(cl, args, modes):
    """TPC-D throughput: the Q1/Q6/Q14 mix as pgbench custom scripts, -c 1,2,4."""
    out = []
    scripts = []
    for q in PGBENCH_MIX:
        scripts += ["-f", os.path.join(HERE, "pgbench", "q%d.sql" % q)]
    for c in args.pgbench_clients:
        for mode in modes:
            cmd = ["pgbench", "-n", "-c", str(c), "-j", str(c), "-T", str(args.pgbench_seconds)] + \
                scripts + [cl.conn()]
            r = subprocess.run(cmd, capture_output=True, text=True, env=pgbench_env(mode))
            p = parse_pgbench(r.stdout)
            p.update({"clients": c, "mode": mode, "rc": r.returncode})
            if r.returncode != 0:
                p["error"] = r.stderr.strip()[-500:]
            log("pgbench Q%s mix -c %d %-8s tps %s latency %s ms" % (
                "/".join(map(str, PGBENCH_MIX)), c, mode, p["tps"], p["lat_ms"]))
            out.append(p)
    return out


TPCB_CHECKS = [
    "SELECT count(*), sum(abalance::bigint), min(aid), max(aid) FROM pgbench_accounts WHERE abalance <> 0",
    "SELECT count(*), sum(abalance::bigint) FROM pgbench_accounts WHERE bid = 1 AND abalance BETWEEN -2000 AND 2000",
    "SELECT count(*), sum(abalance::bigint) FROM pgbench_accounts",
]


def tpcb_concurrent(cl, args):
    """Stock TPC-B pgbench (-c 2) writing pgbench_accounts while pushed-down scans
    of it run; each scan is compared with the same query, pushdown off, in the
    same REPEATABLE READ snapshot.  Also TPC-B's invariant sum(abalance) =
    sum(delta) of pgbench_history, with the accounts side pushed down."""
    db = "tpcb"
    if cl.own:
        psql("DROP DATABASE IF EXISTS tpcb", cl.conn("postgres"))
        psql("CREATE DATABASE tpcb", cl.conn("postgres"))
        cl.ensure_extension("tpcb")
    else:
        db = cl.db
    conn = cl.conn(db)
    log("pgbench -i -s %d (TPC-B) in database %s" % (args.tpcb_scale, db))
    subprocess.run(["pgbench", "-i", "-q", "-s", str(args.tpcb_scale), conn], check=True,
                   capture_output=True)
    plan = psql("SET active_pg.force_pushdown = on; EXPLAIN (COSTS OFF) " + TPCB_CHECKS[0], conn).stdout
    # ActiveAgg aggregates at the disks, ActiveScan filters there: either is pushdown
    pushed = any(("Custom Scan (%s)" % prov) in plan for prov in PUSHDOWN_PROVIDERS)
    tx = "BEGIN ISOLATION LEVEL REPEATABLE READ;\nSET LOCAL active_pg.force_pushdown = on;\n" \
         "SET LOCAL max_parallel_workers_per_gather = 0;\n\\echo @@on\n"
    tx += "".join(q + ";\n" for q in TPCB_CHECKS)
    tx += "SET LOCAL active_pg.force_pushdown = off;\nSET LOCAL active_pg.enable = off;\n\\echo @@off\n"
    tx += "".join(q + ";\n" for q in TPCB_CHECKS)
    tx += "SELECT count(*), coalesce(sum(delta), 0) FROM pgbench_history;\nCOMMIT;\n"
    env = pgbench_env("serial")
    bg = subprocess.Popen(["pgbench", "-n", "-c", "2", "-j", "2", "-T", str(args.pgbench_seconds), conn],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    checks = mismatches = 0
    details = []
    base = None
    while bg.poll() is None:
        r = psql(tx, conn, check=False)
        if r.returncode != 0:
            mismatches += 1
            details.append("check transaction failed: " + r.stderr.strip()[:300])
            continue
        on, off = r.stdout.split("@@on\n", 1)[1].split("@@off\n", 1)
        on_rows = on.strip().splitlines()
        off_rows = off.strip().splitlines()
        hist = off_rows[-1].split(FIELD_SEP)
        checks += 1
        total_on = on_rows[2].split(FIELD_SEP)[1]
        if base is None:
            base = int(total_on) - int(hist[1])
        if on_rows != off_rows[:3] or int(total_on) - int(hist[1]) != base:
            mismatches += 1
            details.append("on=%r off=%r history=%r" % (on_rows, off_rows, hist))
    so, se = bg.communicate()
    p = parse_pgbench(so)
    p.update({"checks": checks, "mismatches": mismatches, "details": details[:5], "pushed": pushed,
              "plan": plan, "rc": bg.returncode, "history_rows": None})
    if bg.returncode != 0:
        p["error"] = se.strip()[-500:]
    log("TPC-B -c 2 %d s: tps %s; %d concurrent scan checks, %d mismatches (pushed down: %s)" % (
        args.pgbench_seconds, p["tps"], checks, mismatches, pushed))
    return p
