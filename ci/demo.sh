#!/usr/bin/env bash
# The demo: build polyffi and the digits model, then classify the held-out digits from C,
# Python, a Rust HTTP service, Node.js and the JVM (accuracy, agreement with the training
# script, latency), including the same model compiled by Apache TVM 0.18.
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
echo
"$root/ci/demo-node.sh"
echo
"$root/ci/demo-java.sh"
