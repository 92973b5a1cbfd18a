"""GraphModule: a compiled graph model, over the graph executor module's own functions.

Built from what ``tvm.graph_executor.create(graph_json, lib, dev_type, dev_id)`` returns, or from
what a TVM export's factory gives, which is the one-line path from ``export_library`` to a
prediction::

    lib = polyffi.load_module("model.so")          # TVM's lib.export_library("model.so")
    gm = polyffi.GraphModule(lib["default"](polyffi.cpu()))
    gm.set_input("data", x); gm.run(); y = gm.get_output(0).numpy()

Host arrays (numpy, any ``__dlpack__`` producer) pass zero-copy; the executor copies inputs into
its own storage, so they may be reused as soon as ``set_input`` returns.

Serving from many threads: ``GraphModule.from_factory(lib, device)`` (or ``from_graph`` with the
params) is backed by the core's model runner (``polyffi.runner.graph``), whose ``infer`` is
stateless and thread-safe: ``outputs = gm.infer(x)`` (inputs by position) or ``gm.infer(data=x)``
runs on an executor of the runner's pool, which share the weights, with the GIL released::

    gm = polyffi.GraphModule.from_factory(polyffi.load_module("model.so"), polyffi.cpu())
    y = gm.infer(x)[0].numpy()              # from any number of threads at once
"""

from __future__ import annotations

from typing import Any, List, Optional, Union

from .ndarray import NDArray
from .registry import Module, get_global_func
from .value import Device, cpu


class GraphModule:
    """Wraps a graph executor module; each function is looked up once."""

    def __init__(self, module: Module, runner: Optional[Module] = None) -> None:
        if not isinstance(module, Module):
            kind = type(module).__name__
            raise TypeError(f"GraphModule(module): expected a Module but got {kind}")
        get_global_func("polyffi.runner.check_graph_executor")(module)
        self.module = module
        self._set_input = module["set_input"]
        self._run = module["run"]
        self._get_output = module["get_output"]
        self._get_input = module["get_input"]
        self._get_num_outputs = module["get_num_outputs"]
        self._get_num_inputs = module["get_num_inputs"]
        self._get_input_index = module["get_input_index"]
        self._load_params = module["load_params"]
        #: The core's model runner (thread-safe infer), or None for a bare executor.
        self.runner: Optional[Module] = runner
        self._infer: Any = None if runner is None else runner["run"]

    @classmethod
    def from_factory(cls, lib: Module, device: Optional[Device] = None) -> "GraphModule":
        """A TVM export (``export_library``'s GraphExecutorFactory) with a thread-safe ``infer``.

        The stateful methods use an executor of the runner's own (with its own copy of the
        weights); ``infer`` uses the runner's pool, whose executors share one copy.
        """
        if not isinstance(lib, Module):
            raise TypeError(f"GraphModule.from_factory: expected a Module but got "
                            f"{type(lib).__name__}")
        dev = device or cpu()
        runner = get_global_func("polyffi.runner.graph")(lib, dev.device_type, dev.device_id)
        return cls(runner["executor"](), runner)

    @classmethod
    def from_graph(cls, graph_json: str, lib: Module, device: Optional[Device] = None,
                   params: Optional[Union[bytes, bytearray]] = None):
        """The three-artifact form: graph JSON + kernel library + params (or ``load_params``)."""
        dev = device or cpu()
        runner = get_global_func("polyffi.runner.graph")(
            graph_json, lib, None if params is None else bytes(params), dev.device_type,
            dev.device_id)
        return cls(runner["executor"](), runner)

    def infer(self, *arrays: Any, **named: Any) -> List[NDArray]:
        """Run the graph on these inputs (by position, or by name) and return every output.

        Stateless and thread-safe: many threads may call it at once on one GraphModule (it
        never touches the inputs set with ``set_input``). Positional inputs are the graph's
        inputs that are not weights, in order (``input_names``).
        """
        if self._infer is None:
            raise TypeError("GraphModule.infer needs a GraphModule made by from_factory or "
                            "from_graph (a bare executor module has no model runner)")
        if arrays and named:
            raise TypeError("GraphModule.infer: give inputs by position or by name, not both")
        if named:
            flat: List[Any] = []
            for k, v in named.items():
                flat += [k, v]
            return list(self._infer(*flat))
        return list(self._infer(*arrays))

    @property
    def input_names(self) -> List[str]:
        """The graph's inputs that are not weights (what ``infer`` takes by position)."""
        return [] if self.runner is None else list(self.runner["input_names"]())

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

    async def run_async(self, **inputs: Any) -> None:
        """``run`` on the core's worker pool (``await gm.run_async(x=...)``): inputs are set
        first, on the calling thread; cancelling the awaiting task stops a started run between
        nodes. One run at a time per GraphModule, as for ``run``."""
        if inputs:
            self.set_input(**inputs)
        await self._run.call_async()

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
        """Set the inputs named in a params blob (TVM's SaveParams format).

        ``infer`` takes these weights too (the runner loads them into this executor and its pool;
        calls in flight finish on the old weights).
        """
        if self.runner is None:
            self._load_params(bytearray(params))
        else:
            self.runner["load_params"](bytes(params))

    def __repr__(self) -> str:
        return f"GraphModule(inputs={self.get_num_inputs()}, outputs={self.get_num_outputs()})"
