#!/usr/bin/env python3
"""TPC-DS-shaped workload for active_pg: a second analytic schema beside TPC-H.

Started by bench/tpcds/run.  The data and the 99 query texts come from
DuckDB's tpcds extension (dsdgen and the spec's queries, both from PyPI:
duckdb and duckdb-extension-tpcds, pinned in requirements.txt); nothing of
them is stored in this repository.  This script

  generate  runs dsdgen at --sf into --data (cached: pipe-separated files,
            the column types PostgreSQL gets, the queries rewritten where
            DuckDB's dialect is not PostgreSQL's);
  load      creates database tpcds in the cluster of --dsn with the
            extension, the tables (keys integer, text columns char(n) where
            every value has the same length n, varchar(n) otherwise,
            decimals numeric(p,s), dates date), the spec's primary keys,
            copies the data and runs VACUUM ANALYZE;
  run       runs each query with the extension off (stock) and with its
            defaults, the modes taking turns run by run, each run a new
            session, under a statement timeout; compares the results (rows
            sorted, as text); prints a Markdown table, the geometric mean and
            the worst ratio.  Exit status 1 if any result differs.

The types follow the data rather than the spec's DDL: dsdgen writes ids,
flags and codes of one fixed length (char(n), so bpchar's comparison rules
are exercised) and names and descriptions of varying length (varchar).
"""

import argparse
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

T0 = time.time()

# The spec's primary keys (TPC-DS 2.x, section 2): every dimension's
# surrogate key, the fact tables' (item, ticket or order number).
PRIMARY_KEYS = {
    "call_center": ["cc_call_center_sk"], "catalog_page": ["cp_catalog_page_sk"],
    "customer": ["c_customer_sk"], "customer_address": ["ca_address_sk"],
    "customer_demographics": ["cd_demo_sk"], "date_dim": ["d_date_sk"],
    "household_demographics": ["hd_demo_sk"], "income_band": ["ib_income_band_sk"],
    "item": ["i_item_sk"], "promotion": ["p_promo_sk"], "reason": ["r_reason_sk"],
    "ship_mode": ["sm_ship_mode_sk"], "store": ["s_store_sk"], "time_dim": ["t_time_sk"],
    "warehouse": ["w_warehouse_sk"], "web_page": ["wp_web_page_sk"], "web_site": ["web_site_sk"],
    "store_sales": ["ss_item_sk", "ss_ticket_number"],
    "store_returns": ["sr_item_sk", "sr_ticket_number"],
    "catalog_sales": ["cs_item_sk", "cs_order_number"],
    "catalog_returns": ["cr_item_sk", "cr_order_number"],
    "web_sales": ["ws_item_sk", "ws_order_number"],
    "web_returns": ["wr_item_sk", "wr_order_number"],
    "inventory": ["inv_date_sk", "inv_item_sk", "inv_warehouse_sk"],
}


def log(msg):
    print("[%7.1fs] %s" % (time.time() - T0, msg), file=sys.stderr, flush=True)


def die(msg):
    print("tpcds: " + msg, file=sys.stderr, flush=True)
    sys.exit(2)


# ------------------------------------------------------------- generate --

def duckdb_with_tpcds():
    import duckdb
    import duckdb_extension_tpcds
    paths = glob.glob(os.path.join(os.path.dirname(duckdb_extension_tpcds.__file__),
                                   "extensions", "*", "tpcds.duckdb_extension"))
    if not paths:
        die("duckdb-extension-tpcds ships no tpcds.duckdb_extension")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute("LOAD '%s'" % paths[0])
    return con


def pg_type(con, table, column, dtype):
    """The PostgreSQL type of one generated column (see the module comment)."""
    if dtype in ("BIGINT", "INTEGER"):
        lo, hi = con.execute('SELECT min("%s"), max("%s") FROM %s' % (column, column, table)).fetchone()
        if lo is None or (lo >= -2**31 and hi < 2**31):
            return "integer"
        return "bigint"
    if dtype == "VARCHAR":
        lo, hi = con.execute('SELECT min(length("%s")), max(length("%s")) FROM %s'
                             % (column, column, table)).fetchone()
        if hi is None or hi == 0:
            return "varchar(1)"
        if lo == hi:
            return "char(%d)" % hi
        return "varchar(%d)" % hi
    m = re.match(r"DECIMAL\((\d+),(\d+)\)", dtype)
    if m:
        return "numeric(%s,%s)" % m.groups()
    if dtype == "DATE":
        return "date"
    if dtype == "DOUBLE":
        return "double precision"
    die("%s.%s: no PostgreSQL type for %s" % (table, column, dtype))


