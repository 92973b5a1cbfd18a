//! Text generation with the TVM 0.27 tiny llama fixture (tests/tvm_models/tvm027/lm): greedy
//! tokens and logits equal to what TVM computed (io.json and its .bin files), two generations
//! interleaved, seeded sampling equal to the core's record (sampled.json, the same list in every
//! binding), stop tokens and strings, max_tokens, typed errors, and generations on four threads.
//!
//! Each test loads its own model: one model's cache holds at most 4 generations at once, and
//! the tests of this file run in parallel.
mod common;

use std::path::PathBuf;

use polyffi::{FinishReason, GenerateOptions, LanguageModel, Token};
use serde_json::Value as Json;

fn dir() -> PathBuf {
    common::repo_root().join("tests/tvm_models/tvm027/lm")
}

fn io() -> Json {
    common::read_json(&dir().join("io.json"))
}

fn ids(v: &Json) -> Vec<i32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() as i32)
        .collect()
}

fn load() -> LanguageModel {
    LanguageModel::load(dir()).unwrap_or_else(|e| panic!("loading {}: {e}", dir().display()))
}

fn greedy(max_tokens: u32) -> GenerateOptions {
    GenerateOptions {
        max_tokens,
        temperature: 0.0,
        ..Default::default()
    }
}

/// Raw little-endian float32 values.
fn f32_file(name: &str) -> Vec<f32> {
    let bytes = std::fs::read(dir().join(name)).unwrap();
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 + 1e-4 * w.abs(),
            "{what}: logit {i} is {g}, TVM computed {w}"
        );
    }
}

fn token_ids(tokens: &[Token]) -> Vec<i32> {
    tokens.iter().map(|t| t.id).collect()
}

#[test]
fn greedy_tokens_and_logits_match_tvm() {
    let io = io();
    let case = &io["greedy"];
    let lm = load();
    let vocab = io["config"]["vocab_size"].as_u64().unwrap() as usize;
    let prompt = ids(&case["prompt"]);
    let mut g = lm.generate(&prompt, &greedy(13)).unwrap();
    let err = g.logits().unwrap_err();
    assert_eq!(
        err.kind(),
        "ValueError",
        "logits() before the first token: {err}"
    );
    assert_eq!(g.finish_reason().unwrap(), None);

    let mut tokens = Vec::new();
    let prefill = f32_file(case["prefill_logits"].as_str().unwrap());
    let decode = case["decode_logits"].as_array().unwrap();
    while let Some(t) = g.next() {
        let t = t.unwrap();
        let logits = g.logits_vec().unwrap();
        if tokens.is_empty() {
            assert_close(
                &logits,
                &prefill[prefill.len() - vocab..],
                "prefill, last row",
            );
        } else {
            let file = decode[tokens.len() - 1].as_str().unwrap();
            assert_close(&logits, &f32_file(file), file);
        }
        assert_eq!(t.text, lm.token_text(t.id).unwrap());
        tokens.push(t);
    }
    assert_eq!(token_ids(&tokens), ids(&case["tokens"]));
    assert_eq!(g.finish_reason().unwrap(), Some(FinishReason::Length));
    assert_eq!(g.prompt_tokens().unwrap(), prompt.len());
    assert_eq!(g.completion_tokens().unwrap(), 13);
    assert!(g.next().is_none(), "a finished generation stays finished");
}

#[test]
fn two_interleaved_generations_give_their_own_tokens() {
    let io = io();
    let case = &io["two_sequences"];
    let prompts = case["prompts"].as_array().unwrap();
    let lm = load();
    let mut a = lm.generate(ids(&prompts[0]), &greedy(13)).unwrap();
    let mut b = lm.generate(ids(&prompts[1]), &greedy(13)).unwrap();
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    loop {
        let ta = a.next().transpose().unwrap();
        let tb = b.next().transpose().unwrap();
        if ta.is_none() && tb.is_none() {
            break;
        }
        got_a.extend(ta.map(|t| t.id));
        got_b.extend(tb.map(|t| t.id));
    }
    let want = case["tokens"].as_array().unwrap();
    assert_eq!(got_a, ids(&want[0]));
    assert_eq!(got_b, ids(&want[1]));
}

