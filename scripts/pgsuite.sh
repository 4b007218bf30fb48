#!/bin/bash
# PostgreSQL's own regression suite as a differential test of active_pg.
#
# Runs the installed major version's src/test/regress (parallel_schedule) with
# pg_regress on a temporary instance that preloads active_pg (4 disks), once
# per mode, and compares every mode's output with the reference mode's
# (active_pg.enable = off) statement by statement (scripts/pgsuite/compare.py).
# PostgreSQL's own expected files are not the oracle: the reference mode is.
#
#   scripts/pgsuite.sh                  # modes: off default forced
#   scripts/pgsuite.sh off forced bloom # any modes; the first is the reference
#
# Modes: off (active_pg.enable = off), default (nothing set: the optimizer
# chooses), forced (active_pg.force_pushdown = on), bloom (force_pushdown and
# force_bloom on).  Environment:
#   ACTIVE_PG_PGSUITE_MODES    modes when none are given ("off default forced")
#   ACTIVE_PG_PGSUITE_DIR      work dir (/tmp/active_pg-pgsuite): results, report
#   ACTIVE_PG_PGSUITE_CACHE    source cache (/var/cache/active_pg)
#   ACTIVE_PG_PGSUITE_TESTS    run only these tests (test_setup is added), e.g.
#                              "create_index join"; default: the whole schedule
#   ACTIVE_PG_PGSUITE_SCHEDULE parallel (default) or serial
#   ACTIVE_PG_PGSUITE_TIMEOUT  seconds one mode may take (1200)
#   ACTIVE_PG_PGSUITE_INSTALL  0: use the installed extension as it is
#                              (default: build and install this tree first)
# Needs root or sudo (apt-get source, packages); clusters run as postgres.
# Exits non-zero on any difference that is not a legitimate one.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/scripts/common.sh"

WORK=${ACTIVE_PG_PGSUITE_DIR:-/tmp/active_pg-pgsuite}
CACHE=${ACTIVE_PG_PGSUITE_CACHE:-/var/cache/active_pg}
TIMEOUT=${ACTIVE_PG_PGSUITE_TIMEOUT:-1200}
SCHEDULE_KIND=${ACTIVE_PG_PGSUITE_SCHEDULE:-parallel}
if [ $# -gt 0 ]; then
	MODES="$*"
else
	MODES=${ACTIVE_PG_PGSUITE_MODES:-"off default forced"}
fi
MAJOR=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
PKG=postgresql-$MAJOR
TREE=$CACHE/$PKG-src

mode_settings() {
	case "$1" in
	off)     echo "active_pg.enable = off" ;;
	default) echo "# active_pg defaults: the optimizer chooses" ;;
	forced)  echo "active_pg.force_pushdown = on" ;;
	bloom)   printf '%s\n' "active_pg.force_pushdown = on" "active_pg.force_bloom = on" ;;
	*)       echo "pgsuite: unknown mode '$1' (off, default, forced, bloom)" >&2; return 1 ;;
	esac
}
for m in $MODES; do mode_settings "$m" >/dev/null; done

# --- 1. the regression suite's sources, from Debian's source package --------

apt_quiet() { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }

# deb-src lines for the release's own archives, in a file of our own, in the
# format the machine uses (deb822 .sources or one-line .list).
ensure_deb_src() {
	local codename f
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
	if [ -f /etc/apt/sources.list.d/debian.sources ] || \
	   ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
		f=/etc/apt/sources.list.d/active_pg-deb-src.sources
		[ -f "$f" ] && return 1
		$SUDO tee "$f" >/dev/null <<-EOF
		# added by active_pg scripts/pgsuite.sh: PostgreSQL's regression suite
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: $codename $codename-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb-src
		URIs: http://deb.debian.org/debian-security
		Suites: $codename-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
	else
		f=/etc/apt/sources.list.d/active_pg-deb-src.list
		[ -f "$f" ] && return 1
		$SUDO tee "$f" >/dev/null <<-EOF
		# added by active_pg scripts/pgsuite.sh: PostgreSQL's regression suite
		deb-src http://deb.debian.org/debian $codename main
		deb-src http://deb.debian.org/debian $codename-updates main
		deb-src http://deb.debian.org/debian-security $codename-security main
		EOF
	fi
	return 0
}

