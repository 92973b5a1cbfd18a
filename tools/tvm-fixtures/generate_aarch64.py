"""Cross-compile examples/digits' relax model for linux-aarch64 with TVM 0.27 (ci/test-packages.sh
runs it from C under qemu-user against the aarch64 libpolyffi of dist/c).

    tools/tvm-fixtures/tvm027.sh tools/tvm-fixtures/generate_aarch64.py [out_dir]

out_dir defaults to tests/tvm_models/tvm027/aarch64. It writes digits.so: the same module as
tests/tvm_models/tvm027/relax/digits.so (generate_tvm027.model_digits), built for the target
{"kind": "llvm", "mtriple": "aarch64-linux-gnu"} and linked by Debian's aarch64-linux-gnu-g++,
plus manifest.json (versions, target, sha256). TVM cannot run it here, so the reference outputs
are the x86-64 fixture's, which TVM 0.27 computed from the same module and inputs: LLVM fuses
multiply-adds on aarch64, so a run compares them with a tolerance, not byte for byte.

It also writes aarch64 builds of two fixtures of the conformance cases, which the C runner
cross-built for aarch64 loads (ci/test-packages.sh): two_funcs.so (kernel_two_funcs, as in
tests/tvm_models/tvm027/kernels/) and two_outputs.so (model_two_outputs at batch 1, as in
tests/tvm_models/tvm027/relax/); the cases' expected values are TVM's x86-64 results.
"""

import hashlib
import json
import pathlib
import platform
import sys

import tvm
from tvm import relax

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import generate_tvm027 as g  # noqa: E402

TARGET_JSON = {"kind": "llvm", "mtriple": "aarch64-linux-gnu"}
CC = "aarch64-linux-gnu-g++"


def main():
    out = (
        pathlib.Path(sys.argv[1])
        if len(sys.argv) > 1
        else g.ROOT / "tests/tvm_models/tvm027/aarch64"
    )
    out.mkdir(parents=True, exist_ok=True)
    mod, _ = g.model_digits([1])
    lib = out / "digits.so"
    target = tvm.target.Target(TARGET_JSON)
    relax.build(mod, target=target).export_library(str(lib), cc=CC)
    kernels = tvm.compile(g.kernel_two_funcs(), target=target)
    kernels.export_library(str(out / "two_funcs.so"), cc=CC)
    two_outputs, _ = g.model_two_outputs(1)
    relax.build(two_outputs, target=target).export_library(str(out / "two_outputs.so"), cc=CC)
    libs = ["digits.so", "two_funcs.so", "two_outputs.so"]
    manifest = {
        "tvm_version": tvm.__version__,
        "target": TARGET_JSON,
        "linker": CC,
        "generator": "tools/tvm-fixtures/generate_aarch64.py",
        "python": platform.python_version(),
        "reference": "tests/tvm_models/tvm027/relax/digits (b1_io.txt: TVM 0.27's x86-64 outputs)",
        "sha256": {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in libs},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for name in libs:
        print(f"wrote {out / name} ({(out / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
