"""Compile the TVM 0.27 fixtures with the real compiler and record TVM's own outputs.

Run under TVM 0.27 (tools/tvm-fixtures/tvm027.sh installs it from PyPI into build/tvm027):

    tools/tvm-fixtures/tvm027.sh tools/tvm-fixtures/generate_tvm027.py [out_dir]

out_dir defaults to tests/tvm_models/tvm027. It writes
  kernels/<name>.so          TE/TIR kernel libraries (tvm.compile(...).export_library): every
                             function is a `__tvm_ffi_<name>` symbol (tvm-ffi calling convention)
  kernels/io.json            per case: library, function, arguments (tensors as raw files,
                             scalars inline), TVM's output, and the error texts TVM's own runtime
                             raised for bad calls (`errors`)
  relax/<name>.so            relax VM executables (relax.build(...).export_library): kernels plus
                             `__tvm_ffi__library_bin` holding the relax.VMExecutable
  relax/<name>/io.json       per run (a batch size): inputs and TVM's outputs as raw files, plus
                             the errors TVM raised for a wrong input shape / dtype / arity and
                             the executable's function table (`globals`)
  relax/<name>/b<B>_io.txt   the same run, one line per tensor, for plain C programs
  runtime/<name>.so          relax models that call TVM's runtime library at run time (contrib
                             sort/random, relax.run.unique/nonzero, tensor_to_shape) or take
                             Shape/int arguments; runtime/<name>/io.json: runs with typed inputs
                             and TVM's result as a tree (tensors, shapes, ints, tuples)
  manifest.json              versions, target, this script, host global names, sha256 per file

With --runtime-only only runtime/ is rebuilt (and the manifest's runtime part and checksums).
Inputs and outputs are raw little-endian C-order arrays. Every output is what TVM 0.27's own
runtime computed (`tvm.runtime.load_module` of the exported file + `tvm.relax.VirtualMachine` /
the kernel function), checked against numpy, so tests compare polyffi against TVM.

The kernel `callpacked` calls the host global `polyffi_test.add_bias(src, dst, bias)` (two
tensors and a float): dst = src + bias. A test registers it before calling the kernel.
"""

import hashlib
import json
import pathlib
import platform
import sys

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, te

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# Portable x86-64 (SSE2 only): the fixtures run on any x86-64 CI machine.
TARGET_JSON = {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "x86-64"}
SEED = 20261124
HOST_GLOBAL = "polyffi_test.add_bias"
HOST_BIAS = 3.5


def target():
    return tvm.target.Target(TARGET_JSON)


def save_raw(path, array):
    np.ascontiguousarray(array).tofile(path)


def tensor_entry(name, array, file):
    return {"name": name, "dtype": str(array.dtype), "shape": list(array.shape), "file": file}


def capture_error(fn, *args):
    """Run fn(*args) expecting TVM to raise; return {"kind": class name, "message": text}."""
    try:
        fn(*args)
    except Exception as err:  # noqa: BLE001 - recording whatever TVM raised is the point
        return {"kind": type(err).__name__, "message": str(err).strip()}
    raise AssertionError("TVM accepted a call it was expected to refuse")


# ---------------------------------------------------------------- TE/TIR kernels


def kernel_elementwise():
    """c = a * b + 1 over a symbolic length n (one function: also __tvm_ffi_main)."""
    n = te.var("n")
    a = te.placeholder((n,), name="A", dtype="float32")
    b = te.placeholder((n,), name="B", dtype="float32")
    c = te.compute((n,), lambda i: a[i] * b[i] + 1.0, name="C")
    return tvm.IRModule({"elementwise": te.create_prim_func([a, b, c]).with_attr(
        "global_symbol", "elementwise")})


def kernel_two_funcs():
    """Two functions with scalar arguments: scale (float32) and shift (int32); no main."""
    n = te.var("n")
    x = te.placeholder((n,), name="X", dtype="float32")
    k = te.var("k", dtype="float32")
    y = te.compute((n,), lambda i: x[i] * k, name="Y")
    scale = te.create_prim_func([x, k, y]).with_attr("global_symbol", "scale")
    m = te.var("m")
    xi = te.placeholder((m,), name="X", dtype="int32")
    off = te.var("off", dtype="int32")
    yi = te.compute((m,), lambda i: xi[i] + off, name="Y")
    shift = te.create_prim_func([xi, off, yi]).with_attr("global_symbol", "shift")
    return tvm.IRModule({"scale": scale, "shift": shift})


