#!/usr/bin/env bash
# Every test: installs what it needs, builds, runs the C/C++ suites, the conformance runners
# and their matrix, the sanitizer runs, and the bindings' suites.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
step() { echo; echo "=== $* ($(( $(date +%s) - start ))s)"; }

step "dependencies"
ci/install-deps.sh

step "one version everywhere"
ci/check-version.sh

step "lint"
ci/lint.sh

step "build (Release)"
ci/build.sh "$root/build"

step "C/C++ tests (ctest)"
ctest --test-dir build --output-on-failure -j2

step "sanitizers"
ci/test-sanitizers.sh

step "fuzz targets (short runs)"
ci/test-fuzz.sh

step "Python binding (pytest, with its conformance runner)"
ci/test-python.sh

step "TVM 0.18's own Python (runtime-only) on TVM's runtime and on libpolyffi"
ci/test-tvm-compat.sh

step "Rust binding (cargo test with its conformance runner, service, install rules)"
ci/test-rust.sh

step "Node.js binding (npm test, TypeScript check, conformance runner, server test)"
ci/test-node.sh

step "Java binding (mvn verify, with its conformance runner) and the JVM app"
ci/test-java.sh

step "Open Inference Protocol servers (tests/serving: tritonclient against every language's server)"
ci/test-serving.sh

step "README snippets, run as a user would (C, Python, Rust, Node.js, Java)"
ci/test-readme.sh

step "packages (ci/package.sh: dist/ for x86_64 and aarch64; ci/test-packages.sh installs each one outside the repository)"
ci/package.sh
ci/test-packages.sh

step "Spark scale-out (examples/digits-spark: the JVM and PySpark jobs in local[2])"
ci/test-spark.sh

step "conformance matrix (every binding must have run every case)"
python3 tests/conformance/matrix.py build/conformance --require c,python,rust,node,java

step "done in $(( $(date +%s) - start ))s"
