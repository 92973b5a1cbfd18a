"""tvm.nd: allocation, numpy round trips for every dtype TVM's frontend maps, views, DLPack."""

import ctypes

import numpy as np
import pytest
from conftest import error_kind

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


def sample(dtype, shape):
    rng = np.random.default_rng(7)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip(tvm, dtype):
    src = sample(dtype, (3, 5))
    arr = tvm.nd.array(src)
    assert arr.dtype == dtype
    assert arr.shape == (3, 5)
    assert arr.device == tvm.cpu(0)
    back = arr.numpy()
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, src)


def test_bool_is_stored_as_one_bit_uint(tvm):
    # TVM 0.18 stores bool as {kDLUInt, 1 bit, 1 lane} with a byte per element.
    arr = tvm.nd.array(np.array([True, False, True]))
    t = arr.handle.contents.dtype
    assert (t.type_code, t.bits, t.lanes) == (1, 1, 1)
    empty = tvm.nd.empty((4,), "bool")
    t = empty.handle.contents.dtype
    assert (t.type_code, t.bits, t.lanes) == (1, 1, 1)
    assert empty.dtype == "bool"
    empty.copyfrom(np.array([False, True, True, False]))
    np.testing.assert_array_equal(empty.numpy(), [False, True, True, False])


def test_empty_and_copyfrom(tvm):
    arr = tvm.nd.empty((2, 3), "int32")
    assert arr.shape == (2, 3) and arr.dtype == "int32"
    arr.copyfrom(np.arange(6, dtype="int32").reshape(2, 3))
    np.testing.assert_array_equal(arr.numpy(), np.arange(6).reshape(2, 3))
    # A list is converted with the array's dtype.
    arr.copyfrom([[9, 8, 7], [6, 5, 4]])
    np.testing.assert_array_equal(arr.numpy(), [[9, 8, 7], [6, 5, 4]])
    # A non-contiguous source is made contiguous by the frontend.
    arr.copyfrom(np.arange(12, dtype="int32").reshape(3, 4)[:2, :3])
    np.testing.assert_array_equal(arr.numpy(), [[0, 1, 2], [4, 5, 6]])
    with pytest.raises(ValueError):
        arr.copyfrom(np.zeros((3, 2), "int32"))


def test_empty_shapes(tvm):
    scalar = tvm.nd.array(np.float64(2.5))
    assert scalar.shape == ()
    assert scalar.numpy() == 2.5
    zero = tvm.nd.empty((0, 4), "float32")
    assert zero.shape == (0, 4)
    assert zero.numpy().shape == (0, 4)
    st = tvm.nd.empty(tvm.runtime.ShapeTuple([2, 2]), "float32")
    assert st.shape == (2, 2)


def test_copyto_and_setitem(tvm):
    a = tvm.nd.array(np.arange(4, dtype="float32"))
    b = tvm.nd.empty((4,), "float32")
    a.copyto(b)
    np.testing.assert_array_equal(b.numpy(), [0, 1, 2, 3])
    c = a.copyto(tvm.cpu())
    address = lambda arr: ctypes.cast(arr.handle, ctypes.c_void_p).value  # noqa: E731
    assert address(c) != address(a)
    np.testing.assert_array_equal(c.numpy(), [0, 1, 2, 3])
    b[:] = np.array([5, 6, 7, 8], dtype="float32")
    np.testing.assert_array_equal(b.numpy(), [5, 6, 7, 8])
    a[:] = b
    np.testing.assert_array_equal(a.numpy(), [5, 6, 7, 8])
    with pytest.raises(error_kind(tvm.error.InternalError, ValueError)):
        tvm.nd.empty((5,), "float32").copyfrom(a)  # size mismatch, checked by the runtime


def test_identity_and_hash(tvm):
    a = tvm.nd.array(np.zeros(2, "float32"))
    b = tvm.nd.array(np.zeros(2, "float32"))
    assert a == a and a != b
    assert a.same_as(a) and not a.same_as(b)
    assert hash(a) == ctypes.cast(a.handle, ctypes.c_void_p).value


def test_create_view(tvm):
    base = tvm.nd.array(np.arange(12, dtype="int32"))
    view = base._create_view((3, 4))
    assert view.shape == (3, 4) and view.dtype == "int32"
    np.testing.assert_array_equal(view.numpy(), np.arange(12).reshape(3, 4))
    # The view shares memory with its base.
    view.copyfrom(np.full((3, 4), 7, "int32"))
    np.testing.assert_array_equal(base.numpy(), np.full(12, 7))
    # An offset view with another dtype, inside the allocation.
    base.copyfrom(np.arange(12, dtype="int32"))
    tail = base._create_view([2], "int32", relative_byte_offset=8 * 4)
    np.testing.assert_array_equal(tail.numpy(), [8, 9])
    as_u8 = base._create_view([4], "uint8")
    np.testing.assert_array_equal(as_u8.numpy(), [0, 0, 0, 0])
    # Views past the allocation are refused with TVM's ValueError.
    with pytest.raises(ValueError, match="64 bytes"):
        base._create_view((4, 4))
    with pytest.raises(ValueError):
        base._create_view([4], "int32", relative_byte_offset=10 * 4)


def aligned(values, alignment=64):
    """A numpy copy of values whose data is alignment-aligned (TVM requires 64 for DLPack)."""
    raw = np.zeros(values.nbytes + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    out = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def test_dlpack_from_numpy_shares_memory(tvm):
    src = aligned(np.arange(10, dtype="float32"))
    arr = tvm.nd.from_dlpack(src)
    assert arr.shape == (10,) and arr.dtype == "float32"
    np.testing.assert_array_equal(arr.numpy(), src)
    src[3] = 42.0
    assert arr.numpy()[3] == 42.0


def test_dlpack_to_numpy_shares_memory(tvm):
    arr = tvm.nd.array(np.arange(6, dtype="int64").reshape(2, 3))
    view = np.from_dlpack(arr)
    np.testing.assert_array_equal(view, np.arange(6).reshape(2, 3))
    arr.copyfrom(np.full((2, 3), -1, "int64"))
    np.testing.assert_array_equal(view, np.full((2, 3), -1))
    assert arr.__dlpack_device__() == (1, 0)
    # The exported tensor keeps the array alive after the Python object is gone.
    del arr
    np.testing.assert_array_equal(view, np.full((2, 3), -1))


def test_dlpack_capsule_round_trip(tvm):
    arr = tvm.nd.array(np.arange(5, dtype="uint16"))
    again = tvm.nd.from_dlpack(arr.to_dlpack())
    np.testing.assert_array_equal(again.numpy(), np.arange(5))
    again.copyfrom(np.zeros(5, "uint16"))
    np.testing.assert_array_equal(arr.numpy(), np.zeros(5))


def test_unsupported_device_fails_cleanly(tvm):
    with pytest.raises(tvm.TVMError):
        tvm.nd.empty((2,), "float32", tvm.cuda(0))
