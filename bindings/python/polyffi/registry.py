"""Global functions, `_init_api`-style namespaces and modules."""

from __future__ import annotations

import sys
import types
from typing import Any, Callable, List, Optional, Union, overload

from . import _core
from .function import PackedFunc


#: ``get_global_func(name, allow_missing=False) -> PackedFunc``: look up a global function;
#: ValueError("Cannot find global function NAME") when missing unless ``allow_missing`` (then
#: None). Implemented in the extension: a lookup is cheap enough that a Python frame would
#: dominate it. Nothing is cached, so re-registrations are always seen.
get_global_func: Callable[..., Optional[PackedFunc]] = _core.get_global_func


@overload
def register_func(name_or_func: Callable, f: None = None, override: bool = False) -> PackedFunc: ...
@overload
def register_func(name_or_func: str, f: Callable, override: bool = False) -> PackedFunc: ...
@overload
def register_func(
    name_or_func: str, f: None = None, override: bool = False
) -> Callable[[Callable], PackedFunc]: ...


def register_func(name_or_func, f=None, override=False):
    """Register a Python callable (or a PackedFunc) as a global function.

    ``register_func("ns.f", fn)``, ``@register_func("ns.f")``, ``@register_func`` (the name is
    the function's ``__name__``); ``override=True`` replaces an existing function. Returns the
    registered PackedFunc.
    """
    if callable(name_or_func) and not isinstance(name_or_func, str):
        return register_func(name_or_func.__name__, name_or_func, override)
    if not isinstance(name_or_func, str):
        raise TypeError(f"register_func: expected a name or a callable, got "
                        f"{type(name_or_func).__name__}")
    name = name_or_func

    def do_register(func: Callable) -> PackedFunc:
        packed = _core.convert(func)
        _core.register_global(name, packed, bool(override))
        return packed

    if f is not None:
        return do_register(f)
    return do_register


def list_global_func_names() -> List[str]:
    """Names of every registered global function."""
    return _core.list_global_names()


def remove_global_func(name: str) -> None:
    """Remove a global function; removing an absent name is not an error."""
    _core.remove_global(name)


def _api_names(prefix: str) -> List[tuple]:
    """(attribute, full name) for the globals directly under ``prefix.``."""
    head = prefix + "."
    out = []
    for name in _core.list_global_names():
        if name.startswith(head):
            rest = name[len(head):]
            if rest and "." not in rest:
                out.append((rest, name))
    return out


def _init_api(prefix: str, module_name: str) -> None:
    """Attach every global ``prefix.x`` as attribute ``x`` of the existing module ``module_name``.

    Nested names (``prefix.a.b``) are not attached, and neither are names that merely start
    with the prefix (``prefixx``). Functions are looked up once, here.
    """
    target = sys.modules[module_name]
    for attr, name in _api_names(prefix):
        f = _core.get_global(name)
        if f is not None:
            setattr(target, attr, f)


def init_api(prefix: str) -> types.ModuleType:
    """A new module whose attributes are the globals directly under ``prefix.``."""
    module = types.ModuleType(prefix, f"polyffi functions registered under '{prefix}.'")
    for attr, name in _api_names(prefix):
        f = _core.get_global(name)
        if f is not None:
            setattr(module, attr, f)
    return module


class Module(_core.ModuleBase):
    """A runtime module (a loaded library, the system library, a graph executor, ...)."""

    __slots__ = ()

    def get_function(self, name: str, query_imports: bool = False) -> PackedFunc:
        """The module's function ``name``; AttributeError when it has none."""
        f = _core.mod_get_function(self, name, bool(query_imports))
        if f is None:
            raise AttributeError(f"Module has no function '{name}'")
        return f

    def __getitem__(self, name: str) -> PackedFunc:
        if not isinstance(name, str):
            raise TypeError("Module[name]: name must be a str")
        return self.get_function(name)

    def __contains__(self, name: str) -> bool:
        return _core.mod_get_function(self, name, False) is not None

    def import_module(self, module: "Module") -> None:
        """Make ``module`` an import of this one (functions are then found with query_imports)."""
        _core.mod_import(self, module)

    @property
    def entry_func(self) -> PackedFunc:
        """The entry function named by the library's ``__tvm_main__``."""
        return self.get_function("__tvm_main__")

    def __call__(self, *args: Any) -> Any:
        return self.entry_func(*args)

    @property
    def type_key(self) -> str:  # type: ignore[override]
        return get_global_func("runtime.ModuleGetTypeKey")(self)

    @property
    def imported_modules(self) -> List["Module"]:
        size = get_global_func("runtime.ModuleImportsSize")(self)
        get = get_global_func("runtime.ModuleGetImport")
        return [get(self, i) for i in range(size)]

    def __repr__(self) -> str:
        try:
            key = self.type_key
        except Exception:  # released or not queryable
            key = "?"
        return f"Module({key}, handle={self.handle:#x})"


def load_module(path: Union[str, "os.PathLike[str]"], fmt: str = "") -> Module:  # noqa: F821
    """Load a module from a file (a shared library for "", "so", "dll", "dylib")."""
    import os

    return _core.load_module(os.fspath(path), fmt)


def system_lib() -> Module:
    """The module serving symbols registered with TVMBackendRegisterSystemLibSymbol."""
    return get_global_func("runtime.SystemLib")()
