#!/bin/bash
# The main job on a fresh Debian 12 machine: install what is missing, build and
# install active_pg, start a temporary cluster with 4 disk daemons, load a
# TPC-H-like lineitem (SF 1 = 6 M rows by default), show a pushed-down query
# with EXPLAIN ANALYZE and compare it with stock PostgreSQL (serial and
# parallel) on the same data.
#
# usage: scripts/demo.sh [--sf 1] [--runs 3] [--disks 4] [--keep]
#   --keep leaves the cluster running (PGHOST=/tmp PGPORT=5499)
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SF=1; RUNS=3; DISKS=4; KEEP=0
while [ $# -gt 0 ]; do
	case $1 in
		--sf) SF=$2; shift 2 ;;
		--runs) RUNS=$2; shift 2 ;;
		--disks) DISKS=$2; shift 2 ;;
		--keep) KEEP=1; shift ;;
		*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

"$SRC/scripts/deps.sh"
. "$SRC/scripts/common.sh"
echo "== build and install"
build_and_install "$SRC"

DATA=${ACTIVE_PG_DEMO_DIR:-/tmp/active_pg-demo}
export PGPORT=${PGPORT:-5499} PGHOST=/tmp PGDATABASE=postgres PGUSER=postgres
if [ "$(id -u)" -ne 0 ]; then PGUSER=$(id -un); fi

if as_pguser pg_ctl -D "$DATA" status >/dev/null 2>&1; then
	as_pguser pg_ctl -D "$DATA" -m fast stop >/dev/null
fi
if [ ! -f "$DATA/PG_VERSION" ]; then
	echo "== initdb $DATA"
	mkdir -p "$DATA"
	[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$DATA"
	as_pguser initdb -D "$DATA" -A trust -U "$PGUSER" >/dev/null
fi
cat > "$DATA/active_pg_demo.conf" <<CONF
port = $PGPORT
unix_socket_directories = '/tmp'
listen_addresses = ''
shared_preload_libraries = 'active_pg'
active_pg.ndisks = $DISKS
shared_buffers = 256MB
max_parallel_workers_per_gather = 2
max_wal_size = 4GB
CONF
grep -q "include_if_exists = 'active_pg_demo.conf'" "$DATA/postgresql.conf" || \
	echo "include_if_exists = 'active_pg_demo.conf'" >> "$DATA/postgresql.conf"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$DATA/active_pg_demo.conf"
echo "== start cluster (port $PGPORT, $DISKS disks)"
as_pguser pg_ctl -D "$DATA" -l "$DATA/server.log" -w start >/dev/null
if [ $KEEP -eq 0 ]; then
	trap 'as_pguser pg_ctl -D "$DATA" -m fast stop >/dev/null 2>&1 || true' EXIT
fi
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS active_pg"
psql -X -c "SELECT * FROM active_pg.disks()"

"$SRC/bench/tpcd/q6filter" --sf "$SF" --runs "$RUNS"

if [ $KEEP -eq 1 ]; then
	echo "cluster left running: PGHOST=/tmp PGPORT=$PGPORT psql"
fi
