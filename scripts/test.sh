#!/bin/bash
# The whole active_pg test suite on a fresh Debian 12 machine:
#   1. install missing packages, build, install (extension, SQL, diskd)
#   2. diskd unit tests (C), then again under AddressSanitizer and UBSan, and
#      diskd's libFuzzer targets for a minute (when clang is installed)
#   3. pg_regress tests (sql/ + expected/) on a temporary instance with 4 disks
#   4. isolation specs (specs/) on a temporary instance
#   5. TAP tests (t/*.pl): clusters, crashes, restarts, real pages
#   6. PostgreSQL's own regression suite, differential (scripts/pgsuite.sh)
# Exits non-zero if anything fails.  Run as root (uses user postgres for the
# clusters) or as a user with sudo.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
"$SRC/scripts/deps.sh"
. "$SRC/scripts/common.sh"

echo "== build and install"
build_and_install "$SRC"

WORK=${ACTIVE_PG_TEST_DIR:-/tmp/active_pg-test}
stage_tree "$SRC" "$WORK"
make -C "$WORK" -s clean >/dev/null 2>&1 || true
as_pguser make -C "$WORK" -s PG_CONFIG="$PG_CONFIG" >/dev/null

fail=0
status() {
	if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi
}

echo "== diskd unit tests"
set +e
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
# installed daemon stays the optimized one.  About 90 s on 2 cores, 50 s of
# them the hostile program fuzzer (test/fuzz_program).
echo "== diskd unit tests under AddressSanitizer and UBSan"
rm -rf "$WORK/sanitize"
as_pguser mkdir -p "$WORK/sanitize"
as_pguser cp -r "$WORK/diskd" "$WORK/proto" "$WORK/sanitize/"
as_pguser make -C "$WORK/sanitize/diskd" -s clean >/dev/null
as_pguser env CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
	make -C "$WORK/sanitize/diskd" -s -j2 check >"$WORK/sanitize/check.log" 2>&1
rc=$?
[ $rc -eq 0 ] || tail -40 "$WORK/sanitize/check.log"
status "diskd unit tests under AddressSanitizer and UBSan" $rc

# diskd's libFuzzer targets, half a minute each, when clang is installed
# (scripts/fuzz.sh runs them for as long as asked).
echo "== diskd libFuzzer targets"
if command -v clang >/dev/null || command -v clang-14 >/dev/null; then
	as_pguser "$WORK/scripts/fuzz.sh" 30 "$WORK/fuzz"
	status "diskd libFuzzer targets (frames and programs, pages)" $?
else
	echo "skipped: no clang"
fi

echo "== regression tests"
REGRESS_TESTS=$(cd "$WORK/sql" && ls *.sql | grep -v '^active_pg--' | sed 's/\.sql$//' | sort)
# Developers may run a subset: ACTIVE_PG_REGRESS="001_setup 080_bloom",
# ACTIVE_PG_TAP="t/002_disk_crash.pl" (or "none"), ACTIVE_PG_ISOLATION=0.
# CI sets none of them and runs everything.
REGRESS_TESTS=${ACTIVE_PG_REGRESS:-$REGRESS_TESTS}
(cd "$WORK" && as_pguser "$PG_PGXS_DIR/src/test/regress/pg_regress" \
	--bindir="$PG_BINDIR" --temp-instance="$WORK/tmp_check_regress" \
	--temp-config="$WORK/scripts/regress.conf" --inputdir="$WORK" \
	--outputdir="$WORK" --dbname=contrib_regression $REGRESS_TESTS)
rc=$?
[ $rc -ne 0 ] && [ -f "$WORK/regression.diffs" ] && head -200 "$WORK/regression.diffs"
status "regression tests" $rc

if [ "${ACTIVE_PG_ISOLATION:-1}" != 0 ] && ls "$WORK"/specs/*.spec >/dev/null 2>&1; then
	echo "== isolation tests"
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

TAP_TESTS=${ACTIVE_PG_TAP:-t/*.pl}
if [ "$TAP_TESTS" != none ]; then
echo "== TAP tests"
(cd "$WORK" && as_pguser env TESTDIR="$WORK" PG_REGRESS="$PG_PGXS_DIR/src/test/regress/pg_regress" \
	PERL5LIB="$PG_PGXS_DIR/src/test/perl" ACTIVE_PG_SRC="$WORK" \
	prove -v --timer $TAP_TESTS)
status "TAP tests" $?
fi

# --- PostgreSQL's regression suite, differential (scripts/pgsuite.sh) -------
# PostgreSQL's own src/test/regress with active_pg off, at its defaults and
# forced, each mode's output compared statement by statement with the off
# mode's; about 4 minutes on 2 cores.  ACTIVE_PG_PGSUITE=0 skips it.
if [ "${ACTIVE_PG_PGSUITE:-1}" != 0 ]; then
	echo "== PostgreSQL regression suite, differential"
	ACTIVE_PG_PGSUITE_INSTALL=0 ACTIVE_PG_PGSUITE_DIR="$WORK/pgsuite" "$SRC/scripts/pgsuite.sh"
	status "PostgreSQL regression suite, differential (off / default / forced)" $?
fi
# --- end of pgsuite ----------------------------------------------------------
set -e

if [ $fail -ne 0 ]; then
	echo "active_pg test suite: FAILED"
	exit 1
fi
echo "active_pg test suite: all passed"
