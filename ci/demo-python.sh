#!/usr/bin/env bash
# The digits classifier from Python (needs the Release build in build/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=$("$root/ci/python-env.sh")
echo "== digits classifier from Python (examples/digits/demo.py)"
"$py" "$root/examples/digits/demo.py"
