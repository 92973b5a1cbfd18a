#!/usr/bin/env bash
# Set up TVM 0.18 for runtime-only use (deploy: nd.array, load_module, GraphModule, params),
# the lean counterpart of setup-tvm018.sh: from Maven Central only the bytedeco TVM jar (its
# python/tvm and libtvm_runtime.so; not libtvm.so, not LLVM) and the three libraries
# libtvm_runtime.so is linked against (OpenBLAS, oneDNN, OpenCL ICD loader); from PyPI numpy<2
# and pytest. Everything goes under a cache directory (default build/tvm018-runtime); prints the
# environment to use it:
#   eval "$(tools/tvm-fixtures/setup-tvm018-runtime.sh)"
# Layout:
#   pythonpath/tvm      TVM's Python package with no shared library in it, so that the only
#                       runtime it can find is the one TVM_LIBRARY_PATH names
#   tvm-runtime/        TVM's own libtvm_runtime.so and its dependencies ($ORIGIN RUNPATH)
#   venv/               python3 with numpy<2 (TVM 0.18 predates numpy 2) and pytest
# TVM018_CACHE=<dir of a full setup-tvm018.sh cache> reuses its unpacked jars instead of
# downloading them again.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TVM018_RUNTIME_CACHE:-$root/build/tvm018-runtime}
mkdir -p "$cache"
artifacts=(
  org.bytedeco:tvm:0.18.0-1.5.11
  org.bytedeco:openblas:0.3.28-1.5.11   # libopenblas.so.0 (+ libgfortran, libquadmath)
  org.bytedeco:dnnl:2.7.1-1.5.8         # libdnnl.so.2 (+ libgomp)
  org.bytedeco:opencl:3.0-1.5.11        # libOpenCL.so.1
)
rt_libs=(tvm/linux-x86_64/python/tvm/libtvm_runtime.so
         openblas/linux-x86_64/libopenblas.so.0 openblas/linux-x86_64/libgfortran.so.5
         openblas/linux-x86_64/libquadmath.so.0 dnnl/linux-x86_64/libdnnl.so.2
         dnnl/linux-x86_64/libgomp.so.1 opencl/linux-x86_64/libOpenCL.so.1)
if [ ! -f "$cache/.unpacked" ]; then
  command -v unzip >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unzip >/dev/null
  }
  rm -rf "$cache/x" "$cache/pythonpath" "$cache/tvm-runtime"
  mkdir -p "$cache/x" "$cache/pythonpath" "$cache/tvm-runtime"
  full=${TVM018_CACHE:+$TVM018_CACHE/x/org/bytedeco}
  if [ -n "$full" ] && [ -f "$TVM018_CACHE/.unpacked" ]; then
    mkdir -p "$cache/x/org/bytedeco/tvm/linux-x86_64/python"
    cp -r "$full/tvm/linux-x86_64/python/tvm" "$cache/x/org/bytedeco/tvm/linux-x86_64/python/"
    find "$cache/x" -name '*.so' -delete
    for l in "${rt_libs[@]}"; do cp "$full/$l" "$cache/tvm-runtime/"; done
  else
    # Maven from Debian when missing (the Java binding's CI step installs it too).
    . "$root/ci/java-env.sh"
    repo=${MAVEN_REPO:-$HOME/.m2/repository}
    for a in "${artifacts[@]}"; do
      IFS=: read -r g n v <<<"$a"
      jar="$repo/${g//.//}/$n/$v/$n-$v-linux-x86_64.jar"
      [ -f "$jar" ] || mvn -B -q -ntp -Dstyle.color=never dependency:get \
        -Dartifact="$a:jar:linux-x86_64" -Dtransitive=false >&2
      if [ "$n" = tvm ]; then
        # The Python package without its libraries (libtvm.so alone is 82 MB).
        unzip -q -o "$jar" 'org/bytedeco/tvm/linux-x86_64/python/*' -x '*.so' -d "$cache/x"
      fi
      for l in "${rt_libs[@]}"; do
        case $l in "$n"/*) unzip -q -o -j "$jar" "org/bytedeco/$l" -d "$cache/tvm-runtime" ;; esac
      done
    done
  fi
  for l in "${rt_libs[@]}"; do test -f "$cache/tvm-runtime/$(basename "$l")"; done
  touch "$cache/.unpacked"
fi
ln -sfn "$cache/x/org/bytedeco/tvm/linux-x86_64/python/tvm" "$cache/pythonpath/tvm"
py=${TVM018_PYTHON:-python3}
if [ ! -f "$cache/venv/.ready" ]; then
  rm -rf "$cache/venv"
  "$py" -m venv "$cache/venv" >&2
  "$cache/venv/bin/pip" install -q "numpy<2" pytest >&2
  touch "$cache/venv/.ready"
fi
cat <<ENV
export TVM018_PYTHON="$cache/venv/bin/python"
export TVM018_PYTHONPATH="$cache/pythonpath"
export TVM018_RUNTIME_DIR="$cache/tvm-runtime"
ENV
