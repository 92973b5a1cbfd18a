"""polyffi.LanguageModel on the TVM 0.27 fixture (tests/tvm_models/tvm027/lm, docs/lm.md).

Expected values are the fixture's: the tokens and logits TVM computed when it compiled the model
(io.json, *.bin) and the seeded sampling the core recorded (sampled.json), which every binding
asserts.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import polyffi

ROOT = pathlib.Path(__file__).resolve().parents[3]
LM = ROOT / "tests" / "tvm_models" / "tvm027" / "lm"
IO = json.loads((LM / "io.json").read_text())
SAMPLED = json.loads((LM / "sampled.json").read_text())
GREEDY = IO["greedy"]


def logits_file(name: str) -> np.ndarray:
    return np.fromfile(LM / name, dtype="<f4")


@pytest.fixture(scope="module")
def lm() -> polyffi.LanguageModel:
    return polyffi.LanguageModel(LM)


def greedy(lm, prompt=GREEDY["prompt"], **kw):
    return lm.generate(prompt, temperature=0, max_tokens=len(GREEDY["tokens"]), **kw)


def test_config_is_the_directory_s(lm):
    cfg = lm.config
    assert cfg["vocab_size"] == 96
    assert cfg["kv_cache"]["max_batch_size"] == 4
    assert cfg["kv_cache"]["max_total_seq_len"] == 128
    assert cfg["tokenizer"]["kind"] == "chars"
    assert cfg["stop_token_ids"] == []


def test_encode_decode_and_token_text(lm):
    # chars = "\n" then ASCII 32..126: "A" is id 1 + 65 - 32.
    assert lm.encode("A b\n") == [34, 1, 67, 0]
    assert lm.decode([34, 1, 67, 0]) == "A b\n"
    assert lm.decode(np.array([34, 1], dtype=np.int64)) == "A "
    assert lm.token_text(0) == "\n" and lm.token_text(95) == "~"
    assert lm.decode(lm.encode("Hello, world!")) == "Hello, world!"


def test_encode_names_the_character_outside_the_vocabulary(lm):
    with pytest.raises(ValueError, match="'é'"):
        lm.encode("café")


@pytest.mark.parametrize("bad", [[96], [-1], [0, 200]])
def test_decode_refuses_ids_outside_the_vocabulary(lm, bad):
    with pytest.raises(ValueError, match="outside the vocabulary"):
        lm.decode(bad)
    with pytest.raises(ValueError):
        lm.token_text(bad[-1])


def test_decode_refuses_what_is_not_token_ids(lm):
    with pytest.raises(TypeError):
        lm.decode([0.5, 1.0])
    with pytest.raises(TypeError):
        lm.decode([[1, 2]])


def test_greedy_tokens_and_logits_equal_tvm(lm):
    with greedy(lm) as gen:
        with pytest.raises(ValueError, match="no token has been generated"):
            gen.logits()
        assert gen.finish_reason is None
        got = []
        for step, token in enumerate(gen):
            got.append(token)
            want = (logits_file(GREEDY["prefill_logits"]).reshape(len(GREEDY["prompt"]), -1)[-1]
                    if step == 0 else logits_file(GREEDY["decode_logits"][step - 1]))
            logits = gen.logits()
            assert logits.dtype == np.float32 and logits.shape == (96,)
            np.testing.assert_allclose(logits, want, rtol=1e-4, atol=1e-4)
        assert [t.id for t in got] == GREEDY["tokens"]
        assert [t.text for t in got] == [lm.token_text(i) for i in GREEDY["tokens"]]
        assert gen.finish_reason == "length"
        assert gen.prompt_tokens == len(GREEDY["prompt"])
        assert gen.completion_tokens == len(GREEDY["tokens"])


def test_text_prompt_equals_its_ids(lm):
    text = lm.decode(GREEDY["prompt"])
    assert [t.id for t in greedy(lm, text)] == GREEDY["tokens"]
    assert [t.id for t in greedy(lm, np.array(GREEDY["prompt"], dtype=np.int32))] == \
        GREEDY["tokens"]


def test_two_generations_interleaved(lm):
    run = IO["two_sequences"]
    a = lm.generate(run["prompts"][0], temperature=0, max_tokens=len(run["tokens"][0]))
    b = lm.generate(run["prompts"][1], temperature=0, max_tokens=len(run["tokens"][1]))
    with a, b:
        got_a, got_b = [], []
        for _ in range(len(run["tokens"][0])):
            got_a.append(next(a).id)
            got_b.append(next(b).id)
        assert got_a == run["tokens"][0] and got_b == run["tokens"][1]
        assert list(a) == [] and list(b) == []


def test_seeded_sampling_equals_the_core_s_record(lm):
    with lm.generate(SAMPLED["prompt"], **SAMPLED["options"]) as gen:
        assert [t.id for t in gen] == SAMPLED["tokens"]
    with lm.generate(SAMPLED["prompt"], **dict(SAMPLED["options"], seed=8)) as other:
        assert [t.id for t in other] != SAMPLED["tokens"]


def test_stop_string_ends_without_the_stop_token(lm):
    stop = lm.token_text(GREEDY["tokens"][3])  # first appears at index 3
    with greedy(lm, stop=stop) as gen:
        assert [t.id for t in gen] == GREEDY["tokens"][:3]
        assert gen.finish_reason == "stop"
        assert gen.completion_tokens == 3


def test_stop_token_ids(lm):
    with greedy(lm, stop_token_ids=[GREEDY["tokens"][2]]) as gen:
        assert [t.id for t in gen] == GREEDY["tokens"][:2]
        assert gen.finish_reason == "stop"


def test_max_tokens_gives_length(lm):
    with lm.generate(GREEDY["prompt"], temperature=0, max_tokens=5) as gen:
        assert [t.id for t in gen] == GREEDY["tokens"][:5]
        assert gen.finish_reason == "length"
    with lm.generate(GREEDY["prompt"], max_tokens=0) as gen:
        assert list(gen) == [] and gen.finish_reason == "length"


@pytest.mark.parametrize("prompt, options, match", [
    ("", {}, "empty"),
    ([], {}, "empty"),
    ("x" * 129, {}, "max_total_seq_len"),
    ([96], {}, "outside the vocabulary"),
    ("ü", {}, "not in the vocabulary"),
    ("hi", {"max_tokens": -1}, "max_tokens"),
    ("hi", {"top_p": 0.0}, "top_p"),
    ("hi", {"stop": ["ab"]}, "stop"),
    ("hi", {"temperature": float("nan")}, "finite"),
])
def test_bad_generate_arguments_are_value_errors(lm, prompt, options, match):
    with pytest.raises(ValueError, match=match):
        lm.generate(prompt, **options)


def test_an_unknown_option_is_a_value_error(lm):
    with pytest.raises(ValueError, match="unknown option"):
        lm.module["generate"]("hi", json.dumps({"max_token": 3}))


def test_a_full_cache_ends_the_generation_with_a_runtime_error(lm):
    with lm.generate("a" * 120, temperature=0, max_tokens=20) as gen:
        got = []
        with pytest.raises(RuntimeError, match="KV cache is full"):
            for token in gen:
                got.append(token)
        assert 0 < len(got) < 20
        assert list(gen) == []
        assert gen.finish_reason == "length"


def test_too_many_generations_then_close_frees_a_place(lm):
    gens = [lm.generate("hi") for _ in range(4)]
    with pytest.raises(RuntimeError, match="too many concurrent generations"):
        lm.generate("hi")
    gens[0].close()
    assert list(gens[0]) == []
    with lm.generate("hi", max_tokens=2) as extra:
        assert len(list(extra)) == 2
    for g in gens[1:]:
        g.close()


def test_missing_and_malformed_directories(tmp_path):
    with pytest.raises(FileNotFoundError):
        polyffi.LanguageModel(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError):
        polyffi.LanguageModel(tmp_path)
    (tmp_path / "lm-config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        polyffi.LanguageModel(tmp_path)


def test_async_iterator_gives_the_same_tokens(lm):
    async def run():
        async with greedy(lm) as gen:
            tokens = [t async for t in gen]
            return tokens, gen.finish_reason, gen.logits()

    tokens, reason, logits = asyncio.run(run())
    assert [t.id for t in tokens] == GREEDY["tokens"]
    assert reason == "length"
    np.testing.assert_allclose(logits, logits_file(GREEDY["decode_logits"][-1]), 1e-4, 1e-4)


def test_async_generations_run_concurrently_on_one_loop(lm):
    run = IO["two_sequences"]

    async def one(prompt):
        async with lm.generate(prompt, temperature=0, max_tokens=len(run["tokens"][0])) as gen:
            return [t.id async for t in gen]

    async def both():
        return await asyncio.gather(*(one(p) for p in run["prompts"]))

    assert asyncio.run(both()) == run["tokens"]


def test_four_threads_at_once(lm):
    run = IO["two_sequences"]
    prompts = [run["prompts"][i % 2] for i in range(4)]

    def work(prompt):
        with lm.generate(prompt, temperature=0, max_tokens=len(run["tokens"][0])) as gen:
            return [t.id for t in gen]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, prompts))
    assert results == [run["tokens"][i % 2] for i in range(4)]