fetch_sources() {
	local installed versions v dl got=""
	installed=$(dpkg-query -W -f='${Version}' "$PKG" 2>/dev/null || true)
	if [ -f "$TREE/.version" ]; then
		echo "pgsuite: regression suite of $PKG $(cat "$TREE/.version") (cached in $TREE)"
		return 0
	fi
	if ! command -v dpkg-source >/dev/null; then
		echo "pgsuite: installing dpkg-dev (for apt-get source)"
		apt_quiet install -y -qq --no-install-recommends dpkg-dev >/dev/null
	fi
	# deb-src lines only if no configured source serves the package yet
	if ! apt-cache showsrc "$PKG" 2>/dev/null | grep -q '^Version:'; then
		ensure_deb_src || true
		apt_quiet update -qq
	fi
	# the installed version first, then the others, newest first
	versions=$(apt-cache showsrc "$PKG" | awk '/^Version:/ {print $2}' | sort -u | sort -rV)
	versions=$( (echo "$versions" | grep -qxF "$installed" && echo "$installed"; \
	             echo "$versions" | grep -vxF "$installed") | grep . || true)
	[ -n "$versions" ] || { echo "pgsuite: no source package $PKG available" >&2; return 1; }
	dl=$(mktemp -d)
	chmod 755 "$dl"
	for v in $versions; do
		# apt drops privileges to _apt for downloads when it can
		chown _apt "$dl" 2>/dev/null || true
		if (cd "$dl" && apt_quiet source --download-only -qq "$PKG=$v" >/dev/null 2>&1); then
			got=$v
			break
		fi
		echo "pgsuite: source of $PKG $v is not downloadable; trying an older one"
		rm -f "$dl"/*
	done
	[ -n "$got" ] || { echo "pgsuite: could not download any source of $PKG" >&2; rm -rf "$dl"; return 1; }
	$SUDO rm -rf "$TREE.tmp" "$dl/x"
	(cd "$dl" && dpkg-source -x --no-check ./*.dsc x >/dev/null)
	$SUDO mkdir -p "$TREE.tmp/src/test" "$TREE.tmp/contrib"
	$SUDO cp -a "$dl/x/src/test/regress" "$TREE.tmp/src/test/"
	$SUDO cp -a "$dl/x/contrib/spi" "$TREE.tmp/contrib/"
	echo "$got" | $SUDO tee "$TREE.tmp/.version" >/dev/null
	$SUDO chmod -R a+rX "$TREE.tmp"
	$SUDO rm -rf "$TREE"
	$SUDO mv "$TREE.tmp" "$TREE"
	rm -rf "$dl"
	echo "pgsuite: regression suite of $PKG $got cached in $TREE"
}

echo "== PostgreSQL regression suite ($MODES)"
$SUDO mkdir -p "$CACHE"
fetch_sources
SUITE_VERSION=$(cat "$TREE/.version")
SERVER_VERSION=$("$PG_CONFIG" --version)
if [ "${SERVER_VERSION#PostgreSQL }" != "${SUITE_VERSION%%-*}" ] && \
   ! echo "$SERVER_VERSION" | grep -qF "${SUITE_VERSION%%-*} "; then
	echo "pgsuite: note: the suite is $SUITE_VERSION, the server $SERVER_VERSION" \
	     "(the closest source Debian serves)"
fi

if [ "${ACTIVE_PG_PGSUITE_INSTALL:-1}" != 0 ]; then
	echo "pgsuite: build and install active_pg from $SRC"
	build_and_install "$SRC"
fi

# --- 2. the C modules the tests load ----------------------------------------

# regress.so (src/test/regress/regress.c) and contrib/spi's refint.so and
# autoinc.so, which test_setup, triggers and others load from --dlpath
# (PG_LIBDIR / PG_DLSUFFIX in the tests), built against the server's headers.
REGRESS=$TREE/src/test/regress
rm -rf "$WORK"
mkdir -p "$WORK/lib"
CC=${CC:-gcc}
# shellcheck disable=SC2046
for c in "$REGRESS/regress.c" "$TREE/contrib/spi/refint.c" "$TREE/contrib/spi/autoinc.c"; do
	"$CC" $("$PG_CONFIG" --cflags) $("$PG_CONFIG" --cflags_sl) $("$PG_CONFIG" --cppflags) \
		-I"$("$PG_CONFIG" --includedir-server)" -shared \
		-o "$WORK/lib/$(basename "$c" .c).so" "$c"
done

# --- 3. the suite, once per mode ---------------------------------------------

case "$SCHEDULE_KIND" in
parallel) SCHEDULE=$REGRESS/parallel_schedule ;;
serial)
	# the same tests, one at a time
	grep -E '^test:' "$REGRESS/parallel_schedule" | sed 's/^test: *//' | tr ' ' '\n' | grep . \
		| sed 's/^/test: /' >"$WORK/serial_schedule"
	SCHEDULE=$WORK/serial_schedule ;;
*) echo "pgsuite: ACTIVE_PG_PGSUITE_SCHEDULE is parallel or serial" >&2; exit 2 ;;
esac
if [ -n "${ACTIVE_PG_PGSUITE_TESTS:-}" ]; then
	TESTS="test_setup $(echo "$ACTIVE_PG_PGSUITE_TESTS" | tr ' ' '\n' | grep -vx test_setup | tr '\n' ' ')"
	SCHED_ARGS=($TESTS)
