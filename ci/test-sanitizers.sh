#!/usr/bin/env bash
# The C/C++ suites under ASan+UBSan (everything, with LeakSanitizer on) and TSan (the
# concurrency tests, the 8-thread stress among them). Zero reports: any sanitizer report
# fails the test that triggered it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
common=(-DPOLYFFI_BUILD_BENCH=OFF -DPOLYFFI_BUILD_EXAMPLES=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)

echo "== LeakSanitizer is live (a deliberate leak must be reported)"
# detect_leaks=1 is only worth something if leaks are really found here (LSan needs ptrace-like
# access, which some containers deny): a program that leaks must fail.
canary=$(mktemp -d)
printf '#include <stdlib.h>\nvoid* volatile p;\nint main(void){ p = malloc(77); p = 0; return 0; }\n' \
  >"$canary/leak.c"
gcc -fsanitize=address -g -O0 "$canary/leak.c" -o "$canary/leak"
if ASAN_OPTIONS=detect_leaks=1 "$canary/leak" >"$canary/out" 2>&1 ||
    ! grep -q "LeakSanitizer: detected memory leaks" "$canary/out"; then
  cat "$canary/out"; echo "LeakSanitizer did not report a deliberate leak"; exit 1
fi
rm -rf "$canary"
echo "ok: a 77-byte leak is reported"

echo "== ASan + UBSan + LeakSanitizer (all C/C++ suites)"
"$root/ci/build.sh" "$root/build-asan" "${common[@]}" -DPOLYFFI_SANITIZE="address;undefined"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j2 -E "symbols|soak"

echo "== TSan (concurrency tests and the 8-thread stress)"
"$root/ci/build.sh" "$root/build-tsan" "${common[@]}" -DPOLYFFI_SANITIZE="thread"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir "$root/build-tsan" --output-on-failure -j2 -L threads
