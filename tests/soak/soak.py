"""Soak of the Python binding: callbacks created, called and dropped; global lookups; NDArray
round trips (numpy in, numpy out); runs of TVM 0.18's digits model. Each phase runs `cycles`
iterations; after a warm-up (the first fifth) the resident set may grow by at most `bound` MiB
over the rest, and the runtime's live objects (runtime.LiveObjectCount) must be back at the end
where they were after the warm-up. Prints one line per phase; exit status 1 when a phase grows.

    python tests/soak/soak.py [cycles] [bound_mib]     (defaults: 1000000 cycles, 8 MiB)

The bindings' CI runs it with 20,000 cycles (bindings/python/tests/test_soak.py).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path

import numpy as np

import polyffi

REPO = Path(__file__).resolve().parents[2]
LIB_DIR = Path(os.environ.get("POLYFFI_TEST_LIB_DIR", REPO / "build" / "lib"))
DIGITS = REPO / "tests" / "tvm_models" / "tvm018" / "digits_b1"


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main() -> int:
    cycles = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    bound_mib = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
    polyffi.load_module(str(LIB_DIR / "libpolyffi_testing.so"))
    live = polyffi.get_global_func("runtime.LiveObjectCount")
    apply = polyffi.get_global_func("testing.apply")
    failures = 0

    def phase(name, body):
        nonlocal failures
        warm = cycles // 5
        t0 = time.perf_counter()
        for i in range(warm):
            body(i)
        gc.collect()
        live_before = live()
        before = rss_kib()
        for i in range(warm, cycles):
            body(i)
        gc.collect()
        after = rss_kib()
        live_after = live()
        ok = after - before <= bound_mib * 1024 and live_after == live_before
        failures += not ok
        print(f"{name:<44} {cycles:>9}  {time.perf_counter() - t0:7.2f} s  RSS {before} KiB -> "
              f"{after} KiB ({after - before:+d} KiB after warm-up), live objects "
              f"{live_before} -> {live_after} {'ok' if ok else 'GROWS'}", flush=True)

    def callback(i):
        f = polyffi.convert(lambda x: x * 2)
        assert apply(f, i) == 2 * i

    phase("callback convert/call/drop", callback)

    def lookup(i):
        f = polyffi.get_global_func("testing.add")
        assert f(i, 1) == i + 1

    phase("global lookup/call/drop (testing.add)", lookup)

    src = np.arange(64, dtype="float32")

    def round_trip(i):
        a = polyffi.nd.array(src)
        out = a.numpy()
        assert out[63] == 63.0

    phase("NDArray round trip (numpy in/out)", round_trip)

    factory = polyffi.load_module(str(DIGITS / "factory.so"))
    executor = factory["default"](polyffi.cpu())
    set_input, run, get_output = executor["set_input"], executor["run"], executor["get_output"]
    x = polyffi.nd.array(np.fromfile(DIGITS / "input_data.bin", dtype="float32").reshape(1, 64))
    expected = np.fromfile(DIGITS / "output_0.bin", dtype="float32").reshape(1, 10)

    def model(i):
        set_input("data", x)
        run()
        y = get_output(0)
        if i == 0:
            np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-6)

    phase("model run (digits: set_input/run/get_output)", model)
    print("soak: ok" if failures == 0 else "soak: FAILED", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
