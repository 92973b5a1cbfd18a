"""Compile the TVM 0.18 fixtures with the real compiler and record TVM's own outputs.

Run under TVM 0.18 (tools/tvm-fixtures/tvm018.sh sets it up):

    tools/tvm-fixtures/tvm018.sh tools/tvm-fixtures/generate_tvm018.py [out_dir]

out_dir defaults to tests/tvm_models/tvm018. For every graph model it writes the forms TVM's
documentation ships:
  factory.so                 lib.export_library(): kernels + __tvm_dev_mblob (GraphExecutorFactory)
  graph.json, params.bin,    the three-artifact form: graph JSON, SaveParams blob, kernel library
  kernels.so
  syslib/lib0.o, devc.o      --system-lib objects (kernels; the blob registered at startup), to be
                             linked statically into a C program
and for plain TE kernels a library per kernel set. Inputs and TVM's outputs are raw little-endian
files described by io.json; manifest.json records versions, target, this script and checksums.
Every output is produced by TVM's own runtime (graph_executor.GraphModule over the factory form,
checked equal to the three-artifact form), so the tests compare polyffi against TVM, not against
a reimplementation.
"""

import hashlib
import json
import os
import pathlib
import platform
import sys
import tarfile

import numpy as np
import tvm
from tvm import relay, te
from tvm.contrib import graph_executor
from tvm.relay.backend import Runtime

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TARGET = "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2"
SEED = 20241124


def save_raw(path, array):
    np.ascontiguousarray(array).tofile(path)


def tensor_entry(name, array, file):
    return {"name": name, "dtype": str(array.dtype), "shape": list(array.shape), "file": file}


# ---------------------------------------------------------------- graph models (relay)


def digits_model(batch):
    """The digits MLP of examples/digits, from its trained weights (p0..p3 of params.bin)."""
    params = relay.load_param_dict(
        (ROOT / "examples/digits/model/params.bin").read_bytes()
    )
    data = relay.var("data", shape=(batch, 64), dtype="float32")
    w1, b1, w2, b2 = (relay.var(f"p{i}", shape=params[f"p{i}"].shape) for i in range(4))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(data, w1), b1))
    out = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(h, w2), b2))
    func = relay.Function([data, w1, b1, w2, b2], out)
    x = np.fromfile(ROOT / "examples/digits/model/test_x.bin", dtype="float32").reshape(-1, 64)
    return func, {k: v.numpy() for k, v in params.items()}, {"data": x[:batch]}


def conv_model(batch):
    """A small convnet: two convolutions (parallel loops, a padding workspace), pooling, dense."""
    rng = np.random.default_rng(SEED + 1)
    data = relay.var("data", shape=(batch, 3, 16, 16), dtype="float32")
    shapes = {"c1_w": (8, 3, 3, 3), "c1_b": (8,), "c2_w": (16, 8, 3, 3), "c2_b": (16,),
              "fc_w": (10, 16), "fc_b": (10,)}
    v = {k: relay.var(k, shape=s) for k, s in shapes.items()}
    x = relay.nn.conv2d(data, v["c1_w"], padding=(1, 1), channels=8, kernel_size=(3, 3))
    x = relay.nn.relu(relay.nn.bias_add(x, v["c1_b"]))
    x = relay.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2))
    x = relay.nn.conv2d(x, v["c2_w"], padding=(1, 1), channels=16, kernel_size=(3, 3))
    x = relay.nn.relu(relay.nn.bias_add(x, v["c2_b"]))
    x = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(x))
    x = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(x, v["fc_w"]), v["fc_b"]))
    func = relay.Function([data] + list(v.values()), x)
    params = {k: (rng.standard_normal(s) * 0.3).astype("float32") for k, s in shapes.items()}
    inputs = {"data": rng.standard_normal((batch, 3, 16, 16)).astype("float32")}
    return func, params, inputs


def multi_io_model(batch):
    """Three inputs of three dtypes, three outputs (one int32), a bound parameter."""
    rng = np.random.default_rng(SEED + 2)
    x = relay.var("x", shape=(batch, 8), dtype="float32")
    idx = relay.var("idx", shape=(batch, 8), dtype="int32")
    z = relay.var("z", shape=(batch, 4), dtype="float64")
    scale = relay.var("scale", shape=(8,), dtype="float32")
    out0 = x * scale + relay.cast(idx, "float32")
    out1 = relay.sum(idx * relay.const(3, "int32"), axis=1)
    out2 = relay.sqrt(z * z + relay.const(1.0, "float64"))
    func = relay.Function([x, idx, z, scale], relay.Tuple([out0, out1, out2]))
    params = {"scale": np.linspace(-2, 2, 8).astype("float32")}
    inputs = {
        "x": rng.standard_normal((batch, 8)).astype("float32"),
        "idx": rng.integers(-1000, 1000, (batch, 8)).astype("int32"),
        "z": rng.standard_normal((batch, 4)).astype("float64"),
    }
    return func, params, inputs


