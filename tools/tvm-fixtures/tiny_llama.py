"""The Llama-style decoder polyffi's language-model fixtures and demo model are made of.

One definition, imported by tools/tvm-fixtures/generate_tvm027_lm.py (the random-weight test
fixture) and tools/lm-demo/build_charlm.py (the trained character-level demo model):

  TinyLlama(config)   TVM 0.27 relax nn.Module: RMSNorm, rotary embeddings, grouped-query
                      attention through TVM's TIRPagedKVCache, SwiGLU; the functions prefill,
                      decode and create_paged_kv_cache (param_mode "packed")
  export(config, weights, out_dir, cache_args)
                      compiles it for a plain x86-64 CPU and writes the model directory:
                      tiny_llama.so, params/ (tensor cache) and lm-config.json
  np_forward          the same model in plain numpy (the reference TVM's logits are checked against)
  Runner              runs an exported model with TVM 0.27's own runtime

config keys: vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
num_key_value_heads, head_dim, rope_theta, rms_norm_eps. Weight names (the order prefill/decode
take them is the order export_tvm lists them): embed_tokens.weight,
layers.{i}.input_layernorm.weight, layers.{i}.self_attn.qkv_proj.weight (q, k, v heads stacked),
layers.{i}.self_attn.o_proj.weight,
layers.{i}.post_attention_layernorm.weight, layers.{i}.mlp.gate_up_proj.weight (gate then up),
layers.{i}.mlp.down_proj.weight, norm.weight, lm_head.weight.
"""

import json
import pathlib

import numpy as np
import tvm
from tvm import relax
from tvm.contrib import tvmjs
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op
from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, RopeMode, TIRPagedKVCache

TARGET_JSON = {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "x86-64"}
LIBRARY = "tiny_llama.so"
WEIGHTS_DIR = "params"
# The tokenizer of every model here: token id i is the i-th character ("\n", then the printable
# ASCII characters 32..126), 96 tokens.
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))


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


def weight_names_shapes(config):
    """[(name, shape)] in the order prefill/decode take the weights."""
    model = TinyLlama(config)
    _, named_params = model.export_tvm(spec=model.get_default_spec())
    return [(n, tuple(int(s) for s in p.shape)) for n, p in named_params]


def lm_config(names, cache_args, vocab_size, stop_token_ids=()):
    """The model directory's lm-config.json (docs/lm.md) as a dict."""
    return {
        "model_lib": LIBRARY,
        "weights": WEIGHTS_DIR,
        "params": list(names),
        "vocab_size": vocab_size,
        "kv_cache": dict(cache_args),
        "tokenizer": {"kind": "chars", "chars": CHARS},
        "stop_token_ids": list(stop_token_ids),
    }


def export(config, weights, out_dir, cache_args):
    """Compile the model and write tiny_llama.so, params/ and lm-config.json into out_dir.

    weights: {name: float32 array}. Returns [(name, shape)] in the order prefill/decode take them.
    """
    if config["vocab_size"] != len(CHARS):
        raise ValueError(f"vocab_size {config['vocab_size']} != {len(CHARS)} tokenizer characters")
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = TinyLlama(config)
    mod, named_params = model.export_tvm(spec=model.get_default_spec())
    names_shapes = [(n, tuple(int(s) for s in p.shape)) for n, p in named_params]
    for n, s in names_shapes:
        if tuple(weights[n].shape) != s or weights[n].dtype != np.float32:
            raise ValueError(f"weight {n}: {weights[n].dtype}{weights[n].shape}, want float32{s}")
    ex = tvm.compile(mod, target=tvm.target.Target(TARGET_JSON))
    ex.export_library(str(out / LIBRARY))
    tvmjs.dump_tensor_cache(
        {n: weights[n] for n, _ in names_shapes},
        str(out / WEIGHTS_DIR),
        encode_format="raw",
        show_progress=False,
    )
    cfg = lm_config([n for n, _ in names_shapes], cache_args, config["vocab_size"])
    (out / "lm-config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    return names_shapes


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
    """Runs an exported model with TVM 0.27's own runtime (relax VM + vm.builtin.kv_state_*)."""

    def __init__(self, lib_path, params, cache_args):
        self.cache_args = dict(cache_args)
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
        args = dict(self.cache_args, **kw)
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
