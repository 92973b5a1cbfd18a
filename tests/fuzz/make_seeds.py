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


# ---- args / dlpack: FuzzedDataProvider byte streams -------------------------------------------

def stream_seeds():
    import random
    rng = random.Random(12)
    def noise(lo, hi):
        return bytes(rng.randrange(256) for _ in range(rng.randrange(lo, hi)))

    for i in range(24):
        write("args", f"random_{i:02d}", noise(8, 96))
    for i in range(16):
        write("dlpack", f"random_{i:02d}", noise(8, 80))


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


if __name__ == "__main__":
    graph_seeds()
    params_seeds()
    dtype_seeds()
    stream_seeds()
    library_bin_seeds()
