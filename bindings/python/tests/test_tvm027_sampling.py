"""TVM 0.27's language-model sampling builtins and tensor-cache loading from Python.

Every case of tests/tvm_models/tvm027/sampling/cases.json (what TVM 0.27's own runtime returned,
recorded by tools/tvm-fixtures/generate_sampling027.py) must give the same result through
polyffi: ints by value, tensors bit for bit, refusals with the same kind and message. The
tensor-cache directories TVM's Python wrote load to the arrays TVM's runtime loaded, and a
malformed directory is a ValueError that loads nothing.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest

import polyffi

FIXTURES = pathlib.Path(__file__).resolve().parents[3] / "tests" / "tvm_models" / "tvm027"
DOC = json.loads((FIXTURES / "sampling" / "cases.json").read_text())
CASES = DOC["cases"]
EXPECTED_CACHE = json.loads((FIXTURES / "tensor_cache" / "expected.json").read_text())


def tensor_of(desc):
    raw = bytes.fromhex(DOC["data"][desc["data"]])
    return np.frombuffer(raw, dtype=desc["dtype"]).reshape(desc["shape"]).copy()


def same_bits(got, desc):
    want = tensor_of(desc)
    return (got.dtype == want.dtype and got.shape == want.shape
            and got.tobytes() == want.tobytes())


@pytest.mark.parametrize("index", range(len(CASES)),
                         ids=[f"{c['function'].split('.')[-1]}-{i}" for i, c in enumerate(CASES)])
def test_case_equals_tvm027(index):
    case = CASES[index]
    args = []
    for a in case["args"]:
        if "float" in a:
            args.append(a["float"])
        else:
            args.append(polyffi.nd.array(tensor_of(a["tensor"])))
    fn = polyffi.get_global_func(case["function"])
    if "error" in case:
        with pytest.raises(polyffi.FFIError) as info:
            fn(*args)
        assert info.value.kind == case["error"]["kind"]
        assert str(info.value).startswith(case["error"]["message"])
        return
    ret = fn(*args)
    if "int" in case:
        assert type(ret) is int and ret == case["int"]
    elif "inplace" in case:
        assert same_bits(args[case["inplace"]["arg"]].numpy(), case["inplace"]["tensor"])
    else:
        assert isinstance(ret, polyffi.NDArray)
        assert same_bits(ret.numpy(), case["result"]["tensor"])


def test_every_builtin_is_covered():
    names = {c["function"] for c in CASES}
    assert names == {f"vm.builtin.{n}" for n in (
        "sample_top_p_from_logits", "sample_top_p_from_prob", "multinomial_from_uniform",
        "apply_repetition_penalty", "apply_presence_and_frequency_penalty",
        "apply_softmax_with_temperature")}


def test_penalty_with_token_outside_logits_is_value_error_and_changes_nothing():
    logits = polyffi.nd.array(np.array([[1.0, -2.0, 3.0, 0.5]], dtype="float32"))
    ids = polyffi.nd.array(np.array([[0, 2, 7]], dtype="int32"))
    penalty = polyffi.get_global_func("vm.builtin.apply_repetition_penalty")
    with pytest.raises(ValueError, match="token id 7"):
        penalty(logits, ids, 2.0)
    assert logits.numpy().tolist() == [[1.0, -2.0, 3.0, 0.5]]
    sample = polyffi.get_global_func("vm.builtin.sample_top_p_from_logits")
    with pytest.raises(ValueError, match="no elements"):
        sample(polyffi.nd.array(np.zeros((1, 0), dtype="float32")), 1.0, 0.9, 0.5)
    with pytest.raises(ValueError, match="float32"):
        sample(polyffi.nd.array(np.zeros((1, 4), dtype="float64")), 1.0, 0.9, 0.5)


@pytest.fixture
def cache():
    clear = polyffi.get_global_func("vm.builtin.tensor_cache.clear")
    clear()
    yield (polyffi.get_global_func("vm.builtin.tensor_cache.load"),
           polyffi.get_global_func("vm.builtin.tensor_cache.get"))
    clear()


@pytest.mark.parametrize("sub", sorted(EXPECTED_CACHE))
def test_tensor_cache_loads_tvm_arrays(cache, sub):
    load, get = cache
    load(str(FIXTURES / "tensor_cache" / sub), 1, 0)
    for name, want in EXPECTED_CACHE[sub].items():
        got = get(name)
        assert isinstance(got, polyffi.NDArray), name
        assert str(got.dtype) == want["dtype"], name  # bfloat16 too, which numpy lacks
        assert list(got.shape) == want["shape"], name
        assert got._to_bytes() == bytes.fromhex(want["hex"]), name
    # The cached arrays are what the param builtins hand to an executable.
    params = polyffi.get_global_func("vm.builtin.param_array_from_cache_by_name")(
        ["norm.weight", "ids"])
    assert params[1].numpy().tobytes() == bytes.fromhex(EXPECTED_CACHE[sub]["ids"]["hex"])


@pytest.mark.parametrize("damage, needle", [
    ("json", "not valid JSON"),
    ("missing_shard", "cannot be read"),
    ("short_shard", "incomplete"),
    ("out_of_range", "past the end"),
    ("nbytes", "announces 4092 bytes"),
])
def test_malformed_tensor_cache_is_value_error(cache, tmp_path, damage, needle):
    load, get = cache
    d = tmp_path / "cache"
    shutil.copytree(FIXTURES / "tensor_cache" / "raw", d)
    index = json.loads((d / "tensor-cache.json").read_text())
    if damage == "json":
        (d / "tensor-cache.json").write_text('{"records": [')
    elif damage == "missing_shard":
        (d / "params_shard_2.bin").unlink()
    elif damage == "short_shard":
        (d / "params_shard_1.bin").write_bytes((d / "params_shard_1.bin").read_bytes()[:-3])
    elif damage == "out_of_range":
        index["records"][2]["records"][0]["byteOffset"] = 1 << 40
    else:
        index["records"][0]["records"][0]["nbytes"] = 4092
    if damage in ("out_of_range", "nbytes"):
        (d / "tensor-cache.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=needle) as info:
        load(str(d), 1, 0)
    assert str(d) in str(info.value)
    assert get("embed.weight") is None
