#!/usr/bin/env bash
# The digits classifier from the JVM: builds the Java binding and examples/digits-jvm, then
# classifies the held-out digits through GraphModule (accuracy, agreement, batch-1 latency), over
# the repository's compiled model and over the one TVM 0.18 exported (tests/tvm_models/tvm018).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/ci/java-env.sh"
[ -f "$root/build/lib/libdigits_model.so" ] || "$root/ci/build.sh" "$root/build" >/dev/null
mvn_q=(mvn -B -ntp -q -Dstyle.color=never)
quiet() { local out; out=$("$@" 2>&1) || { echo "$out"; return 1; }; }  # output only on failure
quiet "${mvn_q[@]}" -f "$root/bindings/java/pom.xml" install -DskipTests
quiet "${mvn_q[@]}" -f "$root/examples/digits-jvm/pom.xml" package -DskipTests
echo "== digits classifier from the JVM (examples/digits-jvm)"
java -cp "$root/examples/digits-jvm/target/digits-jvm.jar:$root/examples/digits-jvm/target/lib/*" \
  org.polyffi.examples.digits.DigitsApp --batch --threads 1 \
  --model-dir "$root/examples/digits/model" --lib "$root/build/lib/libdigits_model.so"
echo "== the same model as Apache TVM 0.18 exported it (one file: GraphModule.fromFactory)"
java -cp "$root/examples/digits-jvm/target/digits-jvm.jar:$root/examples/digits-jvm/target/lib/*" \
  org.polyffi.examples.digits.DigitsApp --batch --threads 1 \
  --model-dir "$root/examples/digits/model" \
  --tvm-lib "$root/tests/tvm_models/tvm018/digits_b1/factory.so"
