#!/usr/bin/env bash
# TVM 0.18's own Python (runtime-only: TVM_USE_RUNTIME_LIB=1, TVM_FFI=ctypes) runs the deploy
# flows of tests/tvm_compat twice: on TVM's own libtvm_runtime.so (proof that the tests are
# right) and on libpolyffi.so installed under that name. Both runs must pass. Then the tables of
# docs/compatibility.md are regenerated from the two libraries and must match the committed page.
#   ci/test-tvm-compat.sh [build-dir]      (default build; libpolyffi.so must be built)
#   TVM_COMPAT_ONLY=tvm|polyffi            run one of the two
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
eval "$("$root/tools/tvm-fixtures/setup-tvm018-runtime.sh")"
test -f "$build/lib/libpolyffi.so" || { echo "missing $build/lib/libpolyffi.so" >&2; exit 1; }
# libpolyffi.so as a libtvm_runtime.so: the name TVM's library search looks for.
drop_in="$build/tvm-compat/polyffi"
mkdir -p "$drop_in"
ln -sfn "$build/lib/libpolyffi.so" "$drop_in/libtvm_runtime.so"
status=0
for runtime in tvm polyffi; do
  [ -z "${TVM_COMPAT_ONLY:-}" ] || [ "$TVM_COMPAT_ONLY" = "$runtime" ] || continue
  if [ "$runtime" = tvm ]; then dir=$TVM018_RUNTIME_DIR; else dir=$drop_in; fi
  echo "--- TVM 0.18's Python on $runtime ($dir/libtvm_runtime.so)"
  # PYTHONPATH holds only TVM's package; TOPHUB_LOCATION=NONE keeps it off the network.
  env -u LD_LIBRARY_PATH TVM_LIBRARY_PATH="$dir" TVM_USE_RUNTIME_LIB=1 TVM_FFI=ctypes \
    TOPHUB_LOCATION=NONE PYTHONPATH="$TVM018_PYTHONPATH" TVM_COMPAT_RUNTIME="$runtime" \
    TVM_COMPAT_LIB="$dir/libtvm_runtime.so" TVM_NUM_THREADS=2 \
    "$TVM018_PYTHON" -m pytest -q -p no:cacheprovider "$root/tests/tvm_compat" || status=1
done
if [ -z "${TVM_COMPAT_ONLY:-}" ]; then
  echo "--- docs/compatibility.md matches both libraries (tools/tvm-compat/surface.py)"
  PYTHONPATH="$TVM018_PYTHONPATH" "$TVM018_PYTHON" "$root/tools/tvm-compat/surface.py" render \
    --tvm "$TVM018_RUNTIME_DIR" --polyffi "$drop_in" --check || status=1
  # TVM 0.27's table: its runtime libraries from the apache-tvm wheel over apache-tvm-ffi (no
  # compiler, no numpy; the wheel is downloaded once into build/tvm027-runtime).
  echo "--- docs/compatibility.md's TVM 0.27 table matches TVM 0.27's runtime (surface027.py)"
  eval "$("$root/tools/tvm-fixtures/setup-tvm027-runtime.sh")"
  "$TVM027_RT_PYTHON" "$root/tools/tvm-compat/surface027.py" render \
    --polyffi "$build/lib/libpolyffi.so" --check || status=1
fi
exit $status