def kernel_parallel():
    """A parallel loop (__TVMBackendParallelLaunch): y[i, j] = sqrt(x[i, j]) * 2 over (n, 64)."""
    n = te.var("n")
    x = te.placeholder((n, 64), name="X", dtype="float64")
    y = te.compute((n, 64), lambda i, j: te.sqrt(x[i, j]) * 2.0, name="Y")
    mod = tvm.IRModule({"parallel": te.create_prim_func([x, y]).with_attr(
        "global_symbol", "parallel")})
    sch = tvm.s_tir.Schedule(mod)
    i, _ = sch.get_loops(sch.get_sblock("Y", func_name="parallel"))
    sch.parallel(i)
    return sch.mod


def kernel_callpacked():
    """An extern stage calling the host global polyffi_test.add_bias(src, dst, 3.5)."""
    n = 64
    a = te.placeholder((n,), name="A", dtype="float32")
    c = te.extern(
        (n,), [a],
        lambda ins, outs: tvm.tirx.call_packed(HOST_GLOBAL, ins[0], outs[0], HOST_BIAS),
        name="C", dtype="float32",
    )
    return tvm.IRModule({"callpacked": te.create_prim_func([a, c]).with_attr(
        "global_symbol", "callpacked")})


def build_kernels(out):
    d = out / "kernels"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED + 1)
    for name, builder in [("elementwise", kernel_elementwise), ("two_funcs", kernel_two_funcs),
                          ("parallel", kernel_parallel), ("callpacked", kernel_callpacked)]:
        tvm.compile(builder(), target=target()).export_library(str(d / f"{name}.so"))

    @tvm.register_global_func(HOST_GLOBAL, override=True)
    def _add_bias(src, dst, bias):
        dst.copyfrom(src.numpy() + np.float32(bias))

    a = rng.standard_normal(1000).astype("float32")
    b = rng.standard_normal(1000).astype("float32")
    xf = rng.standard_normal(333).astype("float32")
    xi = rng.integers(-1000, 1000, 257).astype("int32")
    xp = rng.uniform(0, 100, (37, 64)).astype("float64")
    xc = rng.standard_normal(64).astype("float32")
    cases = [
        # name, library, function, args, output (shape, dtype), numpy's value
        ("elementwise", "elementwise.so", "elementwise", [a, b], a * b + np.float32(1)),
        ("elementwise_main", "elementwise.so", "main", [a[:10], b[:10]],
         a[:10] * b[:10] + np.float32(1)),
        ("scale", "two_funcs.so", "scale", [xf, 2.5], xf * np.float32(2.5)),
        ("shift", "two_funcs.so", "shift", [xi, -7], xi - 7),
        ("parallel", "parallel.so", "parallel", [xp], np.sqrt(xp) * 2.0),
        ("callpacked", "callpacked.so", "callpacked", [xc], xc + np.float32(HOST_BIAS)),
    ]
    io = {"kind": "kernels", "host_global": HOST_GLOBAL, "host_bias": HOST_BIAS, "cases": []}
    dev = tvm.cpu(0)
    for name, library, function, args, expected in cases:
        lib = tvm.runtime.load_module(str(d / library))
        call_args, desc = [], []
        for i, arg in enumerate(args):
            if isinstance(arg, np.ndarray):
                save_raw(d / f"{name}_arg{i}.bin", arg)
                call_args.append(tvm.runtime.tensor(arg, dev))
                desc.append(tensor_entry(f"arg{i}", arg, f"{name}_arg{i}.bin"))
            elif isinstance(arg, float):
                call_args.append(arg)
                desc.append({"float": arg})
            else:
                call_args.append(arg)
                desc.append({"int": arg})
        result = tvm.runtime.empty(expected.shape, str(expected.dtype), dev)
        ret = lib[function](*call_args, result)  # TVM's runtime computes the reference
        assert ret is None
        got = result.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-6)
        save_raw(d / f"{name}_out.bin", got)
        io["cases"].append({"name": name, "library": library, "function": function,
                            "args": desc, "output": tensor_entry("out", got, f"{name}_out.bin")})

    # The error texts TVM's own runtime raises for bad calls into two_funcs.scale / shift.
    lib = tvm.runtime.load_module(str(d / "two_funcs.so"))
    t = lambda arr: tvm.runtime.tensor(arr, dev)  # noqa: E731
    x4 = np.zeros(4, "float32")
    errors = {
        "scale_arity": lambda: lib["scale"](t(x4), 2.0),
        "scale_dtype": lambda: lib["scale"](t(np.zeros(4, "float64")), 2.0, t(x4)),
        "scale_ndim": lambda: lib["scale"](t(np.zeros((2, 2), "float32")), 2.0, t(x4)),
        "scale_shape": lambda: lib["scale"](t(x4), 2.0, t(np.zeros(5, "float32"))),
        "shift_float_for_int": lambda: lib["shift"](
            t(np.zeros(4, "int32")), 1.5, t(np.zeros(4, "int32"))),
        "scale_null_tensor": lambda: lib["scale"](None, 2.0, t(x4)),
    }
    io["errors"] = {}
    for key, fn in errors.items():
        io["errors"][key] = {"library": "two_funcs.so", **capture_error(fn)}
    (d / "io.json").write_text(json.dumps(io, indent=1) + "\n")
    return io["errors"]


