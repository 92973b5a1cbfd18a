"""Devices: attributes, streams, enabled runtimes and the thread count."""

import pytest


def test_cpu_exists(tvm):
    assert tvm.cpu(0).exist
    assert tvm.cpu(3).exist  # any CPU id: TVM has one CPU device API
    assert tvm.device("cpu", 0) == tvm.cpu(0)
    assert str(tvm.cpu(0)) == "cpu(0)"


def test_absent_devices(tvm):
    # No device API for them in either runtime: exist is False, not an error.
    assert not tvm.cuda(0).exist
    assert not tvm.vulkan(0).exist
    assert not tvm.device("ext_dev", 0).exist


def test_cpu_attributes(tvm):
    # TVM's CPU device API answers kExist (0) only; every other attribute is None.
    from tvm.runtime import _ffi_api

    assert _ffi_api.GetDeviceAttr(1, 0, 0) == 1
    for kind in range(1, 16):
        assert _ffi_api.GetDeviceAttr(1, 0, kind) is None, kind
    dev = tvm.cpu(0)
    assert dev.max_threads_per_block is None
    assert dev.device_name is None
    assert dev.max_clock_rate is None


def test_streams_on_cpu(tvm):
    dev = tvm.cpu(0)
    stream = dev.create_raw_stream()
    assert stream.value is None  # CPU has no streams: a null one
    dev.set_raw_stream(stream)
    dev.sync()
    dev.sync(stream)
    dev.free_raw_stream(stream)


def test_attributes_of_absent_device(tvm):
    from tvm.runtime import _ffi_api

    assert _ffi_api.GetDeviceAttr(2, 0, 0) == 0
    with pytest.raises(tvm.error.InternalError, match="cuda is not enabled"):
        _ffi_api.GetDeviceAttr(2, 0, 1)


def test_runtime_enabled(tvm):
    assert tvm.runtime.enabled("cpu")
    assert not tvm.runtime.enabled("llvm")  # a compiler, absent from a runtime-only library
    with pytest.raises(tvm.TVMError, match="Unknown optional runtime"):
        tvm.runtime.enabled("no_such_runtime")
    assert not tvm.runtime.enabled("cuda")
    assert not tvm.runtime.enabled("vulkan")


def test_num_threads(tvm):
    # ci/test-tvm-compat.sh sets TVM_NUM_THREADS=2, which both runtimes honour.
    assert tvm.runtime.num_threads() == 2


def test_bad_device_attr_args(tvm):
    from tvm.runtime import _ffi_api

    with pytest.raises((TypeError, tvm.TVMError)):
        _ffi_api.GetDeviceAttr("cpu", 0, 0)
