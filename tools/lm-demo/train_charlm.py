"""Train the demo's character-level language model with JAX (CPU).

    python train_charlm.py OUT.npz [--steps N] [--texts FILE ...]

The architecture is tools/tvm-fixtures/tiny_llama.py's (RMSNorm, rotary embeddings, grouped-query
attention, SwiGLU) written again in JAX with the same weight names and layouts, so the trained
weights go straight into the TVM model (tools/lm-demo/build_charlm.py compiles it and checks TVM's
logits against tiny_llama.np_forward). The text is the licences Debian ships in
/usr/share/common-licenses (GPL-3 and Apache-2.0 by default); every character outside the 96-token
vocabulary ("\\n" and printable ASCII) becomes a space.

Writes OUT.npz (the float32 weights by name) and OUT.json next to it (config, seed, steps, the
final training loss, versions, the texts' sha256s). Fixed seed: the same inputs and versions give
the same weights.
"""

import argparse
import hashlib
import json
import pathlib
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

CHARS = "\n" + "".join(chr(c) for c in range(32, 127))
CONFIG = {
    "vocab_size": 96,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-5,
}
SEED = 20261128
TEXTS = ["/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0"]


def encode(text):
    index = {ch: i for i, ch in enumerate(CHARS)}
    space = index[" "]
    return np.array([index.get(ch, space) for ch in text], dtype=np.int32)


def init_weights(c, key):
    h, nq, nkv, d, f = (
        c["hidden_size"],
        c["num_attention_heads"],
        c["num_key_value_heads"],
        c["head_dim"],
        c["intermediate_size"],
    )
    shapes = {"embed_tokens.weight": (c["vocab_size"], h)}
    for i in range(c["num_hidden_layers"]):
        p = f"layers.{i}."
        shapes[p + "input_layernorm.weight"] = (h,)
        shapes[p + "self_attn.qkv_proj.weight"] = ((nq + 2 * nkv) * d, h)
        shapes[p + "self_attn.o_proj.weight"] = (h, nq * d)
        shapes[p + "post_attention_layernorm.weight"] = (h,)
        shapes[p + "mlp.gate_up_proj.weight"] = (2 * f, h)
        shapes[p + "mlp.down_proj.weight"] = (h, f)
    shapes["norm.weight"] = (h,)
    shapes["lm_head.weight"] = (c["vocab_size"], h)
    w = {}
    keys = jax.random.split(key, len(shapes))
    for k, (name, shape) in zip(keys, sorted(shapes.items())):
        if len(shape) == 1:
            w[name] = jnp.ones(shape, jnp.float32)
        else:
            scale = 1.0 if name == "embed_tokens.weight" else shape[1] ** -0.5
            if name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                scale /= np.sqrt(2 * c["num_hidden_layers"])
            w[name] = scale * jax.random.normal(k, shape, jnp.float32)
    return w


