#!/usr/bin/env bash
# The Python binding: pip-installed into a fresh venv, then its pytest suite, which includes
# the conformance runner (writes build/conformance/python.json).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=$("$root/ci/python-env.sh")
POLYFFI_TEST_LIB_DIR="$root/build/lib" POLYFFI_CONFORMANCE_OUT="$root/build/conformance" \
  "$py" -m pytest -q -p no:cacheprovider "$root/bindings/python/tests"
