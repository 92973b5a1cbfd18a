#!/usr/bin/env bash
# The Python binding's suite on every CPython version its pyproject declares (requires-python)
# that pyenv has here: one venv per version (build/venv-py<version>), the binding pip-installed
# from this checkout with numpy and pytest, then pytest. Prints a table; fails if any declared
# version fails. Not part of ci/test.sh (one build of the extension per version: several
# minutes); CI machines without pyenv skip it with a message.
#   ci/test-python-versions.sh [version ...]   (default: every declared version pyenv has)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
spec=$(sed -n 's/^requires-python *= *"\(.*\)"/\1/p' "$root/bindings/python/pyproject.toml")
min=${spec#>=}
if [ ! -d "$pyenv_root/versions" ]; then
  echo "no pyenv at $pyenv_root: nothing to test (declared: requires-python $spec)"
  exit 0
fi
declared() {  # versions pyenv has that satisfy ">=X.Y"
  for d in "$pyenv_root"/versions/3.*; do
    v=$(basename "$d")
    python3 -c "import sys; v=tuple(map(int,'$v'.split('.')[:2])); m=tuple(map(int,'$min'.split('.')[:2])); sys.exit(0 if v>=m else 1)" &&
      echo "$v"
  done | sort -V
}
versions=("$@")
[ ${#versions[@]} -gt 0 ] || mapfile -t versions < <(declared)
echo "requires-python $spec; testing: ${versions[*]}"
results=()
status=0
for v in "${versions[@]}"; do
  py="$pyenv_root/versions/$v/bin/python3"
  venv="$root/build/venv-py$v"
  log="$root/build/python-$v.log"
  mkdir -p "$root/build"
  {
    [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip &&
      "$venv/bin/pip" install -q "$root/bindings/python" numpy pytest &&
      "$venv/bin/python" -c "import numpy, sys; print('python', sys.version.split()[0], 'numpy', numpy.__version__)" &&
      POLYFFI_TEST_LIB_DIR="$root/build/lib" POLYFFI_CONFORMANCE_OUT="$root/build/conformance-py$v" \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/bindings/python/tests"
  } >"$log" 2>&1
  rc=$?
  summary=$(grep -E "^(python |[0-9]+ (passed|failed))|passed|failed" "$log" | tail -n 1)
  versions_line=$(grep -m1 "^python " "$log")
  if [ $rc -eq 0 ]; then results+=("$v: pass  ($versions_line; $summary)"); else
    results+=("$v: FAIL  ($versions_line; $summary; see $log)"); status=1; fi
done
printf '%s\n' "${results[@]}"
exit $status
