#!/usr/bin/env bash
# Instructions per call (callgrind) for the Java call paths and their floors:
# (Ir(N + 1M) - Ir(N)) / 1M, counting only the main thread inside PlainJni.measured (callgrind's
# --toggle-collect), so JVM start-up, the JIT compiler threads and the GC are not counted and the
# warm-up cancels out. -Xbatch makes the JIT compile in the foreground, so the warm-up has
# finished compiling before the count starts; the compiled code is the normal C2 code.
# Immune to the machine's load, unlike the wall-clock numbers of run.sh.
# usage: bench/java/instructions.sh   (builds bindings/java and bench/java first)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v valgrind >/dev/null || { echo "valgrind missing: apt-get install valgrind" >&2; exit 1; }
mvn_q=(mvn -B -ntp -q -Dstyle.color=never)
[ -f "$root/build/lib/libbench_baseline.so" ] || "$root/ci/build.sh" "$root/build" >/dev/null
"${mvn_q[@]}" -f "$root/bindings/java/pom.xml" install -DskipTests >/dev/null
"${mvn_q[@]}" -f "$here/pom.xml" package >/dev/null
cp="$here/target/classes:$here/target/lib/*"
ir() {
  local out
  out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no \
    --toggle-collect='Java_org_polyffi_bench_PlainJni_measured' \
    java -Xbatch -XX:+UseSerialGC -cp "$cp" org.polyffi.bench.Instructions "$1" "$2" 2>&1)
  local n
  n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$out")
  [ -n "$n" ] || { echo "instructions.sh: case $1 failed:" >&2; echo "$out" >&2; exit 1; }
  echo "$n"
}
per_call() { local a b; a=$(ir "$1" 100000); b=$(ir "$1" 1100000); echo $(( (b - a) / 1000000 )); }
row() {  # label, ours case, floor case
  local p f
  p=$(per_call "$2"); f=$(per_call "$3")
  awk -v l="$1" -v p="$p" -v f="$f" 'BEGIN { printf "| %s | %d | %d | %.2fx |\n", l, p, f, p / f }'
}
echo "| pair (ours vs floor) | ours Ir/call | floor Ir/call | ratio |"
echo "|---|---:|---:|---:|"
row "add3 \`callLong\` vs plain JNI add3" add3.polyffi add3.jni
row "add3 plain JNI calling \`TVMFuncCall\` vs plain JNI add3" add3.packed add3.jni
row "add3 plain JNI calling the direct pair vs plain JNI add3" add3.direct add3.jni
row "add3 \`callLong\` vs plain JNI calling the direct pair" add3.polyffi add3.direct
row "nop \`callVoid\` vs plain JNI nop" nop.polyffi nop.jni
row "C->Java \`LongCallback\` (testing.call_n) vs JNI \`CallStaticLongMethod\` loop" callback.long callback.jni
row "C->Java \`Callback\` (testing.call_n) vs JNI \`CallStaticLongMethod\` loop" callback.object callback.jni
row "JNI \`CallStaticLongMethod\` + \`ExceptionCheck\` loop vs the loop without" callback.jnicheck callback.jni
