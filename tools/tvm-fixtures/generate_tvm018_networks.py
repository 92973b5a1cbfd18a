"""Compile real image-classification networks with TVM 0.18 and record TVM's own outputs.

Run under TVM 0.18 (tools/tvm-fixtures/tvm018.sh sets it up):

    tools/tvm-fixtures/tvm018.sh tools/tvm-fixtures/generate_tvm018_networks.py OUT_DIR [name...]

The networks come from TVM's own model zoo builders in relay.testing, which need no download:
ResNet-18 and MobileNet (v1) at batch 1 and a small image (3x112x112) so that one run() takes
tens of milliseconds on a small machine. Weights are random under a fixed seed, drawn so that
activations neither vanish nor saturate the softmax (LeCun-normal convolution and dense
weights, batch-norm statistics near identity), so the 1000 outputs differ from each other and
comparing them means something (relay.testing's own initialiser gives MobileNet a constant
output); the input is random under a fixed seed; the graphs are built at opt_level=3
for the same LLVM target as the committed fixtures. For every network OUT_DIR/<name>/ holds

  factory.so                 lib.export_library() (GraphExecutorFactory)
  graph.json, params.bin,    the three-artifact form
  kernels.so
  input_data.bin, output_0.bin, io.txt, io.json
                             the input and TVM's own output (TVM's GraphModule over factory.so),
                             in the layout bench/models/tvm_runtime_compare.c reads

They are too big to commit (tens of MB); bench/models/run_tvm_networks.py generates them into
the build tree when missing.
"""

import json
import pathlib
import sys

import numpy as np
import tvm
from tvm import relay
from tvm.contrib import graph_executor
from tvm.relay import testing

TARGET = "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2"
SEED = 20261128
IMAGE = (3, 112, 112)


def resnet18():
    return testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=IMAGE)


def mobilenet():
    return testing.mobilenet.get_workload(batch_size=1, image_shape=IMAGE)


NETWORKS = {"resnet18": resnet18, "mobilenet": mobilenet}


def random_params(params, rng):
    """Weights for every parameter the zoo builder declared, by the role its name gives it."""
    out = {}
    for name, value in sorted(params.items()):
        shape = value.shape
        if name.endswith("weight") and len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            x = rng.standard_normal(shape) * np.sqrt(1.0 / fan_in)
        elif name.endswith(("gamma", "moving_var")):
            x = rng.uniform(0.5, 1.5, shape)
        elif name.endswith(("beta", "moving_mean", "bias")):
            x = rng.standard_normal(shape) * 0.1
        else:
            raise ValueError(f"no rule for parameter {name} {shape}")
        out[name] = tvm.nd.array(x.astype(value.dtype))
    return out


def build(out, name):
    np.random.seed(SEED)  # relay.testing draws its initial weights from NumPy's global state
    mod, params = NETWORKS[name]()
    params = random_params(params, np.random.default_rng(SEED + 1))
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    with tvm.transform.PassContext(opt_level=3):
        factory = relay.build(mod, target=TARGET, params=params)
    factory.export_library(str(d / "factory.so"))
    (d / "graph.json").write_text(factory.get_graph_json())
    (d / "params.bin").write_bytes(relay.save_param_dict(factory.get_params()))
    factory.get_lib().export_library(str(d / "kernels.so"))

    rng = np.random.default_rng(SEED)
    data = rng.standard_normal((1,) + IMAGE).astype("float32")
    gm = graph_executor.GraphModule(tvm.runtime.load_module(str(d / "factory.so"))["default"](
        tvm.cpu(0)))
    gm.set_input("data", data)
    gm.run()
    output = gm.get_output(0).numpy()
    assert np.all(np.isfinite(output)), name
    # Not a degenerate network: the classes get clearly different scores.
    assert output.max() > 2 * output.min() and len(np.unique(output)) > 900, (
        name, output.min(), output.max(), len(np.unique(output)))

    data.tofile(d / "input_data.bin")
    output.tofile(d / "output_0.bin")
    dims = " ".join(str(x) for x in data.shape)
    (d / "io.txt").write_text(f"input data 2 32 {data.ndim} {dims} input_data.bin\n"
                              f"output 0 {output.nbytes} output_0.bin\n")
    io = {"network": name, "tvm_version": tvm.__version__, "target": TARGET, "seed": SEED,
          "image_shape": list(IMAGE), "opt_level": 3,
          "inputs": [{"name": "data", "dtype": "float32", "shape": list(data.shape),
                      "file": "input_data.bin"}],
          "outputs": [{"name": "0", "dtype": str(output.dtype), "shape": list(output.shape),
                       "file": "output_0.bin"}]}
    (d / "io.json").write_text(json.dumps(io, indent=1) + "\n")
    print(f"{name}: {d} (output {output.shape}, argmax {int(output.argmax())})", flush=True)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = pathlib.Path(argv[1])
    names = argv[2:] or list(NETWORKS)
    for name in names:
        if name not in NETWORKS:
            print(f"unknown network {name}; known: {', '.join(NETWORKS)}", file=sys.stderr)
            return 2
        build(out, name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