def forward(w, c, ids):
    """Logits (b, t, V) for token ids (b, t), causal; the computation of tiny_llama.np_forward."""
    nq, nkv, d, eps = (
        c["num_attention_heads"],
        c["num_key_value_heads"],
        c["head_dim"],
        c["rms_norm_eps"],
    )
    b, t = ids.shape
    x = w["embed_tokens.weight"][ids]

    def rms(v, wt):
        return v * jax.lax.rsqrt(jnp.mean(v * v, axis=-1, keepdims=True) + eps) * wt

    half = d // 2
    inv = 1.0 / (c["rope_theta"] ** (jnp.arange(half) * 2 / d))
    ang = jnp.arange(t)[:, None] * inv[None, :]
    cos, sin = jnp.cos(ang)[None, :, None, :], jnp.sin(ang)[None, :, None, :]

    def rope(v):
        v1, v2 = v[..., :half], v[..., half:]
        return jnp.concatenate([v1 * cos - v2 * sin, v2 * cos + v1 * sin], axis=-1)

    mask = jnp.tril(jnp.ones((t, t), bool))
    for li in range(c["num_hidden_layers"]):
        p = f"layers.{li}."
        hdn = rms(x, w[p + "input_layernorm.weight"])
        qkv = (hdn @ w[p + "self_attn.qkv_proj.weight"].T).reshape(b, t, nq + 2 * nkv, d)
        q, k, v = rope(qkv[:, :, :nq]), rope(qkv[:, :, nq : nq + nkv]), qkv[:, :, nq + nkv :]
        k = jnp.repeat(k, nq // nkv, axis=2)  # query head hq reads kv head hq // (nq // nkv)
        v = jnp.repeat(v, nq // nkv, axis=2)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d)
        s = jnp.where(mask[None, None], s, -1e30)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)
        x = x + o.reshape(b, t, nq * d) @ w[p + "self_attn.o_proj.weight"].T
        hdn = rms(x, w[p + "post_attention_layernorm.weight"])
        g, u = jnp.split(hdn @ w[p + "mlp.gate_up_proj.weight"].T, 2, axis=-1)
        x = x + (jax.nn.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    return rms(x, w["norm.weight"]) @ w["lm_head.weight"].T


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--texts", nargs="+", default=TEXTS)
    args = ap.parse_args()

    raw = [pathlib.Path(p).read_bytes() for p in args.texts]
    text = "\n".join(r.decode("utf-8", errors="replace") for r in raw)
    data = encode(text)
    c = CONFIG
    print(f"{len(data)} characters from {len(args.texts)} texts; config {c}", flush=True)

    key = jax.random.PRNGKey(SEED)
    key, init_key = jax.random.split(key)
    w = init_weights(c, init_key)
    sched = optax.warmup_cosine_decay_schedule(0.0, args.lr, 100, args.steps, args.lr * 0.05)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=0.01))
    state = opt.init(w)

    def loss_fn(w, batch):
        logits = forward(w, c, batch[:, :-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch[:, 1:]).mean()

    @jax.jit
    def step(w, state, batch):
        loss, grads = jax.value_and_grad(loss_fn)(w, batch)
        updates, state = opt.update(grads, state, w)
        return optax.apply_updates(w, updates), state, loss

    rng = np.random.default_rng(SEED)
    n = args.seq + 1
    started = time.time()
    recent = []
    for i in range(args.steps):
        starts = rng.integers(0, len(data) - n, size=args.batch)
        batch = jnp.asarray(data[starts[:, None] + np.arange(n)[None, :]])
        w, state, loss = step(w, state, batch)
        recent = (recent + [float(loss)])[-50:]
        if i % 100 == 0 or i == args.steps - 1:
            print(
                f"step {i:5d}  loss {np.mean(recent):.4f}  ({time.time() - started:.0f} s)",
                flush=True,
            )
    seconds = time.time() - started

    # The loss over the whole text (every position once, windows of args.seq): the number the
    # manifest reports.
    eval_fn = jax.jit(loss_fn)
    windows = [data[s : s + n] for s in range(0, len(data) - n, args.seq)]
    losses = [
        float(eval_fn(w, jnp.asarray(np.stack(windows[i : i + 16]))))
        for i in range(0, len(windows), 16)
    ]
    sizes = [len(windows[i : i + 16]) for i in range(0, len(windows), 16)]
    full_loss = float(np.average(losses, weights=sizes))
    print(f"trained {args.steps} steps in {seconds:.0f} s; loss over the text {full_loss:.4f}")

    weights = {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, **weights)
    meta = {
        "config": c,
        "seed": SEED,
        "steps": args.steps,
        "batch": args.batch,
        "seq": args.seq,
        "lr": args.lr,
        "optimizer": "adamw (weight decay 0.01), warmup 100 + cosine, clip 1.0",
        "train_loss_last_50_steps": float(np.mean(recent)),
        "loss_over_text": full_loss,
        "train_seconds": round(seconds, 1),
        "texts": {p: hashlib.sha256(r).hexdigest() for p, r in zip(args.texts, raw)},
        "characters": int(len(data)),
        "parameters": int(sum(v.size for v in weights.values())),
        "jax": jax.__version__,
        "optax": optax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    args.out.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
