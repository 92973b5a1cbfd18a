#!/usr/bin/env bash
# The README snippets, run as a user would (tests/readme/run_snippets.py): each one extracted from
# README.md or bindings/*/README.md into a project of its own outside the repository, built
# against what the earlier steps built and installed (build/, build/venv-python, the Rust crates,
# bindings/node's addon, the Java artifact in ~/.m2), and run. Usage: ci/test-readme.sh [--only c,python]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
[ -f "$root/build/lib/libpolyffi_testing.so" ] || "$root/ci/build.sh" "$root/build"
exec python3 "$root/tests/readme/run_snippets.py" "$@"
