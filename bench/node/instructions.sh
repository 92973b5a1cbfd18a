#!/usr/bin/env bash
# Instructions per call (callgrind) for bench/node's cases: (Ir(N+1M) - Ir(N)) / 1M, so start-up
# and JIT warm-up cancel out. Immune to the machine's load, unlike the wall-clock numbers.
# usage: bench/node/instructions.sh   (after `npm install && node build.js` in bench/node)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ir() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null node "$here/ir_case.js" "$1" "$2" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_call() { local a b; a=$(ir "$1" 100000); b=$(ir "$1" 1100000); echo $(( (b - a) / 1000000 )); }
echo "| case | polyffi | node-addon-api | raw Node-API | koffi | /na | /raw | /koffi |"
echo "|---|---|---|---|---|---|---|---|"
for c in nop add3 echo callback; do
  p=$(per_call "polyffi.$c"); n=$(per_call "na.$c"); r=$(per_call "raw.$c"); k=$(per_call "koffi.$c")
  awk -v c="$c" -v p="$p" -v n="$n" -v r="$r" -v k="$k" \
    'BEGIN { printf "| %s | %d | %d | %d | %d | %.2fx | %.2fx | %.2fx |\n", c, p, n, r, k, p/n, p/r, p/k }'
done
