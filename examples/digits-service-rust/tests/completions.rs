//! Starts `polyffi-serve` on a folder holding the TVM 0.27 tiny llama fixture as `tiny_llama`
//! and talks HTTP/1.1 to its OpenAI routes: the model list, greedy and seeded completions equal
//! to the fixture's tokens (io.json, sampled.json), the same text streamed one event per token,
//! stop strings, and OpenAI-style 4xx errors after which the server keeps serving.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/tvm_models/tvm027/lm")
        .canonicalize()
        .unwrap()
}

fn read_json(name: &str) -> Value {
    let path = fixture().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The text of token ids in the fixture's vocabulary: id 0 is "\n", id i the ASCII character
/// 31 + i.
fn text_of(ids: &Value) -> String {
    ids.as_array()
        .unwrap()
        .iter()
        .map(|id| match id.as_u64().unwrap() {
            0 => '\n',
            i => char::from(31 + i as u8),
        })
        .collect()
}

struct Server {
    child: Child,
    addr: String,
    dir: PathBuf,
}

impl Server {
    /// A server of its own (`tag` names its folder: the tests run in parallel).
    fn start(tag: &str) -> Server {
        let dir =
            std::env::temp_dir().join(format!("polyffi-serve-lm-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(fixture(), dir.join("tiny_llama")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_polyffi-serve"))
            .arg(&dir)
            .arg("0")
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting polyffi-serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Server { child, addr, dir }
    }

    /// One request on a fresh connection; returns (status, response head, body).
    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String, String) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        let (head, rest) = response.split_once("\r\n\r\n").expect("HTTP response");
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(rest)
        } else {
            rest.to_string()
        };
        (status, head.to_string(), body)
    }

    fn complete(&self, body: Value) -> Value {
        let (status, _, text) = self.request("POST", "/v1/completions", &body.to_string());
        assert_eq!(status, 200, "{body}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// The error message of a refused request, checking its status and OpenAI's error shape.
    fn refused(&self, status: u16, body: &str) -> String {
        let (got, _, text) = self.request("POST", "/v1/completions", body);
        assert_eq!(got, status, "{body}: {text}");
        let json: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["error"]["type"], "invalid_request_error", "{text}");
        assert!(json["error"]["param"].is_null() && json["error"]["code"].is_null());
        json["error"]["message"].as_str().unwrap().to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

#[test]
fn openai_completions() {
    let server = Server::start("completions");
    let io = read_json("io.json");
    let prompt = text_of(&io["greedy"]["prompt"]);
    let greedy_text = text_of(&io["greedy"]["tokens"]);

    // The model list holds the language model only.
    let (status, _, text) = server.request("GET", "/v1/models", "");
    assert_eq!(status, 200, "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        list,
        json!({"object": "list", "data": [
            {"id": "tiny_llama", "object": "model", "created": 0, "owned_by": "polyffi"}]})
    );

    // Greedy: the fixture's tokens as text.
    let r = server.complete(json!({
        "model": "tiny_llama", "prompt": prompt, "max_tokens": 13, "temperature": 0,
        "user": "ignored", "n": 1
    }));
    assert_eq!(r["object"], "text_completion");
    assert!(r["id"].as_str().unwrap().starts_with("cmpl-"));
    assert_eq!(r["model"], "tiny_llama");
    assert!(r["created"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(
        r["choices"],
        json!([{"index": 0, "text": greedy_text, "logprobs": null, "finish_reason": "length"}])
    );
    assert_eq!(
        r["usage"],
        json!({"prompt_tokens": 19, "completion_tokens": 13, "total_tokens": 32})
    );

    // Streamed: one event per token, then the finish reason, then [DONE].
    let (status, head, body) = server.request(
        "POST",
        "/v1/completions",
        &json!({"model": "tiny_llama", "prompt": prompt, "max_tokens": 13, "temperature": 0,
                "stream": true})
        .to_string(),
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{head}"
    );
    let events: Vec<&str> = body
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("event {e:?}"))
        })
        .collect();
    assert_eq!(events.len(), 13 + 2, "{body}");
    assert_eq!(events[14], "[DONE]");
    let chunks: Vec<Value> = events[..14]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    for (chunk, c) in chunks.iter().zip(greedy_text.chars()) {
        assert_eq!(chunk["object"], "text_completion");
        assert_eq!(chunk["choices"][0]["text"], c.to_string());
        assert!(chunk["choices"][0]["finish_reason"].is_null());
        assert_eq!(chunk["id"], chunks[0]["id"]);
    }
    assert_eq!(chunks[13]["choices"][0]["text"], "");
    assert_eq!(chunks[13]["choices"][0]["finish_reason"], "length");

    // Seeded sampling: the core's recorded tokens.
    let sampled = read_json("sampled.json");
    let r = server.complete(json!({
        "model": "tiny_llama", "prompt": prompt, "max_tokens": 20, "temperature": 0.8,
        "top_p": 0.9, "seed": 7
    }));
    assert_eq!(r["choices"][0]["text"], text_of(&sampled["tokens"]));

    // A stop string ends the completion before it.
    let stop: String = greedy_text.chars().nth(3).unwrap().to_string();
    assert!(!greedy_text[..3].contains(&stop));
    let r = server.complete(json!({
        "model": "tiny_llama", "prompt": prompt, "max_tokens": 13, "temperature": 0,
        "stop": [stop]
    }));
    assert_eq!(r["choices"][0]["text"], greedy_text[..3]);
    assert_eq!(r["choices"][0]["finish_reason"], "stop");

    // Errors, after each of which the server still serves.
    server.refused(400, "{not json");
    let m = server.refused(404, r#"{"model": "nope", "prompt": "a"}"#);
    assert!(m.contains("nope"), "{m}");
    let m = server.refused(400, r#"{"model": "tiny_llama", "prompt": "caf\u00e9"}"#);
    assert!(m.contains("ValueError"), "{m}");
    server.refused(400, r#"{"model": "tiny_llama", "prompt": "a", "n": 2}"#);
    server.refused(
        400,
        r#"{"model": "tiny_llama", "prompt": "a", "best_of": 3}"#,
    );
    server.refused(
        400,
        r#"{"model": "tiny_llama", "prompt": "a", "max_tokens": -1}"#,
    );
    server.refused(400, r#"{"model": "tiny_llama", "prompt": "a", "stop": 5}"#);
    server.refused(
        400,
        r#"{"model": "tiny_llama", "prompt": "a", "temperature": "hot"}"#,
    );
    let long = "a".repeat(200);
    server.refused(
        400,
        &json!({"model": "tiny_llama", "prompt": long}).to_string(),
    );
    let r = server.complete(json!({
        "model": "tiny_llama", "prompt": prompt, "max_tokens": 13, "temperature": 0
    }));
    assert_eq!(r["choices"][0]["text"], greedy_text);
}

#[test]
fn more_clients_than_cache_slots_all_get_their_completion() {
    let server = Server::start("slots");
    let io = read_json("io.json");
    let prompt = text_of(&io["greedy"]["prompt"]);
    let want = text_of(&io["greedy"]["tokens"]);
    // The cache holds 4 generations; 8 clients at once wait for a slot, none is refused.
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (server, prompt) = (&server, &prompt);
                s.spawn(move || {
                    let stream = i % 2 == 1;
                    let body = json!({"model": "tiny_llama", "prompt": prompt, "max_tokens": 13,
                                      "temperature": 0, "stream": stream});
                    let (status, _, text) =
                        server.request("POST", "/v1/completions", &body.to_string());
                    assert_eq!(status, 200, "{text}");
                    if !stream {
                        let r: Value = serde_json::from_str(&text).unwrap();
                        return r["choices"][0]["text"].as_str().unwrap().to_string();
                    }
                    text.split("\n\n")
                        .filter_map(|e| e.strip_prefix("data: "))
                        .filter(|e| *e != "[DONE]")
                        .map(|e| {
                            let v: Value = serde_json::from_str(e).unwrap();
                            v["choices"][0]["text"].as_str().unwrap().to_string()
                        })
                        .collect()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), want);
        }
    });
}
