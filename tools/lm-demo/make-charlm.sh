#!/usr/bin/env bash
# Make examples/lm-demo/charlm from scratch: train the character-level model with JAX (CPU), then
# compile it with TVM 0.27 and record TVM's greedy completions (examples/lm-demo/README.md).
#   tools/lm-demo/make-charlm.sh [out_dir]      (default examples/lm-demo/charlm)
# JAX gets its own venv (build/lm-demo-jax; python3.11, versions pinned to the ones the committed
# model was trained with); TVM 0.27 comes from tools/tvm-fixtures/tvm027.sh. Takes about twenty
# minutes on two busy cores (training: 1,115 s for the committed model).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/examples/lm-demo/charlm}
venv=${LM_DEMO_JAX_VENV:-$root/build/lm-demo-jax}
if [ ! -f "$venv/.installed" ]; then
  [ -x "$venv/bin/python" ] || python3.11 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "jax[cpu]==0.7.1" "jaxlib==0.7.1" "optax==0.2.8" "numpy==1.26.4"
  touch "$venv/.installed"
fi
work=$root/build/lm-demo
mkdir -p "$work"
"$venv/bin/python" "$root/tools/lm-demo/train_charlm.py" "$work/weights.npz"
"$root/tools/tvm-fixtures/tvm027.sh" "$root/tools/lm-demo/build_charlm.py" "$work/weights.npz" "$out"
