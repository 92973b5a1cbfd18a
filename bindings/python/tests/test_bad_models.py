"""Bad model files from Python: each gives a clear Python exception, never a crash.

The base is the digits example model (examples/digits/model, build/lib/libdigits_model.so);
each test damages a copy of one of its files in tmp_path. The C++ counterpart with every case
is tests/hardening/bad_models_test.cc.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import polyffi

np = pytest.importorskip("numpy")

MODEL_DIR = Path(__file__).resolve().parents[3] / "examples" / "digits" / "model"


@pytest.fixture(scope="module")
def digits_lib(lib_dir):
    path = lib_dir / "libdigits_model.so"
    if not path.exists():
        pytest.skip(f"{path} not built (examples off)")
    return polyffi.load_module(str(path))


@pytest.fixture()
def graph():
    return json.loads((MODEL_DIR / "graph_b1.json").read_text())


def create(graph, lib):
    return polyffi.get_global_func("tvm.graph_executor.create")(json.dumps(graph), lib, 1, 0)


def test_zero_byte_library_names_the_file(tmp_path):
    path = tmp_path / "model.so"
    path.write_bytes(b"")
    with pytest.raises(RuntimeError, match=f"cannot load library '{path}'.*file too short"):
        polyffi.load_module(str(path))


def test_truncated_library_names_the_file(tmp_path, lib_dir, digits_lib):
    data = (lib_dir / "libdigits_model.so").read_bytes()
    path = tmp_path / "truncated.so"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match=f"cannot load library '{path}'.*truncated or corrupt"):
        polyffi.load_module(str(path))


def test_library_without_tvm_symbols_has_no_kernels(lib_dir, graph):
    other = polyffi.load_module(str(lib_dir / "libpolyffi_test_not_tvm.so"))
    assert "fused_add" not in other  # a plain C function, not a packed one
    with pytest.raises(KeyError, match="function 'fused_dense_bias_relu' .* not in the library"):
        create(graph, other)


def test_graph_with_a_cycle(digits_lib, graph):
    graph["nodes"][3]["inputs"][0] = [6, 0, 0]
    with pytest.raises(ValueError, match="reads node 6, which does not precede it"):
        create(graph, digits_lib)


def test_graph_with_a_non_integer_shape(digits_lib, graph):
    graph["attrs"]["shape"][1][0] = [1e23, 64]
    with pytest.raises(ValueError, match="shape of entry 0 dimension 0 must be an integer"):
        create(graph, digits_lib)


def test_params_of_another_model(digits_lib, graph):
    ex = create(graph, digits_lib)
    blob = struct.pack("<QQQ", 0xF7E58D4F05049CB7, 0, 1) + struct.pack("<Q", 3) + b"w_x"
    blob += struct.pack("<Q", 1)  # one array: float32 [1], 4 bytes
    blob += struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, 1, 2, 32, 1)
    blob += struct.pack("<qq", 1, 4) + bytes(4)
    with pytest.raises(ValueError, match=r"none of the 1 params in the blob \('w_x'\)"):
        ex["load_params"](bytearray(blob))


def test_run_before_inputs_and_wrong_inputs(digits_lib, graph):
    ex = create(graph, digits_lib)
    with pytest.raises(ValueError, match=r"run: 5 of the graph's 5 inputs have no value yet"):
        ex["run"]()
    ex["load_params"](bytearray((MODEL_DIR / "params.bin").read_bytes()))
    with pytest.raises(ValueError, match=r"expects \[1, 64\] float32 but got \[1, 63\] float32"):
        ex["set_input"]("data", np.zeros((1, 63), dtype="float32"))
    with pytest.raises(ValueError, match=r"expects \[1, 64\] float32 but got \[1, 64\] int32"):
        ex["set_input"]("data", np.zeros((1, 64), dtype="int32"))
    ex["set_input"]("data", np.zeros((1, 64), dtype="float32"))
    ex["run"]()
    assert abs(float(ex["get_output"](0).numpy().sum()) - 1.0) < 1e-4
    with pytest.raises(IndexError, match=r"output index 1 out of range \[0, 1\)"):
        ex["get_output"](1)
