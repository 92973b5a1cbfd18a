"""Drives each language's server with tritonclient[http] and with malformed plain-HTTP requests.

Expected values are the fixtures' own (what TVM computed when it compiled them, the values the
binding tests compare against) and examples/digits' expected.json (the training script's
predictions).
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pytest
import tritonclient.http as httpclient
from conftest import DIGITS, RELAX, TVM018, load_json, read_tensor

OIP = {"float32": "FP32", "float64": "FP64", "int32": "INT32", "int64": "INT64"}


def client(server) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(server.url, network_timeout=120.0)


def raw(server, method: str, path: str, body: Optional[bytes] = None,
        headers: Optional[Dict[str, str]] = None) -> Tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        text = resp.read()
        try:
            doc = json.loads(text)
        except ValueError:
            doc = text
        return resp.status, doc
    finally:
        conn.close()


def infer(server, model: str, arrays: Dict[str, np.ndarray],
          outputs: Optional[List[str]] = None, request_id: str = ""):
    inputs = []
    for name, a in arrays.items():
        i = httpclient.InferInput(name, list(a.shape), OIP[str(a.dtype)])
        i.set_data_from_numpy(a, binary_data=False)
        inputs.append(i)
    outs = None
    if outputs is not None:
        outs = [httpclient.InferRequestedOutput(n, binary_data=False) for n in outputs]
    return client(server).infer(model, inputs, outputs=outs, request_id=request_id)


def tvm018_case(name: str):
    io = load_json(TVM018 / name / "io.json")
    ins = {t["name"]: read_tensor(TVM018 / name / t["file"], t["dtype"], t["shape"])
           for t in io["inputs"]}
    outs = [read_tensor(TVM018 / name / t["file"], t["dtype"], t["shape"]) for t in io["outputs"]]
    return io, ins, outs


def relax_case(name: str, batch: int):
    io = load_json(RELAX / name / "io.json")
    run = next(r for r in io["runs"] if r["batch"] == batch)
    ins = {t["name"]: read_tensor(RELAX / name / t["file"], t["dtype"], t["shape"])
           for t in run["inputs"]}
    outs = [read_tensor(RELAX / name / t["file"], t["dtype"], t["shape"]) for t in run["outputs"]]
    return io, ins, outs


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------ health

def test_health(server):
    c = client(server)
    assert c.is_server_live()
    assert c.is_server_ready()
    for model in ("tvm018_digits", "relax_digits", "digits"):
        assert c.is_model_ready(model)
    assert not c.is_model_ready("no_such_model")


def test_only_models_are_served(server):
    status, doc = raw(server, "GET", "/v2/models/notes")
    assert status == 404 and "error" in doc


# ------------------------------------------------------------------------------ metadata

@pytest.mark.parametrize("stem,fixture", [("tvm018_digits", "digits_b1"),
                                          ("tvm018_multi_io", "multi_io_b1"),
                                          ("tvm018_conv", "conv_b1")])
def test_metadata_graph(server, stem, fixture):
    io = load_json(TVM018 / fixture / "io.json")
    md = client(server).get_model_metadata(stem)
    assert md["name"] == stem
    assert [(t["name"], t["datatype"], t["shape"]) for t in md["inputs"]] == [
        (t["name"], OIP[t["dtype"]], t["shape"]) for t in io["inputs"]]
    assert [(t["name"], t["datatype"], t["shape"]) for t in md["outputs"]] == [
        (f"output_{i}", OIP[t["dtype"]], t["shape"]) for i, t in enumerate(io["outputs"])]


@pytest.mark.parametrize("stem,fixture,shapes", [
    ("relax_two_outputs", "two_outputs", [[1, 8], [1, 8]]),
    ("relax_dyn_batch", "dyn_batch", [[-1, 16]]),
    ("relax_digits", "digits", [[-1, 64]]),
    ("relax_mlp_params", "mlp_params", [[1, 16], [32, 16], [32], [10, 32], [10]]),
])
def test_metadata_relax(server, stem, fixture, shapes):
    io = load_json(RELAX / fixture / "io.json")
    md = client(server).get_model_metadata(stem)
    assert [t["name"] for t in md["inputs"]] == io["param_names"]
    assert [t["datatype"] for t in md["inputs"]] == ["FP32"] * len(shapes)
    assert [t["shape"] for t in md["inputs"]] == shapes


def test_metadata_three_artifacts(server):
    md = client(server).get_model_metadata("digits")
    assert [(t["name"], t["datatype"], t["shape"]) for t in md["inputs"]] == [
        ("data", "FP32", [359, 64])]
    assert [(t["name"], t["datatype"], t["shape"]) for t in md["outputs"]] == [
        ("output_0", "FP32", [359, 10])]


# ------------------------------------------------------------------------------ inference

@pytest.mark.parametrize("stem,fixture", [("tvm018_digits", "digits_b1"),
                                          ("tvm018_multi_io", "multi_io_b1"),
                                          ("tvm018_conv", "conv_b1")])
def test_infer_graph(server, stem, fixture):
    _, ins, outs = tvm018_case(fixture)
    result = infer(server, stem, ins, request_id="req-42")
    assert result.get_response()["id"] == "req-42"
    for i, want in enumerate(outs):
        assert_close(result.as_numpy(f"output_{i}"), want)


@pytest.mark.parametrize("stem,fixture,batch", [
    ("relax_two_outputs", "two_outputs", 1),
    ("relax_dyn_batch", "dyn_batch", 1),
    ("relax_dyn_batch", "dyn_batch", 7),
    ("relax_dyn_batch", "dyn_batch", 64),
    ("relax_digits", "digits", 359),
    ("relax_mlp_params", "mlp_params", 1),
])
def test_infer_relax(server, stem, fixture, batch):
    _, ins, outs = relax_case(fixture, batch)
    result = infer(server, stem, ins)
    for i, want in enumerate(outs):
        assert_close(result.as_numpy(f"output_{i}"), want)


def test_infer_digits_three_artifacts(server):
    expected = load_json(DIGITS / "expected.json")
    x = np.fromfile(DIGITS / "test_x.bin", dtype="float32").reshape(-1, 64)
    result = infer(server, "digits", {"data": x}, outputs=["output_0"])
    probs = result.as_numpy("output_0")
    assert probs.shape == (359, 10)
    assert probs.argmax(axis=1).tolist() == expected["predictions"]
    want = np.fromfile(DIGITS / "expected_probs.bin", dtype="float32").reshape(359, 10)
    np.testing.assert_allclose(probs, want, rtol=1e-4, atol=1e-5)


def test_requested_outputs(server):
    _, ins, outs = tvm018_case("multi_io_b1")
    result = infer(server, "tvm018_multi_io", ins, outputs=["output_2"])
    names = [o["name"] for o in result.get_response()["outputs"]]
    assert names == ["output_2"]
    assert_close(result.as_numpy("output_2"), outs[2])


def test_nested_data_and_id_echo(server):
    x = read_tensor(RELAX / "digits" / "b1_input_data.bin", "float32", [1, 64])
    body = {"id": "nested-1", "inputs": [{"name": "data", "shape": [1, 64], "datatype": "FP32",
                                          "data": x.tolist()}]}
    status, doc = raw(server, "POST", "/v2/models/relax_digits/infer", json.dumps(body).encode())
    assert status == 200, doc
    assert doc["id"] == "nested-1" and doc["model_name"] == "relax_digits"
    out = doc["outputs"][0]
    assert out["datatype"] == "FP32" and out["shape"] == [1, 10]
    want = read_tensor(RELAX / "digits" / "b1_output_0.bin", "float32", [1, 10])
    np.testing.assert_allclose(np.array(out["data"], dtype="float32").reshape(1, 10), want,
                               rtol=1e-5, atol=1e-6)


def test_concurrent_requests(server):
    from concurrent.futures import ThreadPoolExecutor

    _, ins, outs = relax_case("dyn_batch", 7)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: infer(server, "relax_dyn_batch", ins), range(32)))
    for r in results:
        assert_close(r.as_numpy("output_0"), outs[0])


# ------------------------------------------------------------------------------ bad requests

def body_for(name: str, shape, datatype: str, data) -> bytes:
    return json.dumps({"inputs": [{"name": name, "shape": shape, "datatype": datatype,
                                   "data": data}]}).encode()


def multi_io_body(idx_value) -> bytes:
    """tvm018_multi_io's three inputs, with idx[0] replaced by idx_value."""
    return json.dumps({"inputs": [
        {"name": "x", "shape": [1, 8], "datatype": "FP32", "data": [0.5] * 8},
        {"name": "idx", "shape": [1, 8], "datatype": "INT32", "data": [idx_value] + [1] * 7},
        {"name": "z", "shape": [1, 4], "datatype": "FP64", "data": [0.25] * 4}]}).encode()


