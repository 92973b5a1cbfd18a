"""Runs one case of tests/conformance/cases/*.json through the polyffi Python binding.

Mirrors the C runner (tests/conformance/runner_c/case_runner.cc): the same tags, steps and
checks, with the host callbacks of docs/spec/conformance.md section 2 (host callbacks) written in
Python.
"""

from __future__ import annotations

import asyncio
import gc
import math
import struct
import threading
from typing import Any, Dict, List, Optional

import numpy as np

import polyffi
from polyffi import _core


class Failure(AssertionError):
    """A case did not behave as its file says."""


# ---- Host callables ------------------------------------------------------------------------------

_live_lock = threading.Lock()
_created: Dict[int, int] = {}
_finalized: Dict[int, int] = {}
_current_case = 0


class HostCallable:
    """A host function of one case. Counted alive until the runtime's finalizer drops it."""

    def __init__(self, name: str, impl, serial: int):
        self.name = name
        self.impl = impl
        self.serial = serial
        with _live_lock:
            _created[serial] = _created.get(serial, 0) + 1

    def __call__(self, *args):
        return self.impl(*args)

    def __del__(self):
        with _live_lock:
            _finalized[self.serial] = _finalized.get(self.serial, 0) + 1


def host_live(serial: int) -> int:
    # Exceptions stashed for re-raising (per thread) and reference cycles may still hold host
    # callables; both are released here, as a program would see at its next error / GC.
    _core.clear_error_stash()
    gc.collect()
    with _live_lock:
        return _created.get(serial, 0) - _finalized.get(serial, 0)


def _check_int(who: str, i: int, x: Any) -> int:
    if not isinstance(x, int):
        raise TypeError(f"{who}: argument {i} expected int but got {type(x).__name__}")
    return x


def _host_add(*args):
    return sum(_check_int("host.add", i, a) for i, a in enumerate(args))


def _host_concat(*args):
    out = []
    for i, a in enumerate(args):
        if isinstance(a, bytes):
            a = a.decode("utf-8", "surrogateescape")
        if not isinstance(a, str):
            raise TypeError(f"host.concat: argument {i} expected str but got {type(a).__name__}")
        out.append(a)
    return "".join(out)


def _host_identity(*args):
    if len(args) == 0:
        return None
    if len(args) != 1:
        raise TypeError(f"host.identity expected 1 argument but got {len(args)}")
    return args[0]


def _host_raise_value_error(*args):
    raise ValueError("host boom")


def _host_return_none(*args):
    return None


def _host_adder(*args):
    if len(args) != 1:
        raise TypeError(f"host.adder expected 1 argument but got {len(args)}")
    y = _check_int("host.adder", 0, args[0])

    def closure(*xs):
        if len(xs) != 1:
            raise TypeError(f"host.adder.<closure> expected 1 argument but got {len(xs)}")
        return _check_int("host.adder.<closure>", 0, xs[0]) + y

    return HostCallable("host.adder.<closure>", closure, _current_case)


def _host_return_unsupported(*args):
    return object()


def _host_call_echo(*args):
    return polyffi.get_global_func("testing.echo")(*args)


HOSTS = {
    "host.add": _host_add,
    "host.concat": _host_concat,
    "host.identity": _host_identity,
    "host.raise_value_error": _host_raise_value_error,
    "host.return_none": _host_return_none,
    "host.adder": _host_adder,
    "host.call_echo": _host_call_echo,
    "host.return_unsupported": _host_return_unsupported,
}


def make_host_function(name: str, serial: int) -> polyffi.PackedFunc:
    impl = HOSTS.get(name)
    if impl is None:
        raise Failure(f"unknown host function {name}")
    # Only the runtime keeps the HostCallable: its finalizer is what makes it die.
    return polyffi.convert(HostCallable(name, impl, serial))


# ---- Values ---------------------------------------------------------------------------------


def parse_float(body) -> float:
    if isinstance(body, (int, float)) and not isinstance(body, bool):
        return float(body)
    table = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}
    if body in table:
        return table[body]
    raise Failure(f"bad float {body!r}")


def float_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def tag_of(tagged) -> tuple:
    if not isinstance(tagged, dict) or len(tagged) != 1:
        raise Failure(f"expected a tagged value with exactly one key, got {tagged!r}")
    return next(iter(tagged.items()))


