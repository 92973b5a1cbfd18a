#!/usr/bin/env bash
# Installs each artifact of dist/ (ci/package.sh) outside the repository, in a clean place, and runs
# a model exported by TVM 0.18 there (tests/tvm_models/tvm018/digits_b1, copied out), with output
# bytes equal to the ones TVM's runtime recorded; every consumer also checks that the
# libpolyffi.so mapped into its process is the packaged one:
#   python  a fresh venv per CPython with a wheel, `pip install --only-binary=:all:`, no compiler,
#           cmake or make on PATH
#   node    a fresh npm project installing polyffi + the platform package tarballs, same PATH
#   maven   a Maven project depending on org.polyffi:polyffi from dist/maven (fresh local repo)
#   rust    a cargo project depending on the unpacked .crate files (polyffi-sys `bundled`)
#   c       C programs built with pkg-config and with find_package(polyffi CONFIG)
# Usage: ci/test-packages.sh [c python node maven rust] (default: all)
set -euo pipefail
# The whole script is one function: bash reads it completely before running it.
main() {
root=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
say() { echo "-- packages: $* ($(( $(date +%s) - start ))s)"; }
version=$(sed -n 's/^project(polyffi VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
dist="$root/dist"
what=${*:-"c python node maven rust"}
# A CPython of that version that runs: python3.X on PATH, else pyenv's (its shims refuse
# versions that are not selected).
find_python() {  # 3.X -> path
  local py
  for py in "$(command -v "python$1" || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1"; do
    [ -n "$py" ] && [ -x "$py" ] && "$py" -c 'import sys' 2>/dev/null && { echo "$py"; return 0; }
  done
  return 1
}
wants() { [[ " $what " == *" $1 "* ]]; }
machine=$(uname -m)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/polyffi-packages.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
model="$tmp/model"
cp -r "$root/tests/tvm_models/tvm018/digits_b1" "$model"
checks="$root/tests/packages"

# A PATH with what an end user's machine has for pip/npm, and no compiler, cmake or make.
bare="$tmp/bare-bin"
mkdir -p "$bare"
for tool in sh bash env node uname cat ls rm mkdir cp mv; do
  p=$(command -v "$tool" || true)
  [ -n "$p" ] && ln -sf "$p" "$bare/$tool"
done
no_compiler() {  # PATH -> fails when a build tool is reachable on it
  local tool
  for tool in cc c++ gcc g++ clang zig cmake make ninja ld; do
    if PATH="$1" command -v "$tool" >/dev/null; then
      echo "test-packages: $tool is on the restricted PATH $1"; exit 1
    fi
  done
}

if wants c; then
  tarball="$dist/c/polyffi-$version-linux-$machine.tar.gz"
  mkdir -p "$tmp/c"
  tar -C "$tmp/c" -xzf "$tarball"
  prefix="$tmp/c/polyffi-$version-linux-$machine"
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Wextra -Werror -o "$tmp/c/run_model_pc" "$checks/run_model.c" \
    $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs polyffi) \
    -Wl,-rpath,"$prefix/lib" -lm
  "$tmp/c/run_model_pc" graph "$model" "$prefix/lib"
  mkdir -p "$tmp/c/cmake"
  cat >"$tmp/c/cmake/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(run_model C)
find_package(polyffi $version CONFIG REQUIRED)
add_executable(run_model_cmake "$checks/run_model.c")
target_link_libraries(run_model_cmake PRIVATE polyffi::polyffi m)
CMAKE
  cmake -S "$tmp/c/cmake" -B "$tmp/c/cmake/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$tmp/c/cmake/build" >/dev/null
  "$tmp/c/cmake/build/run_model_cmake" graph "$model" "$prefix/lib"
  say "c: $(basename "$tarball") with pkg-config and find_package(polyffi CONFIG)"

  # linux-aarch64 under qemu-user: the C program, cross-compiled by Debian's aarch64 gcc against
  # the aarch64 tarball, runs the digits model that TVM 0.27 compiled for aarch64.
  tarball="$dist/c/polyffi-$version-linux-aarch64.tar.gz"
  if [ "$machine" = x86_64 ] && [ -f "$tarball" ]; then
    need=(qemu-user gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross googletest)
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
    mkdir -p "$tmp/c-aarch64"
    tar -C "$tmp/c-aarch64" -xzf "$tarball"
    prefix="$tmp/c-aarch64/polyffi-$version-linux-aarch64"
    # shellcheck disable=SC2046
    aarch64-linux-gnu-gcc -std=c11 -Wall -Wextra -Werror -o "$tmp/c-aarch64/run_model" \
      "$checks/run_model.c" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs polyffi) \
      -Wl,-rpath,"$prefix/lib" -lm
    relax="$root/tests/tvm_models/tvm027/relax/digits"
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$tmp/c-aarch64/run_model" relax \
      "$root/tests/tvm_models/tvm027/aarch64/digits.so" "$relax/b1_input_data.bin" \
      "$relax/b1_output_0.bin" "$prefix/lib"
    say "c: $(basename "$tarball") under qemu-aarch64 (TVM 0.27 digits model built for aarch64)"

    # The C conformance runner and its fixture libraries, cross-built against the same tarball
    # (gtest from Debian's googletest sources), every case run under qemu-aarch64; the TVM
    # fixtures are TVM 0.27's aarch64 builds, and the TVM 0.18 factory (no aarch64 build) is left
    # out: capabilities/c-aarch64.json lists what is skipped and why, and matrix.py checks it.
    aarch64_tvm="$root/tests/tvm_models/tvm027/aarch64"
    conf="$root/build/package/aarch64/conformance"
    cmake -S "$checks/conformance" -B "$conf" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
      -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ \
      -DCMAKE_PREFIX_PATH="$prefix" -Dpolyffi_DIR="$prefix/lib/cmake/polyffi" \
      -DPOLYFFI_FACTORY_SRC= -DPOLYFFI_TVMFFI_SRC="$aarch64_tvm/two_funcs.so" \
      -DPOLYFFI_RELAX_SRC="$aarch64_tvm/two_outputs.so" >"$tmp/c-aarch64/configure.log" 2>&1 ||
      { cat "$tmp/c-aarch64/configure.log"; exit 1; }
    ninja -C "$conf" conformance_c >"$tmp/c-aarch64/build.log" 2>&1 ||
      { cat "$tmp/c-aarch64/build.log"; exit 1; }
    results="$tmp/c-aarch64/results"
    POLYFFI_CONFORMANCE_BINDING=c-aarch64 POLYFFI_CONFORMANCE_OUT="$results" \
      qemu-aarch64 -L /usr/aarch64-linux-gnu "$conf/bin/conformance_c" --gtest_brief=1
    python3 "$root/tests/conformance/matrix.py" "$results" --require c-aarch64
    say "c: conformance runner under qemu-aarch64 against $(basename "$tarball")"
  fi
