#!/usr/bin/env python3
"""A small load test for an Open Inference Protocol server: requests/s, p50/p99, and the p99 of a
health probe sent while the models run.

    python tests/serving/load.py LANG [--model relax_digits] [--batch 1] [--clients 8]
                                 [--seconds 10]

Starts `ci/serve.sh LANG DIR PORT` on the fixture folder of tests/serving (or measures a running
server with --url 127.0.0.1:PORT), sends POST /v2/models/MODEL/infer from CLIENTS client
processes, each over its own keep-alive connection, for SECONDS, while one more process sends
GET /v2/health/ready every 10 ms. Every answer is checked (status 200 and an output of the right
size). The clients run on the same machine as the server, so on a loaded machine the numbers
include that load (the load average is printed with them).
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import List

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import Server, make_model_dir  # noqa: E402

# model -> (input name, features per row, output values per row, static batch or None)
MODELS = {"relax_digits": ("data", 64, 10, None), "relax_dyn_batch": ("x", 16, 10, None),
          "tvm018_digits": ("data", 64, 10, 1), "digits": ("data", 64, 10, 359)}


def percentile(xs: List[float], p: float) -> float:
    return float(np.percentile(np.array(xs), p)) if xs else float("nan")


def client(host, port, path, body, values, stop, results) -> None:
    lat: List[float] = []
    errors: List[str] = []
    conn = http.client.HTTPConnection(host, port, timeout=60)
    while not stop.is_set():
        t0 = time.perf_counter()
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        t1 = time.perf_counter()
        if resp.status != 200:
            errors.append(f"{resp.status} {data[:200]!r}")
            continue
        if len(json.loads(data)["outputs"][0]["data"]) != values:
            errors.append("an output of the wrong size")
        lat.append(t1 - t0)
    conn.close()
    results.put(("infer", lat, errors))


def prober(host, port, stop, results) -> None:
    lat: List[float] = []
    errors: List[str] = []
    conn = http.client.HTTPConnection(host, port, timeout=60)
    while not stop.is_set():
        t0 = time.perf_counter()
        conn.request("GET", "/v2/health/ready")
        resp = conn.getresponse()
        resp.read()
        lat.append(time.perf_counter() - t0)
        if resp.status != 200:
            errors.append(f"health {resp.status}")
        time.sleep(0.01)
    conn.close()
    results.put(("health", lat, errors))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lang", nargs="?", default="python")
    ap.add_argument("--url", help="a running server (host:port) instead of starting one")
    ap.add_argument("--model", default="relax_digits", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    name, width, classes, static = MODELS[args.model]
    batch = static or args.batch
    x = np.random.default_rng(0).uniform(0, 16, size=(batch, width)).astype("float32")
    body = json.dumps({"inputs": [{"name": name, "shape": [batch, width], "datatype": "FP32",
                                   "data": x.reshape(-1).tolist()}]}).encode()
    server = None
    if args.url:
        host, port = args.url.rsplit(":", 1)
    else:
        d = Path(tempfile.mkdtemp(prefix="polyffi-load-"))
        make_model_dir(d)
        server = Server(args.lang, d, Path(tempfile.gettempdir()) / f"polyffi-load-{args.lang}.log")
        host, port = "127.0.0.1", str(server.port)
    path = f"/v2/models/{args.model}/infer"
    ctx = mp.get_context("fork")
    stop = ctx.Event()
    results = ctx.Queue()
    try:
        procs = [ctx.Process(target=client, args=(host, int(port), path, body, batch * classes,
                                                  stop, results)) for _ in range(args.clients)]
        procs.append(ctx.Process(target=prober, args=(host, int(port), stop, results)))
        start = time.perf_counter()
        for p in procs:
            p.start()
        time.sleep(args.seconds)
        stop.set()
        got = [results.get(timeout=120) for _ in procs]
        elapsed = time.perf_counter() - start
        for p in procs:
            p.join()
    finally:
        if server is not None:
            server.stop()
    lat = [v for kind, xs, _ in got if kind == "infer" for v in xs]
    health = next(xs for kind, xs, _ in got if kind == "health")
    errors = [e for _, _, es in got for e in es]
    print(f"server={args.lang} model={args.model} batch={batch} clients={args.clients} "
          f"seconds={elapsed:.1f} loadavg={os.getloadavg()[0]:.1f}")
    print(f"requests/s={len(lat) / elapsed:.0f} p50={percentile(lat, 50) * 1e3:.2f}ms "
          f"p99={percentile(lat, 99) * 1e3:.2f}ms "
          f"health_p99={percentile(health, 99) * 1e3:.2f}ms "
          f"health_probes={len(health)} errors={len(errors)}")
    if errors:
        print("first error:", errors[0], file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