#[test]
fn seeded_sampling_gives_the_recorded_tokens() {
    let io = io();
    let sampled = common::read_json(&dir().join("sampled.json"));
    let lm = load();
    let options = GenerateOptions {
        temperature: 0.8,
        top_p: 0.9,
        seed: 7,
        max_tokens: 20,
        ..Default::default()
    };
    let run = || -> Vec<i32> {
        lm.generate(ids(&io["greedy"]["prompt"]), &options)
            .unwrap()
            .map(|t| t.unwrap().id)
            .collect()
    };
    let first = run();
    assert_eq!(first, ids(&sampled["tokens"]));
    assert_eq!(run(), first, "the same seed gives the same tokens");
}

#[test]
fn text_prompt_is_the_same_as_its_token_ids() {
    let lm = load();
    let text = "Hello, polyffi!\n";
    let encoded = lm.encode(text).unwrap();
    assert_eq!(encoded.len(), text.chars().count());
    assert_eq!(lm.decode(&encoded).unwrap(), text);
    // chars tokenizer: id 0 is "\n", then the printable ASCII characters from ' ' (32).
    assert_eq!(encoded[0], i32::from(b'H') - 32 + 1);
    assert_eq!(lm.token_text(0).unwrap(), "\n");
    let from_text: Vec<Token> = lm
        .generate(text, &greedy(6))
        .unwrap()
        .collect::<polyffi::Result<_>>()
        .unwrap();
    let from_ids: Vec<Token> = lm
        .generate(encoded, &greedy(6))
        .unwrap()
        .collect::<polyffi::Result<_>>()
        .unwrap();
    assert_eq!(from_text, from_ids);
    assert_eq!(from_text.len(), 6);
}

#[test]
fn config_reports_the_vocabulary_and_cache() {
    let config: Json = serde_json::from_str(&load().config().unwrap()).unwrap();
    assert_eq!(config["vocab_size"], 96);
    assert_eq!(config["kv_cache"]["max_batch_size"], 4);
    assert_eq!(config["kv_cache"]["max_total_seq_len"], 128);
}

#[test]
fn a_stop_token_ends_the_generation_and_is_not_returned() {
    let io = io();
    let want = ids(&io["greedy"]["tokens"]);
    let lm = load();
    let prompt = ids(&io["greedy"]["prompt"]);
    // want[3] first appears at index 3.
    assert!(!want[..3].contains(&want[3]));
    let by_id = GenerateOptions {
        stop_token_ids: vec![want[3]],
        ..greedy(13)
    };
    let mut g = lm.generate(&prompt, &by_id).unwrap();
    let got: Vec<i32> = g.by_ref().map(|t| t.unwrap().id).collect();
    assert_eq!(got, want[..3]);
    assert_eq!(g.finish_reason().unwrap(), Some(FinishReason::Stop));
    assert_eq!(g.completion_tokens().unwrap(), 3);

    let by_text = GenerateOptions {
        stop: vec![lm.token_text(want[3]).unwrap()],
        ..greedy(13)
    };
    let mut g = lm.generate(&prompt, &by_text).unwrap();
    let got: Vec<i32> = g.by_ref().map(|t| t.unwrap().id).collect();
    assert_eq!(got, want[..3]);
    assert_eq!(g.finish_reason().unwrap(), Some(FinishReason::Stop));
}

#[test]
fn max_tokens_ends_with_length() {
    let io = io();
    let lm = load();
    let mut g = lm
        .generate(ids(&io["greedy"]["prompt"]), &greedy(4))
        .unwrap();
    let got: Vec<i32> = g.by_ref().map(|t| t.unwrap().id).collect();
    assert_eq!(got, ids(&io["greedy"]["tokens"])[..4]);
    assert_eq!(g.finish_reason().unwrap(), Some(FinishReason::Length));

    let mut none = lm.generate("abc", &greedy(0)).unwrap();
    assert!(none.next().is_none());
    assert_eq!(none.finish_reason().unwrap(), Some(FinishReason::Length));
}

