"""TVM 0.27's runtime-library fixtures (tests/tvm_models/tvm027/runtime) from Python.

Relax models whose executables call TVM's runtime globals at run time (sort, argsort, top-k,
seeded random, unique, nonzero, tensor_to_shape, ...) or take Shape and int arguments, with two
symbolic dimensions, float16/int kernels, recursion and nested tuples. Every run's result must
equal what TVM 0.27's own runtime returned: tensors bit for bit (dtype, shape, bytes), Shapes as
``polyffi.Shape`` and ints by value, tuples recursively.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import polyffi

FIXTURES = pathlib.Path(__file__).resolve().parents[3] / "tests" / "tvm_models" / "tvm027"
RUNTIME = FIXTURES / "runtime"
MODELS = sorted(json.loads((FIXTURES / "manifest.json").read_text()).get("runtime", {}))
RUNS = [(name, i) for name in MODELS
        for i in range(len(json.loads((RUNTIME / name / "io.json").read_text())["runs"]))]


def argument(desc, directory):
    kind = desc["kind"]
    if kind == "tensor":
        raw = (directory / desc["file"]).read_bytes()
        return np.frombuffer(raw, dtype=desc["dtype"]).reshape(desc["shape"]).copy()
    if kind == "shape":
        return polyffi.Shape(desc["value"])
    assert kind == "int", kind
    return int(desc["value"])


def check(got, want, directory, at):
    kind = want["kind"]
    if kind == "tensor":
        assert isinstance(got, polyffi.NDArray), f"{at}: {got!r} is not a tensor"
        assert got.dtype == want["dtype"], at
        assert got.shape == tuple(want["shape"]), at
        assert got._to_bytes() == (directory / want["file"]).read_bytes(), \
            f"{at}: tensor differs from TVM's"
    elif kind == "shape":
        assert type(got) is polyffi.Shape, f"{at}: {got!r} is not a polyffi.Shape"
        assert got == tuple(want["value"]), at
    elif kind == "int":
        assert type(got) is int and got == want["value"], f"{at}: {got!r}"
    else:
        assert kind == "tuple", kind
        assert isinstance(got, polyffi.Array), f"{at}: {got!r} is not a tuple"
        assert len(got) == len(want["items"]), at
        for i, item in enumerate(want["items"]):
            check(got[i], item, directory, f"{at}[{i}]")


@pytest.fixture(scope="module")
def vms():
    cache = {}

    def get(name):
        if name not in cache:
            io = json.loads((RUNTIME / name / "io.json").read_text())
            lib = polyffi.load_module(str(RUNTIME / io["library"]))
            cache[name] = (io, polyffi.VirtualMachine(lib, polyffi.cpu()))
        return cache[name]

    return get


def test_every_runtime_fixture_is_listed():
    assert MODELS, "tests/tvm_models/tvm027/manifest.json lists no runtime fixtures"
    on_disk = sorted(p.parent.name for p in RUNTIME.glob("*/io.json"))
    assert on_disk == MODELS


@pytest.mark.parametrize("name, index", RUNS, ids=[f"{n}-r{i}" for n, i in RUNS])
def test_runtime_fixture_matches_tvm(vms, name, index):
    io, vm = vms(name)
    run = io["runs"][index]
    directory = RUNTIME / name
    args = [argument(d, directory) for d in run["inputs"]]
    out = vm[io["function"]](*args)
    check(out, run["output"], directory, f"{name} run {index}")
    # Again on the same VM: the same result, and the first one (its storage still held) intact.
    again = vm[io["function"]](*args)
    check(again, run["output"], directory, f"{name} run {index} (second call)")
    check(out, run["output"], directory, f"{name} run {index} (first result after the second)")


def test_shape_and_int_arguments_are_checked_like_tvm(vms):
    if "shape_int_args" not in MODELS:
        pytest.skip("no shape_int_args fixture")
    io, vm = vms("shape_int_args")
    run = io["runs"][0]
    directory = RUNTIME / "shape_int_args"
    x, s, k = (argument(d, directory) for d in run["inputs"])
    # A plain tuple is an Array, not a Shape: the VM refuses it for the Shape parameter.
    with pytest.raises(polyffi.FFIError):
        vm[io["function"]](x, tuple(s), k)
    # A Shape where the int goes: refused too.
    with pytest.raises(polyffi.FFIError):
        vm[io["function"]](x, s, s)