BAD = [
    ("bad JSON", "relax_digits", b'{"inputs": [', 400, ""),
    ("not an object", "relax_digits", b"[1, 2, 3]", 400, ""),
    ("no inputs", "relax_digits", b"{}", 400, "inputs"),
    ("data does not fill the shape", "relax_digits", body_for("data", [1, 64], "FP32", [1.0] * 63),
     400, "63"),
    ("wrong shape for a static model (the binding's error)", "relax_two_outputs",
     json.dumps({"inputs": [{"name": n, "shape": [1, 9], "datatype": "FP32", "data": [0.5] * 9}
                            for n in ("a", "b")]}).encode(), 400, "Error"),
    ("wrong shape for a graph model (the binding's error)", "tvm018_digits",
     body_for("data", [2, 64], "FP32", [0.5] * 128), 400, "Error"),
    ("wrong datatype", "relax_digits", body_for("data", [1, 64], "FP64", [0.5] * 64), 400, "FP64"),
    ("unknown datatype", "relax_digits", body_for("data", [1, 64], "FP8", [0.5] * 64), 400, "FP8"),
    ("strings for numbers", "relax_digits", body_for("data", [1, 2], "FP32", ["a", "b"]), 400, ""),
    ("negative dimension", "relax_digits", body_for("data", [-1, 64], "FP32", [0.5] * 64), 400,
     "shape"),
    ("unknown input", "relax_digits", body_for("pixels", [1, 64], "FP32", [0.5] * 64), 400,
     "pixels"),
    ("missing input", "relax_two_outputs", body_for("a", [1, 8], "FP32", [0.5] * 8), 400, "'b'"),
    ("unknown output", "relax_digits",
     json.dumps({"inputs": [{"name": "data", "shape": [1, 64], "datatype": "FP32",
                             "data": [0.5] * 64}],
                 "outputs": [{"name": "logits"}]}).encode(), 400, "logits"),
    ("a float for an INT32 input", "tvm018_multi_io", multi_io_body(1.5), 400, "idx"),
    ("an INT32 out of range", "tvm018_multi_io", multi_io_body(2 ** 40), 400, "idx"),
    ("a number given as a string", "tvm018_multi_io", multi_io_body("7"), 400, "idx"),
    ("an FP32 out of range", "relax_digits", body_for("data", [1, 64], "FP32", [1e39] * 64), 400,
     "range"),
    ("unknown model", "no_such_model", body_for("data", [1, 64], "FP32", [0.5] * 64), 404,
     "no_such_model"),
]