# ---------------------------------------------------------------- relax models


def linear(bb, x, w, b):
    """x @ w.T + b (PyTorch's Linear layout: w is (out, in))."""
    return bb.emit(relax.op.add(relax.op.matmul(x, relax.op.permute_dims(w)), b))


def mlp_module(batch, shapes, softmax=False, batch_var=None, input_name="x"):
    """forward(x, fc1.weight, fc1.bias, fc2.weight, fc2.bias): relu between two linears."""
    bb = relax.BlockBuilder()
    nb = batch_var if batch_var is not None else batch
    x = relax.Var(input_name, relax.TensorType((nb, shapes["fc1.weight"][1]), "float32"))
    params = [relax.Var(k, relax.TensorType(s, "float32")) for k, s in shapes.items()]
    with bb.function("forward", [x] + params):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.relu(linear(bb, x, params[0], params[1])))
            y = linear(bb, h, params[2], params[3])
            if softmax:
                y = bb.emit(relax.op.nn.softmax(y, axis=-1))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    return bb.get()


def mlp_weights(rng):
    shapes = {"fc1.weight": (32, 16), "fc1.bias": (32,), "fc2.weight": (10, 32), "fc2.bias": (10,)}
    return shapes, {k: (rng.standard_normal(s) * 0.5).astype("float32") for k, s in shapes.items()}


def bind(mod, weights):
    return relax.transform.BindParams("forward", {k: tvm.runtime.tensor(v)
                                                  for k, v in weights.items()})(mod)


def model_mlp_params(batch):
    rng = np.random.default_rng(SEED + 2)
    shapes, weights = mlp_weights(rng)
    xs = np.random.default_rng(SEED + 3 + batch).standard_normal((batch, 16)).astype("float32")
    return mlp_module(batch, shapes), {"x": xs, **weights}


def model_mlp_const(batch):
    rng = np.random.default_rng(SEED + 2)
    shapes, weights = mlp_weights(rng)
    xs = np.random.default_rng(SEED + 3 + batch).standard_normal((batch, 16)).astype("float32")
    return bind(mlp_module(batch, shapes), weights), {"x": xs}


def model_conv(batch):
    """conv3x3(pad 1) + relu, maxpool 2x2, conv3x3 + relu, mean over H,W, reshape, dense."""
    rng = np.random.default_rng(SEED + 4)
    shapes = {"c1_w": (8, 3, 3, 3), "c1_b": (1, 8, 1, 1), "c2_w": (16, 8, 3, 3),
              "c2_b": (1, 16, 1, 1), "fc_w": (10, 16), "fc_b": (10,)}
    weights = {k: (rng.standard_normal(s) * 0.3).astype("float32") for k, s in shapes.items()}
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((batch, 3, 16, 16), "float32"))
    p = {k: relax.Var(k, relax.TensorType(s, "float32")) for k, s in shapes.items()}
    op = relax.op
    with bb.function("forward", [x] + list(p.values())):
        with bb.dataflow():
            h = bb.emit(op.nn.conv2d(x, p["c1_w"], padding=(1, 1)))
            h = bb.emit(op.nn.relu(op.add(h, p["c1_b"])))
            h = bb.emit(op.nn.max_pool2d(h, pool_size=(2, 2), strides=(2, 2)))
            h = bb.emit(op.nn.conv2d(h, p["c2_w"], padding=(1, 1)))
            h = bb.emit(op.nn.relu(op.add(h, p["c2_b"])))
            h = bb.emit(op.mean(h, axis=[2, 3], keepdims=True))
            h = bb.emit(op.reshape(h, (batch, 16)))
            y = linear(bb, h, p["fc_w"], p["fc_b"])
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    mod = bind(bb.get(), weights)
    xs = np.random.default_rng(SEED + 5 + batch).standard_normal(
        (batch, 3, 16, 16)).astype("float32")
    return mod, {"x": xs}


