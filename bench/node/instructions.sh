#!/usr/bin/env bash
# Instructions per call (callgrind) for bench/node's cases: (Ir(N+2M) - Ir(N)) / 2M, so start-up
# and JIT warm-up cancel out (N = 200k and 2.2M: a 2M-call difference). Immune to the machine's
# load, unlike the wall-clock numbers; JIT and GC timing still move a case by a few percent.
# Prints one table: the counts, polyffi's ratios to each peer, and each case's goal.
# V8 compiles on the main thread (--no-concurrent-recompilation --no-concurrent-osr): under
# valgrind, which runs one thread at a time, a background TurboFan job may finish late or not at
# all, leaving the loop in baseline code for a varying share of the calls (polyffi.nop measured
# 404 or 758 per call by that alone). The optimized code is the same; only when it arrives moves.
# usage: bench/node/instructions.sh [case...]   (after `npm install && node build.js` in bench/node;
#        cases: nop add3 echo callback, all by default)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ir() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    node --no-concurrent-recompilation --no-concurrent-osr "$here/ir_case.js" "$1" "$2" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_call() { local a b; a=$(ir "$1" 200000); b=$(ir "$1" 2200000); echo $(( (b - a) / 2000000 )); }
# Goals: polyffi / node-addon-api for calls, polyffi / raw Node-API for the C -> JS callback.
goal() {
  case $1 in
    nop) echo "na 1.30" ;;
    add3) echo "na 1.15" ;;
    callback) echo "raw 1.10" ;;
    *) echo "- 0" ;;
  esac
}
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(nop add3 echo callback)
echo "| case | polyffi | node-addon-api | raw Node-API | koffi | /na | /raw | /koffi | goal |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  p=$(per_call "polyffi.$c"); n=$(per_call "na.$c"); r=$(per_call "raw.$c"); k=$(per_call "koffi.$c")
  read -r peer limit <<<"$(goal "$c")"
  awk -v c="$c" -v p="$p" -v n="$n" -v r="$r" -v k="$k" -v peer="$peer" -v limit="$limit" 'BEGIN {
    g = "—"
    if (peer != "-") {
      ratio = (peer == "na") ? p / n : p / r
      g = sprintf("/%s <= %.2fx: %s", peer, limit, (ratio <= limit) ? "met" : "missed")
    }
    printf "| %s | %d | %d | %d | %d | %.2fx | %.2fx | %.2fx | %s |\n", c, p, n, r, k, p/n, p/r, p/k, g
  }'
done
