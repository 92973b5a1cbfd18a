#!/usr/bin/env bash
# The Rust binding: the crates' tests (with the conformance runner, which writes
# build/conformance/rust.json), the service's HTTP test, a compile check of the benchmark, and
# the install rules (cmake --install to a temporary prefix, then examples/hello built against it
# with find_package(polyffi CONFIG) and with pkg-config, and the Rust crate linked through
# pkg-config). Uses the machine's cargo (rustup); installs libclang-dev etc. from apt if missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
say() { echo "-- rust: $* ($(( $(date +%s) - start ))s)"; }

if ! command -v cargo >/dev/null; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null || { echo "ci/test-rust.sh: cargo not found (install Rust with rustup)"; exit 1; }
need=(libclang-dev pkg-config cmake ninja-build)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The fixtures the tests load (a build from before the TVM factory fixture lacks the last one).
for lib in polyffi polyffi_testing polyffi_test_factory polyffi_test_tvmffi polyffi_test_relax \
    digits_model; do
  [ -f "build/lib/lib$lib.so" ] || { ci/build.sh "$root/build"; break; }
done

# One target dir for everything Rust (tests, service, bench), linked against build/lib.
export CARGO_TARGET_DIR="$root/build/cargo"
export POLYFFI_LIB_DIR="$root/build/lib"
export POLYFFI_CONFORMANCE_OUT="$root/build/conformance"
cd bindings/rust
say "cargo test (polyffi-sys, polyffi incl. conformance, digits-service)"
cargo test --locked -p polyffi-sys -p polyffi -p digits-service 2>&1 | grep -v '\.\.\. ok$'
say "cargo check of the benchmark"
cargo check --locked -p polyffi-bench --benches --bins 2>&1 | tail -1

say "install rules"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$root/build" --prefix "$tmp/prefix" >/dev/null
fixtures="$root/build/lib/libpolyffi_testing.so"
mkdir -p "$tmp/consumer"
cat >"$tmp/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(hello_consumer C)
find_package(polyffi 0.1 CONFIG REQUIRED)
add_executable(hello_cmake "$root/examples/hello/hello.c")
target_link_libraries(hello_cmake PRIVATE polyffi::polyffi)
target_compile_definitions(hello_cmake PRIVATE POLYFFI_TESTING_LIB="$fixtures")
CMAKE
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer/build" >/dev/null
linked_polyffi() {  # binary -> the libpolyffi.so the loader picks, as a canonical path
  readlink -f "$(ldd "$1" | awk '$1 == "libpolyffi.so" { print $3 }')"
}
check_hello() {  # binary
  [ "$(linked_polyffi "$1")" = "$(readlink -f "$tmp/prefix/lib/libpolyffi.so")" ] ||
    { echo "$1 does not link the installed libpolyffi:"; ldd "$1"; exit 1; }
  "$1" | grep -q "finalizer ran" || { echo "$1 failed"; "$1"; exit 1; }
  echo "   $(basename "$1"): links $tmp/prefix/lib/libpolyffi.so, runs"
}
check_hello "$tmp/consumer/build/hello_cmake"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
libdir=$(pkg-config --variable=libdir polyffi)
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/hello_pc" "$root/examples/hello/hello.c" \
  -DPOLYFFI_TESTING_LIB="\"$fixtures\"" $(pkg-config --cflags --libs polyffi) -Wl,-rpath,"$libdir"
check_hello "$tmp/hello_pc"
# The Rust crate through pkg-config: no POLYFFI_LIB_DIR, no bundled build.
env -u POLYFFI_LIB_DIR cargo build --locked -q -p polyffi --no-default-features --features ndarray \
  --example ten_lines
example="$CARGO_TARGET_DIR/debug/examples/ten_lines"
[ "$(linked_polyffi "$example")" = "$(readlink -f "$tmp/prefix/lib/libpolyffi.so")" ] ||
  { echo "ten_lines does not link the pkg-config libpolyffi:"; ldd "$example"; exit 1; }
"$example" | grep -q "apply(twice, 21) = 42"
echo "   ten_lines (polyffi-sys via pkg-config): links the installed libpolyffi.so, runs"
say "done"