GRAPH_MODELS = {
    # name: (builder, batch, system-lib form too)
    "digits_b1": (digits_model, 1, True),
    "digits_b359": (digits_model, 359, False),
    "conv_b1": (conv_model, 1, True),
    "conv_b16": (conv_model, 16, False),
    "multi_io_b1": (multi_io_model, 1, True),
    "multi_io_b64": (multi_io_model, 64, False),
}


def run_tvm(lib, inputs, dev):
    """TVM's own graph executor over a factory module: the reference outputs."""
    gm = graph_executor.GraphModule(lib["default"](dev))
    for name, value in inputs.items():
        gm.set_input(name, value)
    gm.run()
    return [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]


def build_graph_model(out, name, builder, batch, syslib):
    func, params, inputs = builder(batch)
    mod = tvm.IRModule.from_expr(func)
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    with tvm.transform.PassContext(opt_level=3):
        factory = relay.build(mod, target=TARGET, params=params)
    factory.export_library(str(d / "factory.so"))
    (d / "graph.json").write_text(factory.get_graph_json())
    (d / "params.bin").write_bytes(relay.save_param_dict(factory.get_params()))
    factory.get_lib().export_library(str(d / "kernels.so"))
    if syslib:
        with tvm.transform.PassContext(opt_level=3):
            sys_factory = relay.build(
                mod, target=TARGET, params=params, runtime=Runtime("cpp", {"system-lib": True})
            )
        tar = d / "syslib.tar"
        sys_factory.export_library(str(tar))
        (d / "syslib").mkdir(exist_ok=True)
        with tarfile.open(tar) as t:
            for member in t.getmembers():  # lib0.o (kernels) and devc.o (the blob)
                member.name = os.path.basename(member.name)
                t.extract(member, d / "syslib")
        tar.unlink()

    dev = tvm.cpu(0)
    outputs = run_tvm(tvm.runtime.load_module(str(d / "factory.so")), inputs, dev)
    # The three-artifact form through TVM gives the same bits (same kernels, same graph).
    gm = graph_executor.create(
        (d / "graph.json").read_text(), tvm.runtime.load_module(str(d / "kernels.so")), dev
    )
    gm.load_params((d / "params.bin").read_bytes())
    for k, v in inputs.items():
        gm.set_input(k, v)
    gm.run()
    for i, expected in enumerate(outputs):
        assert np.array_equal(gm.get_output(i).numpy(), expected), (name, i)

    io = {"kind": "graph", "batch": batch, "inputs": [], "outputs": [],
          "params": sorted(factory.get_params().keys()), "forms": ["factory", "three_artifacts"]}
    if syslib:
        io["forms"].append("syslib")
    for k, v in inputs.items():
        save_raw(d / f"input_{k}.bin", v)
        io["inputs"].append(tensor_entry(k, v, f"input_{k}.bin"))
    for i, v in enumerate(outputs):
        save_raw(d / f"output_{i}.bin", v)
        io["outputs"].append(tensor_entry(str(i), v, f"output_{i}.bin"))
    (d / "io.json").write_text(json.dumps(io, indent=1) + "\n")
    # The same, one line per tensor, for the plain C program of the system-lib form:
    #   input <name> <dlpack code> <bits> <ndim> <dims...> <file> | output <index> <bytes> <file>
    codes = {"i": 0, "u": 1, "f": 2}
    lines = []
    for k, v in inputs.items():
        dims = " ".join(str(x) for x in v.shape)
        lines.append(f"input {k} {codes[v.dtype.kind]} {v.dtype.itemsize * 8} {v.ndim} {dims} "
                     f"input_{k}.bin")
    for i, v in enumerate(outputs):
        lines.append(f"output {i} {v.nbytes} output_{i}.bin")
    (d / "io.txt").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- plain TE kernels


