#!/usr/bin/env bash
# Set up what tools/tvm-compat/surface027.py needs to list TVM 0.27's runtime globals, the lean
# counterpart of setup-tvm027.sh (no compiler, no numpy): from PyPI apache-tvm-ffi 0.1.15.post2
# into a venv, and from the apache-tvm 0.27.0.post1 wheel (downloaded, not installed) only its
# runtime libraries (libtvm_runtime.so, libtvm_runtime_extra.so) and its Python sources (for the
# relax.run.* functions TVM's Python registers). Everything goes under a cache directory
# (default build/tvm027-runtime); prints the environment to use it:
#   eval "$(tools/tvm-fixtures/setup-tvm027-runtime.sh)"
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TVM027_RUNTIME_CACHE:-$root/build/tvm027-runtime}
py=${TVM027_PYTHON_BIN:-python3}
mkdir -p "$cache"
if [ ! -f "$cache/.installed" ]; then
  [ -x "$cache/venv/bin/python" ] || "$py" -m venv "$cache/venv" >&2
  "$cache/venv/bin/pip" install -q --disable-pip-version-check "apache-tvm-ffi==0.1.15.post2" >&2
  "$cache/venv/bin/pip" download -q --disable-pip-version-check --no-deps \
    "apache-tvm==0.27.0.post1" -d "$cache/wheel" >&2
  rm -rf "$cache/tvm"
  "$cache/venv/bin/python" - "$cache" <<'PY'
import pathlib, sys, zipfile
cache = pathlib.Path(sys.argv[1])
(wheel,) = (cache / "wheel").glob("apache_tvm-0.27.0.post1-*.whl")
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name in ("tvm/lib/libtvm_runtime.so", "tvm/lib/libtvm_runtime_extra.so") or (
                name.startswith("tvm/") and name.endswith(".py")):
            z.extract(name, cache)
PY
  rm -rf "$cache/wheel"
  touch "$cache/.installed"
fi
cat <<ENV
export TVM027_RT_PYTHON="$cache/venv/bin/python"
export TVM027_RT_DIR="$cache/tvm"
ENV
