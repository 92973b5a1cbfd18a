#!/usr/bin/env bash
# The digits classifier from Node.js (examples/digits-server-node/demo.js), after building the
# addon; expects build/ from ci/demo.sh (or ci/build.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
[ -f "$root/bindings/node/build/polyffi.node" ] ||
  (cd "$root/bindings/node" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "== digits classifier from Node.js (examples/digits-server-node/demo.js)"
node "$root/examples/digits-server-node/demo.js"
