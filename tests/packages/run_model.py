"""A Python consumer of the installed polyffi wheel (ci/test-packages.sh runs it in a fresh venv).

    python run_model.py MODEL_DIR
    python run_model.py relax LIBRARY INPUT OUTPUT

Runs the TVM-exported graph model MODEL_DIR/factory.so, compares output 0 byte for byte with what
TVM's runtime recorded, and checks that the libpolyffi.so mapped into this process is the one
inside the installed package, not a build tree's. The relax form runs a TVM 0.27 relax executable
whose forward(data) takes one float32 [1, n] tensor (the aarch64 wheels run the digits model TVM
0.27 compiled for aarch64 under qemu-user) and compares with TVM's x86-64 output OUTPUT within a
relative 1e-5, as tests/packages/run_model.c does: LLVM fuses multiply-adds on aarch64.
"""

import os
import sys
from pathlib import Path

import numpy as np
import polyffi


def mapped_libpolyffi() -> str:
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split(maxsplit=5)[-1].strip()
            if path.endswith("/libpolyffi.so"):
                return os.path.realpath(path)
    raise SystemExit("run_model.py: no libpolyffi.so is mapped")


def check_mapped() -> str:
    lib = mapped_libpolyffi()
    package = os.path.realpath(os.path.dirname(polyffi.__file__))
    if os.path.dirname(lib) != package:
        raise SystemExit(f"run_model.py: runs {lib}, not the one in the package {package}")
    return lib


def main_relax(library: str, input_path: str, output_path: str) -> None:
    x = np.fromfile(input_path, dtype="float32").reshape(1, -1)
    want = np.fromfile(output_path, dtype="float32")
    vm = polyffi.VirtualMachine(polyffi.load_module(library))
    got = vm["forward"](x).numpy().reshape(-1)
    if got.shape != want.shape:
        raise SystemExit(f"run_model.py: output has {got.size} values, TVM's {want.size}")
    rel = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30)))
    if not rel <= 1e-5:
        raise SystemExit(f"run_model.py: output differs from TVM's (largest relative {rel:.3g})")
    lib = check_mapped()
    print(f"run_model.py: {got.size} outputs within {rel:.2g} of TVM's; libpolyffi {lib}")


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "relax":
        main_relax(*sys.argv[2:])
        return
    model = Path(sys.argv[1])
    x = np.fromfile(model / "input_data.bin", dtype="float32").reshape(1, -1)
    want = (model / "output_0.bin").read_bytes()
    gm = polyffi.GraphModule(
        polyffi.load_module(str(model / "factory.so"))["default"](polyffi.cpu())
    )
    gm.set_input("data", x)
    gm.run()
    got = gm.get_output(0).numpy().tobytes()
    if got != want:
        raise SystemExit("run_model.py: output 0 differs from TVM's output_0.bin")
    print(f"run_model.py: output equals TVM's ({len(want)} bytes); libpolyffi {check_mapped()}")


if __name__ == "__main__":
    main()