def model_two_outputs(batch):
    """Two inputs, a tuple of two outputs of different shapes: (exp(a) + b, sum(a * b, axis=1))."""
    bb = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorType((batch, 8), "float32"))
    b = relax.Var("b", relax.TensorType((batch, 8), "float32"))
    op = relax.op
    with bb.function("forward", [a, b]):
        with bb.dataflow():
            y0 = bb.emit(op.add(op.exp(a), b))
            y1 = bb.emit(op.sum(op.multiply(a, b), axis=[1]))
            gv = bb.emit_output(relax.Tuple([y0, y1]))
        bb.emit_func_output(gv)
    rng = np.random.default_rng(SEED + 6 + batch)
    return bb.get(), {"a": rng.standard_normal((batch, 8)).astype("float32"),
                      "b": rng.standard_normal((batch, 8)).astype("float32")}


def model_dyn_batch(batches):
    """The bound MLP with a symbolic batch n (shape heap, a shape function)."""
    rng = np.random.default_rng(SEED + 2)
    shapes, weights = mlp_weights(rng)
    mod = bind(mlp_module(None, shapes, batch_var=tvm.tirx.Var("n", "int64")), weights)
    inputs = {bsz: {"x": np.random.default_rng(SEED + 7 + bsz).standard_normal(
        (bsz, 16)).astype("float32")} for bsz in batches}
    return mod, inputs


def model_digits(batches):
    """The digits MLP of examples/digits (its trained weights p0..p3), dynamic batch, softmax."""
    params = tvm.runtime.load_param_dict((ROOT / "examples/digits/model/params.bin").read_bytes())
    w = {f"p{i}": params[f"p{i}"].numpy() for i in range(4)}
    shapes = {"fc1.weight": w["p0"].shape, "fc1.bias": w["p1"].shape,
              "fc2.weight": w["p2"].shape, "fc2.bias": w["p3"].shape}
    mod = mlp_module(None, shapes, softmax=True, batch_var=tvm.tirx.Var("n", "int64"),
                     input_name="data")
    mod = bind(mod, dict(zip(shapes, (w["p0"], w["p1"], w["p2"], w["p3"]))))
    x = np.fromfile(ROOT / "examples/digits/model/test_x.bin", dtype="float32").reshape(-1, 64)
    return mod, {bsz: {"data": x[:bsz]} for bsz in batches}


def run_tvm(path, inputs):
    """TVM 0.27's own runtime over the exported file: the reference outputs."""
    lib = tvm.runtime.load_module(str(path))
    assert lib.kind == "relax.VMExecutable", lib.kind
    assert [m.kind for m in lib.imports] == ["library"]
    vm = relax.VirtualMachine(lib, tvm.cpu())
    result = vm["forward"](*[tvm.runtime.tensor(v) for v in inputs.values()])
    if isinstance(result, tvm.runtime.Tensor):
        return vm, [result.numpy()], False
    return vm, [r.numpy() for r in result], True


def numpy_reference(name, inputs, weights=None):
    """An independent numpy computation of the same model (checks the graph, not TVM)."""
    if name in ("mlp_params", "mlp_const", "dyn_batch", "digits"):
        x = next(iter(inputs.values()))
        w = weights
        h = np.maximum(x @ w["fc1.weight"].T + w["fc1.bias"], 0)
        y = h @ w["fc2.weight"].T + w["fc2.bias"]
        if name == "digits":
            e = np.exp(y - y.max(axis=1, keepdims=True))
            y = e / e.sum(axis=1, keepdims=True)
        return [y]
    if name == "two_outputs":
        a, b = inputs["a"], inputs["b"]
        return [np.exp(a) + b, (a * b).sum(axis=1)]
    return None


RELAX_MODELS = {
    # name: (kind, builder, batches); "static": one library per batch (b1 = <name>.so,
    # larger = <name>_b<B>.so); "dynamic": one library, run at every batch.
    "mlp_params": ("static", model_mlp_params, [1, 64]),
    "mlp_const": ("static", model_mlp_const, [1, 64]),
    "conv": ("static", model_conv, [1, 16]),
    "two_outputs": ("static", model_two_outputs, [1, 64]),
    "dyn_batch": ("dynamic", model_dyn_batch, [1, 7, 64]),
    "digits": ("dynamic", model_digits, [1, 359]),
}


