"""VirtualMachine: a relax VM executable (what TVM 0.2x's ``export_library`` writes), run by name.

Built on the executable module's own protocol, as ``tvm.relax.VirtualMachine`` does it::

    lib = polyffi.load_module("model.so")           # TVM 0.27: relax.build(...).export_library
    vm = polyffi.VirtualMachine(lib, polyffi.cpu())  # vm_load_executable + vm_initialization
    y = vm["forward"](x).numpy()                    # or vm.invoke("forward", x)

Arguments: NDArrays pass as they are. A numpy array (or any buffer / ``__dlpack__`` producer)
travels as a borrowed view that the VM copies into an aligned array of its own, so the caller's
array may be reused at once; a C-contiguous numpy array of 16 KiB or more whose data is 64-byte
aligned is passed zero-copy instead (wrapped as an NDArray that keeps it alive). TVM's kernels
assume 64-byte-aligned buffers without checking (TVM's own runtime crashes on a misaligned
view); polyffi never hands them one: misaligned NDArrays are staged through an aligned copy.
Lists and tuples become runtime Arrays (tuple parameters); ints, floats and shapes pass as values.
Results: an NDArray, or a ``polyffi.Array`` (a Sequence) of results for a relax Tuple, as TVM
returns them. A result stays valid after the next call (it holds its own storage). Wrong shapes,
dtypes or argument counts raise the VM's error (ValueError, TypeError, RuntimeError, ...) naming
the parameter.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _core
from .ndarray import NDArray
from .registry import Module
from .value import Array, Device, cpu

#: TVM's allocator kinds for vm_initialization: 1 naive, 2 pooled (TVM's default).
_ALLOCATORS = {"naive": 1, "pooled": 2}
_ALIGN = 64
#: Below this many bytes the VM's own copy (a memcpy in C) is cheaper than wrapping the array.
_ZERO_COPY_MIN = 16384

try:  # numpy is optional for the binding
    import numpy as _np

    _ndarray_type: Any = _np.ndarray
except ImportError:  # pragma: no cover
    _np = None
    _ndarray_type = None


def _zero_copy(arr: Any) -> Optional[NDArray]:
    """arr as an NDArray over the same memory, or None when it cannot be (then it is copied)."""
    if not arr.flags.c_contiguous:
        return None
    try:
        view = _core.nd_from_dlpack(arr)
    except BufferError:  # read-only, or a dtype DLPack cannot carry: the call path decides
        return None
    return view if view.data_ptr % _ALIGN == 0 else None


def _convert_arg(value: Any) -> Any:
    """The argument the VM function receives for value (see the module docstring)."""
    t = type(value)
    if t is _ndarray_type:
        if value.nbytes >= _ZERO_COPY_MIN:
            view = _zero_copy(value)
            if view is not None:
                return view
        return value
    if t is list or t is tuple:
        return Array([_convert_arg(v) for v in value])
    return value


def _prepare(args: Sequence[Any]) -> Sequence[Any]:
    """args unchanged unless one of them needs converting (the common case costs a type check)."""
    out = None
    for i, a in enumerate(args):
        t = type(a)
        if t is NDArray:
            continue
        if t is _ndarray_type:
            if a.nbytes < _ZERO_COPY_MIN:
                continue
        elif t is not list and t is not tuple:
            continue
        if out is None:
            out = list(args)
        out[i] = _convert_arg(a)
    return args if out is None else out


def _call(f: Any, args: Sequence[Any]) -> Any:
    try:
        return f(*_prepare(args))
    except BufferError:
        # The binding cannot view a read-only numpy array (DLPack has no read-only flag): pass
        # a copy of each such array; anything else is the caller's error, raised as it came.
        if _np is None or not any(type(a) is _ndarray_type and not a.flags.writeable
                                  for a in args):
            raise
        copies = [a.copy() if type(a) is _ndarray_type and not a.flags.writeable else a
                  for a in args]
        return f(*_prepare(copies))


class VirtualMachine:
    """Runs the functions of a relax VM executable (``lib["vm_load_executable"]()``)."""

    def __init__(self, lib: Module, device: Optional[Device] = None,
                 memory_cfg: str = "pooled") -> None:
        if not isinstance(lib, Module):
            kind = type(lib).__name__
            raise TypeError(f"VirtualMachine(lib, device): expected a Module but got {kind}")
        if "vm_load_executable" not in lib:
            raise TypeError(
                f"VirtualMachine(lib, device): module of type {lib.type_key!r} is not a relax VM "
                "executable (no vm_load_executable); a TVM 0.18 graph export goes to GraphModule")
        if device is None:
            device = cpu()
        if not isinstance(device, Device):
            raise TypeError(
                f"VirtualMachine(lib, device): device must be a polyffi.Device, "
                f"not {type(device).__name__}")
        if memory_cfg not in _ALLOCATORS:
            raise ValueError(
                f"VirtualMachine: memory_cfg must be one of {sorted(_ALLOCATORS)}, "
                f"not {memory_cfg!r}")
        alloc = _ALLOCATORS[memory_cfg]
        self.lib = lib
        self.device = device
        self.module: Module = lib["vm_load_executable"]()
        init_args: List[int] = [device.device_type, device.device_id, alloc]
        if device.device_type != 1:  # TVM's wrapper always adds the CPU for host-side work
            init_args += [1, 0, alloc]
        self.module["vm_initialization"](*init_args)
        self._functions: Dict[str, Any] = {}

    def _function(self, name: str):
        f = self._functions.get(name)
        if f is None:
            if not isinstance(name, str):
                raise TypeError("VirtualMachine[name]: name must be a str")
            try:
                f = self.module[name]
            except AttributeError:
                raise AttributeError(
                    f"VirtualMachine: the executable has no function '{name}'") from None
            self._functions[name] = f
        return f

    def invoke(self, name: str, *args: Any) -> Any:
        """Run function ``name``; an NDArray, or an Array (a Sequence) for a tuple result."""
        return _call(self._function(name), args)

    def __getitem__(self, name: str) -> Callable[..., Any]:
        """The function ``name`` as a callable (looked up once; call it many times)."""
        f = self._function(name)

        def call(*args: Any) -> Any:
            return _call(f, args)

        call.__name__ = name
        call.__doc__ = f"The VM function {name!r}."
        return call

    def __contains__(self, name: str) -> bool:
        return name in self.module

    # ------------------------------------------------------------ stateful API (as TVM's)

    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Store inputs for ``invoke_stateful(func_name)``; keyword arguments by parameter name."""
        if kwargs:
            names = self.param_names(func_name)
            unknown = sorted(set(kwargs) - set(names))
            if unknown:
                raise TypeError(f"set_input: {func_name} has no parameter {', '.join(unknown)}")
            given = list(args) + [None] * (len(names) - len(args))
            for k, v in kwargs.items():
                i = names.index(k)
                if i < len(args):
                    raise TypeError(f"set_input: parameter {k} given twice")
                given[i] = v
            missing = [names[i] for i, v in enumerate(given) if v is None]
            if missing:
                raise TypeError(f"set_input: missing parameter {', '.join(missing)}")
            args = tuple(given)
        _call(self.module["set_input"], (func_name,) + tuple(args))

    def invoke_stateful(self, func_name: str) -> None:
        """Run ``func_name`` on the inputs given to set_input; read results with get_outputs."""
        self.module["invoke_stateful"](func_name)

    def get_outputs(self, func_name: str) -> Any:
        """The result of the last invoke_stateful(func_name): an NDArray or a tuple of them."""
        arity = self.module["get_output_arity"](func_name)
        if arity == -1:
            return self.module["get_output"](func_name)
        return tuple(self._get_output(func_name, i) for i in range(arity))

    def _get_output(self, func_name: str, *index: int) -> Any:
        arity = self.module["get_output_arity"](func_name, *index)
        if arity == -1:
            return self.module["get_output"](func_name, *index)
        return tuple(self._get_output(func_name, *index, i) for i in range(arity))

    def param_names(self, func_name: str) -> List[str]:
        """The parameter names of VM function ``func_name``."""
        n = self.module["get_function_arity"](func_name)
        get = self.module["get_function_param_name"]
        return [get(func_name, i) for i in range(n)]

    def __repr__(self) -> str:
        return f"VirtualMachine({self.device})"


__all__ = ["VirtualMachine"]
