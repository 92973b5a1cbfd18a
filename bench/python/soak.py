"""Memory soak of the polyffi Python binding: RSS growth over many calls and callbacks.

Prints RSS before/after (after a warm-up) for: 1M mixed calls (ints, str, bytes, containers,
numpy arrays as views, buffers, __dlpack__ producers, returned objects) and 100k callback
create/call/free cycles. Never asserts; a flat RSS is what a reader should see.

    python bench/python/soak.py [--calls N] [--callbacks N]
"""

from __future__ import annotations

import argparse
import gc
import os
from pathlib import Path

import numpy as np

import polyffi

REPO = Path(__file__).resolve().parents[2]
LIB_DIR = Path(os.environ.get("POLYFFI_TEST_LIB_DIR", REPO / "build" / "lib"))
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE // 1024


class _DLPackOnly:
    """A __dlpack__-only producer (like torch), backed by numpy."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()


def calls(t, n: int) -> None:
    import array

    arr = np.ones(8, dtype="float32")
    strided = np.ones((4, 8), dtype="float64")[:, ::2]
    buf = array.array("d", [1.0, 2.0])
    producer = _DLPackOnly(arr)
    for i in range(n):
        k = i % 10
        if k == 0:
            t.add3(i, 1, 2)
        elif k == 1:
            t.echo("soak-string-0123")
        elif k == 2:
            t.bytes_reverse(b"\x00\x01\x02")
        elif k == 3:
            t.echo([1, "a", 2.5])
        elif k == 4:
            t.nd_sum(arr)
        elif k == 5:
            t.echo("nul\0inside")
        elif k == 6:
            t.nd_data_ptr(strided)  # view with element strides
        elif k == 7:
            t.echo(arr)  # the returned view becomes an owned NDArray
        elif k == 8:
            t.nd_sum(buf)  # buffer protocol
        else:
            t.nd_sum(producer)  # __dlpack__ capsule held for the call


def callbacks(t, n: int) -> None:
    for i in range(n):
        f = polyffi.convert(lambda x, i=i: x + i)
        t.apply(f, 1)
        del f
        t.call_and_catch(lambda: 1 / 0)  # an error path too: stash + message


def measure(label: str, fn, n: int) -> None:
    fn(max(n // 10, 1))  # warm-up: caches, allocator pools
    gc.collect()
    before = rss_kib()
    fn(n)
    gc.collect()
    after = rss_kib()
    print(f"{label:40} n={n:>9}  RSS {before:>8} KiB -> {after:>8} KiB  "
          f"growth {after - before:>6} KiB ({(after - before) * 1024 / n:.3f} B/iter)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--callbacks", type=int, default=100_000)
    opts = parser.parse_args()
    polyffi.load_module(str(LIB_DIR / "libpolyffi_testing.so"))
    t = polyffi.init_api("testing")
    live0 = t.live_objects()
    measure("mixed calls", lambda n: calls(t, n), opts.calls)
    measure("callback create/call/free + error", lambda n: callbacks(t, n), opts.callbacks)
    polyffi._core.clear_error_stash()
    gc.collect()
    print(f"testing.live_objects(): {live0} at start, {t.live_objects()} at end")


if __name__ == "__main__":
    main()
