#!/usr/bin/env bash
# A real Spark standalone cluster on this machine: a master and two workers on 127.0.0.1, each
# its own JVM with 1 core, started from the classes of the Spark 3.5 distribution that pip's
# pyspark bundles (the workers launch executors from it as SPARK_HOME). The digits job is
# submitted from the JVM (org.apache.spark.deploy.SparkSubmit on the Maven classpath, the model
# files with --files, the polyffi jar with --jars) and from PySpark, first with one worker, then
# with two; then the single-process GraphModule loops in Java and Python. Prints rows/s, the
# speed-up and the per-row cost. Everything it starts is stopped on exit.
#
# usage: ci/spark-cluster.sh [ROWS [PARTITIONS [RUNS]]]     (default 300000 8 5)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/ci/spark-env.sh"
rows=${1:-300000}
parts=${2:-8}
runs=${3:-5}
model="$root/examples/digits/model"
lib="$root/build/lib/libdigits_model.so"
[ -f "$lib" ] || "$root/ci/build.sh" "$root/build" >/dev/null
"${spark_mvn[@]}" -q -f "$app/pom.xml" package -DskipTests
app_cp="$app/target/digits-spark.jar:$(cat "$app/target/classpath.txt")"
polyffi_jar=$(tr ':' '\n' <"$app/target/classpath.txt" | grep '/polyffi-[0-9.]*\.jar$')
SPARK_HOME=$("$SPARK_PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
export SPARK_HOME SPARK_SCALA_VERSION=2.12 SPARK_LOCAL_IP=127.0.0.1
work="$root/build/spark-cluster"
rm -rf "$work"
mkdir -p "$work"
log4j="-Dlog4j.configurationFile=$app/conf/log4j2.properties"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
daemon() { # name class args...: a Spark daemon in its own JVM, from the distribution's jars
  local name=$1
  shift
  java $SPARK_JAVA_OPTS -Xmx512m "$log4j" -cp "$SPARK_HOME/jars/*" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  echo "started $name (pid $!)"
}
alive_workers() {
  python3 - "$master_ui" <<'EOF'
import json, sys, urllib.request
try:
    print(json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/", timeout=5))
          ["aliveworkers"])
except Exception:
    print(-1)
EOF
}
wait_workers() {
  for _ in $(seq 1 300); do
    [ "$(alive_workers)" = "$1" ] && return 0
    sleep 0.2
  done
  echo "spark-cluster: the master does not see $1 worker(s); logs in $work" >&2
  exit 1
}

master_port=$(free_port)
master_ui=$(free_port)
master="spark://127.0.0.1:$master_port"
daemon master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$master_port" \
  --webui-port "$master_ui"
worker() {
  daemon "worker$1" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 \
    --memory 1536m --webui-port "$(free_port)" --work-dir "$work/worker$1" "$master"
}

echo "== table: $rows rows in $parts partitions (local mode, not timed)"
java $SPARK_JAVA_OPTS "$log4j" -cp "$app_cp" org.polyffi.examples.spark.DigitsSpark generate \
  --model-dir "$model" --rows "$rows" --partitions "$parts" --out "$work/in.parquet"

executor_conf=(--conf spark.executor.cores=1 --conf spark.executor.memory=1g
               --conf "spark.executor.extraJavaOptions=$SPARK_JAVA_OPTS $log4j"
               --conf spark.ui.enabled=false --conf spark.ui.showConsoleProgress=false)
jvm_job() { # workers extra-args...
  local n=$1
  shift
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  java $SPARK_JAVA_OPTS "$log4j" -cp "$app_cp" org.apache.spark.deploy.SparkSubmit \
    --master "$master" --class org.polyffi.examples.spark.DigitsSpark --jars "$polyffi_jar" \
    --files "$model/graph.json,$model/params.bin,$lib" "${executor_conf[@]}" \
    "$app/target/digits-spark.jar" classify --in "$work/in.parquet" \
    --out "$work/out-jvm-$n.parquet" --expected-dir "$model" --runs "$runs" \
    --wait-executors "$n" "$@" 2>"$work/driver-jvm-$n.log" | tee "$work/jvm-$n.txt"
}
py_job() { # workers extra-args...
  local n=$1
  shift
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$SPARK_PY" "$app/python/digits_spark.py" classify --master "$master" \
    --in "$work/in.parquet" --out "$work/out-py-$n.parquet" --model-dir "$model" \
    --model-lib "$lib" --runs "$runs" --wait-executors "$n" \
    $(printf -- '--conf %s ' spark.executor.cores=1 spark.executor.memory=1g) \
    --conf "spark.executor.extraJavaOptions=$SPARK_JAVA_OPTS $log4j" \
    "$@" 2>"$work/driver-py-$n.log" | tee "$work/py-$n.txt"
}

worker 1
wait_workers 1
echo "== JVM job, 1 worker"
jvm_job 1
echo "== PySpark job, 1 worker"
py_job 1
worker 2
wait_workers 2
echo "== JVM job, 2 workers (then bad input: the job fails naming the row, executors survive)"
jvm_job 2 --bad-input
echo "== PySpark job, 2 workers (then bad input)"
py_job 2 --bad-input

echo "== single process, no Spark"
java -cp "$app_cp" org.polyffi.examples.spark.DigitsSpark baseline --model-dir "$model" \
  --model-lib "$lib" --rows "$rows" --runs 5 | tee "$work/base-jvm.txt"
"$SPARK_PY" "$app/python/digits_spark.py" baseline --model-dir "$model" --model-lib "$lib" \
  --rows "$rows" --runs 5 | tee "$work/base-py.txt"

echo
echo "== summary ($rows rows, $parts partitions, median of runs 2..$runs (run 1 is the cold start); load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs)"
python3 - "$work" <<'EOF'
import re, sys
w = sys.argv[1]
def val(f, key):
    m = re.search(key + r"=([0-9.]+)", open(f"{w}/{f}").read())
    return float(m.group(1))
print("| job | rows/s, 1 worker | rows/s, 2 workers | speed-up | us/row per executor core, "
      "1 worker / 2 workers | single process, ns/row | Spark / single process, 1 worker |")
print("|---|---|---|---|---|---|---|")
for lang, name in (("jvm", "Java (mapPartitions)"), ("py", "PySpark (mapInArrow)")):
    r1, r2 = val(f"{lang}-1.txt", "median_rows_per_s"), val(f"{lang}-2.txt", "median_rows_per_s")
    base = val(f"base-{lang}.txt", "median_ns_per_row")
    us1, us2 = 1e6 / r1, 2e6 / r2
    print(f"| {name} | {r1:.0f} | {r2:.0f} | {r2 / r1:.2f}x | {us1:.1f} / {us2:.1f} "
          f"| {base:.0f} | {us1 * 1000 / base:.1f}x |")
EOF
grep -h "check:\|bad input" "$work"/jvm-2.txt "$work"/py-2.txt
if grep -q "FAILED\|WRONG" "$work"/jvm-*.txt "$work"/py-*.txt; then exit 1; fi
