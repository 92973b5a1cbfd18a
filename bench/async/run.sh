#!/usr/bin/env bash
# Instructions per call (callgrind, all threads, difference of two runs so start-up cancels out)
# and wall time per call, for bench_async's three modes. docs/performance/async.md.
#   bench/async/run.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build}/bin/bench_async
[ -x "$bin" ] || bin=$(find "${1:-$root/build}" -name bench_async -type f -perm -u+x | head -1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
irs() {  # mode n -> total instructions
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$bin" "$1" "$2" >/dev/null 2>&1
  awk '/^summary:/ { print $2 }' "$tmp/cg.out"
}
echo "instructions per call (callgrind, (Ir(N=2000) - Ir(N=1000)) / 1000):"
for mode in sync async batch; do
  a=$(irs "$mode" 1000)
  b=$(irs "$mode" 2000)
  echo "  $mode $(( (b - a) / 1000 ))"
done
echo "wall time per call, ns (best of 5; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs):"
for mode in sync async batch; do
  n=200000
  [ "$mode" = sync ] && n=2000000
  best=""
  for _ in 1 2 3 4 5; do
    t=$("$bin" "$mode" "$n" | awk '{ print $3 }')
    if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
  done
  echo "  $mode $best"
done
