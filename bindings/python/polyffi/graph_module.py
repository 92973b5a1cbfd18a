"""GraphModule: a compiled graph model, over the graph executor module's own functions.

Built from what ``tvm.graph_executor.create(graph_json, lib, dev_type, dev_id)`` returns, or from
what a TVM export's factory gives, which is the one-line path from ``export_library`` to a
prediction::

    lib = polyffi.load_module("model.so")          # TVM's lib.export_library("model.so")
    gm = polyffi.GraphModule(lib["default"](polyffi.cpu()))
    gm.set_input("data", x); gm.run(); y = gm.get_output(0).numpy()

Host arrays (numpy, any ``__dlpack__`` producer) pass zero-copy; the executor copies inputs into
its own storage, so they may be reused as soon as ``set_input`` returns.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from .ndarray import NDArray
from .registry import Module, get_global_func
from .value import Device, cpu


class GraphModule:
    """Wraps a graph executor module; each function is looked up once."""

    def __init__(self, module: Module) -> None:
        if not isinstance(module, Module):
            kind = type(module).__name__
            raise TypeError(f"GraphModule(module): expected a Module but got {kind}")
        if "default" in module and "run" not in module:
            raise TypeError(
                "GraphModule(module): this is a GraphExecutorFactory; "
                "pass module['default'](device)"
            )
        self.module = module
        self._set_input = module["set_input"]
        self._run = module["run"]
        self._get_output = module["get_output"]
        self._get_input = module["get_input"]
        self._get_num_outputs = module["get_num_outputs"]
        self._get_num_inputs = module["get_num_inputs"]
        self._get_input_index = module["get_input_index"]
        self._load_params = module["load_params"]

    @classmethod
    def from_graph(cls, graph_json: str, lib: Module, device: Optional[Device] = None):
        """The three-artifact form: graph JSON + kernel library (then ``load_params``)."""
        dev = device or cpu()
        create = get_global_func("tvm.graph_executor.create")
        return cls(create(graph_json, lib, dev.device_type, dev.device_id))

    def set_input(self, key: Union[int, str, None] = None, value: Any = None, **params: Any):
        """Copy value into input key (a name or an index); keyword arguments set several."""
        if key is not None:
            self._set_one(key, value)
        for name, array in params.items():
            self._set_one(name, array)

    def _set_one(self, key: Union[int, str], value: Any) -> None:
        try:
            self._set_input(key, value)
        except BufferError:
            # numpy does not export a read-only array (e.g. a view of Arrow or mmapped memory)
            # through DLPack; set_input copies anyway, so hand it a writable copy.
            if getattr(getattr(value, "flags", None), "writeable", True):
                raise
            self._set_input(key, value.copy())

    def run(self, **inputs: Any) -> None:
        """Run the graph, after setting any inputs given as keyword arguments."""
        if inputs:
            self.set_input(**inputs)
        self._run()

    def get_output(self, index: int, out: Optional[Any] = None) -> NDArray:
        """Output index as a new NDArray, or copied into out (an NDArray or a host array)."""
        if out is None:
            return self._get_output(index)
        self._get_output(index, out)
        return out

    def get_input(self, index: Union[int, str]) -> NDArray:
        """The executor's own storage of input index (a view: writes go into the graph)."""
        return self._get_input(index)

    def get_num_outputs(self) -> int:
        return self._get_num_outputs()

    def get_num_inputs(self) -> int:
        return self._get_num_inputs()

    def get_input_index(self, name: str) -> int:
        """Index of the input called name, or -1."""
        return self._get_input_index(name)

    def load_params(self, params: Union[bytes, bytearray]) -> None:
        """Set the inputs named in a params blob (TVM's SaveParams format)."""
        self._load_params(bytearray(params))

    def __repr__(self) -> str:
        return f"GraphModule(inputs={self.get_num_inputs()}, outputs={self.get_num_outputs()})"
