#!/usr/bin/env python3
"""An Open Inference Protocol (KServe v2) REST server over the polyffi Python binding.

    python polyffi_serve.py MODEL_DIR PORT [--host 127.0.0.1]

Serves every model in MODEL_DIR under its file's stem (docs/serving.md, "The model folder"):

- ``NAME.so``: a TVM 0.18 export (a graph executor factory) or a TVM 0.27 relax VM executable
  (its function ``main``, or ``forward`` when it has no ``main``);
- ``NAME/``: a folder with ``graph.json``, an optional ``params.bin`` and one kernel library
  ``*.so`` (the three artifacts of a graph model, e.g. examples/digits).

A subfolder ``NAME/`` holding ``lm-config.json`` is a language model (docs/lm.md), served under
OpenAI's completions API instead: GET /v1/models, POST /v1/completions (streamed as server-sent
events with ``"stream": true``); errors there are OpenAI's {"error": {"message", "type", ...}}.

Routes: GET /v2/health/live, GET /v2/health/ready, GET /v2/models/NAME (metadata),
GET /v2/models/NAME/ready, POST /v2/models/NAME/infer (JSON tensors). Errors are
{"error": "..."} with 400 (the binding's typed error, e.g. "ValueError: ...") or 404 (unknown
model). Tensors travel as JSON or in the binary tensor data extension (tritonclient's default).
Inference is awaited on the core's async pool (the model runner's ``call_async``, the VM's
``invoke_async``): the GIL is not held while a model runs and the core's model runners are
stateless, so requests run concurrently on one loaded model and /v2/health stays responsive.
Language-model calls that are not token steps run on a thread pool (``--workers``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, AsyncIterator, Dict, List, Optional, Tuple

import numpy as np
from aiohttp import web

import polyffi

# OIP tensor datatypes <-> TVM dtype strings.
# POLYFFI_SERVE_SYNC=1 runs models on the event loop instead of awaiting them on the core's async
# pool, for comparison.
SYNC_INFER = os.environ.get("POLYFFI_SERVE_SYNC") == "1"
OIP_OF_DTYPE = {
    "bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
    "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
    "float16": "FP16", "float32": "FP32", "float64": "FP64",
}
DTYPE_OF_OIP = {v: k for k, v in OIP_OF_DTYPE.items()}
MAX_BODY = 64 * 1024 * 1024


class RequestError(Exception):
    """A request the server refuses: HTTP status and the message for {"error": ...}."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Model:
    """One served model: a GraphModule or a VirtualMachine function, and its signature."""

    def __init__(self, name: str, kind: str, inputs: List[Dict[str, Any]],
                 outputs: Optional[List[Dict[str, Any]]], run: Any, run_async: Any) -> None:
        self.name = name
        self.kind = kind
        self.inputs = inputs
        self.outputs = outputs
        self.run = run  # list of numpy arrays (model inputs, in order) -> list of NDArray
        self.run_async = run_async  # the same, awaited: the call runs on the core's async pool

    def metadata(self) -> Dict[str, Any]:
        def tensor(t: Dict[str, Any]) -> Dict[str, Any]:
            dtype = t.get("dtype")
            return {"name": t["name"], "datatype": OIP_OF_DTYPE.get(dtype, dtype),
                    "shape": t.get("shape")}

        return {"name": self.name, "versions": ["1"], "platform": f"polyffi_{self.kind}",
                "inputs": [tensor(t) for t in self.inputs],
                "outputs": [tensor(t) for t in (self.outputs or [])]}


def _flatten(result: Any) -> List[Any]:
    """A VM result (an NDArray or a nested Array of them) as a flat list of NDArrays."""
    if isinstance(result, polyffi.NDArray):
        return [result]
    if isinstance(result, (polyffi.Array, list, tuple)):
        out: List[Any] = []
        for item in result:
            out += _flatten(item)
        return out
    raise TypeError(f"the model returned {type(result).__name__}, not tensors")


