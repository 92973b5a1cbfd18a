"""Record TVM 0.27's sampling / penalty builtins and its tensor-cache loading with the real runtime.

Run under TVM 0.27 (tools/tvm-fixtures/tvm027.sh installs it from PyPI into build/tvm027):

    tools/tvm-fixtures/tvm027.sh tools/tvm-fixtures/generate_sampling027.py [out_dir]

out_dir defaults to tests/tvm_models/tvm027. It writes
  sampling/cases.json      per case: the vm.builtin.* function, its arguments (tensors as
                           dtype, shape and an index into "data", the little-endian bytes of
                           every distinct tensor in hex; floats inline) and
                           what TVM 0.27's own runtime returned: the int result, the new tensor,
                           or the argument tensor it changed in place (`inplace`), or the error it
                           raised (`error`: kind and message)
  tensor_cache/raw/        a tensor-cache directory written by tvm.contrib.tvmjs.dump_tensor_cache
                           (encode_format "raw": float32, float16, bfloat16, int32, int8, uint8,
                           a 0-d array; small shards so there are several)
  tensor_cache/bf16/       the same parameters written with encode_format "f32-to-bf16"
  tensor_cache/expected.json  per directory: every parameter as TVM 0.27's
                           vm.builtin.tensor_cache.load + tensor_cache.get returned it
Inputs come from a seeded numpy generator; ties between equal logits are included on purpose
(the result then depends on the order std::sort leaves them in).
"""

import json
import pathlib
import shutil
import sys

import ml_dtypes
import numpy as np
import tvm
import tvm_ffi
from tvm.contrib import tvmjs

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SEED = 20261125


def gf(name):
    return tvm_ffi.get_global_func(name)


def tensor_desc(arr):
    arr = np.ascontiguousarray(arr).reshape(np.shape(arr))  # keeps a 0-d array 0-d
    return {"tensor": {"dtype": str(arr.dtype), "shape": list(arr.shape),
                       "hex": arr.tobytes().hex()}}


# Tensor bytes shared between cases are stored once: a case names them by index ("data").
DATA = []
DATA_INDEX = {}


def tensor_ref(arr):
    arr = np.ascontiguousarray(arr).reshape(np.shape(arr))
    raw = arr.tobytes().hex()
    if raw not in DATA_INDEX:
        DATA_INDEX[raw] = len(DATA)
        DATA.append(raw)
    return {"tensor": {"dtype": str(arr.dtype), "shape": list(arr.shape),
                       "data": DATA_INDEX[raw]}}


