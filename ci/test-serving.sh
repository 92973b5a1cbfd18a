#!/usr/bin/env bash
# The Open Inference Protocol servers (docs/serving.md), driven by tritonclient[http] and by
# malformed plain-HTTP requests, and their OpenAI completions (/v1) driven by openai:
# tests/serving, one server per language started by ci/serve.sh.
#   ci/test-serving.sh [LANGS]   LANGS: comma-separated (default: python,node, plus rust and
#                                java when their server is in the checkout)
# Needs build/ (libpolyffi, libdigits_model); installs aiohttp and tritonclient[http] from PyPI
# (and openai) into the venv of ci/python-env.sh, and the Node addon (npm ci) when it is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$root/build/lib/libpolyffi.so" ] || [ ! -f "$root/build/lib/libdigits_model.so" ]; then
  "$root/ci/build.sh" "$root/build"
fi
py=$("$root/ci/python-env.sh")
"$py" -m pip install -q aiohttp 'tritonclient[http]' openai >&2
if [ ! -f "$root/bindings/node/build/polyffi.node" ]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "ci: installing nodejs npm"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
  fi
  (cd "$root/bindings/node" && npm ci --no-audit --no-fund --loglevel=error)
fi
langs=${1:-${POLYFFI_SERVE_LANGS:-}}
POLYFFI_PYTHON="$py" POLYFFI_LIB_DIR="$root/build/lib" \
  "$py" -m pytest -q -p no:cacheprovider "$root/tests/serving" ${langs:+--lang "$langs"}