def build_te_kernels(out):
    """Kernel libraries without a graph: called directly as functions of the module."""
    d = out / "te_kernels"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED + 3)
    cases = {}

    # vadd: symbolic length, float32; the library's single function is also __tvm_main__.
    n = te.var("n")
    a = te.placeholder((n,), name="a", dtype="float32")
    b = te.placeholder((n,), name="b", dtype="float32")
    c = te.compute((n,), lambda i: a[i] + b[i], name="c")
    s = te.create_schedule(c.op)
    tvm.build(s, [a, b, c], TARGET, name="vadd").export_library(str(d / "vadd.so"))
    av = rng.standard_normal(1000).astype("float32")
    bv = rng.standard_normal(1000).astype("float32")
    cases["vadd"] = {"library": "vadd.so", "function": "vadd", "args": [av, bv],
                     "out_shape": [1000], "out_dtype": "float32", "expected": av + bv}

    # scale_shift: scalar arguments (float64 and int64) beside an int64 tensor, a parallel loop.
    n = te.var("n")
    x = te.placeholder((n,), name="x", dtype="float64")
    k = te.var("k", dtype="float64")
    off = te.var("off", dtype="int64")
    y = te.compute((n,), lambda i: x[i] * k + off.astype("float64"), name="y")
    s = te.create_schedule(y.op)
    s[y].parallel(y.op.axis[0])
    tvm.build(s, [x, k, off, y], TARGET, name="scale_shift").export_library(
        str(d / "scale_shift.so")
    )
    xv = rng.standard_normal(4096)
    cases["scale_shift"] = {"library": "scale_shift.so", "function": "scale_shift",
                            "args": [xv, 2.5, -7], "out_shape": [4096], "out_dtype": "float64",
                            "expected": xv * 2.5 - 7}

    # host_call: an extern stage that calls a host global function through
    # __TVMBackendGetFuncFromEnv + __TVMFuncCall (the test registers polyffi_test.add_one).
    n = 64
    a = te.placeholder((n,), name="a", dtype="float32")
    c = te.extern(
        (n,), [a],
        lambda ins, outs: tvm.tir.call_packed("polyffi_test.add_one", ins[0], outs[0]),
        name="c", dtype="float32",
    )
    s = te.create_schedule(c.op)
    tvm.build(s, [a, c], TARGET, name="host_call").export_library(str(d / "host_call.so"))

    @tvm.register_func("polyffi_test.add_one", override=True)
    def _add_one(src, dst):
        dst.copyfrom(src.numpy() + 1)

    av = rng.standard_normal(n).astype("float32")
    cases["host_call"] = {"library": "host_call.so", "function": "host_call", "args": [av],
                          "out_shape": [n], "out_dtype": "float32", "expected": av + 1}

    io = {"kind": "kernels", "cases": []}
    for name, case in cases.items():
        lib = tvm.runtime.load_module(str(d / case["library"]))
        args, desc = [], []
        for i, arg in enumerate(case["args"]):
            if isinstance(arg, np.ndarray):
                save_raw(d / f"{name}_arg{i}.bin", arg)
                args.append(tvm.nd.array(arg))
                desc.append(tensor_entry(f"arg{i}", arg, f"{name}_arg{i}.bin"))
            elif isinstance(arg, float):
                args.append(arg)
                desc.append({"float": arg})
            else:
                args.append(arg)
                desc.append({"int": arg})
        out = tvm.nd.empty(case["out_shape"], case["out_dtype"])
        lib[case["function"]](*args, out)  # TVM's runtime computes the reference
        result = out.numpy()
        np.testing.assert_allclose(result, case["expected"], rtol=1e-6)
        save_raw(d / f"{name}_out.bin", result)
        io["cases"].append({"name": name, "library": case["library"],
                            "function": case["function"], "args": desc,
                            "output": tensor_entry("out", result, f"{name}_out.bin")})
    (d / "io.json").write_text(json.dumps(io, indent=1) + "\n")


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/tvm_models/tvm018"
    out.mkdir(parents=True, exist_ok=True)
    for name, (builder, batch, syslib) in GRAPH_MODELS.items():
        build_graph_model(out, name, builder, batch, syslib)
        print("built", name)
    build_te_kernels(out)
    print("built te_kernels")
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest = {
        "tvm_version": tvm.__version__,
        "source": "org.bytedeco:tvm:0.18.0-1.5.11 (linux-x86_64), Maven Central",
        "target": TARGET,
        "generator": "tools/tvm-fixtures/generate_tvm018.py",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "seed": SEED,
        "fixtures": sorted(list(GRAPH_MODELS) + ["te_kernels"]),
        "sha256": {
            str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
