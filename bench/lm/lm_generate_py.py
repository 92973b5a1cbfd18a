"""polyffi.lm generations on the TVM 0.27 decoder fixture, from Python (child process of
run_lm_generate.py; it never shares a process with TVM).

    python lm_generate_py.py LM_DIR BATCH TOKENS ROUNDS

The driver uses only the core's language-model API through the Python binding's generic global
and module functions (polyffi.lm.load, generate, next, close), so the core does the tokenizing,
the KV cache, the chunked prefill, the decode steps and the (greedy) token choice. BATCH
generations are alive at once and stepped in turn on this thread: every generation's first
next() (its prefill) is the time to first token, then TOKENS more next() calls each; tokens/s is
BATCH * TOKENS / decode time. The core decodes the running generations of a model together (the
first next() of a round makes one batched decode call, the others take their waiting token), as
TVM's driver decodes the batch in one call; prefill is one call per generation, where TVM's
driver prefills the batch in one call. The model directory is a copy of
the fixture's lm-config.json with a KV cache large enough for BATCH sequences of prompt + TOKENS
(the weights and library are symlinked). The first round's tokens must equal the fixture's
(TVM's recorded greedy tokens). Prints one JSON line like bench/models/lm_bench_py.py.
"""

import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np
import polyffi


def model_dir(lm_dir, tmp, batch, tokens):
    cfg = json.loads((lm_dir / "lm-config.json").read_text())
    io = json.loads((lm_dir / "io.json").read_text())
    kv = cfg["kv_cache"]
    per_seq = len(io["greedy"]["prompt"]) + tokens + 1
    kv["max_batch_size"] = max(kv["max_batch_size"], batch)
    kv["max_total_seq_len"] = max(
        kv["max_total_seq_len"], batch * -(-per_seq // kv["page_size"]) * kv["page_size"]
    )
    for name in (cfg["model_lib"], cfg["weights"]):
        os.symlink(lm_dir / name, tmp / name)
    (tmp / "lm-config.json").write_text(json.dumps(cfg))
    return io


def main():
    lm_dir = pathlib.Path(sys.argv[1]).resolve()
    batch, tokens, rounds = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = pathlib.Path(tmp_name)
        io = model_dir(lm_dir, tmp, batch, tokens)
        lm = polyffi.get_global_func("polyffi.lm.load")(str(tmp))
        generate = lm["generate"]
        prompt = polyffi.nd.array(np.array(io["greedy"]["prompt"], "int32"))
        options = json.dumps({"temperature": 0, "max_tokens": tokens + 1})

        def run():
            gens = [generate(prompt, options) for _ in range(batch)]
            steps = [g["next"] for g in gens]
            t0 = time.perf_counter()
            out = [[s()] for s in steps]
            t1 = time.perf_counter()
            for _ in range(tokens):
                for i, s in enumerate(steps):
                    out[i].append(s())
            t2 = time.perf_counter()
            for g in gens:
                g["close"]()
            return t1 - t0, t2 - t1, out

        _, _, toks = run()
        if rounds == 0:  # one untimed generation (instruction counts)
            print(json.dumps({"runtime": "polyffi.lm", "batch": batch, "tokens": tokens}))
            return
        want = io["greedy"]["tokens"]
        n = min(len(want), tokens + 1)
        for t in toks:
            assert t[:n] == want[:n], "polyffi.lm: tokens differ from TVM's fixture"
        ttft, tps = [], []
        for _ in range(rounds):
            p, d, _ = run()
            ttft.append(p * 1e3)
            tps.append(batch * tokens / d)
    print(
        json.dumps(
            {
                "runtime": "polyffi.lm",
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
