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


def _numpy_version():
    return tuple(int(p) for p in np.__version__.split(".")[:2])


def test_dlpack_out_to_numpy_is_zero_copy(testing):
    nd = polyffi.nd.array(np.array([1.0, 2.0], dtype="float64"))
    view = np.from_dlpack(nd)
    assert view.ctypes.data == nd.data_ptr
    if _numpy_version() >= (2, 1):
        # numpy >= 2.1 reads DLPack 1.0's read-only flag (unset here): the view is writeable.
        view[1] = 7.0
        assert nd.numpy().tolist() == [1.0, 7.0]
    else:
        # numpy < 2.1 (the newest for CPython 3.9) imports every DLPack tensor
        # read-only, as its documentation says; the memory is still shared, so a write
        # through polyffi shows in numpy's view.
        assert not view.flags.writeable
        nd.copyfrom(np.array([1.0, 7.0]))
        assert view.tolist() == [1.0, 7.0]
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
    # The callback sees the caller's array without a copy, but the view it receives lives only as
    # long as the call's frame: handing it back would give the caller a dangling tensor.
    with pytest.raises(ValueError, match="borrowed NDArray view cannot be returned"):
        testing.apply(cb, a)
    assert seen[0][0] is polyffi.NDArray and seen[0][1] == (5,) and seen[0][2] == 5.0
    # What a callback may return instead: an array it owns.
    out = testing.apply(lambda x: polyffi.nd.array(x.numpy() * 2), a)
    assert out.numpy().tolist() == [2.0] * 5


def test_torch_zero_copy(testing):
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.float32)
    assert testing.nd_data_ptr(t) == t.data_ptr()
    nd = polyffi.nd.from_dlpack(t)
    back = torch.from_dlpack(nd)
    assert back.data_ptr() == t.data_ptr()


# ---- Arrays as borrowed views (numpy, buffers, __dlpack__ producers) ---------------------------


def test_numpy_argument_travels_as_a_view(testing):
    a = np.arange(4, dtype="float32")
    assert testing.return_type(a) == "DLTensor*"
    # Inside containers the array must outlive the call: an owned NDArray over the same memory.
    arr = polyffi.Array([a])
    assert isinstance(arr[0], polyffi.NDArray) and arr[0].data_ptr == a.ctypes.data


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "int64", "float32",
                                   "float64", "int16", "uint16", "uint32", "uint64", "float16",
                                   "intc", "long", "longlong", "ulonglong"])
def test_numpy_view_dtypes(testing, dtype):
    a = np.ones(5, dtype=dtype)
    assert testing.nd_data_ptr(a) == a.ctypes.data
    name = "bool" if dtype == "bool" else str(a.dtype)
    if name in ("bool", "int8", "uint8", "int32", "int64", "float32", "float64"):
        assert testing.nd_sum(a) == 5.0
    else:  # the fixture names the dtype it was given: the view carries numpy's exact type
        with pytest.raises(TypeError, match=f"unsupported dtype {name}$"):
            testing.nd_sum(a)


def test_numpy_view_shapes_and_strides(testing):
    a = np.arange(12, dtype="float64").reshape(3, 4)
    assert testing.nd_sum(a) == 66.0
    assert testing.nd_sum(np.array(2.5)) == 2.5  # 0-d
    assert testing.nd_sum(np.zeros((0, 3), dtype="float32")) == 0.0
    col = a[:, 1:]  # not contiguous: strides travel in elements
    assert testing.nd_data_ptr(col) == col.ctypes.data
    with pytest.raises(ValueError, match="not contiguous"):
        testing.nd_sum(col)
    big = np.ones((2,) * 20, dtype="int8")[..., ::1]  # more dimensions than the stride pool
    assert testing.nd_sum(big) == 2.0 ** 20


def test_numpy_subclass_and_out_param(testing):
    class Sub(np.ndarray):
        pass

    s = np.arange(4, dtype="float64").view(Sub)
    assert testing.nd_sum(s) == 6.0 and testing.nd_data_ptr(s) == s.ctypes.data
    out = np.zeros(4, dtype="float32")
    testing.nd_add_one(np.arange(4, dtype="float32"), out)
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_numpy_arrays_dlpack_cannot_carry_keep_their_errors(testing):
    ro = np.arange(3, dtype="float32")
    ro.setflags(write=False)
    with pytest.raises(BufferError):
        testing.nd_sum(ro)
    with pytest.raises(BufferError):
        testing.nd_sum(np.ones(3, dtype=">f4"))


def test_returned_view_of_an_argument_becomes_an_owned_array(testing):
    a = np.arange(6, dtype="int64")
    out = testing.echo(a)
    assert isinstance(out, polyffi.NDArray) and not out.is_view
    assert out.data_ptr == a.ctypes.data and out.shape == (6,)
    del a
    assert out.numpy().tolist() == [0, 1, 2, 3, 4, 5]  # the array keeps the memory alive


def test_view_kept_by_a_callback_is_detached(testing):
    kept = []

    def cb(x):
        kept.append(x)
        return float(x.numpy().sum())

    assert testing.apply(cb, np.ones(3, dtype="float32")) == 3.0
    assert kept[0].is_view
    with pytest.raises(ValueError, match="released"):
        _ = kept[0].shape


def test_buffer_protocol_arguments(testing):
    import array

    assert testing.nd_sum(array.array("d", [1.0, 2.5])) == 3.5
    assert testing.nd_sum(memoryview(array.array("i", [1, 2, 3]))) == 6.0
    base = array.array("q", range(8))
    strided = memoryview(base)[2::2]
    assert testing.nd_data_ptr(strided) == base.buffer_info()[0] + 2 * base.itemsize
    out = testing.echo(array.array("f", [1.0, 2.0]))
    assert isinstance(out, polyffi.NDArray) and out.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="cannot carry"):
        testing.nd_sum(memoryview(bytearray(b"ab")).cast("c"))
    with pytest.raises(BufferError, match="not writable"):
        testing.nd_sum(memoryview(b"read-only"))


class _DLPackOnly:
    """A producer with only __dlpack__ (like torch), backed by a numpy array."""

    def __init__(self, a):
        self.a = a
        self.calls = 0

    def __dlpack__(self, stream=None):
        self.calls += 1
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_dlpack_producer_argument(testing):
    a = np.arange(4, dtype="float32")
    p = _DLPackOnly(a)
    assert testing.nd_sum(p) == 6.0
    assert testing.nd_data_ptr(p) == a.ctypes.data
    assert testing.return_type(p) == "DLTensor*"
    out = testing.echo(p)
    assert isinstance(out, polyffi.NDArray) and out.data_ptr == a.ctypes.data
    assert polyffi.Array([p])[0].data_ptr == a.ctypes.data
