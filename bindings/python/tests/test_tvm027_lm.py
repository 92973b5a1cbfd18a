"""The small decoder compiled by TVM 0.27 with its paged KV cache (tests/tvm_models/tvm027/lm)
through the Python binding: ``polyffi.VirtualMachine`` runs the model's own
create_paged_kv_cache / prefill / decode, the driver calls TVM's vm.builtin.kv_state_* globals,
and greedy generation must give TVM's recorded tokens and logits (allclose); errors are typed.
"""

import json
import pathlib

import numpy as np
import pytest

import polyffi

ROOT = pathlib.Path(__file__).resolve().parents[3]
LM = ROOT / "tests" / "tvm_models" / "tvm027" / "lm"
IO = json.loads((LM / "io.json").read_text())
g = polyffi.get_global_func


def logits_file(name):
    return np.fromfile(LM / name, dtype="float32")


@pytest.fixture(scope="module")
def model():
    shard = json.loads((LM / "params" / "tensor-cache.json").read_text())["records"][0]
    blob = (LM / "params" / shard["dataPath"]).read_bytes()
    recs = {r["name"]: r for r in shard["records"]}
    weights = []
    for p in IO["params"]:
        r = recs[p["name"]]
        a = np.frombuffer(blob, "float32", r["nbytes"] // 4, r["byteOffset"]).reshape(r["shape"])
        weights.append(polyffi.nd.array(a.copy()))
    vm = polyffi.VirtualMachine(polyffi.load_module(str(LM / IO["library"])), polyffi.cpu())
    return vm, polyffi.Array(weights)


def new_cache(vm, **override):
    args = dict(IO["cache_args"], **override)
    return vm["create_paged_kv_cache"](*[polyffi.Shape([v]) for v in args.values()])


def forward(vm, params, cache, fn, ids, chunks):
    g("vm.builtin.kv_state_begin_forward")(
        cache, polyffi.Shape(ids), polyffi.Shape([len(c) for c in chunks])
    )
    if fn == "prefill":
        x = np.array([[t for c in chunks for t in c]], "int32")
    else:
        x = np.array([[c[0]] for c in chunks], "int32")
    out = vm[fn](polyffi.nd.array(x), cache, params).numpy()
    g("vm.builtin.kv_state_end_forward")(cache)
    return out


def test_greedy_generation_equals_tvm(model):
    vm, params = model
    run = IO["greedy"]
    cache = new_cache(vm)
    g("vm.builtin.kv_state_add_sequence")(cache, 0)
    logits = forward(vm, params, cache, "prefill", [0], [run["prompt"]])
    np.testing.assert_allclose(logits.ravel(), logits_file(run["prefill_logits"]), 1e-4, 1e-4)
    tokens = [int(np.argmax(logits[0, -1]))]
    for step in range(run["steps"]):
        lg = forward(vm, params, cache, "decode", [0], [[tokens[-1]]])
        np.testing.assert_allclose(lg.ravel(), logits_file(run["decode_logits"][step]), 1e-4, 1e-4)
        tokens.append(int(np.argmax(lg[0, 0])))
    assert tokens == run["tokens"]


def test_two_sequences_on_one_cache(model):
    vm, params = model
    run = IO["two_sequences"]
    ids = run["seq_ids"]
    cache = new_cache(vm)
    for i in ids:
        g("vm.builtin.kv_state_add_sequence")(cache, i)
    logits = forward(vm, params, cache, "prefill", ids, run["prompts"])
    n0 = len(run["prompts"][0])
    toks = [[int(np.argmax(logits[0, n0 - 1]))], [int(np.argmax(logits[0, -1]))]]
    for step in range(run["steps"]):
        lg = forward(vm, params, cache, "decode", ids, [[toks[0][-1]], [toks[1][-1]]])
        np.testing.assert_allclose(lg.ravel(), logits_file(run["decode_logits"][step]), 1e-4, 1e-4)
        toks[0].append(int(np.argmax(lg[0, 0])))
        toks[1].append(int(np.argmax(lg[1, 0])))
    assert toks == run["tokens"]


def test_errors_are_typed(model):
    vm, params = model
    cache = new_cache(vm)
    g("vm.builtin.kv_state_add_sequence")(cache, 0)
    with pytest.raises(ValueError, match="already in the KV cache"):
        g("vm.builtin.kv_state_add_sequence")(cache, 0)
    with pytest.raises(KeyError, match="cannot be found in KV cache"):
        g("vm.builtin.kv_state_remove_sequence")(cache, 7)
    small = new_cache(vm, max_total_seq_len=16)
    g("vm.builtin.kv_state_add_sequence")(small, 0)
    with pytest.raises(ValueError, match="The KV cache is full"):
        forward(vm, params, small, "prefill", [0], [list(range(40))])
    # The refused forward changed nothing: the prompt still fits and gives TVM's logits.
    logits = forward(vm, params, small, "prefill", [0], [IO["greedy"]["prompt"]])
    np.testing.assert_allclose(
        logits.ravel(), logits_file(IO["greedy"]["prefill_logits"]), 1e-4, 1e-4
    )
