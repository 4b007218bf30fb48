#!/bin/bash
# The libFuzzer targets (diskd/fuzz/): fuzz_frame (a frame's shape check,
# protobuf-c unpacking, a ScanRequest's program compiled and evaluated),
# fuzz_page (page checks, line pointers, tuple headers, visibility,
# deforming) and fuzz_rows (the host's reader of shipped rows,
# extension/rowview.c), built with clang -fsanitize=fuzzer,address,undefined.
# fuzz_rows needs PostgreSQL's server headers: those of $PG_CONFIG, else of
# the pg_config on PATH; without either it is skipped, with a message.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [WORKDIR]
#
# Default: an hour per target in /tmp/active_pg-fuzz.  Each target starts from
# the checked-in seed corpus (diskd/fuzz/corpus/) plus what earlier runs in
# WORKDIR found; a crash, leak or sanitizer report leaves its input in
# WORKDIR/artifacts/ and makes the script exit non-zero.  scripts/test.sh runs
# it for about a minute when clang is installed.  Needs clang and its
# libFuzzer runtime (Debian: clang, libclang-rt-14-dev; scripts/deps.sh).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-3600}
WORK=${2:-/tmp/active_pg-fuzz}
CC=$(command -v clang || command -v clang-14 || true)
if [ -z "$CC" ]; then
	echo "fuzz.sh: no clang; install clang and libclang-rt-14-dev (scripts/deps.sh)" >&2
	exit 2
fi

mkdir -p "$WORK/build" "$WORK/artifacts"
rsync -a --delete --exclude '*.o' "$SRC/diskd/" "$WORK/build/diskd/"
rsync -a --delete "$SRC/proto/" "$WORK/build/proto/"
rsync -a --delete --exclude '*.o' "$SRC/common/" "$WORK/build/common/"
mkdir -p "$WORK/build/extension"
cp "$SRC/extension/rowview.c" "$SRC/extension/rowview.h" "$WORK/build/extension/"
(cd "$WORK/build/proto" && [ -f active_pg.pb-c.c ] || protoc-c --c_out=. active_pg.proto)
make -C "$WORK/build/diskd" -s -j"$(nproc)" FUZZ_CC="$CC" fuzz
targets="frame page"
PGC=${PG_CONFIG:-$(command -v pg_config || true)}
if [ -n "$PGC" ] && PGINC=$("$PGC" --includedir-server 2>/dev/null) && [ -f "$PGINC/postgres.h" ]; then
	make -C "$WORK/build/diskd" -s FUZZ_CC="$CC" FUZZ_PGINC="$PGINC" fuzz-rows
	targets="$targets rows"
else
	echo "fuzz_rows: skipped, no PostgreSQL server headers (set PG_CONFIG)" >&2
fi

fail=0
for t in $targets; do
	mkdir -p "$WORK/corpus/$t"
	cp -n "$SRC/diskd/fuzz/corpus/$t/"* "$WORK/corpus/$t/" 2>/dev/null || true
	echo "fuzz_$t: $SECS s"
	if ! "$WORK/build/diskd/fuzz/fuzz_$t" -max_total_time="$SECS" -max_len=65536 \
		-rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
		-artifact_prefix="$WORK/artifacts/${t}-" "$WORK/corpus/$t" \
		>"$WORK/fuzz_$t.log" 2>&1; then
		echo "fuzz_$t FAILED: see $WORK/fuzz_$t.log and $WORK/artifacts/" >&2
		tail -30 "$WORK/fuzz_$t.log" >&2
		fail=1
	fi
	grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units)' "$WORK/fuzz_$t.log" || true
done
exit $fail
