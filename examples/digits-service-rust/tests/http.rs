//! Starts the service on 127.0.0.1 with a free port and talks HTTP/1.1 to it over a socket:
//! predictions equal the C demo's (examples/digits/model/expected.json), bad requests get a
//! 4xx with a clear message, and the server keeps serving after them.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_digits-service"))
            .args(["--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting digits-service");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Server { child, addr }
    }

    /// One request on a fresh connection; returns (status, body).
    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
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
        let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(rest)
        } else {
            rest.to_string()
        };
        (status, body)
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

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn model_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../digits/model")
}

fn test_rows() -> Vec<Vec<f32>> {
    let bytes = std::fs::read(model_dir().join("test_x.bin")).unwrap();
    let x: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    x.chunks_exact(64).map(<[f32]>::to_vec).collect()
}

fn expected() -> Vec<u64> {
    let text = std::fs::read_to_string(model_dir().join("expected.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect()
}

fn predict(server: &Server, rows: &[Vec<f32>]) -> serde_json::Value {
    let body = serde_json::json!({ "rows": rows }).to_string();
    let (status, text) = server.request("POST", "/predict", &body);
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn serves_the_c_demos_predictions_and_rejects_bad_requests() {
    let server = Server::start();
    let (status, text) = server.request("GET", "/health", "");
    assert_eq!(status, 200, "{text}");
    let health: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(health["status"], "ok");

    // The whole held-out set in one request.
    let rows = test_rows();
    let want = expected();
    let got = predict(&server, &rows);
    let classes: Vec<u64> = got["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(classes, want);
    let probs = got["probabilities"].as_array().unwrap();
    assert_eq!(probs.len(), rows.len());
    let p0: Vec<f64> = probs[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_f64().unwrap())
        .collect();
    assert_eq!(p0.len(), 10);
    assert!((p0.iter().sum::<f64>() - 1.0).abs() < 1e-4);

    // Batch 1, a few samples.
    for i in [0, 17, 358] {
        let one = predict(&server, &rows[i..i + 1]);
        assert_eq!(one["classes"][0].as_u64().unwrap(), want[i], "sample {i}");
    }

    // Bad requests: 4xx with a message saying what is wrong.
    let bad: [(&str, u16, &str); 6] = [
        ("{\"rows\": [[1, 2", 400, "malformed JSON"),
        ("not json at all", 400, "malformed JSON"),
        (
            "{\"rows\": [[1, 2, 3]]}",
            422,
            "row 0 has 3 values, expected 64",
        ),
        ("{\"rows\": []}", 422, "empty batch"),
        ("{\"rows\": [[\"a\"]]}", 400, "malformed JSON"),
        ("{\"pixels\": []}", 400, "malformed JSON"),
    ];
    for (body, status, message) in bad {
        let (got_status, text) = server.request("POST", "/predict", body);
        assert_eq!(got_status, status, "{body} -> {text}");
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            json["error"].as_str().unwrap().contains(message),
            "{body} -> {text}"
        );
    }
    let mut long_row = rows[0].clone();
    long_row.push(0.0);
    let body = serde_json::json!({ "rows": [rows[1].clone(), long_row] }).to_string();
    let (status, text) = server.request("POST", "/predict", &body);
    assert_eq!(status, 422);
    assert!(text.contains("row 1 has 65 values"), "{text}");

    // Still serving.
    let again = predict(&server, &rows[5..6]);
    assert_eq!(again["classes"][0].as_u64().unwrap(), want[5]);
    assert_eq!(server.request("GET", "/health", "").0, 200);
}

#[test]
fn concurrent_requests_get_their_own_answers() {
    let server = Server::start();
    let rows = test_rows();
    let want = expected();
    std::thread::scope(|s| {
        for t in 0..8 {
            let (server, rows, want) = (&server, &rows, &want);
            s.spawn(move || {
                for k in 0..10 {
                    let i = (t * 37 + k * 11) % rows.len();
                    let got = predict(server, &rows[i..i + 1]);
                    assert_eq!(got["classes"][0].as_u64().unwrap(), want[i], "sample {i}");
                }
            });
        }
    });
}
