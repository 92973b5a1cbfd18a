"""Drives each language's server's OpenAI completions (/v1) with the `openai` package, plus
malformed plain-HTTP requests, on the language model folder tiny_llama (docs/serving.md).

Expected values are the fixture's: the greedy tokens TVM computed (io.json) and the seeded
sampling polyffi's core recorded (sampled.json), both decoded with the fixture's vocabulary.
"""

from __future__ import annotations

import http.client
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Tuple

import openai
import pytest
from conftest import TINY_LLAMA, load_json

IO = load_json(TINY_LLAMA / "io.json")
SAMPLED = load_json(TINY_LLAMA / "sampled.json")
CHARS = load_json(TINY_LLAMA / "lm-config.json")["tokenizer"]["chars"]
GREEDY = IO["greedy"]
MODEL = "tiny_llama"


def text(ids: List[int]) -> str:
    return "".join(CHARS[i] for i in ids)


PROMPT = text(GREEDY["prompt"])
GREEDY_TEXT = text(GREEDY["tokens"])


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.url}/v1", api_key="none", timeout=120,
                         max_retries=0)


def post(server, path: str, body: bytes) -> Tuple[int, Dict[str, str], Any]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read()
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = raw
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, doc
    finally:
        conn.close()


def test_models_lists_only_language_models(server):
    models = client(server).models.list()
    assert [(m.id, m.object, m.owned_by) for m in models.data] == [(MODEL, "model", "polyffi")]


def test_greedy_completion_equals_tvm(server):
    r = client(server).completions.create(model=MODEL, prompt=PROMPT, temperature=0,
                                          max_tokens=len(GREEDY["tokens"]))
    assert r.object == "text_completion" and r.model == MODEL and r.id.startswith("cmpl-")
    assert len(r.choices) == 1
    assert r.choices[0].text == GREEDY_TEXT
    assert r.choices[0].finish_reason == "length"
    assert r.choices[0].index == 0
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (
        len(GREEDY["prompt"]), len(GREEDY["tokens"]),
        len(GREEDY["prompt"]) + len(GREEDY["tokens"]))


def test_streaming_gives_the_same_text_token_by_token(server):
    events = list(client(server).completions.create(
        model=MODEL, prompt=PROMPT, temperature=0, max_tokens=len(GREEDY["tokens"]),
        stream=True))
    texts = [e.choices[0].text for e in events]
    reasons = [e.choices[0].finish_reason for e in events]
    assert texts == [CHARS[i] for i in GREEDY["tokens"]] + [""]
    assert reasons == [None] * len(GREEDY["tokens"]) + ["length"]
    assert len({e.id for e in events}) == 1


def test_stream_wire_format(server):
    body = json.dumps({"model": MODEL, "prompt": PROMPT, "temperature": 0, "max_tokens": 2,
                       "stream": True}).encode()
    status, headers, raw = post(server, "/v1/completions", body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    events = raw.decode().split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    docs = [json.loads(e[len("data: "):]) for e in events[:-2]]
    want = [CHARS[i] for i in GREEDY["tokens"][:2]] + [""]
    assert [d["choices"][0]["text"] for d in docs] == want
    assert [d["choices"][0]["finish_reason"] for d in docs] == [None, None, "length"]


def test_seeded_sampling_equals_the_core_s_record(server):
    opts = SAMPLED["options"]
    r = client(server).completions.create(model=MODEL, prompt=text(SAMPLED["prompt"]),
                                          max_tokens=opts["max_tokens"],
                                          temperature=opts["temperature"], top_p=opts["top_p"],
                                          seed=opts["seed"])
    assert r.choices[0].text == text(SAMPLED["tokens"])


def test_stop_ends_without_the_stop_text(server):
    stop = CHARS[GREEDY["tokens"][3]]  # first appears at index 3
    for given in (stop, [stop]):
        r = client(server).completions.create(model=MODEL, prompt=PROMPT, temperature=0,
                                              max_tokens=len(GREEDY["tokens"]), stop=given)
        assert r.choices[0].text == GREEDY_TEXT[:3]
        assert r.choices[0].finish_reason == "stop"
        assert r.usage.completion_tokens == 3


def test_concurrent_completions(server):
    run = IO["two_sequences"]
    prompts = [text(run["prompts"][i % 2]) for i in range(6)]

    def complete(prompt):
        return client(server).completions.create(model=MODEL, prompt=prompt, temperature=0,
                                                 max_tokens=len(run["tokens"][0])).choices[0].text

    with ThreadPoolExecutor(6) as pool:  # more than the cache's 4 sequences: some wait
        got = list(pool.map(complete, prompts))
    assert got == [text(run["tokens"][i % 2]) for i in range(6)]


@pytest.mark.parametrize("what, kwargs", [
    ("character outside the vocabulary", {"prompt": "café"}),
    ("prompt longer than the cache", {"prompt": "a" * 200}),
    ("empty prompt", {"prompt": ""}),
    ("negative max_tokens", {"prompt": "hi", "max_tokens": -1}),
    ("top_p 0", {"prompt": "hi", "top_p": 0}),
    ("stop of two tokens", {"prompt": "hi", "stop": ["ab"]}),
    ("n 2", {"prompt": "hi", "n": 2}),
    ("best_of 2", {"prompt": "hi", "best_of": 2}),
])
def test_bad_requests_are_400(server, what, kwargs):
    with pytest.raises(openai.BadRequestError) as e:
        client(server).completions.create(model=MODEL, **kwargs)
    assert e.value.status_code == 400
    assert e.value.body["type"] == "invalid_request_error" and e.value.body["message"]


def test_unknown_model_is_404(server):
    with pytest.raises(openai.NotFoundError) as e:
        client(server).completions.create(model="no_such_model", prompt="hi")
    assert e.value.body["type"] == "invalid_request_error"


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'{"model": "tiny_llama"}',
                                  b'{"model": "tiny_llama", "prompt": 7}',
                                  b'{"model": "tiny_llama", "prompt": "hi", "max_tokens": "5"}'])
def test_malformed_bodies_are_400_with_openai_errors(server, body):
    status, _, doc = post(server, "/v1/completions", body)
    assert status == 400
    assert set(doc["error"]) == {"message", "type", "param", "code"}
    assert doc["error"]["type"] == "invalid_request_error"


def test_the_language_model_is_not_an_oip_model(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        conn.request("GET", f"/v2/models/{MODEL}")
        resp = conn.getresponse()
        assert resp.status == 404 and "error" in json.loads(resp.read())
        conn.request("GET", "/v2/models/relax_digits/ready")
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["ready"] is True
    finally:
        conn.close()


def test_still_serving_after_errors(server):
    assert server.alive()
    r = client(server).completions.create(model=MODEL, prompt=PROMPT, temperature=0,
                                          max_tokens=3)
    assert r.choices[0].text == GREEDY_TEXT[:3]
