#!/usr/bin/env python3
"""Instructions per OLTP statement with and without active_pg, counted by
valgrind's callgrind: the server's work for pgbench's select-only statement
and TPC-B transaction, free of the machine's noise, which hides a few percent
of TPS (bench/oltp/oltp.py measures TPS).  Started by
`bench/oltp/run --instructions`.

Each count comes from a single-user backend (`postgres --single`) that runs a
script of the statements on a fresh copy of one vacuumed, checkpointed
pgbench database, with active_pg in shared_preload_libraries or not (the
extension created in the database either way).  A single-user backend parses,
plans and executes a statement as a connection's backend does, the planner
hooks included; with the library preloaded it registers the launcher, so the
planner takes the path it takes on a server with disks.  The same backend
with an empty script gives the start-up's count, which is subtracted.
"""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tpcd"))
from oltp import Cluster, log, report_context  # noqa: E402
from tpcd_common import callgrind_single_user  # noqa: E402

CONFIGS = ("without", "with")


def write_scripts(d, scale, statements, transactions):
    """pgbench's two built-in workloads as single-user scripts, seeded, and a
    join of its three keyed tables (an application's lookup)."""
    rnd = random.Random(1)
    naccounts = scale * 100000
    paths = {"empty": os.path.join(d, "empty.sql"),
             "select-only": os.path.join(d, "select-only.sql"),
             "tpc-b": os.path.join(d, "tpc-b.sql"),
             "join": os.path.join(d, "join.sql")}
    with open(paths["empty"], "w"):
        pass
    with open(paths["select-only"], "w") as f:
        for _ in range(statements):
            f.write("SELECT abalance FROM pgbench_accounts WHERE aid = %d;\n"
                    % rnd.randint(1, naccounts))
    with open(paths["tpc-b"], "w") as f:
        for _ in range(transactions):
            aid = rnd.randint(1, naccounts)
            bid = rnd.randint(1, scale)
            tid = rnd.randint(1, scale * 10)
            delta = rnd.randint(-5000, 5000)
            f.write("BEGIN;\n"
                    "UPDATE pgbench_accounts SET abalance = abalance + %d WHERE aid = %d;\n"
                    "SELECT abalance FROM pgbench_accounts WHERE aid = %d;\n"
                    "UPDATE pgbench_tellers SET tbalance = tbalance + %d WHERE tid = %d;\n"
                    "UPDATE pgbench_branches SET bbalance = bbalance + %d WHERE bid = %d;\n"
                    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) "
                    "VALUES (%d, %d, %d, %d, CURRENT_TIMESTAMP);\n"
                    "END;\n" % (delta, aid, aid, delta, tid, delta, bid, tid, bid, aid, delta))
    with open(paths["join"], "w") as f:
        for _ in range(statements):
            f.write("SELECT a.abalance, b.bbalance, t.tbalance FROM pgbench_accounts a "
                    "JOIN pgbench_branches b ON a.bid = b.bid JOIN pgbench_tellers t "
                    "ON t.bid = b.bid WHERE a.aid = %d AND t.tid = %d;\n"
                    % (rnd.randint(1, naccounts), rnd.randint(1, scale * 10)))
    return paths


