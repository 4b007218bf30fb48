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

With --sessions N the count is of whole sessions instead, as a client sees
them: the server itself runs under callgrind (its backends followed, the
disk daemons not), N sessions one after another each EXPLAIN the query
once, and each backend's instructions are counted less those of a session
that only connects.  The first session of a server finds nothing that
earlier sessions worked out and left in shared memory; the later ones do.

  scripts/plan-instructions.py --datadir /tmp/active_pg-tpcd --db tpcds \\
      bench/tpcds/data/sf0.1/queries/{37,82,90,94}.sql
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# bench/tpcd/tpcd_common.py runs the single-user backend under callgrind
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench", "tpcd"))
from tpcd_common import as_pguser, callgrind_single_user  # noqa: E402


def count(args, bindir, config, script, tmp):
    opts = ["-c", "jit=off", "-c",
            "shared_preload_libraries=%s" % (args.library if config == "with" else "")]
    for setting in args.set:
        opts += ["-c", setting]
    out = os.path.join(tmp, "callgrind.out")
    total = callgrind_single_user(bindir, args.datadir, args.db, opts, script, out)
    os.unlink(out)
    return total


def session_main_instructions(profile):
    """A backend's instructions from its callgrind profile: PostgresMain's,
    inclusive (the session from its start to its end)."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", profile],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if re.search(r":PostgresMain( |$)", line):
            return int(line.split()[0].replace(",", ""))
    return None


def count_sessions(args, bindir, config, texts, tmp):
    """Start the server under callgrind; for each text, args.sessions
    sessions that EXPLAIN it once; then one session per text that only
    connects.  Returns {text: [instructions of each session, less a bare
    session's]}."""
    prof = os.path.join(tmp, config)
    os.makedirs(prof)
    os.chmod(prof, 0o777)
    server = subprocess.Popen(as_pguser(
        ["valgrind", "--tool=callgrind", "--trace-children=yes",
         "--trace-children-skip=*diskd*", "--callgrind-out-file=" + prof + "/cg.%p",
         os.path.join(bindir, "postgres"), "-D", args.datadir, "-c", "port=%d" % args.port,
         "-c", "listen_addresses=", "-c", "unix_socket_directories=" + tmp, "-c", "jit=off",
         "-c", "shared_preload_libraries=%s" % (args.library if config == "with" else "")] +
        sum((["-c", s] for s in args.set), [])),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def session(sql):
        r = subprocess.run(["psql", "-h", tmp, "-p", str(args.port), "-U", args.user, "-X",
                            "-At", "-v", "ON_ERROR_STOP=1", "-c", "SELECT pg_backend_pid()",
                            "-c", sql, args.db], capture_output=True, text=True)
        if r.returncode != 0:
            server.terminate()
            sys.exit("session failed: " + r.stderr[-800:])
        return r.stdout.split("\n")[0].strip()

    try:
        for _ in range(120):
            if subprocess.run(["pg_isready", "-q", "-h", tmp, "-p", str(args.port)]).returncode == 0:
                break
            time.sleep(1)
        pids = {t: [session("EXPLAIN " + t) for _ in range(args.sessions)] for t in texts}
        bare = [session("SELECT 1") for _ in range(3)]
    finally:
        subprocess.run(as_pguser([os.path.join(bindir, "pg_ctl"), "-D", args.datadir, "-m",
                                  "fast", "-w", "stop"]), stdout=subprocess.DEVNULL)
        server.wait()
    base = statistics.median(session_main_instructions(os.path.join(prof, "cg." + p))
                             for p in bare)
    return {t: [session_main_instructions(os.path.join(prof, "cg." + p)) - base for p in ps]
            for t, ps in pids.items()}


def main_sessions(args, bindir, texts, tmp):
    """--sessions: the first and the later sessions' instructions per query."""
    per = {c: count_sessions(args, bindir, c, list(texts.values()), tmp)
           for c in ("without", "with")}
    print("| query | session | without | with | added by active_pg |")
    print("|---|---|---:|---:|---:|")
    for name, t in texts.items():
        for label, pick in (("first", lambda v: v[0]),
                            ("later (median)", lambda v: statistics.median(v[1:]))):
            if label != "first" and args.sessions < 2:
                continue
            a, b = pick(per["without"][t]), pick(per["with"][t])
            print("| %s | %s | %.0f | %.0f | %+.0f (%+.1f%%) |" % (
                name, label, a, b, b - a, 100.0 * (b / a - 1.0)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("queries", nargs="+", help="SQL files, one query each")
    ap.add_argument("--datadir", required=True, help="a stopped cluster's data directory")
    ap.add_argument("--db", required=True)
    ap.add_argument("--repeat", type=int, default=20, help="EXPLAINs per count (default 20)")
    ap.add_argument("--set", action="append", default=[],
                    help="a setting for both backends, e.g. max_parallel_workers_per_gather=0")
    ap.add_argument("--sessions", type=int, default=0,
                    help="count whole sessions of a server under callgrind instead, "
                    "this many per query (see above)")
    ap.add_argument("--port", type=int, default=5497, help="the --sessions server's port")
    ap.add_argument("--user", default="postgres", help="the --sessions sessions' role")
    ap.add_argument("--library", default="active_pg",
                    help="the library preloaded 'with' (default active_pg; a path to another build)")
    ap.add_argument("--pg-config", default="pg_config")
    args = ap.parse_args()
    if os.path.exists(os.path.join(args.datadir, "postmaster.pid")):
        sys.exit("%s is in use: stop its cluster first" % args.datadir)

    bindir = subprocess.run([args.pg_config, "--bindir"], capture_output=True, text=True,
                            check=True).stdout.strip()
    texts = {}
    for q in args.queries:
        text = open(q).read().strip().rstrip(";")
        texts[os.path.basename(q)] = " ".join(re.sub(r"--[^\n]*", "", text).split())
    tmp = tempfile.mkdtemp(prefix="active_pg-plancount-")
    os.chmod(tmp, 0o777)
    if args.sessions > 0:
        main_sessions(args, bindir, texts, tmp)
        shutil.rmtree(tmp)
        return
    empty = os.path.join(tmp, "empty.sql")
    open(empty, "w").close()
    base = {c: count(args, bindir, c, empty, tmp) for c in ("without", "with")}
    print("| query | without (per EXPLAIN) | with | added by active_pg |")
    print("|---|---:|---:|---:|")
    for name, text in texts.items():
        script = os.path.join(tmp, "q.sql")
        with open(script, "w") as f:
            f.write(("EXPLAIN %s;\n" % text) * args.repeat)
        os.chmod(script, 0o644)
        per = {c: (count(args, bindir, c, script, tmp) - base[c]) / args.repeat
               for c in ("without", "with")}
        print("| %s | %.0f | %.0f | %+.0f (%+.1f%%) |" % (
            name, per["without"], per["with"], per["with"] - per["without"],
            100.0 * (per["with"] / per["without"] - 1.0)), flush=True)
    shutil.rmtree(tmp)

if __name__ == "__main__":
    main()