def run_case(cases, function, args, inplace=None):
    """Call TVM's global on args (numpy arrays or floats) and record what it returned."""
    tvm_args = [tvm.runtime.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    case = {"function": function,
            "args": [tensor_ref(a) if isinstance(a, np.ndarray) else {"float": float(a)}
                     for a in args]}
    try:
        ret = gf(function)(*tvm_args)
    except Exception as err:  # noqa: BLE001 - recording what TVM raised is the point
        case["error"] = {"kind": type(err).__name__, "message": str(err).strip().splitlines()[0]}
        cases.append(case)
        return
    if inplace is not None:
        case["inplace"] = {"arg": inplace, **tensor_ref(tvm_args[inplace].numpy())}
    elif isinstance(ret, int):
        case["int"] = ret
    else:
        case["result"] = tensor_ref(ret.numpy())
    cases.append(case)


def logits_of(rng, shape, ties=False):
    x = rng.standard_normal(shape).astype("float32") * 3
    if ties:
        x = np.round(x).astype("float32")  # many equal values
    return x


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype("float32")


def sampling_cases():
    rng = np.random.default_rng(SEED)
    cases = []
    fn = "vm.builtin.sample_top_p_from_logits"
    for vocab in (1, 7, 33, 1000):
        for ties in (False, True):
            for shape in ((1, vocab),) if vocab > 100 else ((1, vocab), (vocab,), (1, 1, vocab)):
                logits = logits_of(rng, shape, ties)
                for temperature in (0.0, 0.5, 1.0, 1.7):
                    for top_p in (0.1, 0.6, 0.95, 1.0):
                        u = float(rng.random())
                        run_case(cases, fn, [logits, temperature, top_p, u])
                run_case(cases, fn, [logits, 1.0, 0.9, 0.0])
                run_case(cases, fn, [logits, 0.8, 1.0, 0.9999999])
    # NaN logits: no strict order, so the result shows where std::sort left them.
    for vocab in (33, 1000):
        logits = logits_of(rng, (1, vocab))
        logits[rng.random((1, vocab)) < 0.05] = np.nan
        for temperature in (0.0, 1.0):
            run_case(cases, fn, [logits, temperature, 0.9, float(rng.random())])
    fn = "vm.builtin.sample_top_p_from_prob"
    for vocab in (1, 7, 33, 1000, 2048):
        for kind in ("peaked", "flat", "ties"):
            if kind == "flat":
                prob = np.full((1, vocab), 1.0 / vocab, dtype="float32")
            else:
                prob = softmax(logits_of(rng, (1, vocab), kind == "ties"))
            for top_p in (0.05, 0.5, 0.9, 0.999, 1.0):
                for u in (0.0, float(rng.random()), float(rng.random()), 0.99999):
                    run_case(cases, fn, [prob, top_p, u])
    nan = np.full((1, 5), np.nan, dtype="float32")
    run_case(cases, fn, [nan, 0.9, 0.5])
    for vocab in (33, 1000):
        prob = softmax(logits_of(rng, (1, vocab)))
        prob[rng.random((1, vocab)) < 0.05] = np.nan
        for top_p in (0.5, 1.0):
            run_case(cases, fn, [prob, top_p, float(rng.random())])
    fn = "vm.builtin.multinomial_from_uniform"
    for batch, vocab in ((1, 1), (1, 10), (4, 33), (3, 1000)):
        prob = softmax(logits_of(rng, (batch, vocab)))
        uniform = rng.random((batch, 1)).astype("float32")
        run_case(cases, fn, [prob, uniform])
        uniform[0, 0] = 1.0  # past the cumulative sum: the last index
        run_case(cases, fn, [prob, uniform])
    fn = "vm.builtin.apply_repetition_penalty"
    for vocab, n in ((8, 3), (100, 20), (1000, 64)):
        logits = logits_of(rng, (1, vocab))
        logits[0, 0] = 0.0
        ids = rng.integers(0, vocab, (1, n)).astype("int32")
        ids[0, 0] = 0
        for penalty in (1.0, 1.3, 0.77):
            run_case(cases, fn, [logits.copy(), ids, penalty], inplace=0)
    fn = "vm.builtin.apply_presence_and_frequency_penalty"
    for vocab, n in ((8, 3), (100, 20), (1000, 64)):
        logits = logits_of(rng, (1, vocab))
        ids = rng.choice(vocab, n, replace=False).astype("int32").reshape(1, n)
        freqs = rng.integers(1, 6, (1, n)).astype("int32")
        for presence, frequency in ((0.0, 0.0), (0.5, 0.25), (-0.3, 1.1)):
            run_case(cases, fn, [logits.copy(), ids, freqs, presence, frequency], inplace=0)
    fn = "vm.builtin.apply_softmax_with_temperature"
    for shape in ((1, 1), (1, 7), (1, 100), (1000,), (1, 2048)):
        for temperature in (0.3, 1.0, 2.5):
            logits = logits_of(rng, shape)
            run_case(cases, fn, [logits.copy(), temperature], inplace=0)
            run_case(cases, fn, [-np.abs(logits) - 1, temperature], inplace=0)  # all negative
    return cases


def cache_params():
    rng = np.random.default_rng(SEED + 1)
    return {
        "embed.weight": rng.standard_normal((64, 16)).astype("float32"),
        "norm.weight": (1 + rng.standard_normal(16) / 10).astype("float32"),
        "big.weight": rng.standard_normal((3, 700)).astype("float32"),
        "proj.weight": rng.standard_normal((16, 24)).astype("float16"),
        "proj.bf16": rng.standard_normal((5, 7)).astype(ml_dtypes.bfloat16),
        "ids": rng.integers(-1000, 1000, (9,)).astype("int32"),
        "q.int8": rng.integers(-128, 128, (4, 4)).astype("int8"),
        "q.uint8": rng.integers(0, 256, (13,)).astype("uint8"),
        "scalar": np.array(2.5, dtype="float32"),
        "huge": np.array([3.4e38, -3.4e38, 1e-40, np.inf], dtype="float32"),
    }


def tensor_caches(out):
    base = out / "tensor_cache"
    shutil.rmtree(base, ignore_errors=True)
    expected = {}
    params = cache_params()
    for fmt, sub in (("raw", "raw"), ("f32-to-bf16", "bf16")):
        d = base / sub
        # 4 KiB shards: several shards and an out-of-band one (big.weight) in each directory
        tvmjs.dump_tensor_cache(params, str(d), encode_format=fmt, shard_cap_mb=4 / 1024,
                                show_progress=False)
        for f in d.glob("tensor-cache-b16.json"):  # a second index of the same shards
            f.unlink()
        gf("vm.builtin.tensor_cache.clear")()
        gf("vm.builtin.tensor_cache.load")(str(d), 1, 0)
        loaded = {}
        for name in params:
            t = gf("vm.builtin.tensor_cache.get")(name)
            loaded[name] = tensor_desc(t.numpy())["tensor"]
        expected[sub] = loaded
        gf("vm.builtin.tensor_cache.clear")()
    (base / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/tvm_models/tvm027"
    (out / "sampling").mkdir(parents=True, exist_ok=True)
    cases = sampling_cases()
    doc = {"tvm": tvm.__version__, "tvm_ffi": tvm_ffi.__version__, "generator":
           "tools/tvm-fixtures/generate_sampling027.py", "seed": SEED, "cases": cases, "data": DATA}
    (out / "sampling" / "cases.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    tensor_caches(out)
    print(f"{len(cases)} sampling cases, tensor caches in {out / 'tensor_cache'}")


if __name__ == "__main__":
    main()