def count(args, bindir, scratch, outdir, config, script, tag):
    """Run script in a single-user backend on a fresh copy of the pristine
    cluster under callgrind: (all instructions, instructions in
    active_pg.so itself)."""
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    subprocess.run(["cp", "-a", args.datadir, scratch], check=True)
    cg = os.path.join(outdir, "callgrind.%s.%s" % (config, tag))
    opts = ["-c", "shared_buffers=256MB", "-c", "jit=off",
            "-c", "shared_preload_libraries=%s" % ("active_pg" if config == "with" else "")]
    if config == "with":
        opts += ["-c", "active_pg.ndisks=%d" % args.disks]
    total = callgrind_single_user(bindir, scratch, "oltp", opts, script, cg)
    ann = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", cg],
                         capture_output=True, text=True, check=True).stdout
    own = 0
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(.*active_pg\.so\]\s*$", line)
        if m:
            own += int(m.group(1).replace(",", ""))
    os.unlink(cg)
    return total, own


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=10, help="pgbench -i -s (default 10)")
    ap.add_argument("--statements", type=int, default=2000,
                    help="select-only and join statements per count (default 2000)")
    ap.add_argument("--transactions", type=int, default=500,
                    help="TPC-B transactions per count (default 500)")
    ap.add_argument("--rounds", type=int, default=2, help="counts of each (default 2)")
    ap.add_argument("--disks", type=int, default=4, help="active_pg.ndisks (default 4)")
    ap.add_argument("--port", type=int, default=5496)
    ap.add_argument("--datadir", default="/tmp/active_pg-oltp")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results"))
    args = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        sys.exit("valgrind is needed (Debian: apt-get install valgrind; bench/oltp/run "
                 "--instructions installs it)")

    cl = Cluster(args)
    cl.setup(args.scale)
    cl.psql("VACUUM (FREEZE, ANALYZE)")
    cl.psql("CHECKPOINT")
    cl.stop()

    work = tempfile.mkdtemp(prefix="active_pg-icount-")
    if os.geteuid() == 0:
        shutil.chown(work, "postgres", "postgres")
    scripts = write_scripts(work, args.scale, args.statements, args.transactions)
    units = {"select-only": args.statements, "tpc-b": args.transactions,
             "join": args.statements}
    scratch = args.datadir.rstrip("/") + "-scratch"
    bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                            check=True).stdout.strip()
    per = {(c, w): [] for c in CONFIGS for w in units}
    own = {(c, w): [] for c in CONFIGS for w in units}
    try:
        for r in range(args.rounds):
            order = CONFIGS if r % 2 == 0 else tuple(reversed(CONFIGS))
            for config in order:
                base, base_own = count(args, bindir, scratch, work, config,
                                       scripts["empty"], "empty")
                for w, n in units.items():
                    t, o = count(args, bindir, scratch, work, config, scripts[w], w)
                    per[(config, w)].append((t - base) / n)
                    own[(config, w)].append((o - base_own) / n)
                    log("round %d %-7s %-11s %.0f instructions per %s, %.0f in active_pg.so"
                        % (r + 1, config, w, per[(config, w)][-1],
                           "transaction" if w == "tpc-b" else "statement",
                           own[(config, w)][-1]))
    finally:
        if os.path.exists(scratch):
            shutil.rmtree(scratch)
        shutil.rmtree(work)

    stamp, version = report_context(args.out)
    lines = ["# Instructions per OLTP statement with and without active_pg, %s" % stamp, "",
             "%s; valgrind's callgrind over a single-user backend on a fresh copy of a "
             "vacuumed pgbench database (scale %d), the start-up's count subtracted; %d "
             "select-only statements, %d TPC-B transactions, as many joins as select-only "
             "statements (accounts, branches and tellers by key), %d rounds. Command: "
             "`bench/oltp/run --instructions --scale %d --statements %d --transactions %d "
             "--rounds %d`." % (version, args.scale, args.statements, args.transactions,
                                args.rounds, args.scale, args.statements, args.transactions,
                                args.rounds), "",
             "| workload | without active_pg | with active_pg | with / without | in active_pg.so "
             "| rounds without | rounds with |",
             "|---|---:|---:|---:|---:|---|---|"]
    for w in units:
        a = min(per[("without", w)])
        b = min(per[("with", w)])
        lines.append("| %s (per %s) | %.0f | %.0f | %.4f | %.0f | %s | %s |" % (
            w, "transaction" if w == "tpc-b" else "statement", a, b, b / a,
            min(own[("with", w)]), ", ".join("%.0f" % x for x in per[("without", w)]),
            ", ".join("%.0f" % x for x in per[("with", w)])))
    md = os.path.join(args.out, "%s-instructions.md" % stamp)
    with open(md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    log("wrote %s" % md)


if __name__ == "__main__":
    main()
