#!/usr/bin/env bash
# The Java binding: JDK 17 + Maven from Debian, then `mvn verify` in bindings/java (its JUnit
# tests and the conformance runner, which writes build/conformance/java.json), `install` of the
# artifact to the local Maven repository, and the digits-jvm application's test against it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/ci/java-env.sh"
# Quiet Maven, but keep Surefire's per-class and summary lines.
mvn_q=(mvn -B -ntp -Dstyle.color=never -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
       -Dorg.slf4j.simpleLogger.log.org.apache.maven.plugin.surefire=info)
POLYFFI_CONFORMANCE_OUT="$root/build/conformance" \
  "${mvn_q[@]}" -f "$root/bindings/java/pom.xml" install
"${mvn_q[@]}" -f "$root/examples/digits-jvm/pom.xml" verify
