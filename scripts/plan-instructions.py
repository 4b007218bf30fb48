#!/usr/bin/env python3
"""Instructions the extension adds to planning a query, counted by valgrind's
callgrind: free of the machine's noise, which hides a tenth of a millisecond.

For each query file, a single-user backend (`postgres --single`) on the
given data directory runs `EXPLAIN <query>` --repeat times, with active_pg
in shared_preload_libraries and without; an empty script's count (the
start-up) is subtracted.  Prints per query the instructions of one EXPLAIN
without and with the extension and the difference.  The cluster must be
stopped (a single-user backend needs the data directory to itself); nothing
in it changes.  An EXPLAIN also starts the executor (ExecutorStart) and
prints the plan, with the extension's EXPLAIN output; the planning is most of
the difference.  Run as root, the backends run as postgres.

  scripts/plan-instructions.py --datadir /tmp/active_pg-tpcd --db tpcds \\
      bench/tpcds/data/sf0.1/queries/{37,82,90,94}.sql
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def pg_user(cmd):
    return (["runuser", "-u", "postgres", "--"] + cmd) if os.geteuid() == 0 else cmd


def count(args, config, script, tmp):
    postgres = os.path.join(subprocess.run([args.pg_config, "--bindir"], capture_output=True,
                                           text=True, check=True).stdout.strip(), "postgres")
    out = os.path.join(tmp, "callgrind.out")
    opts = ["-c", "jit=off", "-c",
            "shared_preload_libraries=%s" % ("active_pg" if config == "with" else "")]
    for setting in args.set:
        opts += ["-c", setting]
    with open(script) as stdin:
        r = subprocess.run(pg_user(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                                    postgres, "--single", "-D", args.datadir] + opts + [args.db]),
                           stdin=stdin, capture_output=True, text=True)
    if r.returncode != 0 or "ERROR" in r.stdout or "ERROR" in r.stderr:
        sys.exit("single-user backend failed (%s, %s): %s"
                 % (config, script, (r.stdout + r.stderr)[-800:]))
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
    os.unlink(out)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("queries", nargs="+", help="SQL files, one query each")
    ap.add_argument("--datadir", required=True, help="a stopped cluster's data directory")
    ap.add_argument("--db", required=True)
    ap.add_argument("--repeat", type=int, default=20, help="EXPLAINs per count (default 20)")
    ap.add_argument("--set", action="append", default=[],
                    help="a setting for both backends, e.g. max_parallel_workers_per_gather=0")
    ap.add_argument("--pg-config", default="pg_config")
    args = ap.parse_args()
    if os.path.exists(os.path.join(args.datadir, "postmaster.pid")):
        sys.exit("%s is in use: stop its cluster first" % args.datadir)

    tmp = tempfile.mkdtemp(prefix="active_pg-plancount-")
    os.chmod(tmp, 0o777)
    empty = os.path.join(tmp, "empty.sql")
    open(empty, "w").close()
    base = {c: count(args, c, empty, tmp) for c in ("without", "with")}
    print("| query | without (per EXPLAIN) | with | added by active_pg |")
    print("|---|---:|---:|---:|")
    for q in args.queries:
        text = open(q).read().strip().rstrip(";")
        text = " ".join(re.sub(r"--[^\n]*", "", text).split())
        script = os.path.join(tmp, "q.sql")
        with open(script, "w") as f:
            f.write(("EXPLAIN %s;\n" % text) * args.repeat)
        os.chmod(script, 0o644)
        per = {c: (count(args, c, script, tmp) - base[c]) / args.repeat
               for c in ("without", "with")}
        print("| %s | %.0f | %.0f | %+.0f (%+.1f%%) |" % (
            os.path.basename(q), per["without"], per["with"], per["with"] - per["without"],
            100.0 * (per["with"] / per["without"] - 1.0)), flush=True)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