else
	TESTS=$(grep -E '^test:' "$SCHEDULE" | sed 's/^test: *//' | tr ' ' '\n' | grep . | tr '\n' ' ')
	SCHED_ARGS=(--schedule="$SCHEDULE")
fi
echo "$TESTS" | tr ' ' '\n' | grep . >"$WORK/tests"
if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$WORK"; fi

declare -A SECONDS_OF RC_OF
for m in $MODES; do
	out=$WORK/$m
	as_pguser mkdir -p "$out/log"
	{
		echo "# scripts/regress.conf"
		cat "$SRC/scripts/regress.conf"
		echo "# pgsuite: a hung statement becomes an error, not a CI timeout"
		echo "# (forced mode's slowest statement, 10000 correlated disk scans in"
		echo "# aggregates, takes about 110 s on 2 cores)"
		echo "statement_timeout = 300s"
		echo "# pgsuite: the server log outlives the temporary instance"
		echo "logging_collector = on"
		echo "log_directory = '$out/log'"
		echo "log_filename = 'postgresql.log'"
		echo "log_min_duration_statement = 5s"
		echo "# pgsuite mode $m"
		mode_settings "$m"
	} | as_pguser tee "$WORK/$m.conf" >/dev/null
	echo "-- mode $m: $(mode_settings "$m" | tr '\n' ' ')"
	start=$(date +%s)
	set +e
	(cd "$out" && as_pguser timeout -k 30 "$TIMEOUT" "$PG_PGXS_DIR/src/test/regress/pg_regress" \
		--bindir="$PG_BINDIR" --temp-instance="$out/tmp_check" --temp-config="$WORK/$m.conf" \
		--inputdir="$REGRESS" --outputdir="$out" --dlpath="$WORK/lib" \
		--max-concurrent-tests=20 --load-extension=active_pg \
		--no-locale --encoding=UTF8 "${SCHED_ARGS[@]}" >"$out/pg_regress.log" 2>&1)
	rc=$?
	set -e
	SECONDS_OF[$m]=$(( $(date +%s) - start ))
	RC_OF[$m]=$rc
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "   mode $m: TIMED OUT after ${TIMEOUT}s"
		# pg_regress died with its postmaster still up
		if [ -f "$out/tmp_check/data/postmaster.pid" ]; then
			as_pguser "$PG_BINDIR/pg_ctl" -D "$out/tmp_check/data" stop -m immediate >/dev/null 2>&1 || true
		fi
	elif ! grep -qE 'tests (passed|failed)|test(s)? failed' "$out/pg_regress.log"; then
		echo "   mode $m: pg_regress did not run the suite (rc $rc):"
		tail -20 "$out/pg_regress.log" | sed 's/^/     /'
	fi
	echo "   mode $m: ${SECONDS_OF[$m]} s, pg_regress: $(grep -E 'tests (passed|failed)|failed|passed' "$out/pg_regress.log" | tail -1 | sed 's/^ *//') (vs PostgreSQL's expected files; not the verdict)"
done

# --- 4. statement-by-statement comparison with the reference ----------------

set -- $MODES
REF=$1
shift
CMP_ARGS=()
NOTES=()
for m in "$@"; do CMP_ARGS+=(--mode "$m=$WORK/$m"); done
for m in $MODES; do
	note="${SECONDS_OF[$m]} s"
	[ "${RC_OF[$m]}" -eq 124 ] || [ "${RC_OF[$m]}" -eq 137 ] && note="$note, TIMED OUT"
	NOTES+=(--note "$m=$note")
done
if [ $# -eq 0 ]; then
	echo "pgsuite: only the reference mode ran; nothing to compare"
	exit 0
fi
set +e
python3 "$SRC/scripts/pgsuite/compare.py" --sqldir "$REGRESS/sql" --ref "$REF=$WORK/$REF" \
	"${CMP_ARGS[@]}" "${NOTES[@]}" --tests "$WORK/tests" \
	--allowed "$SRC/scripts/pgsuite/allowed.txt" --report "$WORK/report.txt" \
	--server-logs "$WORK"
rc=$?
set -e
echo "pgsuite: timings: $(for m in $MODES; do printf '%s %ss  ' "$m" "${SECONDS_OF[$m]}"; done)"
echo "pgsuite: full report in $WORK/report.txt; outputs in $WORK/<mode>/results"
exit $rc
