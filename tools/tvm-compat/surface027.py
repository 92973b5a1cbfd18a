"""The global functions of TVM 0.27's runtime, read from the real libraries, and the TVM 0.27
table of docs/compatibility.md generated from them (surface.py makes the TVM 0.18 tables).

    surface027.py probe
        (under a Python with apache-tvm-ffi, TVM027_RT_DIR naming the unpacked wheel's tvm/)
        prints JSON: for libtvm_runtime.so and libtvm_runtime_extra.so, the globals each one
        registers when loaded (over those of libtvm_ffi.so), and the relax.run.* / vm.builtin.*
        functions TVM's Python package registers (relax.run.unique, ...: compiled executables
        call them by name).
    surface027.py render --polyffi LIB [--check]
        probes TVM (in a subprocess) and libpolyffi.so, and writes the table between the
        GENERATED TVM 0.27 markers of docs/compatibility.md, or with --check fails when it
        differs. tools/tvm-fixtures/setup-tvm027-runtime.sh sets up what the probe needs.

Every TVM name polyffi lacks needs a reason in REASONS; a gap without one is an error.
ci/test-tvm-compat.sh runs `render --check`, so the committed table stays true.
"""

import argparse
import ctypes
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "compatibility.md"
BEGIN = "<!-- BEGIN GENERATED TVM 0.27 by tools/tvm-compat/surface027.py -->"
END = "<!-- END GENERATED TVM 0.27 -->"
LIBRARIES = ["libtvm_runtime.so", "libtvm_runtime_extra.so"]
PYTHON = "TVM's Python"

LM = "the language-model issue (KV caches, sampling, tensor-cache loading), not CPU inference"
# Why polyffi has no counterpart of a TVM 0.27 name: (regex over the name, reason). First match.
REASONS = [
    (r"^vm\.builtin\.(attention_kv_cache_|paged_attention_kv_cache_|kv_state_|kv_cache_disagg_)",
     "a part of TVM's KV caches that polyffi's paged KV cache for the CPU does not have (sliding "
     "window, token trees, KV transfer, MLA, other cache kinds, debug hooks): docs/kv-cache.md"),
    (r"^vm\.builtin\.rnn_state_",
     "RNN state (relax.vm.RNNState of RWKV-style language models): not provided; sequences are "
     f"added, forked and advanced through the kv_state_* interface of {LM}"),
    (r"^runtime\.disco\.",
     "Disco (multi-GPU / multi-process sessions, NCCL collectives): a distributed runtime; polyffi "
     "has no devices besides the CPU"),
    (r"^(rpc\.|tvm\.rpc\.|device_api\.rpc$|runtime\.RPCTimeEvaluator$)",
     "RPC: no RPC (time_evaluator runs locally)"),
    (r"^runtime\.Device_(SetStream|Stream)", "device streams: the CPU has none"),
    (r"^device_api\.cpu$",
     "hands out TVM's C++ DeviceAPI object, meaningless outside TVM's C++"),
    (r"^(ffi\.Module\.(create|load_from_bytes)\.(const_loader|static_library)|"
     r"runtime\.ModuleLoadStaticLibrary|runtime\.LoadMetaDataFromJSON)$",
     "metadata / const-loader / static-library modules: compiler-side (export flows, BYOC "
     "constants), not in relax CPU executables"),
    (r"^runtime\.TVMTensor", "TVM 0.27 Python's own Tensor helpers (tvm.runtime.Tensor methods): "
     "polyffi is not a drop-in libtvm_runtime.so for TVM 0.27's Python (the bindings copy, view "
     "and allocate through the C ABI)"),
    (r"^relax\.ExecutableLoadFromFile$",
     "TVM 0.27 Python's loader entry point; polyffi loads executables with TVMModLoadFromFile "
     "(the ffi.Module.load_from_file.relax.VMExecutable path)"),
    (r"^(runtime\.config_threadpool|tvm\.runtime\.threading\.set_current_thread_affinity)$",
     "thread affinity control: the pool is sized once from TVM_NUM_THREADS"),
    (r"^runtime\.timer\.cpu$", "TVM's profiler timers (time_evaluator covers timing)"),
]