def build_relax(out):
    rdir = out / "relax"
    rdir.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name, (kind, builder, batches) in RELAX_MODELS.items():
        d = rdir / name
        d.mkdir(parents=True, exist_ok=True)
        runs = []
        if kind == "static":
            for bsz in batches:
                mod, inputs = builder(bsz)
                lib_name = f"{name}.so" if bsz == 1 else f"{name}_b{bsz}.so"
                relax.build(mod, target=target()).export_library(str(rdir / lib_name))
                runs.append((bsz, lib_name, inputs))
        else:
            mod, per_batch = builder(batches)
            lib_name = f"{name}.so"
            relax.build(mod, target=target()).export_library(str(rdir / lib_name))
            runs = [(bsz, lib_name, per_batch[bsz]) for bsz in batches]

        io = {"kind": "relax", "name": name, "function": "forward", "runs": []}
        for bsz, lib_name, inputs in runs:
            vm, outputs, is_tuple = run_tvm(rdir / lib_name, inputs)
            io["tuple_output"] = is_tuple
            io["param_names"] = [vm["get_function_param_name"]("forward", i)
                                 for i in range(vm["get_function_arity"]("forward"))]
            weights = None
            if name in ("mlp_params",):
                weights = inputs
            elif name in ("mlp_const", "dyn_batch"):
                weights = mlp_weights(np.random.default_rng(SEED + 2))[1]
            elif name == "digits":
                p = tvm.runtime.load_param_dict(
                    (ROOT / "examples/digits/model/params.bin").read_bytes())
                weights = dict(zip(["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"],
                                   (p[f"p{i}"].numpy() for i in range(4))))
            ref = numpy_reference(name, inputs, weights)
            if ref is not None:
                for got, want in zip(outputs, ref):
                    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
            run = {"batch": bsz, "library": lib_name, "inputs": [], "outputs": []}
            for k, v in inputs.items():
                f = f"b{bsz}_input_{k}.bin"
                save_raw(d / f, v)
                run["inputs"].append(tensor_entry(k, v, f))
            for i, v in enumerate(outputs):
                f = f"b{bsz}_output_{i}.bin"
                save_raw(d / f, v)
                run["outputs"].append(tensor_entry(str(i), v, f))
            io["runs"].append(run)
            # The same, one line per tensor, for plain C programs (bench/models' C driver):
            #   input <name> <dlpack code> <bits> <ndim> <dims...> <file>
            #   output <index> <bytes> <file>
            codes = {"i": 0, "u": 1, "f": 2}
            lines = [f"library {lib_name}"]
            for k, v in inputs.items():
                lines.append(f"input {k} {codes[v.dtype.kind]} {v.dtype.itemsize * 8} {v.ndim} "
                             + " ".join(str(x) for x in v.shape) + f" b{bsz}_input_{k}.bin")
            for i, v in enumerate(outputs):
                lines.append(f"output {i} {v.nbytes} b{bsz}_output_{i}.bin")
            (d / f"b{bsz}_io.txt").write_text("\n".join(lines) + "\n")

        # The executable's function table (builtins and kernels) as TVM reports it.
        stats = tvm.runtime.load_module(str(rdir / runs[0][1]))["stats"]()
        line = next(x for x in stats.splitlines() if x.strip().startswith("Globals"))
        io["globals"] = [g.strip() for g in line.split("[", 1)[1].rstrip("]").split(",")]

        # TVM's errors for a wrong input shape and a wrong dtype (first input, batch-1 library).
        bsz, lib_name, inputs = runs[0]
        vm = relax.VirtualMachine(tvm.runtime.load_module(str(rdir / lib_name)), tvm.cpu())
        first = next(iter(inputs))
        args = {k: tvm.runtime.tensor(v) for k, v in inputs.items()}
        bad_shape = dict(args)
        bad_shape[first] = tvm.runtime.tensor(np.zeros(
            (inputs[first].shape[0],) + tuple(s + 1 for s in inputs[first].shape[1:]), "float32"))
        bad_dtype = dict(args)
        bad_dtype[first] = tvm.runtime.tensor(inputs[first].astype("float64"))
        forward = vm["forward"]
        io["errors"] = {
            "wrong_shape": {"input": first,
                            **capture_error(forward, *bad_shape.values())},
            "wrong_dtype": {"input": first,
                            **capture_error(forward, *bad_dtype.values())},
            "wrong_arity": capture_error(forward, *list(args.values())[:-1]),
        }
        (d / "io.json").write_text(json.dumps(io, indent=1) + "\n")
        summary[name] = {"kind": kind, "batches": batches,
                         "libraries": sorted({r[1] for r in runs})}
        print("built", name, flush=True)
    return summary


