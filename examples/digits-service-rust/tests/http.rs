//! Starts `polyffi-serve` on 127.0.0.1 (a free port) over a folder holding TVM 0.18 graph
//! exports, TVM 0.27 relax executables and the digits model's three artifacts, and talks
//! HTTP/1.1 to it over a socket: metadata, inference checked against the outputs TVM computed
//! for the fixtures and against train.py's digits predictions, typed 4xx errors, Triton's binary
//! tensors, and many clients at once.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tvm018() -> PathBuf {
    repo().join("tests/tvm_models/tvm018")
}

fn relax() -> PathBuf {
    repo().join("tests/tvm_models/tvm027/relax")
}

fn digits() -> PathBuf {
    repo().join("examples/digits/model")
}

struct Server {
    child: Child,
    addr: String,
    dir: PathBuf,
}

/// The test's model folder: links named as the server should serve them.
fn model_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("polyffi-serve-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let lib_dir = std::env::var_os("POLYFFI_LIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("build/lib"));
    let links: Vec<(&str, PathBuf)> = vec![
        ("conv_b1.so", tvm018().join("conv_b1/factory.so")),
        ("multi_io_b1.so", tvm018().join("multi_io_b1/factory.so")),
        ("dyn_batch.so", relax().join("dyn_batch.so")),
        ("two_outputs.so", relax().join("two_outputs.so")),
        ("mlp_params.so", relax().join("mlp_params.so")),
        ("digits.so", relax().join("digits.so")),
        (
            "digits_b1/libdigits_model.so",
            lib_dir.join("libdigits_model.so"),
        ),
        ("digits_b1/graph.json", digits().join("graph_b1.json")),
        ("digits_b1/params.bin", digits().join("params.bin")),
        // not a model: two kernel libraries in one folder
        ("conv_b16/factory.so", tvm018().join("conv_b16/factory.so")),
        ("conv_b16/kernels.so", tvm018().join("conv_b16/kernels.so")),
        ("conv_b16/graph.json", tvm018().join("conv_b16/graph.json")),
        ("conv_b16/params.bin", tvm018().join("conv_b16/params.bin")),
    ];
    std::fs::create_dir_all(dir.join("digits_b1")).unwrap();
    std::fs::create_dir_all(dir.join("conv_b16")).unwrap();
    for (name, target) in links {
        let target =
            std::fs::canonicalize(&target).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    }
    std::fs::write(dir.join("notes.txt"), "not a model").unwrap();
    std::fs::write(dir.join("broken.so"), "not a library either").unwrap();
    dir
}

impl Server {
    fn start() -> Server {
        let dir = model_dir();
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
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
        Server { child, addr, dir }
    }

    /// One request on a fresh connection; returns (status, body).
    fn raw(&self, method: &str, path: &str, headers: &str, body: &[u8]) -> (u16, String) {
        let (status, _, body) = self.raw_bytes(method, path, headers, body);
        (status, String::from_utf8(body).unwrap())
    }

