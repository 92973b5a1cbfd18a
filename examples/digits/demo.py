"""Classify the held-out digits from Python through polyffi's graph executor and relax VM.

Same model, kernels and executor as demo.c; checks every prediction against the training
script's and prints accuracy and per-inference latency.
usage: python demo.py [MODEL_DIR] [MODEL_LIB]
"""
import json
import os
import sys
import time

import numpy as np

import polyffi

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_executor(model_dir, lib, graph_name):
    with open(os.path.join(model_dir, graph_name)) as f:
        graph = f.read()
    create = polyffi.get_global_func("tvm.graph_executor.create")
    gmod = create(graph, lib, polyffi.cpu().device_type, 0)
    with open(os.path.join(model_dir, "params.bin"), "rb") as f:
        gmod["load_params"](bytearray(f.read()))
    return gmod


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "model")
    lib_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build", "lib",
                                                                  "libdigits_model.so")
    lib = polyffi.load_module(lib_path)
    x = np.fromfile(os.path.join(model_dir, "test_x.bin"), dtype="<f4").reshape(-1, 64)
    y = np.fromfile(os.path.join(model_dir, "test_y.bin"), dtype="<i4")
    with open(os.path.join(model_dir, "expected.json")) as f:
        expected = json.load(f)

    batch = load_executor(model_dir, lib, "graph.json")
    batch["set_input"]("data", x)  # numpy passes zero-copy; the executor copies into its storage
    batch["run"]()
    probs = batch["get_output"](0).numpy()
    pred = probs.argmax(axis=1)
    agree = int((pred == np.asarray(expected["predictions"])).sum())
    correct = int((pred == y).sum())

    single = load_executor(model_dir, lib, "graph_b1.json")
    set_input, run, get_output = single["set_input"], single["run"], single["get_output"]
    out = polyffi.nd.empty((1, 10), "float32")
    times = []
    for _ in range(3):
        for i in range(len(x)):
            t0 = time.perf_counter_ns()
            set_input(0, x[i:i + 1])
            run()
            get_output(0, out)
            times.append(time.perf_counter_ns() - t0)
    times.sort()

    print(f"held-out samples:        {len(x)}")
    print(f"accuracy:                {correct / len(x):.4f} ({correct}/{len(x)} correct)")
    print(f"agreement with train.py: {agree}/{len(x)}")
    print(f"batch-1 latency:         median {times[len(times) // 2] / 1000:.2f} us "
          f"(set_input+run+get_output from Python, {len(times)} inferences)")
    if agree != len(x):
        sys.exit("predictions differ from the training script")

    # The same model compiled by Apache TVM 0.18 (relay.build + export_library, committed under
    # tests/tvm_models): TVM's own kernels, loaded as the one file TVM tells users to ship.
    tvm_lib = os.path.join(ROOT, "tests", "tvm_models", "tvm018", "digits_b359", "factory.so")
    gm = polyffi.GraphModule(polyffi.load_module(tvm_lib)["default"](polyffi.cpu()))
    gm.run(data=x)
    tvm_pred = gm.get_output(0).numpy().argmax(axis=1)
    tvm_agree = int((tvm_pred == np.asarray(expected["predictions"])).sum())
    print(f"TVM 0.18-compiled model:  accuracy {(tvm_pred == y).mean():.4f}, agreement with "
          f"train.py {tvm_agree}/{len(x)} (GraphModule(lib['default'](cpu)) on export_library)")
    if tvm_agree != len(x):
        sys.exit("the TVM-compiled model's predictions differ from the training script")

    # The same trained weights compiled by Apache TVM 0.27 (relax.build + export_library, a
    # relax VM executable with a symbolic batch; tests/tvm_models/tvm027): polyffi's VM runs it.
    relax_lib = os.path.join(ROOT, "tests", "tvm_models", "tvm027", "relax", "digits.so")
    vm = polyffi.VirtualMachine(polyffi.load_module(relax_lib), polyffi.cpu())
    relax_pred = vm["forward"](x).numpy().argmax(axis=1)
    relax_agree = int((relax_pred == np.asarray(expected["predictions"])).sum())
    forward = vm["forward"]
    one = polyffi.nd.empty((1, 64), "float32")
    relax_times = []
    for _ in range(3):
        for i in range(len(x)):
            t0 = time.perf_counter_ns()
            one.copyfrom(x[i:i + 1])
            forward(one).numpy()
            relax_times.append(time.perf_counter_ns() - t0)
    relax_times.sort()
    print(f"TVM 0.27-compiled model:  accuracy {(relax_pred == y).mean():.4f}, agreement with "
          f"train.py {relax_agree}/{len(x)} (VirtualMachine(lib, cpu)['forward'] on "
          f"export_library); batch-1 median {relax_times[len(relax_times) // 2] / 1000:.2f} us")
    if relax_agree != len(x):
        sys.exit("the TVM 0.27-compiled model's predictions differ from the training script")


if __name__ == "__main__":
    main()
