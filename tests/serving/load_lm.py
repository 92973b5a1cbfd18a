#!/usr/bin/env python3
"""A small load test for a server's OpenAI completions: time to first token and tokens/s.

    python tests/serving/load_lm.py LANG [--clients 4] [--seconds 10] [--url 127.0.0.1:PORT]

Starts `ci/serve.sh LANG DIR PORT` on the fixture folder of tests/serving (or measures a running
server with --url), then CLIENTS threads, each over its own keep-alive connection, send streaming
POST /v1/completions for SECONDS: the fixture's greedy prompt (19 tokens) with temperature 0 and
max_tokens 13, so that four generations fit the tiny model's KV cache at once. Every stream is
checked: 13 token events whose text is the fixture's greedy completion, a final event with
finish_reason "length", then [DONE]. Time to first token is from sending the request to reading
the first token's event; tokens/s is every client's tokens over the wall time.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import TINY_LLAMA, Server, make_model_dir  # noqa: E402

IO = json.loads((TINY_LLAMA / "io.json").read_text())
CHARS = json.loads((TINY_LLAMA / "lm-config.json").read_text())["tokenizer"]["chars"]
PROMPT = "".join(CHARS[i] for i in IO["greedy"]["prompt"])
WANT = [CHARS[i] for i in IO["greedy"]["tokens"]]


def client(host: str, port: int, stop: threading.Event, out: Dict[str, List[float]]) -> None:
    body = json.dumps({"model": "tiny_llama", "prompt": PROMPT, "temperature": 0,
                       "max_tokens": len(WANT), "stream": True}).encode()
    conn = http.client.HTTPConnection(host, port, timeout=120)
    while not stop.is_set():
        start = time.perf_counter()
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"status {resp.status}: {resp.read()[:200]!r}")
        texts, reason, first, done = [], None, None, False
        for line in resp:  # the events as they arrive
            line = line.strip()
            if not line:
                continue
            data = line.decode()[len("data: "):]
            if data == "[DONE]":
                done = True
                continue
            choice = json.loads(data)["choices"][0]
            if choice["finish_reason"] is None:
                if first is None:
                    first = time.perf_counter() - start
                texts.append(choice["text"])
            else:
                reason = choice["finish_reason"]
        if texts != WANT or reason != "length" or not done:
            raise RuntimeError(f"wrong stream: {texts} {reason} {done}")
        out["ttft"].append(first)
        out["latency"].append(time.perf_counter() - start)
        out["tokens"].append(len(texts))
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lang", nargs="?", default="python")
    ap.add_argument("--url", help="a running server (host:port) instead of starting one")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    server = None
    if args.url:
        host, port = args.url.rsplit(":", 1)
    else:
        d = Path(tempfile.mkdtemp(prefix="polyffi-load-lm-"))
        make_model_dir(d)
        server = Server(args.lang, d, Path(tempfile.gettempdir()) / f"load-lm-{args.lang}.log")
        host, port = "127.0.0.1", str(server.port)
    try:
        stop = threading.Event()
        outs = [{"ttft": [], "latency": [], "tokens": []} for _ in range(args.clients)]
        errors: List[BaseException] = []

        def run(out):
            try:
                client(host, int(port), stop, out)
            except BaseException as e:  # reported below
                errors.append(e)
                stop.set()

        threads = [threading.Thread(target=run, args=(o,)) for o in outs]
        start = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        if errors:
            raise SystemExit(f"failed: {errors[0]!r}")
        ttft = np.array([x for o in outs for x in o["ttft"]]) * 1e3
        lat = np.array([x for o in outs for x in o["latency"]]) * 1e3
        tokens = sum(sum(o["tokens"]) for o in outs)
        print(f"{args.lang}: {args.clients} clients, {len(lat)} completions of {len(WANT)} tokens "
              f"in {wall:.1f} s (load average {os.getloadavg()[0]:.1f})")
        print(f"  time to first token: p50 {np.percentile(ttft, 50):.2f} ms, "
              f"p99 {np.percentile(ttft, 99):.2f} ms")
        print(f"  completion: p50 {np.percentile(lat, 50):.2f} ms, "
              f"p99 {np.percentile(lat, 99):.2f} ms")
        print(f"  tokens/s: {tokens / wall:.0f} in all, "
              f"{np.median([len(WANT) / (x / 1e3) for x in lat]):.0f} per stream (median)")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
