#!/usr/bin/env bash
# The C/C++ suites under ASan+UBSan (everything) and TSan (the concurrency tests).
# Zero reports: any sanitizer report fails the test that triggered it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
common=(-DPOLYFFI_BUILD_BENCH=OFF -DPOLYFFI_BUILD_EXAMPLES=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)

echo "== ASan + UBSan"
"$root/ci/build.sh" "$root/build-asan" "${common[@]}" -DPOLYFFI_SANITIZE="address;undefined"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j2 -E "symbols"

echo "== TSan (concurrency tests)"
"$root/ci/build.sh" "$root/build-tsan" "${common[@]}" -DPOLYFFI_SANITIZE="thread"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir "$root/build-tsan" --output-on-failure -j2 -L threads