fi

if wants python; then
  ran=0
  for wheel in "$dist"/python/polyffi-"$version"-cp3*-*"$machine".whl; do
    [ -f "$wheel" ] || continue
    tag=$(basename "$wheel" | cut -d- -f3)  # cp311
    py=$(find_python "3.${tag#cp3}") || { echo "   (no Python 3.${tag#cp3} for $(basename "$wheel"))"; continue; }
    venv="$tmp/venv-$tag"
    "$py" -m venv "$venv"
    no_compiler "$venv/bin:$bare"
    PATH="$venv/bin:$bare" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      --only-binary=:all: "$wheel" numpy
    (cd "$tmp" && PATH="$venv/bin:$bare" "$venv/bin/python" "$checks/run_model.py" "$model")
    say "python: $(basename "$wheel") in a fresh venv ($py)"
    ran=$((ran + 1))
  done
  [ "$ran" -gt 0 ] || { echo "test-packages: no wheel for this machine in $dist/python"; exit 1; }

  # linux-aarch64 wheels: tags, every .so an AArch64 ELF that needs no symbol version above
  # GLIBC_2.17; then the cp311 one installed for Debian's arm64 CPython 3.11 (its .debs unpacked,
  # no dpkg install) and run under qemu-aarch64 on TVM 0.27's aarch64 digits model.
  aarch64_wheels=("$dist"/python/polyffi-"$version"-cp3*-*manylinux_2_17_aarch64*.whl)
  if [ "$machine" = x86_64 ] && [ -f "${aarch64_wheels[0]}" ]; then
    for wheel in "${aarch64_wheels[@]}"; do
      tag=$(basename "$wheel" | cut -d- -f3)
      plats=$(basename "$wheel" .whl | cut -d- -f5 | tr . '\n' | sort | paste -sd' ')
      [ "$(basename "$wheel" | cut -d- -f4)" = "$tag" ] &&
        [ "$plats" = "manylinux2014_aarch64 manylinux_2_17_aarch64" ] ||
        { echo "test-packages: $(basename "$wheel"): ABI or platform tags"; exit 1; }
      unpacked="$tmp/wheel-$tag"
      mkdir -p "$unpacked" && (cd "$unpacked" && python3 -m zipfile -e "$wheel" .)
      sos=$(find "$unpacked" -name '*.so' | sort)
      core="/polyffi/_core.cpython-3${tag#cp3}-aarch64-linux-gnu.so$"
      [ "$(echo "$sos" | grep -c "$core")" = 1 ] &&
        [ "$(echo "$sos" | grep -c '/polyffi/libpolyffi.so$')" = 1 ] ||
        { echo "test-packages: $(basename "$wheel") holds: $sos"; exit 1; }
      for so in $sos; do
        readelf -h "$so" | grep -q 'Machine: *AArch64' ||
          { echo "test-packages: $so: not AArch64"; exit 1; }
        newest=$(readelf -V --wide "$so" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
        [ "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -1)" = GLIBC_2.17 ] ||
          { echo "test-packages: $so needs $newest"; exit 1; }
      done
    done
    say "python: ${#aarch64_wheels[@]} aarch64 wheels: tags, AArch64 ELF, GLIBC <= 2.17"
    wheel=$(printf '%s\n' "${aarch64_wheels[@]}" | grep -- -cp311-) ||
      { echo "test-packages: no cp311 aarch64 wheel to run"; exit 1; }
    pyroot="$root/build/package/aarch64-python"
    if [ ! -x "$pyroot/root/usr/bin/python3.11" ]; then
      dpkg --print-foreign-architectures | grep -qx arm64 || {
        SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
        $SUDO dpkg --add-architecture arm64 && $SUDO apt-get update -qq; }
      rm -rf "$pyroot" && mkdir -p "$pyroot/debs"
      (cd "$pyroot/debs" && apt-get download -q python3.11-minimal:arm64 \
        libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 libexpat1:arm64 zlib1g:arm64 \
        libffi8:arm64 libbz2-1.0:arm64 liblzma5:arm64 libssl3:arm64 libuuid1:arm64 libcrypt1:arm64 \
        libsqlite3-0:arm64 >"$tmp/apt-download.log" 2>&1) || { cat "$tmp/apt-download.log"; exit 1; }
      for deb in "$pyroot"/debs/*.deb; do dpkg-deb -x "$deb" "$pyroot/root"; done
    fi
    site="$tmp/aarch64-site"
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
      --target "$site" --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 \
      --python-version 3.11 --implementation cp --abi cp311 --only-binary=:all: "$wheel" numpy
    libs="$pyroot/root/lib/aarch64-linux-gnu:$pyroot/root/usr/lib/aarch64-linux-gnu"
    relax="$root/tests/tvm_models/tvm027/relax/digits"
    (cd "$tmp" && qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH="$libs" \
      -E PYTHONPATH="$site" "$pyroot/root/usr/bin/python3.11" "$checks/run_model.py" relax \
      "$root/tests/tvm_models/tvm027/aarch64/digits.so" "$relax/b1_input_data.bin" \
      "$relax/b1_output_0.bin")
    say "python: $(basename "$wheel") under qemu-aarch64 (Debian's arm64 CPython 3.11)"
  fi
fi

if wants node; then
  arch=$(case $machine in x86_64) echo x64 ;; aarch64) echo arm64 ;; esac)
  proj="$tmp/node"
  mkdir -p "$proj"
  echo '{ "name": "run-model", "version": "0.0.0", "private": true }' >"$proj/package.json"
  npm_bin=$(command -v npm)
  no_compiler "$bare"
  (cd "$proj" && PATH="$bare" "$npm_bin" install --no-audit --no-fund --loglevel=error \
    "$dist/node/polyffi-linux-$arch-gnu-$version.tgz" "$dist/node/polyffi-$version.tgz")
  [ ! -e "$proj/node_modules/polyffi/build" ] ||
    { echo "test-packages: npm install built the addon from source"; exit 1; }
  cp "$checks/run_model.js" "$proj/"
  (cd "$proj" && PATH="$bare" node run_model.js "$model" "@polyffi/linux-$arch-gnu")
  say "node: polyffi + @polyffi/linux-$arch-gnu in a fresh npm project"
fi

if wants maven; then
  . "$root/ci/java-env.sh"
  proj="$tmp/maven"
  mkdir -p "$proj"
  cp -r "$checks/java/src" "$proj/"
  cat >"$proj/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>check</groupId>
  <artifactId>run-model</artifactId>
  <version>0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <repositories>
    <repository><id>polyffi-dist</id><url>file://$dist/maven</url></repository>
  </repositories>
  <dependencies>
    <dependency><groupId>org.polyffi</groupId><artifactId>polyffi</artifactId><version>$version</version></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.12.1</version></plugin>
      <plugin><artifactId>maven-dependency-plugin</artifactId><version>3.6.1</version></plugin>
    </plugins>
  </build>
</project>
POM
  # A local repository of its own (kept in build/ for the plugins), without any org.polyffi that
  # `mvn install` of the checkout put in ~/.m2: the artifact comes from dist/maven.
  m2="$root/build/m2-packages"
  rm -rf "$m2/org/polyffi"
  mvn -B -q -ntp -Dstyle.color=never -Dmaven.repo.local="$m2" -f "$proj/pom.xml" compile dependency:build-classpath \
    -Dmdep.outputFile="$proj/cp.txt"
  grep -q "$m2/org/polyffi/polyffi/$version/polyffi-$version.jar" "$proj/cp.txt"
  java -Dpolyffi.cache.dir="$tmp/maven/native-cache" -cp "$proj/target/classes:$(cat "$proj/cp.txt")" \
    check.RunModel "$model"
  say "maven: org.polyffi:polyffi:$version from dist/maven"
fi

if wants rust; then
  command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
  proj="$tmp/rust"
  mkdir -p "$proj/vendor"
  for crate in polyffi-sys polyffi; do
    tar -C "$proj/vendor" -xzf "$dist/rust/$crate-$version.crate"
  done
  cp -r "$checks/rust/src" "$checks/rust/build.rs" "$proj/"
  cat >"$proj/Cargo.toml" <<TOML
[package]
name = "run-model"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
polyffi = { path = "vendor/polyffi-$version" }
polyffi-sys = { path = "vendor/polyffi-sys-$version" }

[patch.crates-io]
polyffi-sys = { path = "vendor/polyffi-sys-$version" }

[workspace]
TOML
  # The compiled third-party crates (bindgen, ...) are shared with ci/test-rust.sh's target dir;
  # polyffi-sys from vendor/ is a package of its own there, built from the crate's sources.
  # .crate files carry fixed timestamps, so cargo's fingerprints cannot tell two packagings of
  # one version apart: clean the three packages, keep the compiled third-party crates.
  (cd "$proj" && export CARGO_TARGET_DIR="$root/build/cargo" &&
    cargo clean -q -p polyffi-sys -p polyffi -p run-model &&
    env -u POLYFFI_LIB_DIR -u PKG_CONFIG_PATH cargo run -q -- "$model")
  say "rust: polyffi + polyffi-sys (bundled) from the unpacked .crate files"
fi
say "done"
}
main "$@"; exit
