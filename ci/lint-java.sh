#!/usr/bin/env bash
# google-java-format (Maven Central, cached once) over every tracked .java file; fails when any
# file would change. Fix with: ci/lint-java.sh --fix
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/ci/java-env.sh"
version=1.22.0
dir=${XDG_CACHE_HOME:-$HOME/.cache}/polyffi-tools
jar=$dir/google-java-format-$version-all-deps.jar
if [ ! -f "$jar" ]; then
  mkdir -p "$dir"
  (cd "$dir" && mvn -B -ntp -q dependency:copy \
    -Dartifact=com.google.googlejavaformat:google-java-format:$version:jar:all-deps \
    -DoutputDirectory="$dir" >/dev/null)
fi
cd "$root"
mapfile -t files < <(git ls-files '*.java')
mode=(--dry-run --set-exit-if-changed)
[ "${1:-}" = --fix ] && mode=(--replace)
exports=()
for p in api code file parser tree util; do
  exports+=("--add-exports=jdk.compiler/com.sun.tools.javac.$p=ALL-UNNAMED")
done
echo "google-java-format: ${#files[@]} files"
java "${exports[@]}" -jar "$jar" "${mode[@]}" "${files[@]}"
