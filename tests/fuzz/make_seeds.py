#!/usr/bin/env python3
"""Writes the committed seed corpora of tests/fuzz (deterministic; re-run after changing it).

    python3 tests/fuzz/make_seeds.py

Seeds are small valid inputs plus the edge cases the fuzzers found or the issue named (a shape
of 1e23, a truncated params blob, ...), so every short CI run starts at the interesting places.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- graph JSON -------------------------------------------------------------------------------

def graph(nodes, arg_nodes, heads, shapes, dtypes, sids, row=None):
    if row is None:
        row, acc = [0], 0
        for n in nodes:
            acc += 1 if n["op"] == "null" else int(n["attrs"]["num_outputs"])
            row.append(acc)
    return {"nodes": nodes, "arg_nodes": arg_nodes, "heads": heads, "node_row_ptr": row,
            "attrs": {"storage_id": ["list_int", sids], "shape": ["list_shape", shapes],
                      "dltype": ["list_str", dtypes]}}


def null(name):
    return {"op": "null", "name": name, "inputs": []}


def op(func, inputs, outputs=1, flatten="0"):
    return {"op": "tvm_op", "name": func + str(len(inputs)),
            "attrs": {"func_name": func, "num_inputs": str(len(inputs)),
                      "num_outputs": str(outputs), "flatten_data": flatten},
            "inputs": [[i, k, 0] for i, k in inputs]}


def graph_seeds():
    add = graph([null("x"), null("c"), op("add", [(0, 0), (1, 0)]), op("copy", [(2, 0)])],
                [0, 1], [[3, 0, 0], [2, 0, 0]], [[4], [4], [4], [4]], ["float32"] * 4, [0, 1, 2, 2])
    write("graph_json", "add_copy.json", json.dumps(add))
    flat = graph([null("x"), op("copy", [(0, 0)], flatten="1")], [0], [[1, 0, 0]],
                 [[2, 3], [2, 3]], ["int8", "int8"], [0, 1])
    write("graph_json", "flatten_int8.json", json.dumps(flat))
    multi = graph([null("x"), op("zero", [(0, 0)], outputs=2), op("__copy", [(1, 1)]),
                   op("__nop", [])], [0], [[1, 0, 0], [2, 0, 0]],
                  [[2], [2], [3], [3], [0]], ["bool", "float16", "float32x4", "float32x4", "int64"],
                  [0, 1, 2, 3, 4])
    write("graph_json", "multi_output.json", json.dumps(multi))
    # Numbers where integers belong: the JSON reader must refuse each (issue 12, defect a).
    for i, bad in enumerate(["1e23", "4.5", "-1", "18446744073709551615", "9223372036854775808"]):
        g = json.loads(json.dumps(add))
        g["attrs"]["shape"][1][0] = [json.loads(bad)]
        write("graph_json", f"bad_number_{i}.json", json.dumps(g))
    g = json.loads(json.dumps(add))
    g["nodes"][2]["attrs"]["num_outputs"] = "99999999999999999999"
    write("graph_json", "huge_attr.json", json.dumps(g))
    g = json.loads(json.dumps(add))
    g["nodes"][2]["inputs"][0] = [3, 0, 0]
    write("graph_json", "cycle.json", json.dumps(g))
    # Found while fuzzing: a dtype the runtime cannot allocate (int4), bool storage by bits.
    g = json.loads(json.dumps(flat))
    g["attrs"]["dltype"][1][1] = "int4"
    write("graph_json", "int4_output.json", json.dumps(g))
    bools = graph([null("x"), op("copy", [(0, 0)])], [0], [[1, 0, 0]], [[100], [100]],
                  ["bool", "bool"], [0, 1])
    write("graph_json", "bool_storage.json", json.dumps(bools))
    for name in ("graph.json", "graph_b1.json"):
        with open(os.path.join(ROOT, "examples", "digits", "model", name)) as f:
            write("graph_json", "digits_" + name, f.read())


# ---- params blobs -----------------------------------------------------------------------------

PARAMS_MAGIC = 0xF7E58D4F05049CB7
ARRAY_MAGIC = 0xDD5E40F096B4A13F


def params_blob(arrays):
    """arrays: [(name, (code, bits, lanes), shape, data bytes)]"""
    out = struct.pack("<QQQ", PARAMS_MAGIC, 0, len(arrays))
    for name, _, _, _ in arrays:
        out += struct.pack("<Q", len(name)) + name.encode()
    out += struct.pack("<Q", len(arrays))
    for _, (code, bits, lanes), shape, data in arrays:
        out += struct.pack("<QQiiiBBH", ARRAY_MAGIC, 0, 1, 0, len(shape), code, bits, lanes)
        out += b"".join(struct.pack("<q", d) for d in shape)
        out += struct.pack("<q", len(data)) + data
    return out


def params_seeds():
    # The inputs of fuzz_params.cc's graph.
    x = ("x", (2, 32, 1), [2, 3], struct.pack("<6f", *range(6)))
    w = ("w", (0, 8, 1), [4], bytes([1, 2, 3, 250]))
    s = ("s", (2, 16, 1), [], b"\x00\x3c")
    m = ("m", (1, 1, 1), [3], b"\x01\x00\x01")
    v = ("v", (2, 32, 4), [2], bytes(32))
    e = ("e", (0, 64, 1), [0, 5], b"")
    full = params_blob([x, w, s, m, v, e])
    write("params", "all_inputs.bin", full)
    write("params", "two_inputs.bin", params_blob([x, ("unused", (2, 32, 1), [1], bytes(4)), w]))
    write("params", "other_model.bin", params_blob([("dense_w", (2, 32, 1), [2], bytes(8))]))
    write("params", "empty.bin", params_blob([]))
    write("params", "truncated.bin", full[: len(full) // 2])
    write("params", "overflowing_shape.bin",
          params_blob([("x", (2, 32, 1), [1 << 62, 1 << 62], b"")]))
    write("params", "wrong_shape.bin", params_blob([("x", (2, 32, 1), [3, 2], bytes(24))]))


# ---- dtypes -----------------------------------------------------------------------------------

def dtype_seeds():
    for s in ["float32", "int8x4", "bool", "handle", "bfloat16", "uint1", "float", "int64x65535",
              "uint255", "boolx2", "int0", "int8x0", "int8x65536", "float32x", "custom45_2x8192"]:
        write("dtype", s, s)
    # Four raw bytes (code, bits, lanes) first: the printer's input.
    write("dtype", "raw_custom45", bytes([45, 2, 0x00, 0x20]))
    write("dtype", "raw_uint1", bytes([1, 1, 1, 0]))
    write("dtype", "raw_handle32", bytes([3, 32, 1, 0]))


# ---- args / dlpack / globals: FuzzedDataProvider byte streams ---------------------------------

def stream_seeds():
    import random
    rng = random.Random(12)
    def noise(lo, hi):
        return bytes(rng.randrange(256) for _ in range(rng.randrange(lo, hi)))

    for i in range(24):
        write("args", f"random_{i:02d}", noise(8, 96))
    for i in range(16):
        write("dlpack", f"random_{i:02d}", noise(8, 80))
    # fuzz_globals: longer streams (a callee index, then up to 7 arguments, up to 4 calls).
    for i in range(32):
        write("globals", f"random_{i:02d}", noise(16, 256))


# ---- library_bin: __tvm_ffi__library_bin of TVM 0.27 exports, and hand-made trees -------------

def elf_symbol_bytes(path, name):
    """The bytes of a defined dynamic symbol of an ELF64 little-endian file (file offset via the
    section holding it)."""
    with open(path, "rb") as f:
        elf = f.read()
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        for k in range(sh[5] // 24):
            st_name, _, _, shndx, value, size = struct.unpack_from("<IBBHQQ", elf, sh[4] + k * 24)
            start = strtab[4] + st_name
            if elf[start:elf.index(b"\0", start)] != name.encode():
                continue
            sec = sections[shndx]
            off = sec[4] + (value - sec[3])
            return elf[off:off + size]
    raise KeyError(name)


def u64(*xs):
    return b"".join(struct.pack("<Q", x) for x in xs)


def text(s):
    b = s.encode()
    return u64(len(b)) + b


def library_bin(indptr, children, modules):
    payload = u64(len(indptr), *indptr) + u64(len(children), *children)
    for kind, blob in modules:
        payload += text(kind) + (b"" if kind == "_lib" else u64(len(blob)) + blob)
    return u64(len(payload)) + payload


def library_bin_seeds():
    relax = os.path.join(ROOT, "tests", "tvm_models", "tvm027", "relax")
    for model in ["mlp_params", "two_outputs", "dyn_batch"]:
        write("library_bin", f"tvm027_{model}.bin",
              elf_symbol_bytes(os.path.join(relax, model + ".so"), "__tvm_ffi__library_bin"))
    write("library_bin", "tree.bin", library_bin(
        [0, 2, 2, 3], [1, 2, 1], [("fuzz.echo", b"abc"), ("_lib", b""), ("fuzz.echo", b"de")]))
    write("library_bin", "lib_only.bin", library_bin([0, 0], [], [("_lib", b"")]))
    write("library_bin", "echo_refuses.bin", library_bin([0, 1, 1], [1], [("fuzz.echo", b"!x"),
                                                                          ("_lib", b"")]))
    write("library_bin", "bad_no_loader.bin", library_bin([0, 1, 1], [1], [("no.such.kind", b"x"),
                                                                           ("_lib", b"")]))
    write("library_bin", "bad_cycle.bin", library_bin([0, 1, 2], [1, 0], [("fuzz.echo", b"x"),
                                                                          ("_lib", b"")]))
    write("library_bin", "bad_lib_twice.bin", library_bin([0, 1, 1], [1], [("_lib", b""),
                                                                           ("_lib", b"")]))
    cut = library_bin([0, 1, 1], [1], [("_lib", b""), ("fuzz.echo", b"de")])[8:-1]
    write("library_bin", "bad_truncated.bin", u64(len(cut)) + cut)  # the last module's bytes


# ---- relax VM executables (TVM 0.27 relax.VMExecutable) ---------------------------------------

VOID = 1 << 54
VMREG = VOID + 1


def reg(r):
    return r & ((1 << 56) - 1)


def imm(v):
    return (1 << 56) | (v & ((1 << 56) - 1))


def const(i):
    return (2 << 56) | i


def relax_exec(funcs, consts, code, magic=0xD225DE2F4214151E, version=b"0.14"):
    """funcs: (kind, name, start, end, nargs, nregs, params); code: list of word lists."""
    out = struct.pack("<Q", magic) + struct.pack("<Q", len(version)) + version
    out += struct.pack("<Q", len(funcs))
    for kind, name, start, end, nargs, nregs, params in funcs:
        out += struct.pack("<i", kind) + struct.pack("<Q", len(name)) + name.encode()
        out += struct.pack("<qqqq", start, end, nargs, nregs) + struct.pack("<Q", len(params))
        for p in params:
            out += struct.pack("<Q", len(p)) + p.encode()
    if magic & 1 == 0:
        out += struct.pack("<Q", 0)  # memory scopes
    out += struct.pack("<Q", len(consts)) + b"".join(consts)
    offsets, words = [], []
    for instr in code:
        offsets.append(len(words))
        words.extend(instr)
    out += struct.pack("<Q", len(offsets)) + b"".join(struct.pack("<q", o) for o in offsets)
    out += struct.pack("<Q", len(words))
    out += b"".join(struct.pack("<Q", w & 0xFFFFFFFFFFFFFFFF) for w in words)
    return out


def c_dtype(code, bits):
    return struct.pack("<iBBH", 5, code, bits, 1)


def c_str(s):
    return struct.pack("<iQ", 65, len(s)) + s.encode()


def c_shape(dims):
    return struct.pack("<iQ", 69, len(dims)) + b"".join(struct.pack("<q", d) for d in dims)


def c_tensor(shape, values):
    data = b"".join(struct.pack("<f", v) for v in values)
    return (struct.pack("<iQQiii", 70, 0xDD5E40F096B4A13F, 0, 1, 0, len(shape)) +
            struct.pack("<BBH", 2, 32, 1) + b"".join(struct.pack("<q", d) for d in shape) +
            struct.pack("<q", len(data)) + data)


def relax_seeds():
    builtins = ["vm.builtin.alloc_shape_heap", "vm.builtin.check_tensor_info",
                "vm.builtin.match_shape", "vm.builtin.make_shape", "vm.builtin.alloc_storage",
                "vm.builtin.alloc_tensor", "vm.builtin.reshape", "vm.builtin.make_tuple",
                "vm.builtin.tuple_getitem", "vm.builtin.shape_of", "vm.builtin.read_if_cond",
                "vm.builtin.copy", "vm.builtin.null_value", "vm.builtin.check_tuple_info"]
    f = {n: i + 1 for i, n in enumerate(builtins)}
    consts = [c_dtype(2, 32), c_dtype(1, 8), c_str("global"), c_str("ctx"), c_shape([6]),
              c_tensor([2], [1.5, -2.0]), struct.pack("<iq", 1, 7), struct.pack("<id", 3, 0.5)]

    def call(fn, args, dst=VOID):
        return [1, dst, f[fn], len(args)] + args

    code = [
        call("vm.builtin.alloc_shape_heap", [reg(VMREG), imm(2)], 1),
        call("vm.builtin.check_tensor_info", [reg(0), imm(2), const(0), const(3)]),
        call("vm.builtin.match_shape", [reg(0), reg(1), imm(2), imm(1), imm(0), imm(0), imm(3),
                                        const(3)]),
        call("vm.builtin.make_shape", [reg(1), imm(2), imm(1), imm(0), imm(0), imm(3)], 2),
        call("vm.builtin.alloc_storage", [reg(VMREG), const(4), imm(0), const(0), const(2)], 3),
        call("vm.builtin.alloc_tensor", [reg(3), imm(0), reg(2), const(0)], 4),
        call("vm.builtin.reshape", [reg(4), const(4)], 5),
        call("vm.builtin.shape_of", [reg(5)], 6),
        call("vm.builtin.read_if_cond", [imm(1)], 7),
        [4, 7, 3],
        call("vm.builtin.copy", [reg(5)], 8),
        [3, 2],
        call("vm.builtin.copy", [const(5)], 8),
        call("vm.builtin.make_tuple", [reg(8), reg(6), const(6), const(7)], 9),
        call("vm.builtin.check_tuple_info", [reg(9), imm(4), const(3)]),
        call("vm.builtin.tuple_getitem", [reg(9), imm(0)], 10),
        call("vm.builtin.null_value", [], 3),
        [2, 9],
    ]
    funcs = [(1, "main", 0, len(code), 1, 11, ["x"])] + [(0, n, 0, 0, 0, 0, []) for n in builtins]
    write("relax_exec", "builtins_main", relax_exec(funcs, consts, code))
    write("relax_exec", "builtins_main_v1",
          relax_exec(funcs, consts, code, magic=0xD225DE2F4214151D))
    write("relax_exec", "bad_version", relax_exec(funcs, consts, code, version=b"0.13"))
    small = [(1, "f", 0, 1, 0, 1, []), (0, "vm.builtin.null_value", 0, 0, 0, 0, [])]
    write("relax_exec", "tiny", relax_exec(small, [], [[2, VOID]]))


# ---- tensor-cache directories -----------------------------------------------------------------

def fdp_string(data):
    """FuzzedDataProvider.ConsumeRandomLengthString's encoding: a backslash doubled, ended by one
    backslash and another byte."""
    return data.replace(b"\\", b"\\\\") + b"\\x"


def tensor_cache_seed(index, shards):
    return (fdp_string(index) + b"".join(fdp_string(b) for b in shards) + bytes([len(shards)]))


def tensor_cache_seeds():
    base = os.path.join(ROOT, "tests", "tvm_models", "tvm027", "tensor_cache")
    for sub in ("raw", "bf16"):
        d = os.path.join(base, sub)
        with open(os.path.join(d, "tensor-cache.json"), "rb") as f:
            index = f.read()
        shards = []
        for rec in json.loads(index)["records"]:
            with open(os.path.join(d, rec["dataPath"]), "rb") as f:
                shards.append(f.read())
        write("tensor_cache", sub, tensor_cache_seed(index, shards))
    rec = {"name": "w", "shape": [2, 2], "dtype": "float32", "format": "raw", "nbytes": 16,
           "byteOffset": 0}
    shard = {"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": 16,
             "records": [rec]}
    small = json.dumps({"records": [shard]}).encode()
    write("tensor_cache", "small", tensor_cache_seed(small, [bytes(range(16))]))
    past = dict(rec, byteOffset=12)
    write("tensor_cache", "past_end", tensor_cache_seed(
        json.dumps({"records": [dict(shard, records=[past])]}).encode(), [bytes(16)]))
    write("tensor_cache", "missing_shard", tensor_cache_seed(small, []))
    write("tensor_cache", "truncated_json", tensor_cache_seed(small[:40], [bytes(16)]))


if __name__ == "__main__":
    graph_seeds()
    params_seeds()
    dtype_seeds()
    stream_seeds()
    library_bin_seeds()
    relax_seeds()
    tensor_cache_seeds()
