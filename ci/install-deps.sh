#!/usr/bin/env bash
# Install what the build and tests need on a fresh Debian 12 machine (idempotent, quiet).
set -euo pipefail
need=(cmake ninja-build g++ googletest libgtest-dev libbenchmark-dev libdlpack-dev
      nlohmann-json3-dev valgrind binutils)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
python3 -c "import jsonschema" 2>/dev/null || python3 -m pip install -q jsonschema
