#!/bin/bash
# Compile the extension against the server headers of PostgreSQL majors that
# the test suite does not run, with warnings as errors: today 16 (16.2, from
# the PyPI wheel pgserver==0.1.4, pinned by hash, which bundles a PostgreSQL
# installation with pg_config, PGXS and server headers).  No registry reachable
# from here packages 17's server headers (docs/COMPATIBILITY.md).
#
#   scripts/compile-check.sh      exits non-zero if a build fails
#
# The headers land in $ACTIVE_PG_CACHE (default /var/cache/active_pg); the
# build runs in a copy of the tree under $ACTIVE_PG_COMPILE_DIR (default
# /tmp/active_pg-compile-check) and installs nothing.  Needs pip (installed
# from Debian if missing) and root or sudo for the cache directory.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${ACTIVE_PG_CACHE:-/var/cache/active_pg}
WORK=${ACTIVE_PG_COMPILE_DIR:-/tmp/active_pg-compile-check}

PG16_WHEEL=pgserver-0.1.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
PG16_SHA256=d595789b47624a3d963aa9aa6359da9be31beb7e61f1a45541953242068b8813
PG16_DIR=$CACHE/pg-16.2-headers

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi

# pg_config of PostgreSQL 16.2 (installed once).
pg16_config() {
	local cfg=$PG16_DIR/pgserver/pginstall/bin/pg_config tmp
	if [ -x "$cfg" ] && "$cfg" --version 2>/dev/null | grep -q '^PostgreSQL 16'; then
		echo "$cfg"
		return
	fi
	if ! python3 -m pip --version >/dev/null 2>&1; then
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
	fi
	tmp=$(mktemp -d)
	echo "pgserver==0.1.4 --hash=sha256:$PG16_SHA256" >"$tmp/req.txt"
	python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
		--platform manylinux2014_x86_64 --python-version 3.11 -r "$tmp/req.txt" -d "$tmp" >&2
	python3 "$SRC/scripts/unpack_wheel.py" "$tmp/$PG16_WHEEL" "$tmp/unpacked"
	$SUDO mkdir -p "$CACHE"
	$SUDO rm -rf "$PG16_DIR"
	$SUDO cp -a "$tmp/unpacked" "$PG16_DIR"
	$SUDO chmod -R a+rX "$PG16_DIR"
	rm -rf "$tmp"
	echo "$cfg"
}

fail=0
for major in 16; do
	cfg=$(pg${major}_config)
	rm -rf "$WORK"
	mkdir -p "$WORK"
	rsync -a --exclude .git --exclude 'tmp_check*' --exclude results "$SRC"/ "$WORK"/
	make -C "$WORK" -s clean >/dev/null 2>&1 || true
	if make -C "$WORK" -s PG_CONFIG="$cfg" active_pg.so >"$WORK/build.log" 2>&1; then
		echo "ok: compiles against $("$cfg" --version)"
	else
		tail -40 "$WORK/build.log"
		echo "FAILED: compile against $("$cfg" --version)"
		fail=1
	fi
done
exit $fail
