"""Compile a small Llama-style decoder with TVM 0.27's paged KV cache and record TVM's generation.

Run under TVM 0.27 (tools/tvm-fixtures/tvm027.sh installs it from PyPI into build/tvm027):

    tools/tvm-fixtures/tvm027.sh tools/tvm-fixtures/generate_tvm027_lm.py [out_dir]

out_dir defaults to tests/tvm_models/tvm027/lm. The model (RMSNorm, rotary embeddings,
grouped-query attention, SwiGLU; random weights from a fixed seed) is written with TVM's relax nn
frontend and its TIRPagedKVCache, compiled for a plain x86-64 CPU and exported as one library:

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
from tvm import relax
from tvm.contrib import tvmjs
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op
from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, RopeMode, TIRPagedKVCache

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TARGET_JSON = {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "x86-64"}
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


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        self.weight = nn.Parameter((size,), "float32")
        self.eps = eps

    def forward(self, x):
        return op.rms_norm(x, self.weight, axes=[-1], epsilon=self.eps)


class Attention(nn.Module):
    def __init__(self, c):
        self.nq, self.nkv, self.d = (
            c["num_attention_heads"],
            c["num_key_value_heads"],
            c["head_dim"],
        )
        self.qkv_proj = nn.Linear(c["hidden_size"], (self.nq + 2 * self.nkv) * self.d, bias=False)
        self.o_proj = nn.Linear(self.nq * self.d, c["hidden_size"], bias=False)

    def forward(self, x, cache: PagedKVCache, layer_id: int):
        b, s, _ = x.shape
        qkv = op.reshape(self.qkv_proj(x), (b, s, self.nq + 2 * self.nkv, self.d))
        o = cache.attention_with_fused_qkv(layer_id, qkv, self.nq, sm_scale=self.d**-0.5)
        return self.o_proj(op.reshape(o, (b, s, self.nq * self.d)))


class MLP(nn.Module):
    def __init__(self, c):
        self.gate_up_proj = nn.Linear(c["hidden_size"], 2 * c["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(c["intermediate_size"], c["hidden_size"], bias=False)

    def forward(self, x):
        gate, up = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(gate) * up)


class Layer(nn.Module):
    def __init__(self, c, layer_id):
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = MLP(c)
        self.layer_id = layer_id

    def forward(self, x, cache):
        x = x + self.self_attn(self.input_layernorm(x), cache, self.layer_id)
        return x + self.mlp(self.post_attention_layernorm(x))


class TinyLlama(nn.Module):
    def __init__(self, c):
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([Layer(c, i) for i in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def _forward(self, input_ids, cache):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cache)
        return self.lm_head(self.norm(x))

    def prefill(self, input_ids, paged_kv_cache):
        return self._forward(input_ids, paged_kv_cache)

    def decode(self, input_ids, paged_kv_cache):
        return self._forward(input_ids, paged_kv_cache)

    def create_paged_kv_cache(
        self,
        max_batch_size,
        max_total_seq_len,
        prefill_chunk_size,
        page_size,
        support_sliding_window,
    ):
        c = self.c
        return TIRPagedKVCache(
            attn_kind="mha",
            max_batch_size=max_batch_size,
            max_total_seq_len=max_total_seq_len,
            prefill_chunk_size=prefill_chunk_size,
            page_size=page_size,
            support_sliding_window=support_sliding_window,
            layer_partition=relax.ShapeExpr([0, c["num_hidden_layers"]]),
            num_hidden_layers=c["num_hidden_layers"],
            num_attention_heads=c["num_attention_heads"],
            num_key_value_heads=c["num_key_value_heads"],
            qk_head_dim=c["head_dim"],
            v_head_dim=c["head_dim"],
            mla_original_qk_head_dim=0,
            mla_original_v_head_dim=0,
            rope_mode=RopeMode.NORMAL,
            rope_scale=1,
            rope_theta=c["rope_theta"],
            rope_scaling={},
            rope_ext_factors=relax.prim_value(0),
            rotary_dim=c["head_dim"],
            enable_disaggregation=False,
            dtype="float32",
            target=tvm.target.Target(TARGET_JSON),
        )

    def get_default_spec(self):
        packed = {"param_mode": "packed", "effect_mode": "none"}
        return nn.spec.ModuleSpec.from_raw(
            {
                "prefill": {
                    "input_ids": nn.spec.Tensor([1, "seq_len"], "int32"),
                    "paged_kv_cache": nn.spec.Object(object_type=PagedKVCache),
                    "$": packed,
                },
                "decode": {
                    "input_ids": nn.spec.Tensor(["batch_size", 1], "int32"),
                    "paged_kv_cache": nn.spec.Object(object_type=PagedKVCache),
                    "$": packed,
                },
                "create_paged_kv_cache": {
                    "max_batch_size": int,
                    "max_total_seq_len": int,
                    "prefill_chunk_size": int,
                    "page_size": int,
                    "support_sliding_window": int,
                    "$": {"param_mode": "none", "effect_mode": "none"},
                },
            },
            self,
        )


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


# ---------------------------------------------------------------- numpy reference


def np_forward(w, c, tokens_per_seq, kv):
    """Logits for new tokens of one sequence; kv[layer] = (k list, v list) grows in place."""
    x = w["embed_tokens.weight"][np.array(tokens_per_seq)]
    nq, nkv, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    start = len(kv[0][0])
    pos = np.arange(start, start + len(tokens_per_seq))

    def rms(v, wt):
        return v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + c["rms_norm_eps"]) * wt

    def rope(t, p):
        half = d // 2
        inv = 1.0 / (c["rope_theta"] ** (np.arange(half) * 2 / d))
        ang = p[:, None] * inv[None, :]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        t1, t2 = t[..., :half], t[..., half:]
        return np.concatenate([t1 * cos - t2 * sin, t2 * cos + t1 * sin], axis=-1)

    for li in range(c["num_hidden_layers"]):
        p = f"layers.{li}."
        h = rms(x, w[p + "input_layernorm.weight"])
        qkv = (h @ w[p + "self_attn.qkv_proj.weight"].T).reshape(len(pos), nq + 2 * nkv, d)
        q, k, v = rope(qkv[:, :nq], pos), rope(qkv[:, nq : nq + nkv], pos), qkv[:, nq + nkv :]
        kv[li][0].extend(list(k))
        kv[li][1].extend(list(v))
        K, V = np.stack(kv[li][0]), np.stack(kv[li][1])
        o = np.zeros((len(pos), nq, d))
        for i in range(len(pos)):
            n = start + i + 1
            for hq in range(nq):
                hk = hq // (nq // nkv)
                s = K[:n, hk] @ q[i, hq] / np.sqrt(d)
                e = np.exp(s - s.max())
                o[i, hq] = (e / e.sum()) @ V[:n, hk]
        x = x + o.reshape(len(pos), nq * d) @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        gu = h @ w[p + "mlp.gate_up_proj.weight"].T
        g, u = gu[:, : c["intermediate_size"]], gu[:, c["intermediate_size"] :]
        x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
    return rms(x, w["norm.weight"]) @ w["lm_head.weight"].T


# ---------------------------------------------------------------- TVM runs


class Runner:
    def __init__(self, lib_path, params):
        self.vm = relax.VirtualMachine(tvm.runtime.load_module(str(lib_path)), tvm.cpu())
        self.params = [tvm.runtime.tensor(p) for p in params]
        g = tvm.get_global_func
        self.add = g("vm.builtin.kv_state_add_sequence")
        self.remove = g("vm.builtin.kv_state_remove_sequence")
        self.fork = g("vm.builtin.kv_state_fork_sequence")
        self.popn = g("vm.builtin.kv_state_popn")
        self.begin = g("vm.builtin.kv_state_begin_forward")
        self.end = g("vm.builtin.kv_state_end_forward")

    def cache(self, **kw):
        args = dict(CACHE_ARGS, **kw)
        return self.vm["create_paged_kv_cache"](
            *[tvm.runtime.ShapeTuple([v]) for v in args.values()]
        )

    def prefill(self, cache, seq_ids, prompts):
        self.begin(
            cache,
            tvm.runtime.ShapeTuple(seq_ids),
            tvm.runtime.ShapeTuple([len(p) for p in prompts]),
        )
        ids = np.array([t for p in prompts for t in p], "int32")[None, :]
        out = self.vm["prefill"](tvm.runtime.tensor(ids), cache, self.params).numpy()
        self.end(cache)
        return out

    def decode(self, cache, seq_ids, tokens):
        self.begin(
            cache, tvm.runtime.ShapeTuple(seq_ids), tvm.runtime.ShapeTuple([1] * len(seq_ids))
        )
        ids = np.array(tokens, "int32")[:, None]
        out = self.vm["decode"](tvm.runtime.tensor(ids), cache, self.params).numpy()
        self.end(cache)
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
    model = TinyLlama(c)
    mod, named_params = model.export_tvm(spec=model.get_default_spec())
    names_shapes = [(n, tuple(int(s) for s in p.shape)) for n, p in named_params]
    weights = make_weights(names_shapes)
    ordered = [weights[n] for n, _ in names_shapes]

    ex = tvm.compile(mod, target=tvm.target.Target(TARGET_JSON))
    lib_path = out / "tiny_llama.so"
    ex.export_library(str(lib_path))
    params_dir = out / "params"
    tvmjs.dump_tensor_cache(
        {n: weights[n] for n, _ in names_shapes},
        str(params_dir),
        encode_format="raw",
        show_progress=False,
    )

    r = Runner(lib_path, ordered)
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
