"""The model runners' `signature` (docs/model-runner.md): what a model takes and returns, read
from the model without running it, checked against the fixtures' own io.json."""

import json
from pathlib import Path

import pytest

import polyffi

ROOT = Path(__file__).resolve().parents[3]
TVM018 = ROOT / "tests" / "tvm_models" / "tvm018"
RELAX = ROOT / "tests" / "tvm_models" / "tvm027" / "relax"


@pytest.mark.parametrize("fixture", ["digits_b1", "multi_io_b1", "conv_b16"])
def test_graph_signature(fixture):
    io = json.loads((TVM018 / fixture / "io.json").read_text())
    gm = polyffi.GraphModule.from_factory(polyffi.load_module(str(TVM018 / fixture / "factory.so")))
    sig = json.loads(gm.runner["signature"]())
    assert sig["inputs"] == [{"name": t["name"], "dtype": t["dtype"], "shape": t["shape"]}
                             for t in io["inputs"]]
    assert sig["outputs"] == [{"name": f"output_{i}", "dtype": t["dtype"], "shape": t["shape"]}
                              for i, t in enumerate(io["outputs"])]


@pytest.mark.parametrize("model,library,shapes", [
    ("two_outputs", "two_outputs_b64.so", [[64, 8], [64, 8]]),
    ("dyn_batch", "dyn_batch.so", [[-1, 16]]),
    ("digits", "digits.so", [[-1, 64]]),
    ("conv", "conv.so", [[1, 3, 16, 16]]),
    ("mlp_params", "mlp_params.so", [[1, 16], [32, 16], [32], [10, 32], [10]]),
])
def test_vm_signature(model, library, shapes):
    io = json.loads((RELAX / model / "io.json").read_text())
    vm = polyffi.VirtualMachine(polyffi.load_module(str(RELAX / library)))
    sig = json.loads(vm.runner["signature"]("forward"))
    assert sig == {"inputs": [{"name": n, "dtype": "float32", "shape": s}
                              for n, s in zip(io["param_names"], shapes)],
                   "outputs": None}


def test_vm_signature_unknown_function():
    vm = polyffi.VirtualMachine(polyffi.load_module(str(RELAX / "digits.so")))
    with pytest.raises(ValueError, match="nope"):
        vm.runner["signature"]("nope")
    with pytest.raises(TypeError):
        vm.runner["signature"]()
