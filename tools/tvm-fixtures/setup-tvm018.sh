#!/usr/bin/env bash
# Set up legacy Apache TVM 0.18 (compiler + runtime) from Maven Central, the only place it is
# published as a binary: the bytedeco JavaCPP presets ship python/tvm with libtvm.so. Everything
# goes under a cache directory (default build/tvm018); prints the environment to use it:
#   eval "$(tools/tvm-fixtures/setup-tvm018.sh)"
# Needs: mvn (Maven Central), python3.11, unzip. The Cython core is built for CPython 3.13, so
# TVM_FFI=ctypes runs it under 3.11; TOPHUB_LOCATION=NONE stops it reaching the network.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TVM018_CACHE:-$root/build/tvm018}
mkdir -p "$cache"
artifacts=(
  org.bytedeco:tvm:0.18.0-1.5.11
  org.bytedeco:llvm:19.1.3-1.5.11       # libtvm.so needs libLLVM.so.19.1
  org.bytedeco:openblas:0.3.28-1.5.11   # libopenblas.so.0
  org.bytedeco:dnnl:2.7.1-1.5.8         # libdnnl.so.2 (Debian's 2.6 is too old)
  org.bytedeco:opencl:3.0-1.5.11        # libOpenCL.so.1
)
repo=${MAVEN_REPO:-$HOME/.m2/repository}
if [ ! -f "$cache/.unpacked" ]; then
  command -v unzip >/dev/null || { apt-get update -qq && apt-get install -y -qq unzip >/dev/null; }
  for a in "${artifacts[@]}"; do
    mvn -B -q -ntp dependency:get -Dartifact="$a:jar:linux-x86_64" -Dtransitive=false >&2
    IFS=: read -r g n v <<<"$a"
    unzip -q -o "$repo/${g//.//}/$n/$v/$n-$v-linux-x86_64.jar" 'org/*' -d "$cache/x"
  done
  touch "$cache/.unpacked"
fi
py=${TVM018_PYTHON:-python3.11}
if [ ! -x "$cache/venv/bin/python" ]; then
  "$py" -m venv "$cache/venv" >&2
  # The pure-Python dependencies of TVM's compiler; ml_dtypes' compiled part must match 3.11.
  # (pytest: relay.testing, the model zoo generate_tvm018_networks.py uses, imports it.)
  "$cache/venv/bin/pip" install -q "numpy<2" ml_dtypes==0.5.1 scipy decorator attrs \
    typing_extensions psutil cloudpickle packaging tornado synr pytest >&2
fi
mkdir -p "$cache/pythonpath"
ln -sfn "$cache/x/org/bytedeco/tvm/linux-x86_64/python/tvm" "$cache/pythonpath/tvm"
b="$cache/x/org/bytedeco"
libs="$b/llvm/linux-x86_64:$b/openblas/linux-x86_64:$b/dnnl/linux-x86_64:$b/opencl/linux-x86_64"
cat <<ENV
export TVM018_PYTHON="$cache/venv/bin/python"
export TVM018_RUNTIME="$b/tvm/linux-x86_64/python/tvm/libtvm_runtime.so"
export TVM018_LD_LIBRARY_PATH="$libs"
export TVM018_PYTHONPATH="$cache/pythonpath"
ENV
