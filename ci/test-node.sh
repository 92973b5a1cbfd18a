#!/usr/bin/env bash
# The Node.js binding: installs Node and npm (Debian's nodejs/npm) when missing, `npm ci` in
# bindings/node (builds the addon against build/lib; headers from the node-api-headers and
# node-addon-api npm packages, nothing else downloaded), then `npm test` (the TypeScript check and
# the node:test suites, with the conformance runner writing build/conformance/node.json) and the
# digits inference server's test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "ci: installing nodejs npm"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
echo "node $(node --version), npm $(npm --version)"
if [ ! -f "$root/build/lib/libpolyffi.so" ] || [ ! -f "$root/build/lib/libpolyffi_test_factory.so" ] ||
  [ ! -f "$root/build/lib/libpolyffi_test_tvmffi.so" ] || [ ! -f "$root/build/lib/libpolyffi_test_relax.so" ]; then
  "$root/ci/build.sh" "$root/build"
fi
cd "$root/bindings/node"
npm ci --no-audit --no-fund --loglevel=error
POLYFFI_TEST_LIB_DIR="$root/build/lib" POLYFFI_CONFORMANCE_OUT="$root/build/conformance" npm test
echo "== examples/digits-server-node"
node "$root/examples/digits-server-node/test/server.test.js"
