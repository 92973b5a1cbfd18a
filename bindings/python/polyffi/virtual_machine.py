"""VirtualMachine: a relax VM executable (what TVM 0.2x's ``export_library`` writes), run by name.

Built on the executable module's own protocol, as ``tvm.relax.VirtualMachine`` does it::

    lib = polyffi.load_module("model.so")           # TVM 0.27: relax.build(...).export_library
    vm = polyffi.VirtualMachine(lib, polyffi.cpu())  # vm_load_executable + vm_initialization
    y = vm["forward"](x).numpy()                    # or vm.invoke("forward", x)

Calls run on the core's model runner (``polyffi.runner.vm``), which owns the VM protocol: it
stages every argument that TVM's kernels could not take as it is (a numpy array or other borrowed
view is copied into an aligned array the call owns, and so is a misaligned NDArray), and runs each
call on a VM of its own pool. So ``invoke`` / ``vm[name](...)`` are stateless and thread-safe:
threads may share one VirtualMachine, and the GIL is released while the model runs. Lists and
tuples become runtime Arrays (tuple parameters); ints, floats and shapes pass as values. Results:
an NDArray, or a ``polyffi.Array`` (a Sequence) of results for a relax Tuple, as TVM returns
them. A result holds its own storage: it stays valid after the next call. Wrong shapes, dtypes or
argument counts raise the VM's error (ValueError, TypeError, RuntimeError, ...) naming the
parameter. The stateful API (set_input / invoke_stateful / get_outputs) runs on the runner's own
VM, one caller at a time, as in TVM.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from .registry import Module, get_global_func
from .value import Array, Device, cpu

def _convert(value: Any) -> Any:
    """Lists and tuples as runtime Arrays (tuple parameters); everything else as it is."""
    t = type(value)
    if t is list or t is tuple:
        return Array([_convert(v) for v in value])
    return value


def _call(f: Any, head: Sequence[Any], args: Sequence[Any]) -> Any:
    args = [_convert(a) for a in args]
    try:
        return f(*head, *args)
    except BufferError:
        # DLPack has no read-only flag, so numpy does not export a read-only array: pass a copy
        # of each such array (the runner copies anyway); anything else is the caller's error.
        copies = [a.copy() if not getattr(getattr(a, "flags", None), "writeable", True) else a
                  for a in args]
        if all(c is a for c, a in zip(copies, args)):
            raise
        return f(*head, *copies)


def _as_tuple(value: Any) -> Any:
    """A runtime Array (a relax Tuple) as a Python tuple, nested ones too."""
    return tuple(_as_tuple(v) for v in value) if isinstance(value, Array) else value


class VirtualMachine:
    """Runs the functions of a relax VM executable (``lib["vm_load_executable"]()``)."""

    def __init__(self, lib: Module, device: Optional[Device] = None,
                 memory_cfg: str = "pooled") -> None:
        if not isinstance(lib, Module):
            kind = type(lib).__name__
            raise TypeError(f"VirtualMachine(lib, device): expected a Module but got {kind}")
        if device is None:
            device = cpu()
        if not isinstance(device, Device):
            raise TypeError(
                f"VirtualMachine(lib, device): device must be a polyffi.Device, "
                f"not {type(device).__name__}")
        self.lib = lib
        self.device = device
        #: The core's model runner (polyffi.runner.vm): the VM protocol, staging and the pool;
        #: it refuses a library that is not a relax VM executable and an unknown memory_cfg.
        self.runner: Module = get_global_func("polyffi.runner.vm")(
            lib, device.device_type, device.device_id, memory_cfg)
        self._run = self.runner["run"]
        #: The runner's own VM, for the stateful API and the VM module's other functions.
        self.module: Module = self.runner["vm"]()
        self._known: Dict[str, bool] = {}

    def _check(self, name: str) -> str:
        if name not in self._known:
            if not isinstance(name, str):
                raise TypeError("VirtualMachine[name]: name must be a str")
            if name not in self.module:
                raise AttributeError(f"VirtualMachine: the executable has no function '{name}'")
            self._known[name] = True
        return name

    def invoke(self, name: str, *args: Any) -> Any:
        """Run function ``name`` (thread-safe); an NDArray, or an Array for a tuple result."""
        return _call(self._run, (self._check(name),), args)

    async def invoke_async(self, name: str, *args: Any) -> Any:
        """``invoke`` on the core's worker pool (``await vm.invoke_async("main", x)``); many may
        run at once. Cancelling the awaiting task stops a started call between instructions."""
        args = tuple(_convert(a) for a in args)
        return await self._run.call_async(self._check(name), *args)

    def __getitem__(self, name: str) -> Callable[..., Any]:
        """The function ``name`` as a callable (checked once; call it many times)."""
        head = (self._check(name),)
        run = self._run

        def call(*args: Any) -> Any:
            return _call(run, head, args)

        call.__name__ = name
        call.__doc__ = f"The VM function {name!r} (thread-safe)."
        return call

    def __contains__(self, name: str) -> bool:
        return name in self.module

    # ------------------------------------------------------------ stateful API (as TVM's)

    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Store inputs for ``invoke_stateful(func_name)``; keyword arguments by parameter name."""
        if kwargs:
            named = [x for kv in kwargs.items() for x in kv]
            _call(self.runner["set_input_named"], (func_name, len(args)), (*args, *named))
        else:
            _call(self.runner["set_input"], (func_name,), args)

    def invoke_stateful(self, func_name: str) -> None:
        """Run ``func_name`` on the inputs given to set_input; read results with get_outputs."""
        self.runner["invoke_stateful"](func_name)

    def get_outputs(self, func_name: str) -> Any:
        """The result of the last invoke_stateful(func_name): an NDArray or a tuple of them."""
        return _as_tuple(self.runner["get_outputs"](func_name))

    def param_names(self, func_name: str) -> List[str]:
        """The parameter names of VM function ``func_name``."""
        return list(self.runner["param_names"](func_name))

    def __repr__(self) -> str:
        return f"VirtualMachine({self.device})"


__all__ = ["VirtualMachine"]
