#!/usr/bin/env bash
# Set up Apache TVM 0.27 (compiler + runtime, with apache-tvm-ffi 0.1.15) from PyPI in its own
# venv under a cache directory (default build/tvm027); prints the environment to use it:
#   eval "$(tools/tvm-fixtures/setup-tvm027.sh)"
# Needs: python3.11 (the wheel is py3-none-manylinux_2_28_x86_64; 3.11 is what the fixtures were
# made with). TVM027_WHEEL_DIR may name a directory holding already-downloaded wheels (pip then
# prefers them: --find-links); without it everything comes from PyPI.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TVM027_CACHE:-$root/build/tvm027}
py=${TVM027_PYTHON_BIN:-python3.11}
mkdir -p "$cache"
if [ ! -f "$cache/.installed" ]; then
  [ -x "$cache/venv/bin/python" ] || "$py" -m venv "$cache/venv" >&2
  extra=()
  [ -n "${TVM027_WHEEL_DIR:-}" ] && extra=(--find-links "$TVM027_WHEEL_DIR")
  # numpy<2: the version the fixtures were generated with (TVM 0.27 accepts either).
  "$cache/venv/bin/pip" install -q --disable-pip-version-check "${extra[@]}" \
    "apache-tvm==0.27.0.post1" "numpy<2" >&2
  touch "$cache/.installed"
fi
site=$("$cache/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cat <<ENV
export TVM027_PYTHON="$cache/venv/bin/python"
export TVM027_SITE="$site"
export TVM027_FFI_INCLUDE="$site/tvm_ffi/include"
export TVM027_FFI_LIB="$site/tvm_ffi/lib/libtvm_ffi.so"
export TVM027_RUNTIME="$site/tvm/lib/libtvm_runtime.so"
ENV
