#!/usr/bin/env bash
# A TVM 0.27 relax model's forward through VirtualMachine in the Rust, Node and Java bindings,
# beside the same call from C (vm_bench_polyffi: TVMFuncCall on prebuilt NDArrays), same model and
# batch, in one run. Each driver checks its outputs against TVM's bytes once, then prints the
# median ns per forward (result released) of 9 timed batches, for inputs given as runtime NDArrays,
# as 64-byte-aligned host views (zero-copy) and as misaligned ones (copied per call). ROUNDS
# rounds alternate the drivers; the table shows the median over rounds and the ratio to C.
# Usage: bench/models/vm_bindings.sh [rounds] [min_ms]      (docs/performance/vm_bindings.md)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
min_ms=${2:-100}
cd "$root"
[ -x build/bin/bench_vm_polyffi ] || ci/build.sh build >/dev/null
export CARGO_TARGET_DIR="$root/build/cargo" POLYFFI_LIB_DIR="$root/build/lib"
(cd bindings/rust && cargo build --release --locked -q -p polyffi-bench --bin vm-forward)
(cd bindings/node && { [ -f build/polyffi.node ] || npm ci --no-audit --no-fund --loglevel=error; })
. ci/java-env.sh
mvn=(mvn -B -ntp -q -Dstyle.color=never)
"${mvn[@]}" -f bindings/java/pom.xml install -DskipTests >/dev/null
"${mvn[@]}" -f bench/java/pom.xml package >/dev/null

relax=tests/tvm_models/tvm027/relax
runs=("mlp_const b1_io.txt" "mlp_const b64_io.txt" "conv b16_io.txt" "two_outputs b64_io.txt")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  for run in "${runs[@]}"; do
    set -- $run
    dir="$relax/$1"
    tag="\"run\": \"$1 $2\""
    echo "{$tag, \"binding\": \"c\", $(build/bin/bench_vm_polyffi "$dir" "$2" "$min_ms" | sed 's/^{//')" >>"$out"
    echo "{$tag, $(build/cargo/release/vm-forward "$dir" "$2" "$min_ms" | sed 's/^{//')" >>"$out"
    echo "{$tag, $(node bench/node/vm_forward.js "$dir" "$2" "$min_ms" | sed 's/^{//')" >>"$out"
    echo "{$tag, $(java -cp "bench/java/target/classes:bench/java/target/lib/*" \
      org.polyffi.bench.VmForward "$dir" "$2" "$min_ms" | sed 's/^{//')" >>"$out"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, rounds=$rounds, min_ms=$min_ms"
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
runs = list(dict.fromkeys(r["run"] for r in rows))
med = lambda xs: statistics.median(xs)
print(f"{'run':24} {'binding':8} {'NDArray in':>16} {'aligned view':>16} {'misaligned view':>16}")
for run in runs:
    c = med([r["forward_ns"] for r in rows if r["run"] == run and r["binding"] == "c"])
    print(f"{run:24} {'c':8} {c/1e3:10.2f} us 1.00x")
    for b in ("rust", "node", "java"):
        cells = []
        for k in ("ndarray_ns", "aligned_view_ns", "misaligned_view_ns"):
            v = med([r[k] for r in rows if r["run"] == run and r["binding"] == b])
            cells.append(f"{v/1e3:8.2f} us {v/c:4.2f}x")
        print(f"{run:24} {b:8} " + " ".join(f"{x:>16}" for x in cells))
PY
