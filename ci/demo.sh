#!/usr/bin/env bash
# The demo: build polyffi and the digits model, then classify the held-out digits from C,
# Python, a Rust HTTP service, Node.js and the JVM (accuracy, agreement with the training
# script, latency), including the same model compiled by Apache TVM 0.18. Then the language model:
# each language's server (ci/serve.sh) streams greedy completions from the character-level model of
# examples/lm-demo over /v1/completions, checked against TVM 0.27's own (ci/demo-lm.sh).
#
# It prints a line per step with the seconds since the start, the build's own progress while it
# builds, and a summary table at the end. A language whose toolchain is missing (cargo; node and
# npm, java and mvn when apt-get cannot install them) is reported and skipped; the exit status is
# non-zero only when a language that was present failed.
#
# Usage: ci/demo.sh [c] [python] [rust] [node] [java]   (no argument: every language)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
elapsed() { echo "$(($(date +%s) - start))s"; }
step() { echo; echo "== $* ($(elapsed))"; }
results=()  # "language|status|log"
langs=" ${*:-c python rust node java} "
for l in "$@"; do
  case $l in c | python | rust | node | java) ;; *) echo "demo: unknown language '$l'"; exit 2 ;; esac
done
want() { [[ $langs == *" $1 "* ]]; }

step "dependencies (ci/install-deps.sh)"
"$root/ci/install-deps.sh" || { echo "demo: installing the dependencies failed"; exit 1; }

step "build (ci/build.sh build: libpolyffi, the fixtures, the examples)"
# ninja's own "[done/total]" lines, thinned to one every 5% or 15 s, each with the elapsed time.
progress() {
  local line done total pct last=-5 shown=0
  while IFS= read -r line; do
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\]\ (.*)$ ]]; then
      done=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]} pct=$((100 * done / total))
      if ((pct >= last + 5 || SECONDS - shown >= 15 || done == total)); then
        printf "   build %3d%% [%d/%d] %s (%s)\n" "$pct" "$done" "$total" "${line##* }" "$(elapsed)"
        last=$pct shown=$SECONDS
      fi
    else
      echo "$line"
    fi
  done
}
"$root/ci/build.sh" "$root/build" 2>&1 | progress
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "demo: the build failed"; exit 1; }

# run LANGUAGE COMMAND...: one language's demo, its output shown and kept for the summary.
run() {
  local lang=$1 log="$logs/${#results[@]}.log"
  shift
  step "$lang"
  if "$@" 2>&1 | tee "$log"; then
    results+=("$lang|ok|$log")
  else
    results+=("$lang|FAILED|$log")
  fi
}
# missing LANGUAGE WHAT: a toolchain is not there; say so and go on.
missing() {
  step "$1"
  echo "   skipped: $2"
  results+=("$1|missing: $2|")
}
have() { command -v "$1" >/dev/null; }
apt_install() {  # best effort, as the language scripts do: Debian packages when apt-get can
  local SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  have apt-get || return 1
  $SUDO apt-get update -qq >/dev/null 2>&1 &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null 2>&1
}

tour=0
if want c; then
  step "C: callbacks and the registry (examples/hello)"
  "$root/build/bin/hello_polyffi" || tour=1  # a tour without model numbers: not in the table
  run "C" "$root/build/bin/digits_demo"
fi
want python && run "Python" "$root/ci/demo-python.sh"

