#!/usr/bin/env bash
# The Java benchmarks in one go (see docs/performance/java.md):
#   1. JMH on JDK 17 (polyffi, plain JNI, JNA direct)   2. JMH on JDK 25 (the same + FFM)
#   3. paired ratios (alternating bursts, median of 31 rounds: robust to a loaded machine)
#   4. the soak (10M calls per path, 1M callback create/close)   5. digits-jvm under wrk for 20 s
#   6. instructions per call under callgrind (instructions.sh; not in the default set: ~5 minutes)
# Usage: bench/java/run.sh [jmh|jmh25|paired|soak|load|instructions]...   (default: the first five)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
jmh_args=(-f 1 -wi 3 -w 1s -i 5 -r 1s -tu ns -bm avgt)
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(jmh jmh25 paired soak load)
mvn_q=(mvn -B -ntp -q -Dstyle.color=never)

[ -f "$root/build/lib/libbench_baseline.so" ] || "$root/ci/build.sh" "$root/build" >/dev/null
"${mvn_q[@]}" -f "$root/bindings/java/pom.xml" install -DskipTests >/dev/null
"${mvn_q[@]}" -f "$here/pom.xml" package >/dev/null
cp=("$here/target/classes:$here/target/lib/*")

for step in "${steps[@]}"; do
  case $step in
    jmh)
      echo "== JMH, $(java -version 2>&1 | head -1)"
      java -cp "${cp[@]}" org.openjdk.jmh.Main "${jmh_args[@]}" CallBench ;;
    jmh25)
      if [ ! -x "$jdk25/bin/java" ]; then echo "== JDK 25 not found at $jdk25: FFM skipped"; continue; fi
      # Built again with JDK 25 (in target25) so the ffm profile compiles FfmBench.
      JAVA_HOME=$jdk25 "${mvn_q[@]}" -f "$here/pom.xml" package -Dbench.build.dir="$here/target25" >/dev/null
      echo "== JMH, $("$jdk25/bin/java" -version 2>&1 | head -1)"
      "$jdk25/bin/java" --enable-native-access=ALL-UNNAMED -cp "$here/target25/classes:$here/target25/lib/*" \
        org.openjdk.jmh.Main "${jmh_args[@]}" -jvmArgsAppend "-Dpolyffi.root=$root" 'CallBench|FfmBench' ;;
    paired)
      echo "== paired ratios, $(java -version 2>&1 | head -1)"
      java -Xms256m -Xmx256m -cp "${cp[@]}" org.polyffi.bench.Paired ;;
    soak)
      echo "== soak"
      # A fixed, pre-touched heap: any RSS growth is native memory, not the heap growing.
      java -Xms64m -Xmx64m -XX:+AlwaysPreTouch -cp "${cp[@]}" org.polyffi.bench.Soak ;;
    load)
      command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk"; exit 1; }
      "${mvn_q[@]}" -f "$root/examples/digits-jvm/pom.xml" package -DskipTests >/dev/null
      port=18431
      models=$(mktemp -d)
      mkdir "$models/digits_b1"
      ln -s "$root/build/lib/libdigits_model.so" "$models/digits_b1/"
      ln -s "$root/examples/digits/model/graph_b1.json" "$models/digits_b1/graph.json"
      ln -s "$root/examples/digits/model/params.bin" "$models/digits_b1/params.bin"
      java -cp "$root/examples/digits-jvm/target/digits-jvm.jar:$root/examples/digits-jvm/target/lib/*" \
        org.polyffi.examples.Serve "$models" $port &
      app=$!
      trap 'kill $app 2>/dev/null || true; rm -rf "$models"' EXIT
      for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && break; sleep 0.2; done
      url="http://127.0.0.1:$port/v2/models/digits_b1/infer"
      wrk -t2 -c16 -d5s -s "$here/wrk/predict.lua" "$url" >/dev/null  # warm-up
      echo "== digits-jvm's Open Inference Protocol server under wrk: 2 threads, 16 connections, 20 s, one digit per request"
      wrk -t2 -c16 -d20s -s "$here/wrk/predict.lua" "$url"
      kill $app; wait $app 2>/dev/null || true; rm -rf "$models"; trap - EXIT ;;
    instructions)
      echo "== instructions per call (callgrind), $(java -version 2>&1 | head -1)"
      "$here/instructions.sh" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
