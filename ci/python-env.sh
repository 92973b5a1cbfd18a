#!/usr/bin/env bash
# Create (once) the virtualenv build/venv-python with the Python binding installed from this
# checkout, plus numpy and pytest. Prints the venv's python path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/build/venv-python"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --upgrade pip >&2
fi
"$venv/bin/pip" install -q "$root/bindings/python" numpy pytest >&2
echo "$venv/bin/python"
