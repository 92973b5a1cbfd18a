#!/usr/bin/env bash
# Scale-out (examples/digits-spark): the Spark job from the JVM (JUnit through Maven) and from
# PySpark (pytest), both in local[2] on a few thousand rows, every prediction compared with the
# C demo's. Maven and pip fetch Spark themselves (Maven Central / PyPI).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/ci/spark-env.sh"
# The reference: digits_demo exits non-zero unless it predicts expected.json's classes, which
# are what both jobs are checked against.
"$root/build/bin/digits_demo" | grep -E "agreement|accuracy"
"${spark_mvn[@]}" -f "$app/pom.xml" verify
"$SPARK_PY" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning "$app/python/test_digits_spark.py"
