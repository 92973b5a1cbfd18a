"""Compile the fixtures only tests/tvm_compat uses, with TVM 0.18's compiler, and record TVM's
own outputs. Run under TVM 0.18 (full setup):

    tools/tvm-fixtures/tvm018.sh tools/tvm-fixtures/generate_tvm018_compat.py [out_dir]

out_dir defaults to tests/tvm_compat/fixtures. bool_graph: a graph with a bool input and a bool
output beside float ones (TVM 0.18 stores bool as uint1, one byte per element), exported as a
factory library; io.json holds the inputs and the outputs TVM's runtime computed.
"""

import json
import pathlib
import sys

import numpy as np
import tvm
from tvm import relay
from tvm.contrib import graph_executor

ROOT = pathlib.Path(__file__).resolve().parents[2]
TARGET = "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2"


def bool_graph(out):
    x = relay.var("x", shape=(8,), dtype="float32")
    m = relay.var("m", shape=(8,), dtype="bool")
    positive = relay.greater(x, relay.const(0.0))
    body = relay.Tuple([relay.logical_and(positive, m), relay.where(m, x, relay.const(-1.0))])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x, m], body)), target=TARGET)
    out.mkdir(parents=True, exist_ok=True)
    lib.export_library(str(out / "factory.so"))
    inputs = {"x": np.array([1, -1, 2, -2, 3, -3, 4, -4], "float32"),
              "m": np.array([1, 1, 0, 0, 1, 1, 0, 0], bool)}
    gm = graph_executor.GraphModule(tvm.runtime.load_module(str(out / "factory.so"))["default"](
        tvm.cpu()))
    gm.set_input(**inputs)
    gm.run()
    outputs = [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]
    io = {
        "tvm_version": tvm.__version__,
        "target": TARGET,
        "generator": "tools/tvm-fixtures/generate_tvm018_compat.py",
        "inputs": [{"name": k, "dtype": str(v.dtype), "values": v.tolist()}
                   for k, v in inputs.items()],
        "outputs": [{"dtype": str(v.dtype), "values": v.tolist()} for v in outputs],
    }
    (out / "io.json").write_text(json.dumps(io, indent=1) + "\n")


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/tvm_compat/fixtures"
    bool_graph(out / "bool_graph")
    print("built bool_graph")


if __name__ == "__main__":
    main()
