#!/usr/bin/env python3
"""Train a small MLP on scikit-learn's bundled 8x8 digits and export it as a TVM graph.

The network is 64 -> 32 (ReLU) -> 10 (softmax). Training uses numpy only (float64, minibatch
SGD with momentum); scikit-learn is used for nothing but `load_digits`, whose data ships inside
the package, so no download happens. Everything is seeded, so a rerun writes the same files.

Outputs (in --out, default ./model next to this script):
  graph.json        TVM graph, input "data" [N_test, 64] float32, output probabilities [N_test, 10]
  graph_b1.json     the same graph with batch 1, for per-inference latency
  params.bin        TVM params blob (SaveParams format) with p0..p3 (weights in TVM's dense
                    layout [units, in_features], float32)
  test_x.bin        held-out inputs, raw little-endian float32 [N_test, 64], already scaled to
                    [0, 1] (pixel / 16), which is what "data" expects
  test_y.bin        held-out labels, raw little-endian int32 [N_test]
  expected.json     this script's float32 inference on the held-out set: predictions, accuracy
  expected_probs.bin  the probabilities behind those predictions, float32 [N_test, 10]

Run: python3 train.py  (needs numpy and scikit-learn: pip install numpy scikit-learn)
"""

import argparse
import json
import os
import struct

import numpy as np

SEED = 20240607
HIDDEN = 32
CLASSES = 10
EPOCHS = 150
BATCH = 32
LR = 0.05
MOMENTUM = 0.9
WEIGHT_DECAY = 1e-4

# TVM's serialization constants (runtime/ndarray.h and graph_executor's params format).
NDARRAY_LIST_MAGIC = 0xF7E58D4F05049CB7
NDARRAY_MAGIC = 0xDD5E40F096B4A13F
DL_CPU = 1
DL_FLOAT = 2

# Fused kernels exported by libdigits_model.so (kernels.cc); TVM names fused ops the same way.
OP_HIDDEN = "fused_dense_bias_relu"
OP_OUTPUT = "fused_dense_bias_softmax"


def load_data(rng):
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float64)  # pixels are 0..16
    y = digits.target.astype(np.int64)
    order = rng.permutation(len(x))
    n_test = int(round(0.2 * len(x)))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def forward64(params, x):
    w1, b1, w2, b2 = params
    h = np.maximum(x @ w1.T + b1, 0.0)
    z = h @ w2.T + b2
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return h, e / e.sum(axis=1, keepdims=True)


def train(x, y, rng):
    # He initialisation; weights kept in TVM's dense layout [out, in].
    w1 = rng.normal(0.0, np.sqrt(2.0 / 64), size=(HIDDEN, 64))
    b1 = np.zeros(HIDDEN)
    w2 = rng.normal(0.0, np.sqrt(2.0 / HIDDEN), size=(CLASSES, HIDDEN))
    b2 = np.zeros(CLASSES)
    params = [w1, b1, w2, b2]
    velocity = [np.zeros_like(p) for p in params]
    onehot = np.eye(CLASSES)[y]
    for epoch in range(EPOCHS):
        order = rng.permutation(len(x))
        for start in range(0, len(x), BATCH):
            idx = order[start:start + BATCH]
            xb, tb = x[idx], onehot[idx]
            h, p = forward64(params, xb)
            # Softmax + cross-entropy gradient, averaged over the batch.
            dz = (p - tb) / len(idx)
            gw2 = dz.T @ h
            gb2 = dz.sum(axis=0)
            dh = (dz @ params[2]) * (h > 0)
            gw1 = dh.T @ xb
            gb1 = dh.sum(axis=0)
            grads = [gw1 + WEIGHT_DECAY * params[0], gb1, gw2 + WEIGHT_DECAY * params[2], gb2]
            for i, g in enumerate(grads):
                velocity[i] = MOMENTUM * velocity[i] - LR * g
                params[i] = params[i] + velocity[i]
        if epoch % 50 == 0 or epoch == EPOCHS - 1:
            _, p = forward64(params, x)
            loss = -np.log(p[np.arange(len(x)), y] + 1e-12).mean()
            acc = (p.argmax(axis=1) == y).mean()
            print(f"epoch {epoch:3d}  train loss {loss:.4f}  train acc {acc:.4f}")
    return params