@pytest.mark.parametrize("what,model,body,status,text", BAD, ids=[b[0] for b in BAD])
def test_bad_request(server, what, model, body, status, text):
    got, doc = raw(server, "POST", f"/v2/models/{model}/infer", body,
                   {"Content-Type": "application/json"})
    assert got == status, (what, doc)
    assert isinstance(doc, dict) and isinstance(doc.get("error"), str) and doc["error"], doc
    assert text in doc["error"], doc
    # Still serving, and still right.
    assert server.alive()
    _, ins, outs = relax_case("digits", 1)
    assert_close(infer(server, "relax_digits", ins).as_numpy("output_0"), outs[0])


def test_binding_error_text_is_typed(server):
    # The relax VM's own shape check, as the binding raises it: "RuntimeError: ... match_cast".
    body = json.dumps({"inputs": [{"name": n, "shape": [1, 9], "datatype": "FP32",
                                   "data": [0.5] * 9} for n in ("a", "b")]}).encode()
    status, doc = raw(server, "POST", "/v2/models/relax_two_outputs/infer", body)
    assert status == 400
    kind = doc["error"].split(":", 1)[0]
    assert kind.endswith("Error") and "match_cast" in doc["error"], doc


def test_unknown_metadata_and_routes(server):
    assert raw(server, "GET", "/v2/models/no_such_model")[0] == 404
    assert raw(server, "GET", "/v2/models/no_such_model/ready")[0] == 404
    status, doc = raw(server, "GET", "/v2/nothing")
    assert status == 404 and "error" in doc


