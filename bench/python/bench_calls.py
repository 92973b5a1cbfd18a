"""Call overhead of the polyffi Python binding, side by side with its peers, in one run.

Peers: apache-tvm-ffi (PyPI `apache-tvm-ffi`; its add3 / call_n are the C benchmark's fixtures in
build/lib/libbench_tvm_ffi_fixtures.so), a tiny nanobind extension with the same operations
(bench/python/nb_ext, built here on first use and when its source changes), the same nanobind
functions with the GIL released around the body ("nb+GIL rel.", the floor for a binding that
must release the GIL as docs/spec/bindings.md requires) and ctypes over the same C ABI (the
classic TVM ctypes approach). Prints ns per call (best of several repetitions, the Python loop
included, as in docs/performance/floors.md) and each peer's ratio to polyffi. Never asserts a
time.

    python bench/python/bench_calls.py [--quick]

Needs libpolyffi_testing.so: env POLYFFI_TEST_LIB_DIR, default <repo>/build/lib.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import polyffi

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LIB_DIR = Path(os.environ.get("POLYFFI_TEST_LIB_DIR", REPO / "build" / "lib"))


def best_ns(fn, n: int, reps: int) -> float:
    """Best-of-reps ns per iteration of fn(n) (fn runs its own loop of n calls)."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn(n)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


# ---- peers ---------------------------------------------------------------------------------------


def load_nanobind():
    build = HERE / "build" / "nb_ext"
    source = HERE / "nb_ext" / "nb_bench.cc"
    built = sorted(build.glob("nb_bench*.so"))
    stale = not built or built[0].stat().st_mtime < source.stat().st_mtime
    sys.path.insert(0, str(build))
    if not stale:
        try:
            return importlib.import_module("nb_bench")
        except ImportError:
            pass
    try:
        subprocess.run(["cmake", "-S", str(HERE / "nb_ext"), "-B", str(build), "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release",
                        f"-DPython_EXECUTABLE={sys.executable}"],
                       check=True, capture_output=True)
        subprocess.run(["cmake", "--build", str(build), "-j2"], check=True, capture_output=True)
        importlib.invalidate_caches()  # the directory did not exist at the first attempt
        return importlib.import_module("nb_bench")
    except (OSError, subprocess.CalledProcessError, ImportError) as e:
        print(f"# nanobind peer unavailable: {e}", file=sys.stderr)
        return None


def load_tvm_ffi():
    try:
        import tvm_ffi
    except ImportError as e:
        print(f"# apache-tvm-ffi unavailable: {e}", file=sys.stderr)
        return None
    # bench.add3 / bench.call_n for tvm-ffi: the C benchmark's fixture library (bench/calls/
    # tvm_ffi_fixtures.cc), registered into the tvm_ffi already loaded here (same soname).
    fixtures = LIB_DIR / "libbench_tvm_ffi_fixtures.so"
    if fixtures.exists():
        try:
            ctypes.CDLL(str(fixtures), os.RTLD_GLOBAL)
        except OSError as e:
            print(f"# tvm-ffi fixtures unavailable: {e}", file=sys.stderr)
    else:
        print(f"# {fixtures} not built: no tvm-ffi add3/call_n", file=sys.stderr)
    return tvm_ffi


class TVMValue(ctypes.Union):
    _fields_ = [("v_int64", ctypes.c_int64), ("v_float64", ctypes.c_double),
                ("v_handle", ctypes.c_void_p), ("v_str", ctypes.c_char_p)]


PackedCFunc = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(TVMValue),
                               ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p,
                               ctypes.c_void_p)