# DuckDB's spelling of the spec's queries where PostgreSQL's differs.
def pg_query(sql):
    # date + 30 days: DuckDB writes "+ INTERVAL 30 DAY"; PostgreSQL adds
    # integers to a date (the result stays a date, as the spec means)
    sql = re.sub(r"INTERVAL\s+'?(\d+)'?\s+DAYS?", r"\1", sql, flags=re.I)
    sql = re.sub(r"INTERVAL\s+'(\d+)\s+days?'", r"\1", sql, flags=re.I)
    return sql.rstrip().rstrip(";") + ";\n"


def generate(args):
    out = args.data
    os.makedirs(os.path.join(out, "queries"), exist_ok=True)
    con = duckdb_with_tpcds()
    log("dsdgen sf=%s" % args.sf)
    con.execute("CALL dsdgen(sf=%s)" % args.sf)
    tables = {}
    for (t,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall():
        cols = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                           "WHERE table_name = ? ORDER BY ordinal_position", [t]).fetchall()
        tables[t] = [(c, pg_type(con, t, c, d)) for c, d in cols]
        con.execute("COPY %s TO '%s' (FORMAT csv, DELIMITER '|', HEADER false, NULLSTR '')"
                    % (t, os.path.join(out, t + ".dat")))
        log("  %s: %d columns" % (t, len(cols)))
    for nr, q in con.execute("SELECT query_nr, query FROM tpcds_queries()").fetchall():
        with open(os.path.join(out, "queries", "%02d.sql" % nr), "w") as f:
            f.write(pg_query(q))
    with open(os.path.join(out, "schema.json"), "w") as f:
        json.dump({"sf": args.sf, "tables": tables}, f, indent=1)
    log("generated into %s" % out)


# ------------------------------------------------------------------ load --

def psql(dsn, sql, check=True, timeout=None):
    r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", dsn],
                       input=sql, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        die("psql failed: %s\n%s" % (sql[:300], r.stderr))
    return r


def dsn_db(dsn, db):
    return re.sub(r"dbname=\S+", "", dsn) + " dbname=" + db


def load(args):
    with open(os.path.join(args.data, "schema.json")) as f:
        schema = json.load(f)
    root = dsn_db(args.dsn, "postgres")
    psql(root, "DROP DATABASE IF EXISTS tpcds;")
    psql(root, "CREATE DATABASE tpcds;")
    db = dsn_db(args.dsn, "tpcds")
    psql(db, "CREATE EXTENSION active_pg;")
    for t, cols in sorted(schema["tables"].items()):
        pk = PRIMARY_KEYS.get(t, [])
        ddl = ",\n  ".join('%s %s%s' % (c, ty, " NOT NULL" if c in pk else "") for c, ty in cols)
        if pk:
            ddl += ",\n  PRIMARY KEY (%s)" % ", ".join(pk)
        psql(db, "CREATE TABLE %s (\n  %s\n);" % (t, ddl))
        path = os.path.abspath(os.path.join(args.data, t + ".dat"))
        with open(path) as f:
            r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-c",
                                "\\copy %s FROM STDIN WITH (FORMAT csv, DELIMITER '|', NULL '')" % t],
                               stdin=f, capture_output=True, text=True)
        if r.returncode != 0:
            die("copy %s: %s" % (t, r.stderr))
        log("  loaded %s" % t)
    psql(db, "VACUUM ANALYZE;")
    psql(db, "COMMENT ON TABLE store_sales IS 'tpcds sf=%s';" % schema["sf"])
    log("loaded sf=%s into database tpcds" % schema["sf"])


# ------------------------------------------------------------------- run --

