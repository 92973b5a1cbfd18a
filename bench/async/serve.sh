#!/usr/bin/env bash
# Async against sync inference in each language's OIP server under concurrent load: requests/s,
# p50/p99 latency and the p99 of a health probe sent every 10 ms while the models run (how
# responsive the server's event loop stays). docs/performance/async.md.
#   bench/async/serve.sh [LANG...] (default: python node rust java)
# Settings: CLIENTS (8), SECONDS_PER_RUN (10), MODEL (relax_digits), BATCH (32). Each server runs twice,
# its default (async: models run on the core's async pool) and with POLYFFI_SERVE_SYNC=1 (models
# run on the event loop / the request's worker or thread). The load is tests/serving/load.py's.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
langs=("$@")
[ ${#langs[@]} -gt 0 ] || langs=(python node rust java)
py=${POLYFFI_PYTHON:-$root/build/venv-python/bin/python}
[ -x "$py" ] || py=$("$root/ci/python-env.sh")
load=("$py" "$root/tests/serving/load.py" --clients "${CLIENTS:-8}" --seconds "${SECONDS_PER_RUN:-10}"
      --model "${MODEL:-relax_digits}" --batch "${BATCH:-32}")
echo "nproc=$(nproc) POLYFFI_ASYNC_THREADS=${POLYFFI_ASYNC_THREADS:-<cpus>}"
for lang in "${langs[@]}"; do
  for mode in async sync; do
    echo "== $lang $mode"
    if [ "$mode" = sync ]; then
      POLYFFI_SERVE_SYNC=1 "${load[@]}" "$lang"
    else
      env -u POLYFFI_SERVE_SYNC "${load[@]}" "$lang"
    fi
  done
done
