"""VirtualMachine: a relax VM executable (what TVM 0.2x's ``export_library`` writes), run by name.

Built on the executable module's own protocol, as ``tvm.relax.VirtualMachine`` does it::

    lib = polyffi.load_module("model.so")           # TVM 0.27: relax.build(...).export_library
    vm = polyffi.VirtualMachine(lib, polyffi.cpu())  # vm_load_executable + vm_initialization
    y = vm["forward"](x).numpy()                    # or vm.invoke("forward", x)

Arguments: NDArrays pass as they are; numpy arrays (and any ``__dlpack__`` producer) pass
zero-copy when their data is C-contiguous and 64-byte aligned, and are otherwise copied into a new
aligned NDArray first: the kernels TVM compiles assume 64-byte-aligned buffers without checking
(TVM's own runtime crashes on a misaligned view), so a misaligned array is never handed to them.
Lists and tuples become runtime Arrays (tuple parameters); ints, floats and shapes pass as values.
Results: an NDArray, or a tuple of results for a relax Tuple. A result stays valid after the next
call (it holds its own storage). Wrong shapes, dtypes or argument counts raise the VM's error
(ValueError, TypeError, RuntimeError, ...) naming the parameter.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from . import _core
from .ndarray import NDArray, empty
from .registry import Module
from .value import Array, Device, cpu

#: TVM's allocator kinds for vm_initialization: 1 naive, 2 pooled (TVM's default).
_ALLOCATORS = {"naive": 1, "pooled": 2}
_ALIGN = 64

try:  # numpy is optional for the binding; without it only NDArrays can be passed
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None


def _aligned_copy(arr: Any, device: Device) -> NDArray:
    """A new 64-byte-aligned NDArray on device holding a C-contiguous copy of a numpy array."""
    src = _np.ascontiguousarray(arr)
    dtype = "bool" if src.dtype == _np.bool_ else str(src.dtype)
    out = empty(src.shape, dtype, device)
    out._copy_from_buffer(src)
    return out


def _convert_arg(value: Any, device: Device) -> Any:
    if isinstance(value, _core.NDArrayBase):
        if value.data_ptr % _ALIGN == 0:
            return value
        host = value.numpy()  # an unaligned view (e.g. from_dlpack of an odd slice): copy
        return _aligned_copy(host, device)
    if _np is not None and isinstance(value, _np.ndarray):
        if (value.flags.c_contiguous and value.ctypes.data % _ALIGN == 0
                and device.device_type == 1 and value.dtype.byteorder in "=|"):
            try:
                return _core.nd_from_dlpack(value)  # zero-copy: the NDArray keeps value alive
            except BufferError:  # e.g. a read-only array, which DLPack cannot export
                pass
        if value.dtype == object:
            raise TypeError("VirtualMachine: numpy arrays of dtype object cannot be passed")
        return _aligned_copy(value, device)
    if isinstance(value, (list, tuple)):
        return Array([_convert_arg(v, device) for v in value])
    if (hasattr(value, "__dlpack__") and not isinstance(value, _core.ObjectBase)
            and _np is not None):
        return _convert_arg(_np.from_dlpack(value), device)
    return value


def _convert_result(value: Any) -> Any:
    if isinstance(value, Array):
        return tuple(_convert_result(v) for v in value)
    return value


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
        """Run function ``name`` with ``args``; an NDArray, or a tuple for a tuple result."""
        f = self._function(name)
        dev = self.device
        return _convert_result(f(*[_convert_arg(a, dev) for a in args]))

    def __getitem__(self, name: str) -> Callable[..., Any]:
        f = self._function(name)
        dev = self.device

        def call(*args: Any) -> Any:
            return _convert_result(f(*[_convert_arg(a, dev) for a in args]))

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
        self.module["set_input"](func_name, *[_convert_arg(a, self.device) for a in args])

    def invoke_stateful(self, func_name: str) -> None:
        """Run ``func_name`` on the inputs given to set_input; read results with get_outputs."""
        self.module["invoke_stateful"](func_name)

    def get_outputs(self, func_name: str) -> Any:
        """The result of the last invoke_stateful(func_name): an NDArray or a tuple."""
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