def load_graph(name: str, gm: polyffi.GraphModule) -> Model:
    sig = json.loads(gm.runner["signature"]())
    names = [t["name"] for t in sig["inputs"]]

    infer = gm.runner["run"]  # the model runner's thread-safe run (what gm.infer calls)

    def run(arrays: List[np.ndarray]) -> List[Any]:
        return gm.infer(**dict(zip(names, arrays)))

    async def run_async(arrays: List[np.ndarray]) -> List[Any]:
        flat: List[Any] = []
        for k, v in zip(names, arrays):
            flat += [k, v]
        return list(await infer.call_async(*flat))

    return Model(name, "graph", sig["inputs"], sig["outputs"], run, run_async)


def load_vm(name: str, lib: polyffi.Module) -> Model:
    vm = polyffi.VirtualMachine(lib, polyffi.cpu())
    fn = "main" if "main" in vm else "forward" if "forward" in vm else None
    if fn is None:
        raise TypeError("the relax executable has neither a 'main' nor a 'forward' function")
    sig = json.loads(vm.runner["signature"](fn))
    call = vm[fn]

    async def run_async(arrays: List[np.ndarray]) -> List[Any]:
        return _flatten(await vm.invoke_async(fn, *arrays))

    return Model(name, "relax_vm", sig["inputs"], sig["outputs"],
                 lambda arrays: _flatten(call(*arrays)), run_async)


def load_model(path: Path) -> Optional[Model]:
    """The model at path (a .so or a three-artifact folder), or None for anything else."""
    if path.is_dir():
        graph = path / "graph.json"
        libs = sorted(p for p in path.glob("*.so"))
        if not graph.is_file() or len(libs) != 1:
            return None
        params = path / "params.bin"
        gm = polyffi.GraphModule.from_graph(
            graph.read_text(), polyffi.load_module(str(libs[0])), polyffi.cpu(),
            params.read_bytes() if params.is_file() else None)
        return load_graph(path.name, gm)
    if path.suffix != ".so":
        return None
    lib = polyffi.load_module(str(path))
    if "vm_load_executable" in lib:
        return load_vm(path.stem, lib)
    if "default" in lib:
        return load_graph(path.stem, polyffi.GraphModule.from_factory(lib, polyffi.cpu()))
    return None


def is_language_model(path: Path) -> bool:
    return path.is_dir() and (path / "lm-config.json").is_file()


