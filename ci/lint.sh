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
# The repository stands on its own: no tracked file may refer to documents outside it (a sibling
# checkout's spec files, a build machine's paths); its spec is docs/spec/, indexed by docs/README.md.
echo "self-contained: references outside the repository"
if git grep -n -I -E '\.\./shared/|/work/|\b(ABI|CONFORMANCE|BINDINGS|TVM_FORMATS|STYLE|MEASURED)\.md\b' \
    -- . ':!ci/lint.sh'; then
  echo "lint: the lines above refer to documents outside the repository (use docs/spec/...)" >&2
  exit 1
fi
for f in $(git ls-files 'docs/*.md' | grep -v '^docs/README.md$'); do
  grep -qF "(${f#docs/})" docs/README.md ||
    { echo "lint: $f has no entry in docs/README.md (the index of docs/)" >&2; exit 1; }
done
if command -v cargo >/dev/null || [ -x "$HOME/.cargo/bin/cargo" ]; then
  echo "rustfmt: bindings/rust workspace"
  PATH="$HOME/.cargo/bin:$PATH" cargo fmt --all --manifest-path bindings/rust/Cargo.toml -- --check
fi
ci/lint-java.sh
echo "lint clean"
