"""Compile the trained character-level model with TVM 0.27 and record TVM's greedy completions.

    tools/tvm-fixtures/tvm027.sh tools/lm-demo/build_charlm.py WEIGHTS.npz [out_dir]

WEIGHTS.npz (and WEIGHTS.json, its training record) come from tools/lm-demo/train_charlm.py.
out_dir defaults to examples/lm-demo/charlm. Writes there, through tools/tvm-fixtures/tiny_llama.py:

  tiny_llama.so, params/, lm-config.json   the language-model directory (docs/lm.md)
  expected.json   TVM 0.27's own greedy completions (temperature 0, the first maximum wins) of
                  a few prompts: prompt, max_tokens, text, tokens, and the smallest gap between
                  the best and the second-best logit over the run (how far from a tie argmax was)
  manifest.json   versions, seed, training loss, and the sha256 of every file

The completions are run the way polyffi's generator runs them: prefill the prompt, take the argmax
of its last position, then decode one token at a time; every step's logits are checked against
tiny_llama.np_forward (plain numpy) before anything is written.
"""

import hashlib
import json
import pathlib
import platform
import sys

import numpy as np
import tvm
import tvm_ffi

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools/tvm-fixtures"))
from tiny_llama import CHARS, TARGET_JSON, Runner, export, np_forward  # noqa: E402

CACHE_ARGS = {
    "max_batch_size": 4,
    "max_total_seq_len": 512,
    "prefill_chunk_size": 64,
    "page_size": 16,
    "support_sliding_window": 0,
}
# The model was trained on windows of 128 characters: prompt and completion stay within them
# (further on, rotary positions it never saw make the text fall apart).
MAX_TOKENS = 96
PROMPTS = [
    "This program is free software",
    "The licenses for most software",
    "Licensed under the Apache License",
]


def encode(text):
    return [CHARS.index(ch) for ch in text]


def greedy(runner, weights, config, prompt, max_tokens):
    cache = runner.cache()
    runner.add(cache, 0)
    ids = encode(prompt)
    ref_kv = [([], []) for _ in range(config["num_hidden_layers"])]
    logits = runner.prefill(cache, [0], [ids])[0, -1]
    expect = np_forward(weights, config, ids, ref_kv)[-1]
    np.testing.assert_allclose(logits, expect, rtol=1e-3, atol=1e-3)
    tokens, gaps = [], []
    while True:
        top2 = np.sort(logits)[-2:]
        gaps.append(float(top2[1] - top2[0]))
        tokens.append(int(np.argmax(logits)))
        if len(tokens) == max_tokens:
            break
        logits = runner.decode(cache, [0], [tokens[-1]])[0, 0]
        expect = np_forward(weights, config, [tokens[-1]], ref_kv)[0]
        np.testing.assert_allclose(logits, expect, rtol=1e-3, atol=1e-3)
    runner.remove(cache, 0)
    return tokens, min(gaps)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    npz = pathlib.Path(sys.argv[1])
    out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "examples/lm-demo/charlm"
    training = json.loads(npz.with_suffix(".json").read_text())
    config = training["config"]
    with np.load(npz) as z:
        weights = {k: z[k].astype("float32") for k in z.files}

    names_shapes = export(config, weights, out, CACHE_ARGS)
    runner = Runner(out / "tiny_llama.so", [weights[n] for n, _ in names_shapes], CACHE_ARGS)
    runs = []
    for prompt in PROMPTS:
        tokens, gap = greedy(runner, weights, config, prompt, MAX_TOKENS)
        text = "".join(CHARS[t] for t in tokens)
        runs.append(
            {
                "prompt": prompt,
                "max_tokens": MAX_TOKENS,
                "temperature": 0,
                "text": text,
                "tokens": tokens,
                "finish_reason": "length",
                "min_top2_logit_gap": round(gap, 6),
            }
        )
        print(f"--- {prompt!r} (smallest top-2 gap {gap:.4f})\n{prompt}{text}\n")
    expected = {
        "generated_by": "TVM 0.27's runtime (tools/lm-demo/build_charlm.py)",
        "completions": runs,
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")

    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest = {
        "what": "character-level Llama-style model trained on licence texts (examples/lm-demo)",
        "config": config,
        "parameters": training["parameters"],
        "training": {
            k: training[k]
            for k in (
                "seed",
                "steps",
                "batch",
                "seq",
                "lr",
                "optimizer",
                "train_loss_last_50_steps",
                "loss_over_text",
                "train_seconds",
                "texts",
                "characters",
                "jax",
                "optax",
                "numpy",
                "python",
            )
        },
        "compiled_with": {
            "tvm": tvm.__version__,
            "tvm_ffi": tvm_ffi.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "target": TARGET_JSON,
        },
        "generators": ["tools/lm-demo/train_charlm.py", "tools/lm-demo/build_charlm.py"],
        "sha256": {
            str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(p.stat().st_size for p in files)
    print(f"wrote {len(files)} files, {total} bytes, to {out}")


if __name__ == "__main__":
    main()
