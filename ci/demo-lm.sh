#!/usr/bin/env bash
# The language model from one language's server: ci/serve.sh LANG over a folder holding the demo's
# character-level model (examples/lm-demo/charlm, served as "charlm"), then for each prompt of its
# expected.json a streaming POST /v1/completions (temperature 0) whose text is printed as it
# arrives and compared with TVM 0.27's greedy completion. Prints "lm tokens: N" and
# "lm agreement: K/M" for ci/demo.sh's summary; exits non-zero when a completion differs.
#   ci/demo-lm.sh python|node|rust|java
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lang=${1:?usage: ci/demo-lm.sh python|node|rust|java}
model=$root/examples/lm-demo/charlm
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
models=$(mktemp -d)
log=$(mktemp)
ln -s "$model" "$models/charlm"
"$root/ci/serve.sh" "$lang" "$models" "$port" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -rf "$models" "$log"' EXIT
# The server may build first (cargo, mvn): wait while it is alive, up to 15 minutes.
for _ in $(seq 1800); do
  grep -q '^listening on ' "$log" && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
if ! grep -q '^listening on ' "$log"; then
  echo "the $lang server did not start; its output:"
  tail -20 "$log"
  exit 1
fi
url=http://127.0.0.1:$port
echo "== the character-level model (examples/lm-demo/charlm) from the $lang server at $url"
echo "   GET /v1/models: $(curl -sS "$url/v1/models")"
n=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["completions"]))' \
  "$model/expected.json")
agree=0 tokens=0
for i in $(seq 0 $((n - 1))); do
  # The request from expected.json (prompt, max_tokens); stream_check.py compares the text.
  read -r body <<<"$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["completions"][int(sys.argv[2])]
print(json.dumps({"model": "charlm", "prompt": c["prompt"], "max_tokens": c["max_tokens"],
                  "temperature": 0, "stream": True}))' "$model/expected.json" "$i")"
  prompt=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["prompt"])' "$body")
  echo
  echo "-- prompt: $prompt"
  printf '%s' "$prompt"
  out=$(mktemp)
  t0=$(date +%s%N)
  if curl -sS -N -H 'Content-Type: application/json' -d "$body" "$url/v1/completions" |
    python3 -u "$root/examples/lm-demo/stream_check.py" "$model/expected.json" "$i" | tee "$out"; then
    agree=$((agree + 1))
  fi
  ms=$((($(date +%s%N) - t0) / 1000000))
  got=$(sed -n 's/^tokens: \([0-9]*\).*/\1/p' "$out")
  echo "   $ms ms from the request to data: [DONE] (curl and the checker included)"
  tokens=$((tokens + ${got:-0}))
  rm -f "$out"
done
echo
echo "lm tokens:    $tokens (streamed, $n completions)"
echo "lm agreement: $agree/$n (greedy text equal to TVM 0.27's)"
[ "$agree" -eq "$n" ]
