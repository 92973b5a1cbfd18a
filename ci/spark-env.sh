#!/usr/bin/env bash
# Sourced by ci/test-spark.sh and ci/spark-cluster.sh: JDK 17 + Maven, the polyffi jar in the local
# Maven repository, the digits-spark jar with its classpath file, and the PySpark virtualenv
# build/venv-spark (pyspark bundles Spark: its version must equal spark.version in
# examples/digits-spark/pom.xml). Sets SPARK_APP_CP, SPARK_JAVA_OPTS, SPARK_PY.
root=${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
. "$root/ci/java-env.sh"
spark_mvn=(mvn -B -ntp -Dstyle.color=never -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
           -Dorg.slf4j.simpleLogger.log.org.apache.maven.plugin.surefire=info)
app="$root/examples/digits-spark"
spark_version=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$app/pom.xml")
# The --add-opens list Spark 3.5 needs on Java 17 (driver and executors), kept in the pom.
SPARK_JAVA_OPTS=$(sed -n 's:.*<spark.java.opens>\(.*\)</spark.java.opens>.*:\1:p' "$app/pom.xml")
polyffi_version=$(sed -n 's:.*<polyffi.version>\(.*\)</polyffi.version>.*:\1:p' "$app/pom.xml")
if [ ! -f "$HOME/.m2/repository/org/polyffi/polyffi/$polyffi_version/polyffi-$polyffi_version.jar" ]; then
  "${spark_mvn[@]}" -q -f "$root/bindings/java/pom.xml" install -DskipTests
fi
spark_venv="$root/build/venv-spark"
if [ ! -x "$spark_venv/bin/python" ]; then
  python3 -m venv "$spark_venv"
  "$spark_venv/bin/pip" install -q --upgrade pip
fi
# pyspark 3.5 predates numpy 2 and pandas 2.3; pinned here, apart from the binding's own venv.
"$spark_venv/bin/pip" install -q "$root/bindings/python" "pyspark==$spark_version" \
  "pandas>=2.0,<2.3" "pyarrow>=11,<18" "numpy>=1.24,<2" pytest
SPARK_PY="$spark_venv/bin/python"
export PYSPARK_PYTHON="$SPARK_PY" PYSPARK_DRIVER_PYTHON="$SPARK_PY"
