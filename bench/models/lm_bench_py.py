"""Greedy generation speed of the TVM 0.27 decoder fixture (tests/tvm_models/tvm027/lm) under
polyffi or under TVM 0.27's own runtime, from Python (child process of run_lm_tvm027.py; the two
runtimes never share a process).

    python lm_bench_py.py polyffi|tvm LM_DIR BATCH TOKENS ROUNDS

Both drivers do the same steps with their runtime's paged KV cache (the model's own
create_paged_kv_cache and TVM's vm.builtin.kv_state_* globals): add BATCH sequences, prefill the
fixture's prompt for each (one batched prefill), then TOKENS greedy decode steps (argmax in numpy
on the logits), remove the sequences. The first round's tokens must equal the fixture's (TVM's
recorded greedy tokens). Prints one JSON line: per round, the prefill time (time to first token)
and decode tokens/s (BATCH * TOKENS / decode time); the median and the best round.
"""

import json
import pathlib
import statistics
import sys
import time

import numpy as np


def main():
    runtime, lm_dir = sys.argv[1], pathlib.Path(sys.argv[2])
    batch, tokens, rounds = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    io = json.loads((lm_dir / "io.json").read_text())
    cache_dir = json.loads((lm_dir / "params/tensor-cache.json").read_text())
    shard = cache_dir["records"][0]
    blob = (lm_dir / "params" / shard["dataPath"]).read_bytes()
    recs = {r["name"]: r for r in shard["records"]}
    weights = []
    for p in io["params"]:
        r = recs[p["name"]]
        a = np.frombuffer(blob, "float32", r["nbytes"] // 4, r["byteOffset"])
        weights.append(a.reshape(r["shape"]).copy())
    lib_path = lm_dir / io["library"]

    if runtime == "polyffi":
        import polyffi as rt

        vm = rt.VirtualMachine(rt.load_module(str(lib_path)), rt.cpu())
        tensor, shape, array = rt.nd.array, rt.Shape, rt.Array
        g = rt.get_global_func
    else:
        import tvm
        from tvm import relax

        vm = relax.VirtualMachine(tvm.runtime.load_module(str(lib_path)), tvm.cpu())
        tensor, shape, array = tvm.runtime.tensor, tvm.runtime.ShapeTuple, list
        g = tvm.get_global_func
    params = array([tensor(w) for w in weights])
    add, remove = g("vm.builtin.kv_state_add_sequence"), g("vm.builtin.kv_state_remove_sequence")
    begin, end = g("vm.builtin.kv_state_begin_forward"), g("vm.builtin.kv_state_end_forward")
    prefill, decode = vm["prefill"], vm["decode"]
    ca = io["cache_args"]
    per_seq = len(io["greedy"]["prompt"]) + tokens + 1
    need = batch * -(-per_seq // ca["page_size"]) * ca["page_size"]
    cache = vm["create_paged_kv_cache"](
        shape([max(ca["max_batch_size"], batch)]),
        shape([max(ca["max_total_seq_len"], need)]),
        shape([max(ca["prefill_chunk_size"], batch * len(io["greedy"]["prompt"]))]),
        shape([ca["page_size"]]),
        shape([0]),
    )
    prompt = io["greedy"]["prompt"]
    ids = list(range(batch))

    def generate():
        for i in ids:
            add(cache, i)
        t0 = time.perf_counter()
        begin(cache, shape(ids), shape([len(prompt)] * batch))
        x = tensor(np.array([prompt * batch], "int32"))
        logits = prefill(x, cache, params).numpy()
        end(cache)
        last = logits[0, [len(prompt) * (i + 1) - 1 for i in ids]]
        cur = np.argmax(last, axis=-1).astype("int32")
        t1 = time.perf_counter()
        out = [cur]
        ones = shape([1] * batch)
        for _ in range(tokens):
            begin(cache, shape(ids), ones)
            logits = decode(tensor(cur[:, None]), cache, params).numpy()
            end(cache)
            cur = np.argmax(logits[:, 0], axis=-1).astype("int32")
            out.append(cur)
        t2 = time.perf_counter()
        for i in ids:
            remove(cache, i)
        return t1 - t0, t2 - t1, np.stack(out, axis=1)

    _, _, toks = generate()
    if rounds == 0:  # one untimed generation (instruction counts: run_lm_tvm027.py --instructions)
        print(json.dumps({"runtime": runtime, "batch": batch, "tokens": tokens}))
        return
    want = io["greedy"]["tokens"]
    n = min(len(want), toks.shape[1])
    for b in range(batch):
        assert toks[b, :n].tolist() == want[:n], f"{runtime}: tokens differ from TVM's fixture"
    ttft, tps = [], []
    for _ in range(rounds):
        p, d, _ = generate()
        ttft.append(p * 1e3)
        tps.append(batch * tokens / d)
    print(
        json.dumps(
            {
                "runtime": runtime,
                "batch": batch,
                "tokens": tokens,
                "ttft_ms": statistics.median(ttft),
                "ttft_ms_min": min(ttft),
                "tokens_per_s": statistics.median(tps),
                "tokens_per_s_max": max(tps),
            }
        )
    )


if __name__ == "__main__":
    main()