def string_of(tag: str, body) -> str:
    if tag == "str":
        return body
    unit, count = body
    return unit * count


def ndarray_numpy(body) -> np.ndarray:
    dtype = body["dtype"]
    data = [parse_float(e) if dtype.startswith("float") else e for e in body["data"]]
    return np.array(data, dtype=dtype).reshape(body["shape"])


def type_name(v: Any) -> str:
    """The C runner's TypeCodeName for the Python value a call returned."""
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, bytes):
        return "bytes"
    if isinstance(v, polyffi.Device):
        return "Device"
    if isinstance(v, polyffi.DataType):
        return "dtype"
    if isinstance(v, polyffi.PackedFunc):
        return "Function"
    if isinstance(v, polyffi.Module):
        return "Module"
    if isinstance(v, polyffi.NDArray):
        return "NDArray"
    if isinstance(v, _core.ObjectBase):
        return "Object"
    return type(v).__name__


def describe(v: Any) -> str:
    text = repr(v)
    if isinstance(v, float):
        text += f" (bits {float_bits(v):#x})"
    return f"{type_name(v)} {text[:200]}"


def error_parts(e: BaseException) -> tuple:
    """(kind, message, full text) of an exception raised by a call."""
    kind = getattr(e, "kind", None) or type(e).__name__
    message = str(e).split("\n", 1)[0]
    return kind, message, f"{kind}: {e}"