[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$PATH:$HOME/.cargo/bin"
if want rust; then
  if have cargo; then
    run "Rust over HTTP" "$root/ci/demo-rust.sh"
  else
    missing "Rust over HTTP" "cargo not found (install Rust with rustup: https://rustup.rs)"
  fi
fi

if want node; then
  have node && have npm || apt_install nodejs npm
  if have node && have npm; then
    run "Node.js" "$root/ci/demo-node.sh"
  else
    missing "Node.js" "node/npm not found (apt-get install nodejs npm)"
  fi
fi

if want java; then
  have java && have javac && have mvn || apt_install openjdk-17-jdk-headless maven
  if have java && have javac && have mvn; then
    run "Java" "$root/ci/demo-java.sh"
  else
    missing "Java" "java/javac/mvn not found (apt-get install openjdk-17-jdk-headless maven)"
  fi
fi

# The language model from each language's server whose toolchain is here (ci/demo-lm.sh).
lm_results=()  # "language|status|log"
lm_run() {
  local lang=$1 log="$logs/lm-${#lm_results[@]}.log"
  step "language model from the $lang server (examples/lm-demo/charlm)"
  if "$root/ci/demo-lm.sh" "$2" 2>&1 | tee "$log"; then
    lm_results+=("$lang|ok|$log")
  else
    lm_results+=("$lang|FAILED|$log")
  fi
}
lm_missing() { lm_results+=("$1|missing: $2, for the language model|"); }
for l in python rust node java; do
  want $l || continue
  case $l in
    python) name=Python ok=1 why="" ;;
    rust) name=Rust ok=0 why="cargo not found"; have cargo && ok=1 ;;
    node) name=Node.js ok=0 why="node/npm not found"; have node && have npm && ok=1 ;;
    java) name=Java ok=0 why="java/javac/mvn not found"; have java && have javac && have mvn && ok=1 ;;
  esac
  have curl || { ok=0 why="curl not found"; }
  if [ $ok = 1 ]; then lm_run "$name" $l; else lm_missing "$name" "$why"; fi
done

# The summary: each language's first accuracy / agreement / latency lines.
step "summary"
failed=$tour
table() {
  printf "%-22s %-9s %-10s %-14s %s\n" language status accuracy agreement "batch-1 latency (median)"
  for r in "${results[@]}"; do
    IFS='|' read -r lang status log <<<"$r"
    acc=- agree=- lat=-
    if [ -n "$log" ]; then
      acc=$(sed -n 's/^accuracy: *\([0-9.]*\)\( %\)\{0,1\}.*/\1\2/p' "$log" | head -1)
      case $acc in *" %") acc=$(awk -v p="${acc% %}" 'BEGIN { printf "%.4f", p / 100 }') ;; esac
      agree=$(sed -n 's/^agreement with train.py: *\([0-9]*\) *\/ *\([0-9]*\).*/\1\/\2/p' "$log" | head -1)
      lat=$(sed -n 's/^batch-1 latency: *median \([0-9.]* us\).*/\1/p' "$log" | head -1)
    fi
    printf "%-22s %-9s %-10s %-14s %s\n" "${lang%% (*}" "${status%%:*}" "${acc:--}" "${agree:--}" \
      "${lat:--}"
  done
}
table
if [ ${#lm_results[@]} -gt 0 ]; then
  echo
  echo "language model (examples/lm-demo/charlm: greedy completions streamed from /v1/completions)"
  printf "%-22s %-9s %-8s %s\n" server status tokens "agreement with TVM 0.27"
  for r in "${lm_results[@]}"; do
    IFS='|' read -r lang status log <<<"$r"
    toks=- agree=-
    if [ -n "$log" ]; then
      toks=$(sed -n 's/^lm tokens: *\([0-9]*\).*/\1/p' "$log" | head -1)
      agree=$(sed -n 's/^lm agreement: *\([0-9]*\/[0-9]*\).*/\1/p' "$log" | head -1)
    fi
    printf "%-22s %-9s %-8s %s\n" "$lang" "${status%%:*}" "${toks:--}" "${agree:--}"
  done
fi
for r in "${results[@]}" "${lm_results[@]}"; do
  case $r in *"|FAILED|"*) failed=1 ;; esac
done
for r in "${results[@]}" "${lm_results[@]}"; do
  case $r in *"|missing: "*) IFS='|' read -r lang status _ <<<"$r"; echo "   not run: $lang (${status#missing: })" ;; esac
done
echo "done in $(elapsed)"
exit $failed
