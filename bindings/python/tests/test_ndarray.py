"""NDArray and DLPack: zero-copy with numpy (and torch when installed)."""

from __future__ import annotations

import pytest

import polyffi

np = pytest.importorskip("numpy")


def test_numpy_argument_is_zero_copy(testing):
    a = np.arange(6, dtype="float32").reshape(2, 3)
    assert testing.nd_data_ptr(a) == a.ctypes.data
    assert testing.nd_sum(a) == 15.0


def test_numpy_output_written_in_place(testing):
    a = np.array([1.0, 2.0, 3.0], dtype="float32")
    out = np.zeros(3, dtype="float32")
    testing.nd_add_one(a, out)
    assert out.tolist() == [2.0, 3.0, 4.0]


def test_from_dlpack_shares_memory(testing):
    a = np.arange(4, dtype="int32")
    nd = polyffi.nd.from_dlpack(a)
    assert nd.shape == (4,) and nd.dtype == "int32" and nd.device == polyffi.cpu()
    assert nd.data_ptr == a.ctypes.data == testing.nd_data_ptr(nd)
    a[0] = 42
    assert nd.numpy()[0] == 42


def test_dlpack_out_to_numpy_is_zero_copy(testing):
    nd = polyffi.nd.array(np.array([1.0, 2.0], dtype="float64"))
    view = np.from_dlpack(nd)
    assert view.ctypes.data == nd.data_ptr
    view[1] = 7.0
    assert nd.numpy().tolist() == [1.0, 7.0]
    assert nd.__dlpack_device__() == (1, 0)


def test_versioned_dlpack_capsule_round_trip():
    nd = polyffi.nd.array(np.arange(3, dtype="int64"))
    cap = nd.__dlpack__(max_version=(1, 0))
    back = polyffi.nd.from_dlpack(cap)
    assert back.data_ptr == nd.data_ptr


def test_empty_array_copyfrom_numpy():
    nd = polyffi.nd.empty((2, 2), "float32")
    nd.copyfrom(np.array([[1, 2], [3, 4]]))
    assert nd.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="shape"):
        nd.copyfrom(np.zeros(3))
    other = polyffi.nd.empty((2, 2), "float32").copyfrom(nd)
    assert other.numpy().tolist() == nd.numpy().tolist()


def test_bool_arrays():
    nd = polyffi.nd.array(np.array([True, False]))
    assert nd.dtype == "bool"
    assert nd.numpy().tolist() == [True, False]


def test_ndarray_echo_keeps_identity(testing):
    nd = polyffi.nd.empty((3,), "float32")
    assert testing.echo(nd).same_as(nd)
    assert testing.return_type(nd) == "NDArray"


def test_consumed_capsule_is_rejected():
    cap = np.arange(3, dtype="float32").__dlpack__()
    polyffi.nd.from_dlpack(cap)
    with pytest.raises(ValueError, match="already been consumed"):
        polyffi.nd.from_dlpack(cap)


def test_callback_receives_ndarray(testing):
    seen = []

    def cb(x):
        seen.append((type(x), x.shape, x.numpy().sum()))
        return x

    a = np.ones(5, dtype="float32")
    out = testing.apply(cb, a)
    assert seen[0][0] is polyffi.NDArray and seen[0][1] == (5,) and seen[0][2] == 5.0
    assert out.data_ptr == a.ctypes.data


def test_torch_zero_copy(testing):
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.float32)
    assert testing.nd_data_ptr(t) == t.data_ptr()
    nd = polyffi.nd.from_dlpack(t)
    back = torch.from_dlpack(nd)
    assert back.data_ptr() == t.data_ptr()