#[test]
fn close_ends_the_generation_and_frees_its_sequence() {
    let lm = load();
    // The cache holds 4 sequences: closing (or dropping) generations makes room for more.
    for _ in 0..3 {
        let mut gens: Vec<_> = (0..4)
            .map(|_| lm.generate("ab", &greedy(5)).unwrap())
            .collect();
        assert!(gens[0].next().unwrap().is_ok());
        gens[0].close().unwrap();
        assert!(gens[0].next().is_none(), "next() after close()");
        let extra = lm.generate("ab", &greedy(5)).unwrap();
        drop(extra);
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let lm = load();
    let kind = |r: polyffi::Result<polyffi::Generation>| r.map(|_| ()).unwrap_err();

    let e = LanguageModel::load(dir().join("no-such-dir")).unwrap_err();
    assert_eq!(e.kind(), "FileNotFoundError", "{e}");

    let e = lm.encode("caf\u{e9}").unwrap_err();
    assert_eq!(e.kind(), "ValueError", "{e}");
    assert!(e.message().contains('\u{e9}'), "names the character: {e}");

    let e = lm.decode(&[0, 96]).unwrap_err();
    assert_eq!(e.kind(), "ValueError", "{e}");

    let e = kind(lm.generate("", &greedy(2)));
    assert_eq!(e.kind(), "ValueError", "empty prompt: {e}");
    let e = kind(lm.generate(Vec::<i32>::new(), &greedy(2)));
    assert_eq!(e.kind(), "ValueError", "empty prompt: {e}");

    let e = kind(lm.generate(vec![1; 129], &greedy(2)));
    assert_eq!(
        e.kind(),
        "ValueError",
        "a prompt longer than the cache: {e}"
    );

    let e = kind(lm.generate(
        "ab",
        &GenerateOptions {
            stop: vec!["ab".into()],
            ..greedy(2)
        },
    ));
    assert_eq!(e.kind(), "ValueError", "a stop string of two tokens: {e}");

    let e = kind(lm.generate(
        "ab",
        &GenerateOptions {
            top_p: 0.0,
            ..greedy(2)
        },
    ));
    assert_eq!(e.kind(), "ValueError", "top_p 0: {e}");

    let e = kind(lm.generate(
        "ab",
        &GenerateOptions {
            temperature: f64::INFINITY,
            ..greedy(2)
        },
    ));
    assert_eq!(e.kind(), "ValueError", "infinite temperature: {e}");

    let alive: Vec<_> = (0..4)
        .map(|_| lm.generate("ab", &greedy(2)).unwrap())
        .collect();
    let e = kind(lm.generate("ab", &greedy(2)));
    assert_eq!(e.kind(), "RuntimeError", "a fifth generation: {e}");
    assert!(
        e.message().contains("too many concurrent generations"),
        "{e}"
    );
    drop(alive);

    // After every error the model still generates.
    let tokens: Vec<i32> = lm
        .generate(ids(&io()["greedy"]["prompt"]), &greedy(13))
        .unwrap()
        .map(|t| t.unwrap().id)
        .collect();
    assert_eq!(tokens, ids(&io()["greedy"]["tokens"]));
}

#[test]
fn a_full_cache_is_an_error_that_ends_the_generation() {
    let lm = load();
    // 120 prompt tokens + 100 more cannot fit in a cache of 128 tokens.
    let mut g = lm.generate(vec![5; 120], &greedy(100)).unwrap();
    let mut produced = 0;
    let err = loop {
        match g.next() {
            Some(Ok(_)) => produced += 1,
            Some(Err(e)) => break e,
            None => panic!("the generation ended without an error after {produced} tokens"),
        }
    };
    assert_eq!(err.kind(), "RuntimeError", "{err}");
    assert!(err.message().contains("KV cache is full"), "{err}");
    assert!(
        (1..100).contains(&produced),
        "{produced} tokens before the cache was full"
    );
    assert!(g.next().is_none(), "the generation ended");
    drop(g);
    // Its pages are free again.
    assert_eq!(lm.generate("ab", &greedy(3)).unwrap().count(), 3);
}

#[test]
fn generations_on_four_threads_each_give_the_greedy_tokens() {
    let io = io();
    let prompt = ids(&io["greedy"]["prompt"]);
    let want = ids(&io["greedy"]["tokens"]);
    let lm = load();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut runs = Vec::new();
                    for _ in 0..3 {
                        let tokens: Vec<i32> = lm
                            .generate(&prompt, &greedy(13))
                            .unwrap()
                            .map(|t| t.unwrap().id)
                            .collect();
                        runs.push(tokens);
                    }
                    runs
                })
            })
            .collect();
        for h in handles {
            for tokens in h.join().unwrap() {
                assert_eq!(tokens, want);
            }
        }
    });
}

#[test]
fn a_generation_outlives_its_model_handle() {
    let io = io();
    let lm = load();
    let mut g = lm
        .generate(ids(&io["greedy"]["prompt"]), &greedy(13))
        .unwrap();
    let first = g.next().unwrap().unwrap();
    drop(lm);
    let mut got = vec![first.id];
    got.extend(g.map(|t| t.unwrap().id));
    assert_eq!(got, ids(&io["greedy"]["tokens"]));
}

#[test]
fn language_model_and_generation_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<LanguageModel>();
    check::<polyffi::Generation>();
}
