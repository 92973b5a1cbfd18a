"""A Python consumer of the installed polyffi wheel (ci/test-packages.sh runs it in a fresh venv).

    python run_model.py MODEL_DIR

Runs the TVM-exported graph model MODEL_DIR/factory.so, compares output 0 byte for byte with what
TVM's runtime recorded, and checks that the libpolyffi.so mapped into this process is the one
inside the installed package, not a build tree's.
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


def main() -> None:
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
    lib = mapped_libpolyffi()
    package = os.path.realpath(os.path.dirname(polyffi.__file__))
    if os.path.dirname(lib) != package:
        raise SystemExit(f"run_model.py: runs {lib}, not the one in the package {package}")
    print(f"run_model.py: output equals TVM's ({len(want)} bytes); libpolyffi {lib}")


if __name__ == "__main__":
    main()