def reason_for(name):
    for pattern, reason in REASONS:
        if re.search(pattern, name):
            return reason
    return None


# ---------------------------------------------------------------- probe (with tvm_ffi)


def probe():
    import tvm_ffi

    tvm_dir = pathlib.Path(os.environ["TVM027_RT_DIR"])
    seen = set(tvm_ffi.registry.list_global_func_names())
    names = {}
    for lib in LIBRARIES:
        ctypes.CDLL(str(tvm_dir / "lib" / lib), ctypes.RTLD_GLOBAL)
        now = set(tvm_ffi.registry.list_global_func_names())
        for n in now - seen:
            names[n] = lib
        seen = now
    # Functions TVM's Python registers that compiled executables call at run time.
    pattern = re.compile(r"register_(?:global_)?func\(\s*\"((?:relax\.run|vm\.builtin)\.[\w.]+)\"")
    for py in sorted(tvm_dir.rglob("*.py")):
        for n in pattern.findall(py.read_text(errors="replace")):
            names.setdefault(n, PYTHON)
    return {"globals": names}


def polyffi_globals(lib_path):
    lib = ctypes.CDLL(str(lib_path))
    size = ctypes.c_int()
    names = ctypes.POINTER(ctypes.c_char_p)()
    if lib.TVMFuncListGlobalNames(ctypes.byref(size), ctypes.byref(names)) != 0:
        raise RuntimeError("TVMFuncListGlobalNames failed")
    return {names[i].decode() for i in range(size.value)}


# ---------------------------------------------------------------- render


def render(polyffi_lib):
    python = os.environ.get("TVM027_RT_PYTHON", sys.executable)
    out = subprocess.run([python, __file__, "probe"], check=True, capture_output=True,
                         text=True).stdout
    tvm = json.loads(out)["globals"]
    ours = polyffi_globals(polyffi_lib)
    rows, unexplained, have = [], [], 0
    for name in sorted(tvm):
        if name in ours:
            have += 1
            status = "yes"
        else:
            reason = reason_for(name)
            if reason is None:
                unexplained.append(name)
                reason = "**NO REASON GIVEN**"
            status = f"no: {reason}"
        rows.append(f"| `{name}` | {tvm[name]} | {status} |")
    per_lib = ", ".join(f"{lib} {sum(1 for v in tvm.values() if v == lib)}"
                        for lib in LIBRARIES + [PYTHON])
    head = ("### Global functions of TVM 0.27's runtime\n\n"
            f"TVM 0.27: {len(tvm)} ({per_lib}); polyffi has {have}, lacks {len(tvm) - have}"
            " (each with its reason). The globals of libtvm_ffi.so itself (`ffi.*`: tvm-ffi's "
            "own containers, reflection and testing functions) are not TVM's runtime and are "
            "not listed.\n\n| name | registered by | polyffi |\n|---|---|---|\n")
    return head + "\n".join(rows) + "\n", unexplained


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["probe", "render"])
    ap.add_argument("--polyffi", help="libpolyffi.so")
    ap.add_argument("--check", action="store_true", help="fail if docs/compatibility.md is stale")
    args = ap.parse_args()
    if args.mode == "probe":
        print(json.dumps(probe()))
        return 0
    generated, unexplained = render(args.polyffi)
    doc = DOC.read_text()
    start, stop = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    new_doc = doc[:start] + "\n" + generated + doc[stop:]
    status = 0
    if unexplained:
        print("TVM 0.27 names polyffi lacks with no reason in REASONS:", *unexplained,
              file=sys.stderr)
        status = 1
    if args.check:
        if new_doc != doc:
            print("docs/compatibility.md is stale: run tools/tvm-compat/surface027.py render "
                  "(see ci/test-tvm-compat.sh)", file=sys.stderr)
            status = 1
    else:
        DOC.write_text(new_doc)
    return status


if __name__ == "__main__":
    sys.exit(main())