class CtypesFFI:
    """The classic ctypes binding: pack TVMValue arrays in Python, call TVMFuncCall."""

    def __init__(self):
        self.lib = ctypes.CDLL(str(Path(polyffi.__file__).parent / "libpolyffi.so"))
        self.lib.TVMFuncCall.argtypes = [ctypes.c_void_p, ctypes.POINTER(TVMValue),
                                         ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                         ctypes.POINTER(TVMValue), ctypes.POINTER(ctypes.c_int)]
        self.lib.TVMFuncGetGlobal.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        self.lib.TVMFuncFree.argtypes = [ctypes.c_void_p]
        self.lib.TVMCFuncSetReturn.argtypes = [ctypes.c_void_p, ctypes.POINTER(TVMValue),
                                               ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self.lib.TVMFuncCreateFromCFunc.argtypes = [PackedCFunc, ctypes.c_void_p, ctypes.c_void_p,
                                                    ctypes.POINTER(ctypes.c_void_p)]

    def get(self, name: str):
        h = ctypes.c_void_p()
        if self.lib.TVMFuncGetGlobal(name.encode(), ctypes.byref(h)) != 0:
            raise RuntimeError(name)
        return h

    def lookup(self, name: str):
        h = self.get(name)
        self.lib.TVMFuncFree(h)

    def call(self, h, *args):
        n = len(args)
        values = (TVMValue * n)()
        codes = (ctypes.c_int * n)()
        keep = []
        for i, a in enumerate(args):
            if isinstance(a, int):
                values[i].v_int64 = a
                codes[i] = 0
            elif isinstance(a, str):
                b = a.encode()
                keep.append(b)
                values[i].v_str = b
                codes[i] = 11
            elif isinstance(a, ctypes.c_void_p):
                values[i].v_handle = a
                codes[i] = 10
            else:
                raise TypeError(type(a).__name__)
        ret = TVMValue()
        ret_code = ctypes.c_int()
        if self.lib.TVMFuncCall(h, values, codes, n, ctypes.byref(ret), ctypes.byref(ret_code)):
            raise RuntimeError("TVMFuncCall failed")
        if ret_code.value == 0:
            return ret.v_int64
        if ret_code.value == 11:
            return ret.v_str.decode()
        return None

    def callback(self, py_fn):
        """A function handle whose body calls py_fn(int) -> int (ctypes trampoline)."""

        def tramp(args, codes, n, ret, _resource):
            out = TVMValue()
            out.v_int64 = py_fn(*[args[i].v_int64 for i in range(n)])
            code = ctypes.c_int(0)
            return self.lib.TVMCFuncSetReturn(ret, ctypes.byref(out), ctypes.byref(code), 1)

        cfunc = PackedCFunc(tramp)
        h = ctypes.c_void_p()
        if self.lib.TVMFuncCreateFromCFunc(cfunc, None, None, ctypes.byref(h)) != 0:
            raise RuntimeError("TVMFuncCreateFromCFunc failed")
        return h, cfunc


# ---- benchmark -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    opts = parser.parse_args()
    n = 50_000 if opts.quick else 300_000
    reps = 3 if opts.quick else 7
    n_cb = 100_000 if opts.quick else 1_000_000

    polyffi.load_module(str(LIB_DIR / "libpolyffi_testing.so"))
    t = polyffi.init_api("testing")
    nb = load_nanobind()
    tf = load_tvm_ffi()
    ct = CtypesFFI()

    s16 = "0123456789abcdef"
    arrays = [np.zeros(16, dtype="float32") for _ in range(3)]
    cb = lambda i: i  # noqa: E731 - the callback under test

    def loop(f, *args):
        def run(k):
            for _ in range(k):
                f(*args)
        return run

    rows = []  # (name, {peer: ns or None})

    # polyffi
    poly = {
        "nop()": loop(t.nop),
        "add3(1, 2, 3)": loop(t.add3, 1, 2, 3),
        "echo(16-byte str)": loop(t.echo, s16),
        "nop(x, y, z) numpy": loop(t.nop, *arrays),
        "get_global_func": loop(polyffi.get_global_func, "testing.nop"),
    }
    peers = {"polyffi": poly}
    if tf is not None:
        tf_nop = tf.get_global_func("testing.nop")
        tf_echo = tf.get_global_func("testing.echo")
        peers["tvm-ffi"] = {
            "nop()": loop(tf_nop),
            "echo(16-byte str)": loop(tf_echo, s16),
            "get_global_func": loop(tf.get_global_func, "testing.nop"),
        }
        tf_add3 = tf.get_global_func("bench.add3", allow_missing=True)
        tf_call_n = tf.get_global_func("bench.call_n", allow_missing=True)
        if tf_add3 is not None:
            peers["tvm-ffi"]["add3(1, 2, 3)"] = loop(tf_add3, 1, 2, 3)
        try:
            tf_nop(*arrays)
            peers["tvm-ffi"]["nop(x, y, z) numpy"] = loop(tf_nop, *arrays)
        except Exception as e:  # noqa: BLE001 - the peer may not take numpy arrays
            print(f"# tvm-ffi nop(numpy): {type(e).__name__}: {e}", file=sys.stderr)
    if nb is not None:
        peers["nanobind"] = {
            "nop()": loop(nb.nop),
            "add3(1, 2, 3)": loop(nb.add3, 1, 2, 3),
            "echo(16-byte str)": loop(nb.echo, s16),
            "nop(x, y, z) numpy": loop(nb.nop, *arrays),
        }
        if hasattr(nb, "nop_nogil"):
            peers["nb+GIL rel."] = {
                "nop()": loop(nb.nop_nogil),
                "add3(1, 2, 3)": loop(nb.add3_nogil, 1, 2, 3),
            }
    h_nop, h_add3, h_echo = ct.get("testing.nop"), ct.get("testing.add3"), ct.get("testing.echo")
    peers["ctypes"] = {
        "nop()": loop(ct.call, h_nop),
        "add3(1, 2, 3)": loop(ct.call, h_add3, 1, 2, 3),
        "echo(16-byte str)": loop(ct.call, h_echo, s16),
        "get_global_func": loop(ct.lookup, "testing.nop"),
    }

    ops = ["nop()", "add3(1, 2, 3)", "echo(16-byte str)", "nop(x, y, z) numpy", "get_global_func"]
    for op in ops:
        rows.append((op, {p: (best_ns(fns[op], n, reps) if op in fns else None)
                          for p, fns in peers.items()}))

    # Callbacks: native code calls a Python function n_cb times; ns per callback.
    cb_row = {"polyffi": best_ns(lambda k: t.call_n(cb, k), n_cb, 3)}
    if tf is not None and tf_call_n is not None:
        assert tf_call_n(cb, 1000) == t.call_n(cb, 1000) == 499500
        cb_row["tvm-ffi"] = best_ns(lambda k: tf_call_n(cb, k), n_cb, 3)
    if nb is not None:
        cb_row["nanobind"] = best_ns(lambda k: nb.call_n(cb, k), n_cb, 3)
    h_cb, keep = ct.callback(cb)
    h_call_n = ct.get("testing.call_n")
    cb_row["ctypes"] = best_ns(lambda k: ct.call(h_call_n, h_cb, k), n_cb // 4, 3)
    del keep
    rows.append(("call_n(py callback)/call", cb_row))

    names = list(peers)
    print(f"# Python {sys.version.split()[0]}, numpy {np.__version__}, "
          f"apache-tvm-ffi {getattr(tf, '__version__', 'n/a')}, n={n}, reps={reps}")
    header = f"{'operation':28}" + "".join(f"{p:>12}" for p in names) + "   ratios to polyffi"
    print(header)
    for op, res in rows:
        cells = "".join(f"{res[p]:12.1f}" if res.get(p) is not None else f"{'n/a':>12}"
                        for p in names)
        base = res["polyffi"]
        ratios = ", ".join(f"{p} {res[p] / base:.2f}x" for p in names[1:]
                           if res.get(p) is not None)
        print(f"{op:28}{cells}   {ratios}")


if __name__ == "__main__":
    main()