def run_query(dsn, settings, sql, timeout_s, rows=False):
    """(ms or None on timeout, sorted rows or None, error or None), in a new session."""
    text = "SET statement_timeout = '%ds';\n%s\n\\timing on\n%s" % (timeout_s, settings, sql)
    r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "|", "-d", dsn],
                       input=text, capture_output=True, text=True)
    if "canceling statement due to statement timeout" in r.stderr:
        return None, None, "timeout"
    err = [l for l in r.stderr.splitlines() if "ERROR" in l]
    if err:
        return None, None, err[0]
    lines = r.stdout.splitlines()
    ms = [float(m.group(1)) for l in lines for m in [re.match(r"^Time: ([0-9.]+) ms", l)] if m]
    out = sorted(l for l in lines if not l.startswith("Time: ")) if rows else None
    return (ms[-1] if ms else None), out, None


def print_error_row(q, stock_ms, what):
    """The table's row of a query whose pushdown run failed or timed out."""
    print("| %s | %.1f | %s | | | ERROR |" % (q, stock_ms, what.replace("|", "/")), flush=True)


def summary(ratios):
    """'geometric mean G over N queries, worst R (q), K below 0.95x: ...' of
    [(ratio, query)]."""
    gm = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    worst = min(ratios)
    below = [q for r, q in ratios if r < 0.95]
    return "geometric mean %.2fx over %d queries, worst %.2fx (%s), %d below 0.95x: %s" % (
        gm, len(ratios), worst[0], worst[1], len(below), " ".join(below))


def run(args):
    db = dsn_db(args.dsn, "tpcds")
    files = sorted(glob.glob(os.path.join(args.data, "queries", "*.sql")))
    if args.queries:
        want = {int(q) for q in args.queries}
        files = [f for f in files if int(os.path.basename(f)[:-4]) in want]
    common = "SET max_parallel_workers_per_gather = 0;" if args.serial else ""
    off = common + "SET active_pg.enable = off;"
    on = common + "SET active_pg.enable = on;"
    print("| query | stock ms | active ms | active vs stock | by rounds | result |")
    print("|---|---:|---:|---:|---:|---|")
    ratios = []
    paired = []
    status = 0
    skipped = []
    for f in files:
        q = os.path.basename(f)[:-4]
        sql = open(f).read()
        s_ms, s_rows, s_err = run_query(db, off, sql, args.timeout, rows=True)
        if s_err:
            skipped.append("%s (stock: %s)" % (q, s_err))
            continue
        a_ms, a_rows, a_err = run_query(db, on, sql, args.timeout, rows=True)
        if a_err:
            print_error_row(q, s_ms, a_err)
            status = 1
            continue
        check = "ok" if s_rows == a_rows else "DIFFERS"
        if check != "ok":
            status = 1
        # the checking runs count too: --runs 0 times each mode once
        st, at = [s_ms], [a_ms]
        for _ in range(args.runs):
            st.append(run_query(db, off, sql, args.timeout)[0])
            at.append(run_query(db, on, sql, args.timeout)[0])
        # a repeat that timed out or failed: the query is as unusable as a first run that did
        if None in st:
            skipped.append("%s (stock: timeout or error in a repeated run)" % q)
            continue
        if None in at:
            print_error_row(q, statistics.median(st), "timeout or error in a repeated run")
            status = 1
            continue
        s = statistics.median(st)
        a = statistics.median(at)
        r = s / a
        ratios.append((r, q))
        # each round runs stock then pushdown back to back: the median of the
        # rounds' own ratios, where a drift of the machine between rounds cancels
        p = statistics.median([x / y for x, y in zip(st, at) if y > 0])
        paired.append((p, q))
        print("| %s | %.1f | %.1f | %.2fx | %.2fx | %s |" % (q, s, a, r, p, check), flush=True)
    if ratios:
        print("\n" + summary(ratios))
        print("by rounds (the median of each query's rounds' own ratios): " + summary(paired))
    if skipped:
        print("\nnot run (stock fails or exceeds the timeout): " + "; ".join(skipped))
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["generate", "load", "run"])
    ap.add_argument("--sf", default="1")
    ap.add_argument("--data", required=True)
    ap.add_argument("--dsn", default="host=/tmp port=5498 user=postgres dbname=postgres")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=120, help="statement timeout, seconds")
    ap.add_argument("--serial", action="store_true")
    ap.add_argument("queries", nargs="*")
    args = ap.parse_intermixed_args()
    if args.step == "generate":
        generate(args)
    elif args.step == "load":
        load(args)
    else:
        sys.exit(run(args))


if __name__ == "__main__":
    main()
