"""GIL release, callbacks and finalizers on native threads, reference counts."""

from __future__ import annotations

import gc
import sys
import threading
import time
import weakref

import pytest

import polyffi


def test_gil_is_released_during_calls(testing):
    ticks = 0
    stop = threading.Event()

    def spin():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)  # let the thread start
    before = ticks
    start = time.perf_counter()
    testing.sleep_ms(500)
    elapsed = time.perf_counter() - start
    during = ticks - before
    stop.set()
    t.join()
    assert elapsed >= 0.45
    # With the GIL held for the whole sleep the other thread could not count at all.
    assert during > 1000, f"other thread made only {during} steps during the native sleep"


def test_callback_on_native_thread(testing):
    seen = []

    def cb(x):
        seen.append(threading.get_ident())
        return x * 2

    assert testing.call_on_thread(cb, 21) == 42
    assert seen and seen[0] != threading.get_ident()


def test_callback_error_on_native_thread(testing):
    def cb():
        raise ValueError("from thread")

    with pytest.raises(ValueError, match="from thread"):
        testing.call_on_thread(cb)


class _Tracked:
    def __init__(self, log):
        self.log = log

    def __call__(self, *args):
        return len(args)

    def __del__(self):
        self.log.append(threading.get_ident())


def test_finalizer_runs_once_on_native_thread(testing):
    log = []
    f = polyffi.convert(_Tracked(log))
    testing.release_on_thread(f)
    del f  # the native thread now holds the last reference
    testing.join_release_threads()
    gc.collect()
    assert len(log) == 1
    assert log[0] != threading.get_ident()


def test_finalizer_runs_once_when_python_drops_last_reference():
    log = []
    f = polyffi.convert(_Tracked(log))
    assert f(1, 2) == 2
    del f
    assert len(log) == 1


def test_wrapped_callback_kept_alive_by_runtime(testing):
    log = []
    g = testing.wrap_callback(_Tracked(log))
    assert g(1, 2, 3) == 3
    assert log == []
    del g
    assert len(log) == 1


def test_refcounts_of_arguments_unchanged(testing):
    s = "refcount-string-" + "x" * 10
    b = b"refcount-bytes"
    big = 10**12
    lst = [1, 2, 3]
    f = polyffi.get_global_func("testing.add")
    objs = [s, b, big, lst, f]
    before = [sys.getrefcount(o) for o in objs]
    for _ in range(100):
        testing.nop(s, b, big, lst, f)
        testing.echo(s)
        testing.echo(f)
    after = [sys.getrefcount(o) for o in objs]
    assert before == after


def test_callback_return_value_refcount(testing):
    result = object.__new__(type("Box", (), {}))  # unsupported type, never converted
    payload = "payload-string-unique"
    before = sys.getrefcount(payload)
    for _ in range(100):
        assert testing.apply(lambda: payload) == payload
    assert sys.getrefcount(payload) == before
    del result


def test_function_handle_survives_python_wrapper(testing):
    def cb(x):
        return x + 1

    ref = weakref.ref(cb)
    f = polyffi.convert(cb)
    del cb
    assert ref() is not None  # the runtime function keeps the callable alive
    assert testing.apply(f, 1) == 2
    del f
    gc.collect()
    assert ref() is None


def test_interpreter_shutdown_with_live_callbacks(lib_dir):
    """Callbacks still held by the runtime (registry, a wrapper, a native thread) at exit."""
    import subprocess
    import textwrap

    script = textwrap.dedent(f"""
        import polyffi
        polyffi.load_module({str(lib_dir / "libpolyffi_testing.so")!r})
        polyffi.register_func("shutdown.cb", lambda x: x)
        t = polyffi.init_api("testing")
        keep = t.wrap_callback(lambda: 1)
        t.release_on_thread(polyffi.convert(lambda: 2))
        print("exiting")
    """)
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "exiting"
