#!/usr/bin/env bash
# The Rust service once: start examples/digits-service-rust on a free port, classify the first
# held-out digit over HTTP (POST /predict), compare with the C demo's prediction, stop.
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
import json, struct, sys, urllib.request
url, model = sys.argv[1], sys.argv[2]
row = list(struct.unpack("<64f", open(f"{model}/test_x.bin", "rb").read(256)))
want = json.load(open(f"{model}/expected.json"))["predictions"][0]
req = urllib.request.Request(f"{url}/predict", data=json.dumps({"rows": [row]}).encode(),
                             headers={"Content-Type": "application/json"})
got = json.load(urllib.request.urlopen(req, timeout=10))
cls, p = got["classes"][0], max(got["probabilities"][0])
print(f"POST /predict (1 row): class {cls} (p = {p:.3f}); the C demo says {want}")
sys.exit(0 if cls == want else 1)
PY
