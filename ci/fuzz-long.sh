#!/usr/bin/env bash
# One long fuzzing run (not part of CI): ci/fuzz-long.sh <target> <max runs> <max seconds>
# Needs build-fuzz/ from ci/test-fuzz.sh. Runs at nice 19 from build-fuzz/long/<target> (seeded
# from the committed corpus) and writes build-fuzz/long/<target>.log; the figures in
# docs/reliability.md come from those logs' final stats.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
t=$1 runs=$2 secs=$3
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
rt=$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so)
mkdir -p "$build/long/$t" "$build/artifacts"
dict=()
[ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
echo "fuzz_$t: up to $runs runs or ${secs}s, started $(date -u +%FT%TZ) at $(git -C "$root" rev-parse --short HEAD)" \
  >"$build/long/$t.log"
env LD_PRELOAD="$rt" ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  nice -n 19 "$build/bin/fuzz_$t" "${dict[@]}" -runs="$runs" -max_total_time="$secs" -timeout=20 \
  -rss_limit_mb=3072 -malloc_limit_mb=65536 -max_len=8192 -print_final_stats=1 \
  -artifact_prefix="$build/artifacts/long-$t-" "$build/long/$t" "$root/tests/fuzz/corpus/$t" \
  >>"$build/long/$t.log" 2>&1
rc=$?
echo "finished $(date -u +%FT%TZ) rc=$rc" >>"$build/long/$t.log"
exit $rc