class CaseRun:
    """State of one running case: bound variables, registered names, loaded modules."""

    def __init__(self, lib_dir: str, serial: int):
        self.lib_dir = lib_dir
        self.serial = serial
        self.vars: Dict[str, Any] = {}
        self.modules: List[Any] = []
        self.registered: List[str] = []

    # -- building ------------------------------------------------------------------------------

    def var(self, name: str):
        if name not in self.vars:
            raise Failure(f"variable {name} is not bound")
        return self.vars[name]

    def load_module(self, name: str):
        return polyffi.load_module(f"{self.lib_dir}/lib{name}.so")

    def resolve_module(self, ref):
        m = self.load_module(ref) if isinstance(ref, str) else self.build(ref)
        if not isinstance(m, polyffi.Module):
            raise Failure(f"expected a module but got {describe(m)}")
        return m

    def module_function(self, spec, required: bool):
        m = self.resolve_module(spec["module"])
        name = spec["function"]
        try:
            return m.get_function(name, spec.get("query_imports", False))
        except AttributeError:
            if required:
                raise Failure(f"module has no function {name}") from None
            return None

    def build(self, tagged):
        tag, body = tag_of(tagged)
        if tag == "int":
            return int(body)
        if tag == "float":
            return parse_float(body)
        if tag == "bool":
            return bool(body)
        if tag in ("str", "str_repeat"):
            return string_of(tag, body)
        if tag == "bytes_hex":
            return bytes.fromhex(body)
        if tag == "null":
            return None
        if tag == "device":
            return polyffi.Device(body[0], body[1])
        if tag == "dtype":
            return polyffi.DataType(body)
        if tag == "host":
            return make_host_function(body, self.serial)
        if tag == "global":
            return polyffi.get_global_func(body)
        if tag == "var":
            return self.var(body)
        if tag == "module":
            return self.load_module(body)
        if tag == "array":
            return polyffi.Array([self.build(item) for item in body])
        if tag == "map":
            return polyffi.Map({self.build(k): self.build(v) for k, v in body})
        if tag == "shape":
            return polyffi.Shape(body)
        if tag == "ndarray":
            arr = ndarray_numpy(body)
            out = polyffi.nd.empty(arr.shape, body["dtype"])
            out.copyfrom(arr)
            return out
        raise Failure(f"unknown value tag {tag}")

    # -- checking ------------------------------------------------------------------------------

    def expect(self, expect, actual, args, path: str):
        tag, body = tag_of(expect)

        def fail(why: str = ""):
            raise Failure(f"{path}: expected {str(expect)[:300]} but got {describe(actual)}"
                          + (f" ({why})" if why else ""))

        def need(kind: str):
            if type_name(actual) != kind:
                fail(f"type {type_name(actual)}, want {kind}")

        if tag == "int":
            need("int")
            if actual != body:
                fail()
        elif tag == "bool":
            need("bool")
            if actual != body:
                fail()
        elif tag == "float":
            need("float")
            if float_bits(actual) != float_bits(parse_float(body)):
                fail("bits differ")
        elif tag in ("str", "str_repeat"):
            need("str")
            if actual != string_of(tag, body):
                fail()
        elif tag == "bytes_hex":
            need("bytes")
            if actual != bytes.fromhex(body):
                fail()
        elif tag == "null":
            need("None")
        elif tag == "device":
            need("Device")
            if (actual.device_type, actual.device_id) != tuple(body):
                fail()
        elif tag == "dtype":
            need("str")  # docs/abi-decisions.md: dtypes come back as their string form
            if actual != body:
                fail()
        elif tag == "any":
            if type_name(actual) != body:
                fail()
        elif tag in ("same_as_arg", "var"):
            if tag == "var":
                want = self.var(body)
            else:
                if body >= len(args):
                    raise Failure(f"{path}: same_as_arg {body} out of range")
                want = args[body]
            if type_name(actual) != type_name(want):
                fail(f"type differs from {describe(want)}")
            if isinstance(want, _core.ObjectBase):
                if actual.handle != want.handle:
                    fail("not the same handle")
            elif isinstance(want, float):
                if float_bits(actual) != float_bits(want):
                    fail()
            elif isinstance(want, (polyffi.Device,)):
                if actual != want:
                    fail()
            elif actual != want:
                fail()
        elif tag == "array":
            if not isinstance(actual, polyffi.Array):
                fail("not an Array")
            if len(actual) != len(body):
                fail(f"size {len(actual)}")
            for i, item in enumerate(body):
                self.expect(item, actual[i], args, f"{path}[{i}]")
        elif tag == "map":
            if not isinstance(actual, polyffi.Map):
                fail("not a Map")
            if len(actual) != len(body):
                fail(f"size {len(actual)}")
            for k, v in body:
                key = self.build(k)
                try:
                    item = actual[key]
                except Exception as e:  # noqa: BLE001 - reported as a failure
                    fail(f"looking up key {k}: {e}")
                self.expect(v, item, args, f"{path}[{k}]")
        elif tag == "shape":
            if type(actual) is not polyffi.Shape:
                fail("not a polyffi.Shape")
            if len(actual) != len(body) or any(type(d) is not int for d in actual):
                fail(f"size {len(actual)}")
            if actual != tuple(body):
                fail("dimensions differ")
        elif tag == "ndarray":
            if not isinstance(actual, polyffi.NDArray):
                fail("not an NDArray")
            if actual.dtype != body["dtype"]:
                fail("dtype differs")
            if actual.shape != tuple(body["shape"]):
                fail("shape differs")
            got = actual._to_bytes()
            if got != ndarray_numpy(body).tobytes():
                fail(f"data differs: {got.hex()[:200]}")
        else:
            raise Failure(f"{path}: unknown expectation tag {tag}")

    @staticmethod
    def expect_error(spec, e: BaseException):
        kind, message, text = error_parts(e)

        def fail(why: str):
            raise Failure(f"expected error {spec} but got {type(e).__name__} {text!r} ({why})")

        if "kind" in spec and kind != spec["kind"]:
            fail("kind")
        if "kind" in spec and not isinstance(e, polyffi.FFIError):
            # Python's own exceptions re-raised from callbacks keep their class; the kind is
            # the class name, which must still be the builtin of that name.
            if type(e).__name__ != spec["kind"]:
                fail("class")
        if "message" in spec and message != spec["message"]:
            fail("message")
        if "contains" in spec and spec["contains"] not in text:
            fail("text")

    # -- steps ---------------------------------------------------------------------------------

    def run_call(self, step, function):
        if not isinstance(function, polyffi.PackedFunc):
            raise Failure(f"callee is not a function: {describe(function)}")
        args = [self.build(a) for a in step["args"]]
        try:
            if step.get("async"):  # the core's async pool, through f.call_async
                result = asyncio.run(function.call_async(*args))
            else:
                result = function(*args)
        except Exception as e:  # noqa: BLE001 - compared against the case
            if "expect_error" in step:
                self.expect_error(step["expect_error"], e)
                return
            raise Failure(f"call failed: {type(e).__name__}: {e}") from e
        if "expect_error" in step:
            raise Failure(f"expected error {step['expect_error']} but the call returned "
                          f"{describe(result)}")
        if "expect" in step:
            self.expect(step["expect"], result, args, "result")
        if "bind" in step:
            self.vars[step["bind"]] = result

    def run_step(self, step):
        if "call" in step:
            self.run_call(step, polyffi.get_global_func(step["call"]))
        elif "call_value" in step:
            self.run_call(step, self.build(step["call_value"]))
        elif "module_call" in step:
            self.run_call(step, self.module_function(step["module_call"], True))
        elif "let" in step:
            self.vars[step["let"]] = self.build(step["value"])
        elif "release" in step:
            if self.vars.pop(step["release"], _MISSING) is _MISSING:
                raise Failure(f"release of unbound variable {step['release']}")
        elif "register" in step:
            name = step["register"]
            f = self.build(step["value"])
            if not isinstance(f, polyffi.PackedFunc):
                raise Failure("register needs a function")
            try:
                polyffi.register_func(name, f, override=step.get("override", False))
            except Exception as e:  # noqa: BLE001
                if "expect_error" not in step:
                    raise Failure(f"register failed: {e}") from e
                self.expect_error(step["expect_error"], e)
                return
            self.registered.append(name)
            if "expect_error" in step:
                raise Failure(f"register {name} succeeded")
        elif "remove" in step:
            polyffi.remove_global_func(step["remove"])
        elif "exists" in step:
            found = polyffi.get_global_func(step["exists"], allow_missing=True) is not None
            if found != step["expect"]:
                raise Failure(f"get_global_func({step['exists']!r}) "
                              + ("found it" if found else "did not find it"))
        elif "listed" in step:
            names = polyffi.list_global_func_names()
            found = step["listed"] in names
            if found != step["expect"]:
                raise Failure(f"list_global_func_names {'lists' if found else 'does not list'} "
                              f"{step['listed']} ({len(names)} names)")
        elif "host_live" in step:
            live = host_live(self.serial)
            if live != step["host_live"]:
                raise Failure(f"host callables alive: {live}, want {step['host_live']}")
        elif "load_module" in step:
            try:
                m = self.load_module(step["load_module"])
            except Exception as e:  # noqa: BLE001
                if "expect_error" not in step:
                    raise Failure(f"load failed: {e}") from e
                self.expect_error(step["expect_error"], e)
                return
            if "expect_error" in step:
                raise Failure("loading the module succeeded")
            if "bind" in step:
                self.vars[step["bind"]] = m
            else:
                self.modules.append(m)
        elif "import" in step:
            m = self.resolve_module(step["import"]["module"])
            dep = self.resolve_module(step["import"]["dep"])
            m.import_module(dep)
        elif "module_get" in step:
            f = self.module_function(step["module_get"], False)
            if "expect" in step and (f is not None) != step["expect"]:
                raise Failure(f"get_function {'found' if f is not None else 'did not find'} "
                              f"{step['module_get']}")
            if "bind" in step:
                if f is None:
                    raise Failure("module_get found nothing to bind")
                self.vars[step["bind"]] = f
        else:
            raise Failure(f"unknown step {step}")

    def cleanup(self):
        self.vars.clear()
        self.modules.clear()
        for name in self.registered:
            polyffi.remove_global_func(name)
        self.registered.clear()


_MISSING = object()
_serial = 0


def run_case(case: dict, lib_dir: str) -> Optional[str]:
    """Runs one case; returns None when it passes, else the failure message."""
    global _serial, _current_case
    _serial += 1
    serial = _current_case = _serial
    run = CaseRun(lib_dir, serial)
    steps = case["steps"] if "steps" in case else [case]
    message = None
    for i, step in enumerate(steps):
        try:
            run.run_step(step)
        except Exception as e:  # noqa: BLE001 - a failing case, reported with its step
            prefix = f"step {i}: " if "steps" in case else ""
            message = f"{prefix}{e}"
            break
    run.cleanup()
    del run
    if message is None:
        live = host_live(serial)
        if live != 0:
            message = f"after the case: {live} host callable(s) never finalized"
    return message
