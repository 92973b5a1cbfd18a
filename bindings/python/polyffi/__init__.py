"""polyffi: Python binding of a small runtime with a TVM-compatible C ABI.

Layout: library (load + version check), value (Device, DataType, Shape, Array, Map), function
(PackedFunc), callback (convert), registry (globals, init_api, modules), errors, ndarray;
graph_module (GraphModule, compiled graph models); virtual_machine (VirtualMachine, relax VM
executables from TVM 0.2x); lm (LanguageModel, Generation, Token: text generation with a model
directory).
"""

import atexit as _atexit

from . import _core
from .library import __version__, runtime_version
from .errors import (FFIError, InternalError, QueueFullError, TVMError, register_error,
                     _error_from_text)
from .value import (Array, DataType, Device, Map, Object, Shape, cpu, device, register_object,
                    _object_classes)
from .function import PackedFunc, configure_async
from .callback import convert
from .registry import (Module, _init_api, get_global_func, init_api, list_global_func_names,
                       load_module, register_func, remove_global_func, system_lib)
from .ndarray import NDArray
from .graph_module import GraphModule
from .virtual_machine import VirtualMachine
from .lm import Generation, LanguageModel, Token
from . import nd
from . import errors

_core._set_hooks(_error_from_text, FFIError, _object_classes, Object, Module, NDArray)

# Runs before interpreter finalization starts: native threads still inside a callback or a
# finalizer finish first, and later ones leave Python alone (see callback.cc, ScopedGIL).
_atexit.register(_core._before_shutdown)

__all__ = [
    "__version__", "runtime_version", "FFIError", "TVMError", "InternalError", "QueueFullError",
    "register_error", "configure_async",
    "Array", "Map", "Object", "Shape", "DataType", "Device", "cpu", "device", "register_object",
    "PackedFunc", "convert", "Module", "get_global_func", "register_func",
    "list_global_func_names", "remove_global_func", "init_api", "_init_api", "load_module",
    "system_lib", "NDArray", "nd", "errors", "GraphModule", "VirtualMachine",
    "LanguageModel", "Generation", "Token",
]
