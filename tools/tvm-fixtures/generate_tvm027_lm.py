"""Compile a small Llama-style decoder with TVM 0.27's paged KV cache and record TVM's generation.

Run under TVM 0.27 (tools/tvm-fixtures/tvm027.sh installs it from PyPI into build/tvm027):

    tools/tvm-fixtures/tvm027.sh tools/tvm-fixtures/generate_tvm027_lm.py [out_dir]

out_dir defaults to tests/tvm_models/tvm027/lm. The model (tiny_llama.py: RMSNorm, rotary
embeddings, grouped-query attention, SwiGLU; here with random weights from a fixed seed) is written
with TVM's relax nn frontend and its TIRPagedKVCache, compiled for a plain x86-64 CPU and exported
as one library:

  tiny_llama.so          relax VM executable with the functions
                           create_paged_kv_cache(max_batch_size, max_total_seq_len,
                                                 prefill_chunk_size, page_size,
                                                 support_sliding_window) -> the cache
                           prefill(input_ids: int32 (1, n), cache, params) -> logits (1, n, V)
                           decode(input_ids: int32 (b, 1), cache, params) -> logits (b, 1, V)
                         params is the tuple of the weights in `params` order (param_mode
                         "packed"); the caller brackets each call with kv_state_begin_forward /
                         kv_state_end_forward.
  params/                the weights as a tensor-cache directory (tensor-cache.json + shards,
                         raw float32), in the order prefill/decode take them
  lm-config.json         the language-model directory's description (docs/lm.md): library,
                         weights, their order, vocabulary (96 characters), cache arguments
  io.json                the configuration, the weight order, and TVM 0.27's own runs:
                           "greedy": one sequence: prefill the prompt, then `steps` greedy decode
                           steps; the tokens and each step's logits (raw float32 files)
                           "two_sequences": two sequences on one cache: both prompts prefilled in
                           one batch, then batched greedy decode steps; tokens and logits
                           "errors": what TVM's runtime raised for misuse of the cache

Everything recorded is what TVM 0.27's runtime computed (tvm.runtime.load_module of the exported
file + tvm.relax.VirtualMachine + TVM's vm.builtin.kv_state_* globals), and the greedy logits are
checked against a plain numpy implementation of the same model.
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
sys.path.insert(0, str(HERE))
from tiny_llama import TARGET_JSON, Runner, export, np_forward, weight_names_shapes  # noqa: E402

SEED = 20261125

CONFIG = {
    "vocab_size": 96,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-5,
}
# The cache every recorded run uses: create_paged_kv_cache(*CACHE_ARGS).
CACHE_ARGS = {
    "max_batch_size": 4,
    "max_total_seq_len": 128,
    "prefill_chunk_size": 64,
    "page_size": 16,
    "support_sliding_window": 0,
}
PROMPT = [3, 17, 42, 8, 77, 5, 23, 61, 9, 30, 2, 88, 14, 50, 7, 66, 33, 19, 4]  # 19: crosses a page
PROMPT2 = [11, 45, 2, 90, 38]
STEPS = 12


def make_weights(names_shapes):
    rng = np.random.default_rng(SEED)
    out = {}
    for name, shape in names_shapes:
        if name.endswith("layernorm.weight") or name == "norm.weight":
            out[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype("float32")
        elif name == "embed_tokens.weight":
            out[name] = rng.standard_normal(shape).astype("float32")
        else:
            fan_in = shape[-1]
            out[name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype("float32")
    return out


def capture_error(fn, *args):
    try:
        fn(*args)
    except Exception as err:  # noqa: BLE001 - recording what TVM raised is the point
        return {"kind": type(err).__name__, "message": str(err).strip().splitlines()[-1]}
    raise AssertionError("TVM accepted a call it was expected to refuse")


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/tvm_models/tvm027/lm"
    out.mkdir(parents=True, exist_ok=True)
    c = CONFIG
    weights = make_weights(weight_names_shapes(c))
    # tiny_llama.so, params/ and lm-config.json (the model directory of docs/lm.md).
    names_shapes = export(c, weights, out, CACHE_ARGS)
    ordered = [weights[n] for n, _ in names_shapes]
    lib_path = out / "tiny_llama.so"

    r = Runner(lib_path, ordered, CACHE_ARGS)
    io = {
        "config": c,
        "cache_args": CACHE_ARGS,
        "params": [{"name": n, "shape": list(s), "dtype": "float32"} for n, s in names_shapes],
        "library": "tiny_llama.so",
    }

    # Run 1: one sequence, greedy.
    cache = r.cache()
    r.add(cache, 0)
    logits = r.prefill(cache, [0], [PROMPT])  # (1, n, V)
    ref_kv = [([], []) for _ in range(c["num_hidden_layers"])]
    ref = np_forward(weights, c, PROMPT, ref_kv)
    np.testing.assert_allclose(logits[0], ref, rtol=1e-4, atol=1e-4)
    files = {"prefill": "greedy_prefill.bin"}
    logits.astype("float32").tofile(out / files["prefill"])
    tokens = [int(np.argmax(logits[0, -1]))]
    step_files = []
    for step in range(STEPS):
        lg = r.decode(cache, [0], [tokens[-1]])  # (1, 1, V)
        ref = np_forward(weights, c, [tokens[-1]], ref_kv)
        np.testing.assert_allclose(lg[0], ref, rtol=1e-4, atol=1e-4)
        name = f"greedy_decode_{step}.bin"
        lg.astype("float32").tofile(out / name)
        step_files.append(name)
        tokens.append(int(np.argmax(lg[0, -1])))
    io["greedy"] = {
        "prompt": PROMPT,
        "steps": STEPS,
        "tokens": tokens,
        "prefill_logits": files["prefill"],
        "decode_logits": step_files,
    }

    # Run 2: two sequences on one cache, batched prefill then batched decode.
    cache = r.cache()
    r.add(cache, 5)
    r.add(cache, 9)
    logits = r.prefill(cache, [5, 9], [PROMPT2, PROMPT])
    logits.astype("float32").tofile(out / "two_prefill.bin")
    n2 = len(PROMPT2)
    toks = [[int(np.argmax(logits[0, n2 - 1]))], [int(np.argmax(logits[0, -1]))]]
    step_files = []
    for step in range(STEPS):
        lg = r.decode(cache, [5, 9], [toks[0][-1], toks[1][-1]])
        name = f"two_decode_{step}.bin"
        lg.astype("float32").tofile(out / name)
        step_files.append(name)
        toks[0].append(int(np.argmax(lg[0, 0])))
        toks[1].append(int(np.argmax(lg[1, 0])))
    # The second sequence alone must continue exactly as in run 1 (same prompt, same weights).
    assert toks[1] == tokens[: len(toks[1])], (toks[1], tokens)
    io["two_sequences"] = {
        "seq_ids": [5, 9],
        "prompts": [PROMPT2, PROMPT],
        "steps": STEPS,
        "tokens": toks,
        "prefill_logits": "two_prefill.bin",
        "decode_logits": step_files,
    }

    # Run 3: fork the first sequence after its prompt and popn; the fork decodes like its parent.
    cache = r.cache()
    r.add(cache, 0)
    r.prefill(cache, [0], [PROMPT])
    r.fork(cache, 0, 1, -1)
    lg = r.decode(cache, [0, 1], [tokens[0], tokens[0]])
    np.testing.assert_allclose(lg[0], lg[1], rtol=0, atol=0)
    r.popn(cache, 1, 1)
    lg2 = r.decode(cache, [1], [tokens[0]])
    np.testing.assert_allclose(lg2[0], lg[1], rtol=1e-5, atol=1e-5)
    lg.astype("float32").tofile(out / "fork_decode.bin")
    io["fork"] = {"prompt": PROMPT, "token": tokens[0], "decode_logits": "fork_decode.bin"}

    # Errors TVM's runtime raises.
    cache = r.cache()
    r.add(cache, 0)
    errors = {
        "add_duplicate": capture_error(r.add, cache, 0),
        "remove_unknown": capture_error(r.remove, cache, 7),
        "begin_unknown": capture_error(
            r.begin, cache, tvm.runtime.ShapeTuple([7]), tvm.runtime.ShapeTuple([1])
        ),
        "popn_too_many": capture_error(r.popn, cache, 0, 1),
        "fork_unknown_parent": capture_error(r.fork, cache, 7, 8, -1),
    }
    small = r.cache(max_total_seq_len=16, page_size=16)  # 2 pages
    r.add(small, 0)
    errors["cache_full"] = capture_error(
        r.begin, small, tvm.runtime.ShapeTuple([0]), tvm.runtime.ShapeTuple([40])
    )
    io["errors"] = errors

    (out / "io.json").write_text(json.dumps(io, indent=1) + "\n")

    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest = {
        "tvm": tvm.__version__,
        "tvm_ffi": tvm_ffi.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "target": TARGET_JSON,
        "seed": SEED,
        "generator": "tools/tvm-fixtures/generate_tvm027_lm.py",
        "sha256": {
            str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(p.stat().st_size for p in files)
    print(f"wrote {len(files)} files, {total} bytes, to {out}")
    print("greedy tokens:", tokens)
    print("two sequences:", toks)
    print("errors:", json.dumps(errors, indent=1))


if __name__ == "__main__":
    main()