# ---------------------------------------------------------------- runtime-library models
# Relax models whose executables call TVM's runtime library at run time (contrib sort and
# random, data-dependent outputs, shapes from data) or use the VM's other value kinds (Shape and
# int arguments, two symbolic dimensions, float16/int kernels, recursion and closures, nested
# tuples). Written in TVMScript; committed under runtime/.


def _runtime_models():
    from tvm.script import ir as I  # noqa: E741, N812
    from tvm.script import relax as R  # noqa: N812
    from tvm.script import tirx as T  # noqa: N812

    @I.ir_module
    class SortOps:
        @R.function
        def forward(x: R.Tensor((4, 6), "float32"), h: R.Tensor((3, 5), "float16"),
                    i: R.Tensor((2, 7), "int32")):
            a = R.sort(x, axis=1)
            b = R.argsort(x, axis=-1, descending=True, dtype="int32")
            c = R.topk(x, k=3, axis=1, ret_type="both", largest=True, dtype="int64")
            d = R.topk(i, k=2, axis=0, ret_type="indices", largest=False, dtype="int32")
            e = R.sort(h, axis=0, descending=True)
            f = R.argsort(h, axis=1, dtype="int64")
            g = R.topk(h, k=2, axis=-1, ret_type="values", largest=True)
            return (a, b, c[0], c[1], d, e, f, g)

    @I.ir_module
    class UniqueNonzero:
        @R.function
        def forward(x: R.Tensor((12,), "int32"), y: R.Tensor((5, 3), "float32")):
            u1 = R.unique(x)
            u2 = R.unique(x, sorted=False, return_index=True, return_inverse=True,
                          return_counts=True)
            u3 = R.unique(y, sorted=True, return_counts=True, axis=0)
            nz = R.nonzero(y)
            return (u1, u2, u3, nz)

    @I.ir_module
    class ShapeFromData:
        @R.function
        def forward(x: R.Tensor(("n",), "float32"), s: R.Tensor((2,), "int64")):
            p = T.int64()
            q = T.int64()
            shp = R.tensor_to_shape(s)
            y = R.match_cast(R.reshape(x, shp), R.Tensor((p, q), "float32"))
            z = R.add(y, R.const(1.0, "float32"))
            back = R.shape_to_tensor(R.shape_of(z))
            return (z, shp, back)

    @I.ir_module
    class ShapeIntArgs:
        @R.function
        def forward(x: R.Tensor(("n", "m"), "float32"), s: R.Shape(["a", "b"]),
                    k: R.Prim("int64")):
            n = T.int64()
            m = T.int64()
            a = T.int64()
            b = T.int64()
            y = R.reshape(x, R.shape([a, b]))
            z = R.multiply(y, R.const(2.0, "float32"))
            t = R.permute_dims(x)
            return (z, t, R.shape_of(t), s, k, R.prim_value(n * m))

    @I.ir_module
    class Float16Int:
        @R.function
        def forward(a: R.Tensor(("n", "m"), "float16"), b: R.Tensor(("n", "m"), "float16"),
                    i: R.Tensor(("n", "m"), "int32")):
            p = R.add(R.multiply(a, b), a)
            q = R.astype(p, "float32")
            r = R.add(R.multiply(i, R.const(3, "int32")), R.floor_divide(i, R.const(2, "int32")))
            s = R.sum(i, axis=1)
            return (p, q, r, s)

    @I.ir_module
    class ControlFlow:
        @R.function
        def fact(n: R.Tensor((), "int64"), acc: R.Tensor((), "int64")) -> R.Tensor((), "int64"):
            if R.greater(n, R.const(0, "int64")):
                r = ControlFlow.fact(R.subtract(n, R.const(1, "int64")), R.multiply(acc, n))
            else:
                r = acc
            return r

        @R.function
        def double(y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            return R.add(y, y)

        @R.function
        def apply(f: R.Callable([R.Tensor((4,), "float32")], R.Tensor((4,), "float32")),
                  y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            return f(y)  # a function value: vm.builtin.invoke_closure

        @R.function
        def forward(n: R.Tensor((), "int64"), x: R.Tensor((4,), "float32")):
            f = ControlFlow.fact(n, R.const(1, "int64"))
            # (An inner function capturing a tensor, lifted to a closure, fails inside TVM 0.27's
            # own relax.build; a global function passed as a value is the closure here.)
            z = R.add(R.multiply(x, x), x)
            if R.greater(f, R.const(10, "int64")):
                w = R.subtract(z, x)
            else:
                w = R.add(z, x)
            h = ControlFlow.apply(ControlFlow.double, w)
            return (f, z, w, h)

    @I.ir_module
    class NestedTuple:
        @R.function
        def forward(a: R.Tensor((2, 3), "float32"), b: R.Tensor((3,), "float32")):
            inner = (R.multiply(b, R.const(2.0, "float32")),)
            left = (R.add(a, R.const(1.0, "float32")), inner)
            right = (R.sum(a, axis=0), (R.add(a, b), inner[0]))
            both = (left, right)
            pick = both[1][1][0]
            return (both, pick)

    @I.ir_module
    class RandomSeeded:
        @R.function
        def forward(x: R.Tensor((4, 4), "float32")):
            u = R.call_dps_packed(
                "tvm.contrib.random.uniform",
                (R.prim_value(7), R.prim_value(11), R.prim_value(T.float64(-1.0)),
                 R.prim_value(T.float64(1.0))),
                out_ty=R.Tensor((4, 4), "float32"))
            g = R.call_dps_packed(
                "tvm.contrib.random.normal",
                (R.prim_value(3), R.prim_value(5), R.prim_value(T.float64(0.5)),
                 R.prim_value(T.float64(2.0))),
                out_ty=R.Tensor((2, 8), "float32"))
            return (R.add(x, u), g)

    return {
        "sort_ops": SortOps,
        "unique_nonzero": UniqueNonzero,
        "shape_from_data": ShapeFromData,
        "shape_int_args": ShapeIntArgs,
        "float16_int": Float16Int,
        "control_flow": ControlFlow,
        "nested_tuple": NestedTuple,
        "random_seeded": RandomSeeded,
    }


def _runtime_inputs(rng):
    """Per model: runs of named arguments (numpy arrays, tvm_ffi.Shape, int)."""
    ties = rng.integers(0, 5, (4, 6)).astype("float32")  # ties: sorting must be stable
    return {
        "sort_ops": [{"x": ties, "h": (rng.integers(-4, 4, (3, 5)) / 2).astype("float16"),
                      "i": rng.integers(-3, 3, (2, 7)).astype("int32")}],
        "unique_nonzero": [{
            "x": np.array([5, 3, 5, -1, 0, 3, 3, 9, -1, 0, 7, 5], "int32"),
            "y": np.array([[1, 0, 2], [0, 0, 0], [1, 0, 2], [-3.5, 0, 0], [0, 0, 0]], "float32")}],
        "shape_from_data": [{"x": np.arange(12, dtype="float32"), "s": np.array([3, 4], "int64")},
                            {"x": np.arange(6, dtype="float32") * 0.5,
                             "s": np.array([6, 1], "int64")}],
        "shape_int_args": [{"x": rng.standard_normal((2, 6)).astype("float32"),
                            "s": tvm_ffi.Shape([3, 4]), "k": 42},
                           {"x": rng.standard_normal((5, 1)).astype("float32"),
                            "s": tvm_ffi.Shape([1, 5]), "k": -7}],
        "float16_int": [{"a": rng.standard_normal((3, 5)).astype("float16"),
                         "b": rng.standard_normal((3, 5)).astype("float16"),
                         "i": rng.integers(-100, 100, (3, 5)).astype("int32")},
                        {"a": rng.standard_normal((1, 9)).astype("float16"),
                         "b": rng.standard_normal((1, 9)).astype("float16"),
                         "i": rng.integers(-100, 100, (1, 9)).astype("int32")}],
        "control_flow": [{"n": np.array(5, "int64"), "x": np.array([1, -2, 3.5, 0], "float32")},
                         {"n": np.array(2, "int64"), "x": np.array([0.5, 1, 2, 4], "float32")}],
        "nested_tuple": [{"a": rng.standard_normal((2, 3)).astype("float32"),
                          "b": rng.standard_normal(3).astype("float32")}],
        "random_seeded": [{"x": np.zeros((4, 4), "float32")}],
    }


def _describe_value(value, d, stem):
    """A TVM result as JSON (tensors saved as raw files); Arrays recursively."""
    if isinstance(value, tvm.runtime.Tensor):
        arr = value.numpy()
        save_raw(d / f"{stem}.bin", arr)
        return {"kind": "tensor", **tensor_entry(stem, arr, f"{stem}.bin")}
    if isinstance(value, tvm_ffi.Shape):
        return {"kind": "shape", "value": [int(v) for v in value]}
    if isinstance(value, bool | int):
        return {"kind": "int", "value": int(value)}
    if isinstance(value, tvm_ffi.Array | tuple | list):
        return {"kind": "tuple",
                "items": [_describe_value(v, d, f"{stem}_{i}") for i, v in enumerate(value)]}
    raise TypeError(f"unexpected result {type(value)}")


def _write_io_txt(path, lib_name, run):
    """The bench drivers' one-line-per-tensor form (see build_relax), for runs whose inputs are
    all tensors and whose result is a tensor or a flat tuple of tensors."""
    out = run["output"]
    items = out["items"] if out["kind"] == "tuple" else [out]
    if any(i["kind"] != "tensor" for i in run["inputs"] + items):
        return
    codes = {"int": 0, "uin": 1, "flo": 2}
    lines = [f"library {lib_name}"]
    for t in run["inputs"]:
        bits = int("".join(ch for ch in t["dtype"] if ch.isdigit()))
        lines.append(f"input {t['name']} {codes[t['dtype'][:3]]} {bits} {len(t['shape'])} "
                     + " ".join(str(x) for x in t["shape"]) + f" {t['file']}")
    for i, t in enumerate(items):
        n = int(np.prod(t["shape"], dtype=np.int64)) * np.dtype(t["dtype"]).itemsize
        lines.append(f"output {i} {n} {t['file']}")
    path.write_text("\n".join(lines) + "\n")


def build_runtime(out):
    rdir = out / "runtime"
    rdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED + 3)
    inputs = _runtime_inputs(rng)
    summary = {}
    for name, mod in _runtime_models().items():
        d = rdir / name
        d.mkdir(parents=True, exist_ok=True)
        lib_name = f"{name}.so"
        relax.build(mod, target=target()).export_library(str(rdir / lib_name))
        lib = tvm.runtime.load_module(str(rdir / lib_name))
        vm = relax.VirtualMachine(lib, tvm.cpu())
        io = {"kind": "relax_runtime", "name": name, "library": lib_name, "function": "forward",
              "param_names": [vm["get_function_param_name"]("forward", i)
                              for i in range(vm["get_function_arity"]("forward"))],
              "runs": []}
        for r, args in enumerate(inputs[name]):
            run = {"inputs": []}
            call = []
            for k, v in args.items():
                if isinstance(v, np.ndarray):
                    f = f"r{r}_input_{k}.bin"
                    save_raw(d / f, v)
                    run["inputs"].append({"kind": "tensor", **tensor_entry(k, v, f)})
                    call.append(tvm.runtime.tensor(v))
                elif isinstance(v, tvm_ffi.Shape):
                    run["inputs"].append({"kind": "shape", "name": k, "value": list(v)})
                    call.append(v)
                else:
                    run["inputs"].append({"kind": "int", "name": k, "value": int(v)})
                    call.append(v)
            result = vm["forward"](*call)  # TVM 0.27's runtime computes the reference
            run["output"] = _describe_value(result, d, f"r{r}_output")
            io["runs"].append(run)
            _write_io_txt(d / f"r{r}_io.txt", lib_name, run)
        stats = lib["stats"]()
        line = next(x for x in stats.splitlines() if x.strip().startswith("Globals"))
        io["globals"] = [g.strip() for g in line.split("[", 1)[1].rstrip("]").split(",")]
        (d / "io.json").write_text(json.dumps(io, indent=1) + "\n")
        summary[name] = {"library": lib_name, "runs": len(io["runs"])}
        print("built runtime", name, flush=True)
    return summary


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runtime_only = "--runtime-only" in sys.argv[1:]
    out = pathlib.Path(args[0]) if args else ROOT / "tests/tvm_models/tvm027"
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    if runtime_only:
        # Only runtime/ (the other fixtures stay as committed; dyn_batch.so is not reproducible).
        manifest = json.loads(manifest_path.read_text())
    else:
        kernel_errors = build_kernels(out)
        print("built kernels", flush=True)
        relax_models = build_relax(out)
        manifest = {
            "tvm_version": tvm.__version__,
            "tvm_ffi_version": tvm_ffi.__version__,
            "source": "pip install apache-tvm==0.27.0.post1 (PyPI)",
            "target": TARGET_JSON,
            "generator": "tools/tvm-fixtures/generate_tvm027.py",
            "python": platform.python_version(),
            "numpy": np.__version__,
            "seed": SEED,
            "host_global": HOST_GLOBAL,
            "kernels": sorted(p.stem for p in (out / "kernels").glob("*.so")),
            "relax": relax_models,
            "two_funcs": {"tvm_errors": {k: v for k, v in kernel_errors.items()}},
        }
    manifest["runtime"] = build_runtime(out)
    files = sorted(p for p in out.rglob("*")
                   if p.is_file() and p.name not in ("manifest.json", "README.md"))
    manifest["sha256"] = {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
