#!/usr/bin/env bash
# libFuzzer targets (tests/fuzz) under ASan + UBSan, built with Debian's clang 14.
#   ci/test-fuzz.sh [seconds per target]   (default 35; FUZZ_SECONDS also works)
# Each target starts from its committed seed corpus (tests/fuzz/corpus/<target>) and runs for a
# fixed time; any crash, sanitizer report, leak or timeout fails the script and leaves the input
# in build-fuzz/artifacts/. Long runs: tests/fuzz/README.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${FUZZ_SECONDS:-35}}
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}

need=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Shared sanitizer runtime: libpolyffi and the fixtures are shared libraries too.
rtdir=$(dirname "$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so)")
cov="-fsanitize=fuzzer-no-link"
link="-shared-libsan -Wl,-rpath,$rtdir"
CC=clang-14 CXX=clang++-14 "$root/ci/build.sh" "$build" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOLYFFI_SANITIZE="address;undefined" \
  -DPOLYFFI_BUILD_FUZZ=ON -DPOLYFFI_BUILD_TESTS=OFF -DPOLYFFI_BUILD_BENCH=OFF \
  -DPOLYFFI_BUILD_EXAMPLES=OFF -DCMAKE_C_FLAGS="$cov" -DCMAKE_CXX_FLAGS="$cov" \
  -DCMAKE_EXE_LINKER_FLAGS="$link" -DCMAKE_SHARED_LINKER_FLAGS="$link"

# allocator_may_return_null: a graph may ask for more memory than exists; the runtime must
# answer with an error, which it can only do if malloc may fail.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The shared ASan runtime must be the first library a fuzzer loads (libFuzzer pulls libstdc++
# in ahead of it); preloaded for the fuzzers only.
preload="$rtdir/libclang_rt.asan-x86_64.so"
mkdir -p "$build/artifacts"
status=0
for t in graph_json params dtype args dlpack module_blob library_bin relax_exec globals \
  tensor_cache; do
  seeds="$root/tests/fuzz/corpus/$t"
  work="$build/corpus/$t"
  mkdir -p "$work"
  dict=()
  [ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
  echo "== fuzz_$t (${secs}s)"
  if ! env LD_PRELOAD="$preload" "$build/bin/fuzz_$t" "${dict[@]}" -max_total_time="$secs" -timeout=20 \
      -rss_limit_mb=3072 -malloc_limit_mb=65536 -max_len=8192 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$t-" "$work" "$seeds" >"$build/fuzz_$t.log" 2>&1; then
    tail -60 "$build/fuzz_$t.log"
    echo "fuzz_$t FAILED (input in $build/artifacts/)"
    status=1
  else
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$build/fuzz_$t.log" | tail -2
  fi
done
exit $status