    /// One request on a fresh connection; returns (status, response head, body bytes).
    fn raw_bytes(
        &self,
        method: &str,
        path: &str,
        headers: &str,
        body: &[u8],
    ) -> (u16, String, Vec<u8>) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n{headers}\
             Connection: close\r\n\r\n",
            self.addr,
            body.len()
        )
        .unwrap();
        s.write_all(body).unwrap();
        let mut response = Vec::new();
        s.read_to_end(&mut response).unwrap();
        let split = response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("HTTP response");
        let head = String::from_utf8(response[..split].to_vec()).unwrap();
        let rest = &response[split + 4..];
        let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(std::str::from_utf8(rest).unwrap()).into_bytes()
        } else {
            rest.to_vec()
        };
        (status, head, body)
    }

    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        self.raw(
            method,
            path,
            "Content-Type: application/json\r\n",
            body.as_bytes(),
        )
    }

    fn ok(&self, method: &str, path: &str, body: &str) -> Value {
        let (status, text) = self.request(method, path, body);
        assert_eq!(status, 200, "{method} {path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    fn error(&self, status: u16, method: &str, path: &str, body: &str) -> String {
        let (got, text) = self.request(method, path, body);
        assert_eq!(got, status, "{method} {path} {body}: {text}");
        let json: Value = serde_json::from_str(&text).unwrap();
        json["error"].as_str().unwrap().to_string()
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
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn f32s(p: &Path) -> Vec<f32> {
    std::fs::read(p)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn input(name: &str, datatype: &str, shape: &[i64], data: Value) -> Value {
    json!({ "name": name, "datatype": datatype, "shape": shape, "data": data })
}

fn infer_body(inputs: Vec<Value>) -> String {
    json!({ "inputs": inputs }).to_string()
}

fn assert_close(want: &[f32], got: &Value, tol: f64) {
    let got = got.as_array().unwrap();
    assert_eq!(want.len(), got.len());
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        let g = g.as_f64().unwrap();
        assert!((*w as f64 - g).abs() <= tol, "element {i}: {w} vs {g}");
    }
}

fn expected_digits() -> Vec<u64> {
    let text = std::fs::read_to_string(digits().join("expected.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    json["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect()
}

fn argmax(p: &[Value]) -> u64 {
    let v: Vec<f64> = p.iter().map(|x| x.as_f64().unwrap()).collect();
    (0..v.len()).fold(0, |b, i| if v[i] > v[b] { i } else { b }) as u64
}

#[test]
fn metadata_inference_and_errors() {
    let s = Server::start();
    assert_eq!(s.request("GET", "/v2/health/live", "").0, 200);
    assert_eq!(s.request("GET", "/v2/health/ready", "").0, 200);

    // Metadata from the models.
    let conv = s.ok("GET", "/v2/models/conv_b1", "");
    assert_eq!(
        conv["inputs"],
        json!([{"name": "data", "datatype": "FP32", "shape": [1, 3, 16, 16]}])
    );
    assert_eq!(
        conv["outputs"],
        json!([{"name": "output_0", "datatype": "FP32", "shape": [1, 10]}])
    );
    let multi = s.ok("GET", "/v2/models/multi_io_b1", "");
    assert_eq!(
        multi["inputs"],
        json!([
            {"name": "x", "datatype": "FP32", "shape": [1, 8]},
            {"name": "idx", "datatype": "INT32", "shape": [1, 8]},
            {"name": "z", "datatype": "FP64", "shape": [1, 4]},
        ])
    );
    assert_eq!(multi["outputs"][1]["datatype"], "INT32");
    let dyn_batch = s.ok("GET", "/v2/models/dyn_batch", "");
    assert_eq!(
        dyn_batch["inputs"],
        json!([{"name": "x", "datatype": "FP32", "shape": [-1, 16]}])
    );
    assert_eq!(
        dyn_batch["outputs"],
        json!([{"name": "output_0", "datatype": "FP32", "shape": [-1, 10]}])
    );
    let mlp = s.ok("GET", "/v2/models/mlp_params/versions/1", "");
    assert_eq!(mlp["inputs"].as_array().unwrap().len(), 5);
    assert_eq!(mlp["inputs"][1]["name"], "fc1.weight");
    assert_eq!(
        s.ok("GET", "/v2/models/two_outputs", "")["outputs"],
        json!([
            {"name": "output_0", "datatype": "FP32", "shape": [1, 8]},
            {"name": "output_1", "datatype": "FP32", "shape": [1]},
        ])
    );
    assert_eq!(
        s.ok("GET", "/v2/models/digits_b1", "")["inputs"],
        json!([{"name": "data", "datatype": "FP32", "shape": [1, 64]}])
    );
    assert_eq!(s.ok("GET", "/v2/models/digits/ready", "")["ready"], true);
    assert_eq!(s.request("GET", "/v2/models/broken", "").0, 404);
    assert_eq!(s.request("GET", "/v2/models/conv_b16", "").0, 404);

    // Inference against what TVM computed.
    let r = s.ok(
        "POST",
        "/v2/models/conv_b1/infer",
        &infer_body(vec![input(
            "data",
            "FP32",
            &[1, 3, 16, 16],
            json!(f32s(&tvm018().join("conv_b1/input_data.bin"))),
        )]),
    );
    assert_eq!(r["model_name"], "conv_b1");
    assert_eq!(r["outputs"][0]["shape"], json!([1, 10]));
    assert_close(
        &f32s(&tvm018().join("conv_b1/output_0.bin")),
        &r["outputs"][0]["data"],
        1e-5,
    );
    let r = s.ok(
        "POST",
        "/v2/models/dyn_batch/infer",
        &infer_body(vec![input(
            "x",
            "FP32",
            &[7, 16],
            json!(f32s(&relax().join("dyn_batch/b7_input_x.bin"))),
        )]),
    );
    assert_eq!(r["outputs"][0]["shape"], json!([7, 10]));
    assert_close(
        &f32s(&relax().join("dyn_batch/b7_output_0.bin")),
        &r["outputs"][0]["data"],
        1e-5,
    );
    // int32 and float64 tensors, inputs in any order
    let m = tvm018().join("multi_io_b1");
    let idx: Vec<i32> = std::fs::read(m.join("input_idx.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let z: Vec<f64> = std::fs::read(m.join("input_z.bin"))
        .unwrap()
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let r = s.ok(
        "POST",
        "/v2/models/multi_io_b1/infer",
        &infer_body(vec![
            input("z", "FP64", &[1, 4], json!(z)),
            input("idx", "INT32", &[1, 8], json!(idx)),
            input("x", "FP32", &[1, 8], json!(f32s(&m.join("input_x.bin")))),
        ]),
    );
    let want1 = i32::from_le_bytes(
        std::fs::read(m.join("output_1.bin")).unwrap()[..4]
            .try_into()
            .unwrap(),
    );
    assert_eq!(r["outputs"][1]["data"], json!([want1]));
    let want2: Vec<f64> = std::fs::read(m.join("output_2.bin"))
        .unwrap()
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(r["outputs"][2]["data"], json!(want2));
    // one output of two, the id echoed
    let two = relax().join("two_outputs");
    let body = json!({
        "id": "req-42",
        "inputs": [
            input("a", "FP32", &[1, 8], json!(f32s(&two.join("b1_input_a.bin")))),
            input("b", "FP32", &[1, 8], json!(f32s(&two.join("b1_input_b.bin")))),
        ],
        "outputs": [{"name": "output_1"}],
    });
    let r = s.ok("POST", "/v2/models/two_outputs/infer", &body.to_string());
    assert_eq!(r["id"], "req-42");
    assert_eq!(r["outputs"].as_array().unwrap().len(), 1);
    assert_eq!(r["outputs"][0]["name"], "output_1");
    assert_close(
        &f32s(&two.join("b1_output_1.bin")),
        &r["outputs"][0]["data"],
        1e-4,
    );

    // The whole held-out digits set in one request to the relax digits model.
    let want = expected_digits();
    let x = f32s(&digits().join("test_x.bin"));
    let n = want.len() as i64;
    let r = s.ok(
        "POST",
        "/v2/models/digits/infer",
        &infer_body(vec![input("data", "FP32", &[n, 64], json!(x))]),
    );
    let probs = r["outputs"][0]["data"].as_array().unwrap();
    let got: Vec<u64> = probs.chunks(10).map(argmax).collect();
    assert_eq!(got, want);

    // Triton's binary tensor extension.
    let data = std::fs::read(tvm018().join("conv_b1/input_data.bin")).unwrap();
    let head = json!({"inputs": [{"name": "data", "datatype": "FP32", "shape": [1, 3, 16, 16],
                                  "parameters": {"binary_data_size": data.len()}}]})
    .to_string();
    let mut body = head.clone().into_bytes();
    body.extend_from_slice(&data);
    let (status, text) = s.raw(
        "POST",
        "/v2/models/conv_b1/infer",
        &format!("Inference-Header-Content-Length: {}\r\n", head.len()),
        &body,
    );
    assert_eq!(status, 200, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_close(
        &f32s(&tvm018().join("conv_b1/output_0.bin")),
        &r["outputs"][0]["data"],
        1e-5,
    );

    // Binary outputs, asked for by the output or by the request.
    let want = f32s(&tvm018().join("conv_b1/output_0.bin"));
    for params in [
        json!({"outputs": [{"name": "output_0", "parameters": {"binary_data": true}}]}),
        json!({"parameters": {"binary_data_output": true}}),
    ] {
        let mut request = params.clone();
        request["inputs"] = json!([input(
            "data",
            "FP32",
            &[1, 3, 16, 16],
            json!(f32s(&tvm018().join("conv_b1/input_data.bin")))
        )]);
        let (status, head, body) = s.raw_bytes(
            "POST",
            "/v2/models/conv_b1/infer",
            "Content-Type: application/json\r\n",
            request.to_string().as_bytes(),
        );
        assert_eq!(status, 200, "{params}");
        let n: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("inference-header-content-length: ")
                    .map(|v| v.trim().parse().unwrap())
            })
            .expect("Inference-Header-Content-Length");
        let json: Value = serde_json::from_slice(&body[..n]).unwrap();
        assert_eq!(json["outputs"][0]["parameters"]["binary_data_size"], 40);
        assert!(json["outputs"][0].get("data").is_none());
        let got: Vec<f32> = body[n..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(got.len(), want.len());
        assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5));
    }
    // Bytes no input claims.
    let mut body = head.clone().into_bytes();
    body.extend_from_slice(&data);
    body.extend_from_slice(&[0; 4]);
    let (status, text) = s.raw(
        "POST",
        "/v2/models/conv_b1/infer",
        &format!("Inference-Header-Content-Length: {}\r\n", head.len()),
        &body,
    );
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("4 bytes of binary data that no input claims"),
        "{text}"
    );

    // Bad requests: 4xx with a message saying what is wrong.
    let conv = "/v2/models/conv_b1/infer";
    assert!(s
        .error(400, "POST", conv, "{\"inputs\": [")
        .starts_with("malformed inference request"));
    assert!(s.error(400, "POST", conv, "{}").contains("inputs"));
    // A shape the model does not take: the binding's typed error.
    let e = s.error(
        400,
        "POST",
        conv,
        &infer_body(vec![input(
            "data",
            "FP32",
            &[1, 3, 16, 8],
            json!(vec![0.5; 384]),
        )]),
    );
    assert!(
        e.starts_with("ValueError: ") && e.contains("expects [1, 3, 16, 16]"),
        "{e}"
    );
    let e = s.error(
        400,
        "POST",
        "/v2/models/two_outputs/infer",
        &infer_body(vec![
            input("a", "FP32", &[1, 9], json!(vec![0.5; 9])),
            input("b", "FP32", &[1, 9], json!(vec![0.5; 9])),
        ]),
    );
    assert!(
        e.split(':').next().unwrap().ends_with("Error") && e.contains("match_cast"),
        "{e}"
    );
    assert_eq!(
        s.error(
            400,
            "POST",
            conv,
            &infer_body(vec![input("data", "FP32", &[1, -3], json!([]))])
        ),
        "input 'data' has shape [1, -3]: a dimension is negative"
    );
    let huge = 1i64 << 40;
    assert_eq!(
        s.error(
            400,
            "POST",
            conv,
            &infer_body(vec![input("data", "FP32", &[huge, huge], json!([]))])
        ),
        format!("input 'data' has shape [{huge}, {huge}]: too many elements")
    );
    assert_eq!(
        s.error(
            400,
            "POST",
            conv,
            &infer_body(vec![input("data", "INT64", &[1, 3, 16, 16], json!([]))])
        ),
        "input 'data' has datatype INT64, the model takes FP32"
    );
    assert_eq!(
        s.error(
            400,
            "POST",
            conv,
            &infer_body(vec![input("data", "FP32", &[1, 3, 16, 16], json!([1, 2]))])
        ),
        "input 'data' has 2 elements of data, its shape [1, 3, 16, 16] holds 768"
    );
    assert_eq!(
        s.error(
            400,
            "POST",
            conv,
            &infer_body(vec![input(
                "data",
                "FP32",
                &[1, 3, 16, 16],
                json!([1, "x"])
            )])
        ),
        "input 'data': data[1] = \"x\" is not a valid FP32 value"
    );
    assert_eq!(
        s.error(
            400,
            "POST",
            conv,
            &infer_body(vec![input("dta", "FP32", &[1, 3, 16, 16], json!([]))])
        ),
        "model 'conv_b1' has no input 'dta' (inputs: data)"
    );
    assert_eq!(
        s.error(
            400,
            "POST",
            "/v2/models/two_outputs/infer",
            &infer_body(vec![input(
                "a",
                "FP32",
                &[1, 8],
                json!(f32s(&two.join("b1_input_a.bin")))
            )])
        ),
        "input 'b' is missing"
    );
    assert_eq!(
        s.error(404, "POST", "/v2/models/nope/infer", "{}"),
        "unknown model 'nope'"
    );
    assert_eq!(
        s.error(404, "GET", "/v2/models/nope", ""),
        "unknown model 'nope'"
    );
    assert_eq!(s.request("GET", "/v2/models/conv_b1/versions/2", "").0, 404);
    assert_eq!(s.request("GET", "/nothing", "").0, 404);

    // Still serving.
    assert_eq!(s.request("GET", "/v2/health/ready", "").0, 200);
    let r = s.ok(
        "POST",
        "/v2/models/dyn_batch/infer",
        &infer_body(vec![input(
            "x",
            "FP32",
            &[1, 16],
            json!(f32s(&relax().join("dyn_batch/b1_input_x.bin"))),
        )]),
    );
    assert_close(
        &f32s(&relax().join("dyn_batch/b1_output_0.bin")),
        &r["outputs"][0]["data"],
        1e-5,
    );
}

#[test]
fn concurrent_requests_get_their_own_answers() {
    let server = Server::start();
    let x = f32s(&digits().join("test_x.bin"));
    let want = expected_digits();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (server, x, want) = (&server, &x, &want);
            scope.spawn(move || {
                for k in 0..10 {
                    let i = (t * 37 + k * 11) % want.len();
                    let body = infer_body(vec![input(
                        "data",
                        "FP32",
                        &[1, 64],
                        json!(x[64 * i..64 * (i + 1)]),
                    )]);
                    let r = server.ok("POST", "/v2/models/digits_b1/infer", &body);
                    let p = r["outputs"][0]["data"].as_array().unwrap();
                    assert_eq!(argmax(p), want[i], "sample {i}");
                }
            });
        }
    });
}
