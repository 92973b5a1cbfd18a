#!/usr/bin/env bash
# One version number: CMake, the C header, and every binding's package file must agree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmake_v=$(sed -n 's/^project(polyffi VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
header_v=$(sed -n 's/^#define POLYFFI_VERSION "\(.*\)"/\1/p' "$root/c_api/include/polyffi/c_runtime_api.h")
parts=$(for p in MAJOR MINOR PATCH; do
  sed -n "s/^#define POLYFFI_VERSION_$p \([0-9]*\)/\1/p" "$root/c_api/include/polyffi/c_runtime_api.h"
done | paste -sd.)
status=0
check() {  # name value
  if [ "$2" != "$cmake_v" ]; then echo "version mismatch: $1 says '$2', CMakeLists.txt says '$cmake_v'"; status=1; fi
}
check "POLYFFI_VERSION" "$header_v"
check "POLYFFI_VERSION_MAJOR/MINOR/PATCH" "$parts"
for f in bindings/python/pyproject.toml bindings/rust/polyffi/Cargo.toml bindings/rust/polyffi-sys/Cargo.toml; do
  [ -f "$root/$f" ] && check "$f" "$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/$f" | head -1)"
done
[ -f "$root/bindings/node/package.json" ] &&
  check bindings/node/package.json "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$root/bindings/node/package.json")"
[ -f "$root/bindings/java/pom.xml" ] &&
  check bindings/java/pom.xml "$(sed -n 's:^  <version>\(.*\)</version>:\1:p' "$root/bindings/java/pom.xml" | head -1)"
[ -f "$root/examples/digits-spark/pom.xml" ] &&
  check "examples/digits-spark/pom.xml (polyffi.version)" "$(sed -n 's:.*<polyffi.version>\(.*\)</polyffi.version>.*:\1:p' "$root/examples/digits-spark/pom.xml")"
[ $status = 0 ] && echo "version $cmake_v everywhere"
exit $status
