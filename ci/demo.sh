#!/usr/bin/env bash
# The demo: build polyffi and the digits model, then classify the held-out digits from C
# through the graph executor (accuracy, agreement with the training script, latency).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/ci/install-deps.sh"
"$root/ci/build.sh" "$root/build" >/dev/null
echo "== callbacks and the registry from C (examples/hello)"
"$root/build/bin/hello_polyffi"
echo
echo "== digits classifier from C (examples/digits)"
"$root/build/bin/digits_demo"
echo
"$root/ci/demo-python.sh"
echo
"$root/ci/demo-rust.sh"
"$root/ci/demo-java.sh"
"$root/ci/demo-node.sh"
