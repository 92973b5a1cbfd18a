#!/usr/bin/env bash
# The Rust service once: start examples/digits-service-rust on a free port, classify the held-out
# digits over HTTP (POST /predict: accuracy, agreement with train.py, round-trip latency), stop.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR="$root/build/cargo" POLYFFI_LIB_DIR="$root/build/lib"
cargo build --locked -q -p digits-service --manifest-path "$root/bindings/rust/Cargo.toml"
log=$(mktemp)
"$CARGO_TARGET_DIR/debug/digits-service" --addr 127.0.0.1:0 >"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 200); do grep -q '^listening on ' "$log" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$log")
[ -n "$url" ] || { echo "digits-service did not start"; exit 1; }
echo "== digits classifier as a Rust HTTP service (examples/digits-service-rust) at $url"
python3 - "$url" "$root/examples/digits/model" <<'PY'
import json, statistics, struct, sys, time, urllib.request
url, model = sys.argv[1], sys.argv[2]
raw = open(f"{model}/test_x.bin", "rb").read()
rows = [list(struct.unpack_from("<64f", raw, 256 * i)) for i in range(len(raw) // 256)]
labels = struct.unpack(f"<{len(rows)}i", open(f"{model}/test_y.bin", "rb").read())
want = json.load(open(f"{model}/expected.json"))["predictions"]


def predict(batch):
    req = urllib.request.Request(f"{url}/predict", data=json.dumps({"rows": batch}).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=30))["classes"]


classes = predict(rows)  # every held-out row in one request
n = len(rows)
correct = sum(c == y for c, y in zip(classes, labels))
agree = sum(c == w for c, w in zip(classes, want))
times = []
for row in rows[:200]:  # one row per request: the latency a client sees over HTTP
    t = time.perf_counter_ns()
    predict([row])
    times.append(time.perf_counter_ns() - t)
print(f"accuracy:                {correct / n:.4f} ({correct}/{n} correct, one POST /predict)")
print(f"agreement with train.py: {agree}/{n}")
print(f"batch-1 latency:         median {statistics.median(times) / 1000:.2f} us "
      f"(HTTP POST /predict round trip on 127.0.0.1, {len(times)} requests)")
sys.exit(0 if agree == n else 1)
PY