def infer32(params32, x32):
    """float32 inference, the reference the C kernels must reproduce."""
    w1, b1, w2, b2 = params32
    h = np.maximum(x32 @ w1.T + b1, np.float32(0))
    z = h @ w2.T + b2
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def graph_json(batch):
    """A TVM graph-executor JSON for the two fused ops."""
    def null(name):
        return {"op": "null", "name": name, "inputs": []}

    def op(name, inputs):
        return {
            "op": "tvm_op",
            "name": name,
            "attrs": {"func_name": name, "num_inputs": str(len(inputs)), "num_outputs": "1",
                      "flatten_data": "0"},
            "inputs": [[i, 0, 0] for i in inputs],
        }

    nodes = [null("data"), null("p0"), null("p1"), op(OP_HIDDEN, [0, 1, 2]),
             null("p2"), null("p3"), op(OP_OUTPUT, [3, 4, 5])]
    shapes = [[batch, 64], [HIDDEN, 64], [HIDDEN], [batch, HIDDEN], [CLASSES, HIDDEN],
              [CLASSES], [batch, CLASSES]]
    return {
        "nodes": nodes,
        "arg_nodes": [0, 1, 2, 4, 5],
        "heads": [[6, 0, 0]],
        "attrs": {
            "dltype": ["list_str", ["float32"] * len(nodes)],
            "storage_id": ["list_int", list(range(len(nodes)))],
            "shape": ["list_shape", shapes],
        },
        "node_row_ptr": list(range(len(nodes) + 1)),
    }


def save_params(path, named):
    """TVM's params blob: list magic, reserved, names, then each array in NDArray::Save format."""
    out = bytearray()
    out += struct.pack("<QQQ", NDARRAY_LIST_MAGIC, 0, len(named))
    for name, _ in named:
        raw = name.encode("utf-8")
        out += struct.pack("<Q", len(raw)) + raw
    out += struct.pack("<Q", len(named))
    for _, arr in named:
        arr = np.ascontiguousarray(arr, dtype="<f4")
        out += struct.pack("<QQiii", NDARRAY_MAGIC, 0, DL_CPU, 0, arr.ndim)
        out += struct.pack("<BBH", DL_FLOAT, 32, 1)
        out += struct.pack(f"<{arr.ndim}q", *arr.shape)
        out += struct.pack("<q", arr.nbytes) + arr.tobytes()
    with open(path, "wb") as f:
        f.write(out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "model"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    rng = np.random.default_rng(SEED)
    x_train, y_train, x_test, y_test = load_data(rng)
    params = train(x_train, y_train, rng)

    params32 = [p.astype(np.float32) for p in params]
    x32 = x_test.astype(np.float32)
    probs = infer32(params32, x32)
    pred = probs.argmax(axis=1)
    acc = float((pred == y_test).mean())
    # The smallest top-1 margin tells how safe argmax agreement with other float code is.
    top2 = np.sort(probs, axis=1)[:, -2:]
    margin = float((top2[:, 1] - top2[:, 0]).min())
    print(f"held-out: {len(y_test)} samples, accuracy {acc:.4f} (float32 inference), "
          f"smallest top-1 margin {margin:.3g}")

    n = len(y_test)
    for name, batch in (("graph.json", n), ("graph_b1.json", 1)):
        with open(os.path.join(args.out, name), "w") as f:
            json.dump(graph_json(batch), f, indent=1)
            f.write("\n")
    save_params(os.path.join(args.out, "params.bin"),
                [("p0", params32[0]), ("p1", params32[1]), ("p2", params32[2]),
                 ("p3", params32[3])])
    x32.astype("<f4").tofile(os.path.join(args.out, "test_x.bin"))
    y_test.astype("<i4").tofile(os.path.join(args.out, "test_y.bin"))
    probs.astype("<f4").tofile(os.path.join(args.out, "expected_probs.bin"))
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump({"num_samples": n, "accuracy": acc, "seed": SEED,
                   "smallest_top1_margin": margin,
                   "predictions": [int(p) for p in pred]}, f)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
