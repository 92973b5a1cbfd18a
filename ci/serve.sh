#!/usr/bin/env bash
# ci/serve.sh LANG MODEL_DIR PORT: serve every model in MODEL_DIR over the Open Inference Protocol
# (KServe v2 REST) on 127.0.0.1:PORT from LANG's server, until killed. docs/serving.md.
#
# The contract every server keeps (LANG in python | node | rust | java):
#   - serves each model of MODEL_DIR under its file's stem (conv.so -> conv; a folder NAME/ with
#     graph.json, params.bin and one kernel library *.so -> NAME);
#   - binds 127.0.0.1:PORT and prints exactly `listening on 127.0.0.1:PORT` on stdout once ready;
#   - serves until killed (SIGTERM / SIGINT).
# The servers:
#   python  examples/serve-python/polyffi_serve.py MODEL_DIR PORT (the venv of ci/python-env.sh,
#           with aiohttp; POLYFFI_PYTHON overrides the interpreter)
#   node    examples/digits-server-node/server.js MODEL_DIR PORT (the addon of bindings/node)
#   rust    examples/digits-service-rust, binary polyffi-serve:
#           cargo run --release --bin polyffi-serve -- MODEL_DIR PORT (CARGO_TARGET_DIR defaults
#           to build/cargo, as in ci/test-rust.sh; its built binary runs at once when it is newer
#           than the sources)
#   java    examples/digits-jvm, main class org.polyffi.examples.Serve:
#           mvn -q exec:java -Dexec.mainClass=org.polyffi.examples.Serve -Dexec.args="MODEL_DIR PORT"
# The server replaces this shell (exec), so killing this script's pid stops the server.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ne 3 ]; then
  echo "usage: ci/serve.sh python|node|rust|java MODEL_DIR PORT" >&2
  exit 2
fi
lang=$1
[ -d "$2" ] || { echo "ci/serve.sh: MODEL_DIR '$2' is not a directory" >&2; exit 2; }
dir=$(cd "$2" && pwd)
port=$3
case "$port" in
  '' | *[!0-9]*) echo "ci/serve.sh: PORT must be a number, not '$port'" >&2; exit 2 ;;
esac
export POLYFFI_LIB_DIR=${POLYFFI_LIB_DIR:-$root/build/lib}

case "$lang" in
  python)
    py=${POLYFFI_PYTHON:-$root/build/venv-python/bin/python}
    if ! "$py" -c "import aiohttp, polyffi" 2>/dev/null; then
      py=$("$root/ci/python-env.sh")
      "$py" -m pip install -q aiohttp >&2
    fi
    exec "$py" -u "$root/examples/serve-python/polyffi_serve.py" "$dir" "$port"
    ;;
  node)
    if [ ! -f "$root/bindings/node/build/polyffi.node" ] &&
      [ ! -f "$root/bindings/node/build/Release/polyffi.node" ]; then
      (cd "$root/bindings/node" && npm ci --no-audit --no-fund --loglevel=error >&2)
    fi
    exec node "$root/examples/digits-server-node/server.js" "$dir" "$port"
    ;;
  rust)
    # The example is a member of bindings/rust's workspace; one target dir for everything Rust,
    # as ci/test-rust.sh has it, so a binary it built is reused.
    cd "$root/examples/digits-service-rust"
    command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/build/cargo}
    bin=$CARGO_TARGET_DIR/release/polyffi-serve
    if [ -x "$bin" ] && [ -z "$(find src Cargo.toml "$root/bindings/rust" -name target -prune \
        -o -newer "$bin" -type f -print -quit)" ]; then
      exec "$bin" "$dir" "$port"
    fi
    exec cargo run -q --release --bin polyffi-serve -- "$dir" "$port"
    ;;
  java)
    # shellcheck source=ci/java-env.sh
    . "$root/ci/java-env.sh"
    cd "$root/examples/digits-jvm"
    exec mvn -q exec:java -Dexec.mainClass=org.polyffi.examples.Serve \
      -Dexec.args="$dir $port"
    ;;
  *)
    echo "ci/serve.sh: unknown LANG '$lang' (python, node, rust or java)" >&2
    exit 2
    ;;
esac
