"""time_evaluator (runtime.RPCTimeEvaluator, run locally) and GraphModule.benchmark."""

import numpy as np
import pytest
from conftest import FIXTURES


@pytest.fixture
def host_call(tvm, add_one_calls):
    """host_call.so calls polyffi_test.add_one once per call: a counter of kernel calls."""
    lib = tvm.runtime.load_module(str(FIXTURES / "te_kernels" / "host_call.so"))
    a = tvm.nd.array(np.arange(64, dtype="float32"))
    out = tvm.nd.empty((64,), "float32")
    return lib, a, out, add_one_calls


def test_time_evaluator_calls_and_results(tvm, host_call):
    lib, a, out, calls = host_call
    result = lib.time_evaluator("host_call", tvm.cpu(), number=3, repeat=2)(a, out)
    # One warm-up call, then repeat x number timed calls; one mean per repeat.
    assert len(calls) == 1 + 3 * 2
    assert len(result.results) == 2
    assert all(isinstance(t, float) and t > 0 for t in result.results)
    assert result.min <= result.mean <= result.max
    np.testing.assert_array_equal(out.numpy(), np.arange(64) + 1)


def test_time_evaluator_min_repeat_ms(tvm, host_call):
    lib, a, out, calls = host_call
    result = lib.time_evaluator("host_call", tvm.cpu(), number=1, repeat=2, min_repeat_ms=1)(
        a, out)
    assert len(result.results) == 2
    # Each repeat ran at least once more than the warm-up (more while under 1 ms).
    assert len(calls) >= 1 + 2


def test_time_evaluator_raw_blob(tvm, host_call):
    import struct

    lib, a, out, calls = host_call
    from tvm.runtime import _ffi_api

    feval = _ffi_api.RPCTimeEvaluator(lib, "host_call", 1, 0, 2, 4, 0, 100, 0, 1, 0, "")
    blob = feval(a, out)
    assert isinstance(blob, bytearray) and len(blob) == 4 * 8
    assert all(t > 0 for t in struct.unpack("<4d", blob))
    assert len(calls) == 1 + 2 * 4


def test_time_evaluator_missing_function(tvm, host_call):
    lib = host_call[0]
    with pytest.raises(tvm.TVMError):
        lib.time_evaluator("no_such_function", tvm.cpu())


def test_graph_benchmark(tvm):
    from tvm.contrib import graph_executor

    d = FIXTURES / "digits_b1"
    gm = graph_executor.GraphModule(
        tvm.runtime.load_module(str(d / "factory.so"))["default"](tvm.cpu()))
    gm.set_input("data", np.zeros((1, 64), "float32"))
    result = gm.benchmark(tvm.cpu(), number=2, repeat=3)
    assert len(result.results) == 3 and all(t > 0 for t in result.results)
    # end_to_end: run_from_inputs sets the inputs, runs, and is what gets timed.
    data = tvm.nd.array(np.ones((1, 64), "float32"))
    result = gm.benchmark(tvm.cpu(), number=1, repeat=2, end_to_end=True, data=data)
    assert len(result.results) == 2
    np.testing.assert_array_equal(gm.get_input("data").numpy(), np.ones((1, 64)))
