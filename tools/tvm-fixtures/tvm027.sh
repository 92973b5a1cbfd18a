#!/usr/bin/env bash
# Run a Python script under Apache TVM 0.27 (installed on first use by setup-tvm027.sh):
#   tools/tvm-fixtures/tvm027.sh tools/tvm-fixtures/generate_tvm027.py [args...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
eval "$("$here/setup-tvm027.sh")"
exec "$TVM027_PYTHON" "$@"
