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

# bench/tpcd/tpcd_common.py runs the single-user backend under callgrind
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench", "tpcd"))
from tpcd_common import callgrind_single_user  # noqa: E402


def count(args, bindir, config, script, tmp):
    opts = ["-c", "jit=off", "-c",
            "shared_preload_libraries=%s" % ("active_pg" if config == "with" else "")]
    for setting in args.set:
        opts += ["-c", setting]
    out = os.path.join(tmp, "callgrind.out")
    total = callgrind_single_user(bindir, args.datadir, args.db, opts, script, out)
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

    bindir = subprocess.run([args.pg_config, "--bindir"], capture_output=True, text=True,
                            check=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="active_pg-plancount-")
    os.chmod(tmp, 0o777)
    empty = os.path.join(tmp, "empty.sql")
    open(empty, "w").close()
    base = {c: count(args, bindir, c, empty, tmp) for c in ("without", "with")}
    print("| query | without (per EXPLAIN) | with | added by active_pg |")
    print("|---|---:|---:|---:|")
    for q in args.queries:
        text = open(q).read().strip().rstrip(";")
        text = " ".join(re.sub(r"--[^\n]*", "", text).split())
        script = os.path.join(tmp, "q.sql")
        with open(script, "w") as f:
            f.write(("EXPLAIN %s;\n" % text) * args.repeat)
        os.chmod(script, 0o644)
        per = {c: (count(args, bindir, c, script, tmp) - base[c]) / args.repeat
               for c in ("without", "with")}
        print("| %s | %.0f | %.0f | %+.0f (%+.1f%%) |" % (
            os.path.basename(q), per["without"], per["with"], per["with"] - per["without"],
            100.0 * (per["with"] / per["without"] - 1.0)), flush=True)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