def load_models(model_dir: Path) -> Dict[str, Model]:
    """The OIP models of model_dir (language models are load_language_models')."""
    models: Dict[str, Model] = {}
    for path in sorted(model_dir.iterdir()):
        if is_language_model(path):
            continue
        try:
            model = load_model(path)
        except Exception as e:  # a bad file is reported and skipped; the others are served
            print(f"skipping {path.name}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        if model is None:
            print(f"skipping {path.name}: not a model", file=sys.stderr)
        else:
            models[model.name] = model
    return models


class LanguageModel:
    """One served language model; at most max_batch_size generations run at once (the cache's
    sequences), the other requests wait for a place instead of failing."""

    def __init__(self, name: str, lm: polyffi.LanguageModel) -> None:
        self.name = name
        self.lm = lm
        self.places = asyncio.Semaphore(int(lm.config["kv_cache"]["max_batch_size"]))


def load_language_models(model_dir: Path) -> Dict[str, LanguageModel]:
    lms: Dict[str, LanguageModel] = {}
    for path in sorted(model_dir.iterdir()):
        if not is_language_model(path):
            continue
        try:
            lms[path.name] = LanguageModel(path.name, polyffi.LanguageModel(path))
        except Exception as e:  # reported and skipped, as a bad OIP model is
            print(f"skipping {path.name}: {type(e).__name__}: {e}", file=sys.stderr)
    return lms


class OpenAIError(Exception):
    """A /v1 request the server refuses, answered with OpenAI's error document."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    def response(self) -> web.Response:
        return web.json_response({"error": {"message": str(self), "type": "invalid_request_error",
                                            "param": None, "code": None}},
                                 status=self.status)


def _number(body: Dict[str, Any], key: str, default: Any, kind: type) -> Any:
    value = body.get(key)
    if value is None:
        return default
    ok = isinstance(value, (int, float)) if kind is float else isinstance(value, int)
    if not ok or isinstance(value, bool):
        raise OpenAIError(400, f"'{key}' must be {'a number' if kind is float else 'an integer'}")
    return kind(value)


def parse_completion(body: Any) -> Dict[str, Any]:
    """The generate() arguments and the stream flag of a /v1/completions body (400 if bad)."""
    if not isinstance(body, dict):
        raise OpenAIError(400, "the body must be a JSON object")
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise OpenAIError(400, "'prompt' must be a string")
    for key in ("n", "best_of"):
        if body.get(key) not in (None, 1):
            raise OpenAIError(400, f"'{key}' must be 1: one completion per request")
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop is not None and not (isinstance(stop, list) and all(isinstance(x, str) for x in stop)):
        raise OpenAIError(400, "'stop' must be a string or a list of strings")
    stream = body.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise OpenAIError(400, "'stream' must be a boolean")
    return {"prompt": prompt, "max_tokens": _number(body, "max_tokens", 16, int),
            "temperature": _number(body, "temperature", 1.0, float),
            "top_p": _number(body, "top_p", 1.0, float), "seed": _number(body, "seed", 0, int),
            "stop": stop, "stream": bool(stream)}


def _tensor(doc: Any, what: str) -> Dict[str, Any]:
    if not isinstance(doc, dict):
        raise RequestError(400, f"{what}: expected an object with name, shape, datatype, data")
    for key in ("name", "shape", "datatype"):
        if key not in doc:
            raise RequestError(400, f"{what}: missing '{key}'")
    params = doc.get("parameters") or {}
    if not isinstance(params, dict):
        raise RequestError(400, f"{what}: 'parameters' must be an object")
    size = params.get("binary_data_size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise RequestError(400, f"{what}: binary_data_size must be an integer >= 0")
    if size is None and "data" not in doc:
        raise RequestError(400, f"{what}: missing 'data'")
    if not isinstance(doc["name"], str):
        raise RequestError(400, f"{what}: 'name' must be a string")
    shape = doc["shape"]
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise RequestError(400, f"input '{doc['name']}': shape must be a list of integers >= 0")
    return doc


def _elements(name: str, data: Any, datatype: str, dtype: str) -> np.ndarray:
    """A request's data as a flat array of dtype; 400 unless every element is of datatype."""
    try:
        given = np.asarray(data)
    except (TypeError, ValueError) as e:  # ragged nesting
        raise RequestError(400, f"input '{name}': data is not a {datatype} tensor: {e}") from e
    kind = given.dtype.kind if given.size else "i"
    target = np.dtype(dtype)
    if target.kind == "b":
        ok = kind == "b" or (kind in "iu" and bool(np.isin(given, (0, 1)).all()))
    elif target.kind == "f":
        ok = kind in "iuf"
    else:
        ok = kind in "iu" and (not given.size or (
            int(given.min()) >= np.iinfo(target).min and int(given.max()) <= np.iinfo(target).max))
    if not ok:
        raise RequestError(400, f"input '{name}': data holds {given.dtype} values, not {datatype} "
                                "(or values out of its range)")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        flat = given.astype(target).reshape(-1)
    if target.kind == "f" and not np.isfinite(flat).all():  # JSON numbers are finite: overflow
        raise RequestError(400, f"input '{name}': data holds values out of {datatype}'s range")
    return flat


def parse_inputs(model: Model, body: Dict[str, Any], blob: bytes = b"") -> List[np.ndarray]:
    """The request's input tensors as numpy arrays, in the model's input order.

    blob: the binary part of a request of the binary tensor data extension, which holds, in the
    order of `inputs`, the bytes of each input that has a `binary_data_size` parameter.
    """
    given = body.get("inputs")
    if not isinstance(given, list):
        raise RequestError(400, "the request has no 'inputs' list")
    by_name: Dict[str, Dict[str, Any]] = {}
    binary: Dict[str, bytes] = {}
    offset = 0
    for i, doc in enumerate(given):
        t = _tensor(doc, f"inputs[{i}]")
        if t["name"] in by_name:
            raise RequestError(400, f"input '{t['name']}' given twice")
        by_name[t["name"]] = t
        size = (t.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            if offset + size > len(blob):
                raise RequestError(400, f"input '{t['name']}': binary_data_size {size} runs past "
                                        f"the {len(blob)} bytes of binary data")
            binary[t["name"]] = blob[offset:offset + size]
            offset += size
    if offset != len(blob):
        raise RequestError(400, f"the request has {len(blob) - offset} bytes of binary data that "
                                "no input claims")
    known = [t["name"] for t in model.inputs]
    unknown = sorted(set(by_name) - set(known))
    if unknown:
        raise RequestError(400, f"model '{model.name}' has no input named "
                                f"{', '.join(repr(u) for u in unknown)} (inputs: {known})")
    arrays = []
    for spec in model.inputs:
        t = by_name.get(spec["name"])
        if t is None:
            raise RequestError(400, f"missing input '{spec['name']}'")
        datatype = t["datatype"]
        dtype = DTYPE_OF_OIP.get(datatype)
        if dtype is None:
            raise RequestError(400, f"input '{spec['name']}': unsupported datatype {datatype!r}")
        want = spec.get("dtype")
        if want is not None and want != dtype:
            raise RequestError(400, f"input '{spec['name']}': datatype {datatype} but the model "
                                    f"takes {OIP_OF_DTYPE.get(want, want)}")
        count = math.prod(t["shape"])
        if spec["name"] in binary:
            raw = binary[spec["name"]]
            item = np.dtype(dtype).itemsize
            if len(raw) != count * item:
                raise RequestError(400, f"input '{spec['name']}': shape {t['shape']} of {datatype} "
                                        f"needs {count * item} bytes but binary_data_size is "
                                        f"{len(raw)}")
            flat = np.frombuffer(raw, dtype="uint8" if dtype == "bool" else dtype).astype(dtype)
        else:
            flat = _elements(spec["name"], t["data"], datatype, dtype)
        if flat.size != count:
            raise RequestError(400, f"input '{spec['name']}': shape {t['shape']} holds {count} "
                                    f"elements but data has {flat.size}")
        arrays.append(np.ascontiguousarray(flat.reshape(t["shape"])))
    return arrays


def _wants_binary(body: Dict[str, Any], output: Optional[Dict[str, Any]]) -> bool:
    """Whether an output goes in the binary part: its own binary_data, else the request's
    binary_data_output (what tritonclient sends when it names no outputs)."""
    params = (output or {}).get("parameters") or {}
    if isinstance(params, dict) and "binary_data" in params:
        return params["binary_data"] is True
    top = body.get("parameters") or {}
    return isinstance(top, dict) and top.get("binary_data_output") is True


def build_response(model: Model, body: Dict[str, Any],
                   results: List[Any]) -> Tuple[Dict[str, Any], List[bytes]]:
    """The response document, and the binary parts of the outputs that asked for them."""
    names = [f"output_{i}" for i in range(len(results))]
    if model.outputs:
        names = [t["name"] for t in model.outputs] + names[len(model.outputs):]
    wanted = body.get("outputs")
    chosen = list(range(len(results)))
    requested: List[Optional[Dict[str, Any]]] = [None] * len(results)
    if wanted is not None:
        if not isinstance(wanted, list) or not all(
                isinstance(o, dict) and isinstance(o.get("name"), str) for o in wanted):
            raise RequestError(400, "'outputs' must be a list of {\"name\": ...}")
        chosen = []
        for o in wanted:
            if o["name"] not in names:
                raise RequestError(400, f"model '{model.name}' has no output named "
                                        f"'{o['name']}' (outputs: {names})")
            chosen.append(names.index(o["name"]))
        requested = list(wanted)
    else:
        requested = [None] * len(chosen)
    outputs = []
    blobs: List[bytes] = []
    for i, req in zip(chosen, requested):
        a = results[i].numpy()
        dtype = str(a.dtype)
        if _wants_binary(body, req):
            raw = np.ascontiguousarray(a).tobytes()
            blobs.append(raw)
            outputs.append({"name": names[i], "datatype": OIP_OF_DTYPE.get(dtype, dtype),
                            "shape": list(a.shape), "parameters": {"binary_data_size": len(raw)}})
            continue
        data = a.reshape(-1).tolist()
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            # JSON has no NaN or infinity: null, as JavaScript's JSON.stringify writes them.
            data = [v if math.isfinite(v) else None for v in data]
        outputs.append({"name": names[i], "datatype": OIP_OF_DTYPE.get(dtype, dtype),
                        "shape": list(a.shape), "data": data})
    doc: Dict[str, Any] = {"model_name": model.name, "model_version": "1", "outputs": outputs}
    if "id" in body:
        doc["id"] = body["id"]
    return doc, blobs


def create_app(models: Dict[str, Model], workers: int = 4,
               lms: Optional[Dict[str, LanguageModel]] = None) -> web.Application:
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="polyffi-infer")
    lms = lms or {}

    def error(status: int, message: str) -> web.Response:
        return web.json_response({"error": message}, status=status)

    def model_of(request: web.Request) -> Model:
        name = request.match_info["name"]
        model = models.get(name)
        if model is None:
            raise RequestError(404, f"unknown model '{name}' (served: {sorted(models)})")
        return model

    @web.middleware
    async def errors(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            return await handler(request)
        except OpenAIError as e:
            return e.response()
        except web.HTTPException as e:
            if request.path.startswith("/v1/"):
                return OpenAIError(e.status, e.reason).response()
            return error(e.status, e.reason)
        except RequestError as e:
            return error(e.status, str(e))

    async def live(_: web.Request) -> web.Response:
        return web.json_response({"live": True})

    async def ready(_: web.Request) -> web.Response:
        return web.json_response({"ready": True})

    async def metadata(request: web.Request) -> web.Response:
        return web.json_response(model_of(request).metadata())

    async def model_ready(request: web.Request) -> web.Response:
        return web.json_response({"name": model_of(request).name, "ready": True})

    async def infer(request: web.Request) -> web.Response:
        model = model_of(request)
        raw = await request.read()
        blob = b""
        header = request.headers.get("Inference-Header-Content-Length")
        if header is not None:  # the binary tensor data extension: JSON, then the tensors' bytes
            if not header.isdigit() or int(header) > len(raw):
                raise RequestError(400, f"Inference-Header-Content-Length {header!r} is not a "
                                        f"length within the {len(raw)}-byte body")
            raw, blob = raw[:int(header)], raw[int(header):]
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise RequestError(400, f"the body is not JSON: {e}") from e
        if not isinstance(body, dict):
            raise RequestError(400, "the body must be a JSON object")
        arrays = parse_inputs(model, body, blob)
        try:
            if SYNC_INFER:  # on the event loop: bench/async/serve.sh's contrast
                results = model.run(arrays)
            else:  # on the core's async pool; the loop serves other requests meanwhile
                results = await model.run_async(arrays)
        except polyffi.QueueFullError as e:  # the core's pool is full: retry later
            raise RequestError(503, f"{type(e).__name__}: {e}") from e
        except Exception as e:  # the binding's typed error: TypeError, ValueError, TVMError...
            raise RequestError(400, f"{type(e).__name__}: {e}") from e
        doc, blobs = build_response(model, body, results)
        if not blobs:
            return web.json_response(doc)
        head = json.dumps(doc).encode()
        return web.Response(body=b"".join([head, *blobs]), content_type="application/octet-stream",
                            headers={"Inference-Header-Content-Length": str(len(head))})

    # ------------------------------------------------ OpenAI completions (language models)

    async def list_models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "polyffi"}
            for name in sorted(lms)]})

    async def tokens(gen: polyffi.Generation) -> AsyncIterator[str]:
        """The generation's token texts, each step on the core's async pool. A cache that fills
        part way ends the completion as OpenAI ends one at the context's end: "length"."""
        try:
            async for token in gen:
                yield token.text
        except RuntimeError as e:
            if "KV cache is full" not in str(e):
                raise
            print(f"completion cut short: {e}", file=sys.stderr)

    async def completions(request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError) as e:
            raise OpenAIError(400, f"the body is not JSON: {e}") from e
        if isinstance(body, dict) and not isinstance(body.get("model"), str):
            raise OpenAIError(400, "'model' must be a string")
        args = parse_completion(body)
        served = lms.get(body["model"])
        if served is None:
            raise OpenAIError(404, f"The model '{body['model']}' does not exist (served: "
                                   f"{sorted(lms)})")
        stream = args.pop("stream")
        loop = asyncio.get_running_loop()
        head = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion",
                "created": int(time.time()), "model": served.name}

        def choice(text: str, reason: Optional[str]) -> Dict[str, Any]:
            return dict(head, choices=[{"index": 0, "text": text, "logprobs": None,
                                        "finish_reason": reason}])

        async with served.places:
            try:  # the core takes the model's lock: off the loop, as every step
                gen = await loop.run_in_executor(pool, lambda: served.lm.generate(**args))
            except (ValueError, TypeError) as e:
                raise OpenAIError(400, str(e)) from e
            try:
                if not stream:
                    text = "".join([t async for t in tokens(gen)])
                    reason, n_prompt, n_done = await loop.run_in_executor(
                        pool, lambda: (gen.finish_reason, gen.prompt_tokens,
                                       gen.completion_tokens))
                    doc = choice(text, reason or "length")
                    doc["usage"] = {"prompt_tokens": n_prompt, "completion_tokens": n_done,
                                    "total_tokens": n_prompt + n_done}
                    return web.json_response(doc)
                resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                                   "Cache-Control": "no-cache"})
                await resp.prepare(request)
                async for text in tokens(gen):  # each event is written out as it is made
                    await resp.write(f"data: {json.dumps(choice(text, None))}\n\n".encode())
                reason = await loop.run_in_executor(pool, lambda: gen.finish_reason)
                await resp.write(f"data: {json.dumps(choice('', reason or 'length'))}\n\n"
                                 .encode())
                await resp.write(b"data: [DONE]\n\n")
                await resp.write_eof()
                return resp
            finally:
                await gen.aclose()  # frees the cache's sequence now, also when the client left

    app = web.Application(middlewares=[errors], client_max_size=MAX_BODY)
    app.router.add_get("/v2/health/live", live)
    app.router.add_get("/v2/health/ready", ready)
    app.router.add_get("/v2/models/{name}", metadata)
    app.router.add_get("/v2/models/{name}/ready", model_ready)
    app.router.add_post("/v2/models/{name}/infer", infer)
    app.router.add_get("/v1/models", list_models)
    app.router.add_post("/v1/completions", completions)
    app.on_cleanup.append(lambda _: asyncio.get_running_loop().run_in_executor(
        None, pool.shutdown))
    return app


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("port", type=int)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--workers", type=int, default=min(8, (os.cpu_count() or 1) * 2))
    args = ap.parse_args(argv)
    if not args.model_dir.is_dir():
        ap.error(f"{args.model_dir} is not a directory")
    models = load_models(args.model_dir)
    for m in models.values():
        print(f"model {m.name} ({m.kind})", file=sys.stderr)
    lm_dirs = load_language_models(args.model_dir)
    for name in lm_dirs:
        print(f"language model {name} (/v1/completions)", file=sys.stderr)

    async def serve() -> None:
        runner = web.AppRunner(create_app(models, args.workers, lm_dirs), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, args.host, args.port).start()
        print(f"listening on {args.host}:{args.port}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
