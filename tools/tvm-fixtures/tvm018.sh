#!/usr/bin/env bash
# Run a Python script under legacy TVM 0.18 (set up on first use by setup-tvm018.sh):
#   tools/tvm-fixtures/tvm018.sh generate_tvm018.py [args...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
eval "$("$here/setup-tvm018.sh")"
export TVM_FFI=ctypes TOPHUB_LOCATION=NONE
export LD_LIBRARY_PATH="$TVM018_LD_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$TVM018_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}"
exec "$TVM018_PYTHON" "$@"
