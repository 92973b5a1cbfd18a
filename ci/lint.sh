#!/usr/bin/env bash
# Every linter in one place: clang-format (C/C++, .clang-format), ruff (Python), and the JSON
# case files' schema. Installs the tools it needs; fails on any finding.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if ! command -v clang-format >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang-format >/dev/null
fi
python3 -m ruff --version >/dev/null 2>&1 || python3 -m pip install -q ruff
echo "clang-format: $(git ls-files '*.c' '*.cc' '*.h' '*.hpp' | wc -l) files"
git ls-files '*.c' '*.cc' '*.h' '*.hpp' | xargs clang-format --dry-run --Werror
echo "ruff: $(git ls-files '*.py' | wc -l) files"
python3 -m ruff check --quiet $(git ls-files '*.py')
python3 tests/conformance/validate.py >/dev/null
if command -v cargo >/dev/null || [ -x "$HOME/.cargo/bin/cargo" ]; then
  echo "rustfmt: bindings/rust workspace"
  PATH="$HOME/.cargo/bin:$PATH" cargo fmt --all --manifest-path bindings/rust/Cargo.toml -- --check
fi
ci/lint-java.sh
echo "lint clean"
