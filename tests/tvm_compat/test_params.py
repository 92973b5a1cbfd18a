"""Parameter blobs: tvm.runtime.load_param_dict / save_param_dict (TVM's SaveParams format)."""

import struct

import numpy as np
import pytest
from conftest import FIXTURES, error_kind, graph_models

PARAMS_MAGIC = 0xF7E58D4F05049CB7
NDARRAY_MAGIC = 0xDD5E40F096B4A13F


def test_load_param_dict(tvm):
    for model in graph_models():
        blob = (FIXTURES / model / "params.bin").read_bytes()
        params = tvm.runtime.load_param_dict(blob)
        assert isinstance(params, tvm.ir.container.Map)
        assert len(params) > 0
        for name, arr in params.items():
            assert isinstance(name, str) and name.startswith("p")
            assert isinstance(arr, tvm.nd.NDArray)
            assert arr.dtype == "float32"
        # Saving what was loaded gives back the very same bytes (TVM wrote the fixtures).
        again = tvm.runtime.save_param_dict(params)
        assert isinstance(again, bytearray)
        assert bytes(again) == blob


def test_save_param_dict_format(tvm):
    # One entry, so the bytes do not depend on the map's iteration order.
    blob = tvm.runtime.save_param_dict({"flag": np.array([True, False, True])})
    expected = struct.pack("<QQQ", PARAMS_MAGIC, 0, 1) + struct.pack("<Q", 4) + b"flag"
    expected += struct.pack("<Q", 1)  # one array
    # NDArray: magic, reserved, device (cpu, 0), ndim, dtype (bool is uint1), shape, bytes.
    expected += struct.pack("<QQiiiBBH", NDARRAY_MAGIC, 0, 1, 0, 1, 1, 1, 1)
    expected += struct.pack("<qq", 3, 3) + bytes([1, 0, 1])
    assert bytes(blob) == expected


def test_round_trip_values(tvm):
    values = {
        "a": np.arange(6, dtype="int8").reshape(2, 3),
        "b": np.array([True, False]),
        "c": np.array([1.5, -2.25], dtype="float16"),
        "d": np.float64(3.0),
        "e": np.zeros((0, 2), dtype="uint32"),
    }
    loaded = tvm.runtime.load_param_dict(tvm.runtime.save_param_dict(values))
    assert sorted(loaded.keys()) == sorted(values)
    for name, v in values.items():
        arr = loaded[name]
        assert arr.dtype == str(v.dtype)
        assert arr.shape == v.shape
        np.testing.assert_array_equal(arr.numpy(), v)


def test_param_files(tvm, tmp_path):
    path = tmp_path / "p.bin"
    params = {"w": tvm.nd.array(np.arange(4, dtype="float32"))}
    tvm.runtime.save_param_dict_to_file(params, str(path))
    assert path.read_bytes() == bytes(tvm.runtime.save_param_dict(params))
    loaded = tvm.runtime.load_param_dict_from_file(str(path))
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(4))


def test_bad_params_fail_cleanly(tvm, tmp_path):
    # TVM fails an internal check (a TVMError); polyffi's one binary-format reader raises
    # ValueError.
    corrupt = error_kind(tvm.TVMError, ValueError)
    with pytest.raises(corrupt):
        tvm.runtime.load_param_dict(b"garbage")
    blob = bytes(tvm.runtime.save_param_dict({"w": np.arange(4, dtype="float32")}))
    with pytest.raises(corrupt):
        tvm.runtime.load_param_dict(blob[:60])  # truncated inside the array header
    with pytest.raises(tvm.TVMError):
        tvm.runtime.load_param_dict_from_file(str(tmp_path / "missing.bin"))
