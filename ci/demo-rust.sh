#!/usr/bin/env bash
# The Rust server once: start polyffi-serve (examples/digits-service-rust) on a free port over a
# folder holding the digits model (the repository's three artifacts, and the TVM 0.27 relax
# executable), classify the held-out digits over the Open Inference Protocol (POST
# /v2/models/NAME/infer: accuracy, agreement with train.py, round-trip latency), stop.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR="$root/build/cargo" POLYFFI_LIB_DIR="$root/build/lib"
cargo build --locked -q -p digits-service --manifest-path "$root/bindings/rust/Cargo.toml"
log=$(mktemp)
models=$(mktemp -d)
mkdir "$models/digits_b1"
ln -s "$root/build/lib/libdigits_model.so" "$models/digits_b1/"
ln -s "$root/examples/digits/model/graph_b1.json" "$models/digits_b1/graph.json"
ln -s "$root/examples/digits/model/params.bin" "$models/digits_b1/params.bin"
ln -s "$root/tests/tvm_models/tvm027/relax/digits.so" "$models/digits.so"
"$CARGO_TARGET_DIR/debug/polyffi-serve" "$models" 0 >"$log" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -rf "$log" "$models"' EXIT
for _ in $(seq 200); do grep -q '^listening on ' "$log" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$log")
[ -n "$addr" ] || { echo "polyffi-serve did not start"; exit 1; }
echo "== digits over the Open Inference Protocol from the Rust server (polyffi-serve) at $addr"
python3 - "http://$addr" "$root/examples/digits/model" <<'PY'
import json, statistics, struct, sys, time, urllib.request
url, model = sys.argv[1], sys.argv[2]
raw = open(f"{model}/test_x.bin", "rb").read()
rows = [list(struct.unpack_from("<64f", raw, 256 * i)) for i in range(len(raw) // 256)]
labels = struct.unpack(f"<{len(rows)}i", open(f"{model}/test_y.bin", "rb").read())
want = json.load(open(f"{model}/expected.json"))["predictions"]


def classes(name, batch):
    body = {"inputs": [{"name": "data", "datatype": "FP32", "shape": [len(batch), 64],
                        "data": [x for row in batch for x in row]}]}
    req = urllib.request.Request(f"{url}/v2/models/{name}/infer", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    probs = json.load(urllib.request.urlopen(req, timeout=30))["outputs"][0]["data"]
    return [max(range(10), key=lambda j: probs[10 * i + j]) for i in range(len(batch))]


got = classes("digits", rows)  # every held-out row in one request (relax, dynamic batch)
n = len(rows)
correct = sum(c == y for c, y in zip(got, labels))
agree = sum(c == w for c, w in zip(got, want))
times = []
agree_b1 = 0
for i, row in enumerate(rows[:200]):  # one row per request: the latency a client sees over HTTP
    t = time.perf_counter_ns()
    agree_b1 += classes("digits_b1", [row])[0] == want[i]
    times.append(time.perf_counter_ns() - t)
print(f"accuracy:                {correct / n:.4f} ({correct}/{n} correct, one request)")
print(f"agreement with train.py: {agree}/{n} (relax digits), {agree_b1}/{len(times)} (graph digits_b1)")
print(f"batch-1 latency:         median {statistics.median(times) / 1000:.2f} us "
      f"(HTTP POST /v2/models/digits_b1/infer round trip on 127.0.0.1, {len(times)} requests)")
sys.exit(0 if agree == n and agree_b1 == len(times) else 1)
PY