def infer_binary(server, model, arrays, outputs=None):
    """tritonclient as a user calls it by default: binary inputs, and binary outputs."""
    inputs = []
    for name, a in arrays.items():
        i = httpclient.InferInput(name, list(a.shape), OIP[str(a.dtype)])
        i.set_data_from_numpy(a)
        inputs.append(i)
    outs = None if outputs is None else [httpclient.InferRequestedOutput(n) for n in outputs]
    return client(server).infer(model, inputs, outputs=outs)


@pytest.mark.parametrize("stem,case", [("tvm018_multi_io", ("tvm018", "multi_io_b1")),
                                       ("relax_two_outputs", ("relax", "two_outputs")),
                                       ("relax_dyn_batch", ("relax", "dyn_batch"))])
def test_infer_binary_extension(server, stem, case):
    _, ins, outs = tvm018_case(case[1]) if case[0] == "tvm018" else relax_case(case[1], 1)
    result = infer_binary(server, stem, ins)
    for i, want in enumerate(outs):
        assert result.get_output(f"output_{i}")["parameters"]["binary_data_size"] == want.nbytes
        assert_close(result.as_numpy(f"output_{i}"), want)


def test_binary_inputs_json_output(server):
    _, ins, outs = tvm018_case("multi_io_b1")
    inputs = []
    for name, a in ins.items():
        i = httpclient.InferInput(name, list(a.shape), OIP[str(a.dtype)])
        i.set_data_from_numpy(a)  # binary
        inputs.append(i)
    out = httpclient.InferRequestedOutput("output_1", binary_data=False)
    result = client(server).infer("tvm018_multi_io", inputs, outputs=[out])
    assert result.get_output("output_1")["data"] == outs[1].reshape(-1).tolist()


def binary_request(header: dict, blob: bytes, length: Optional[int] = None):
    head = json.dumps(header).encode()
    n = len(head) if length is None else length
    return head + blob, {"Inference-Header-Content-Length": str(n)}


BAD_BINARY = [
    ("header length past the body",
     binary_request({"inputs": []}, b"", length=10 ** 6)),
    ("binary_data_size that does not fit the shape",
     binary_request({"inputs": [{"name": "data", "shape": [1, 64], "datatype": "FP32",
                                 "parameters": {"binary_data_size": 8}}]}, b"\0" * 8)),
    ("binary_data_size past the binary part",
     binary_request({"inputs": [{"name": "data", "shape": [1, 64], "datatype": "FP32",
                                 "parameters": {"binary_data_size": 256}}]}, b"\0" * 16)),
    ("bytes that no input claims",
     binary_request({"inputs": [{"name": "data", "shape": [1, 64], "datatype": "FP32",
                                 "parameters": {"binary_data_size": 256}}]}, b"\0" * 300)),
    ("a negative binary_data_size",
     binary_request({"inputs": [{"name": "data", "shape": [1, 64], "datatype": "FP32",
                                 "parameters": {"binary_data_size": -1}}]}, b"")),
]


@pytest.mark.parametrize("what,req", BAD_BINARY, ids=[b[0] for b in BAD_BINARY])
def test_bad_binary_request(server, what, req):
    body, headers = req
    status, doc = raw(server, "POST", "/v2/models/relax_digits/infer", body, headers)
    assert status == 400, (what, doc)
    assert isinstance(doc, dict) and doc.get("error"), doc
    _, ins, outs = relax_case("digits", 1)
    assert_close(infer_binary(server, "relax_digits", ins).as_numpy("output_0"), outs[0])


def test_still_serving(server):
    assert server.alive()
    assert client(server).is_server_ready()
    assert Path(server.log).exists()
