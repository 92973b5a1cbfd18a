//! The digits classifier as an HTTP service: axum on tokio, the compiled model called through
//! polyffi's GraphModule.
//!
//! The model (library, graph, params) is loaded once, into polyffi's model runner
//! (`GraphModule::from_parts`), whose `infer` is stateless and thread-safe: every request shares
//! one `GraphModule` through `&self`, and the runner gives each concurrent call an executor of its
//! own (sharing the weights). Inference runs on tokio's blocking pool (`spawn_blocking`), never on
//! the async workers.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use polyffi::{Device, GraphModule, Module};
use serde::{Deserialize, Serialize};

/// Input features per row (an 8x8 image) and classes per prediction.
pub const FEATURES: usize = 64;
pub const CLASSES: usize = 10;
/// Largest batch one request may carry.
pub const MAX_BATCH: usize = 4096;

/// The model, loaded once behind the core's model runner (batch-1 graph).
pub struct Model {
    graph: GraphModule,
}

impl Model {
    /// Loads `libdigits_model.so` from `lib_path` and `graph_b1.json` + `params.bin` from
    /// `model_dir` (the runner builds one executor, which checks that they fit together).
    pub fn load(lib_path: &Path, model_dir: &Path) -> polyffi::Result<Model> {
        let read = |name: &str| {
            std::fs::read(model_dir.join(name)).map_err(|e| {
                polyffi::Error::new(
                    "IOError",
                    format!("{}: {e}", model_dir.join(name).display()),
                )
            })
        };
        let graph_json = String::from_utf8(read("graph_b1.json")?)
            .map_err(|_| polyffi::Error::new("ValueError", "graph_b1.json is not UTF-8"))?;
        let lib = Module::load(lib_path)?;
        let graph =
            GraphModule::from_parts(&graph_json, &lib, &read("params.bin")?, Device::cpu(0))?;
        Ok(Model { graph })
    }

    /// Class probabilities for each row (blocking; call it from a blocking thread). Many
    /// threads may call it at once.
    pub fn predict(&self, rows: &[Vec<f32>]) -> polyffi::Result<Vec<[f32; CLASSES]>> {
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let input = ndarray::ArrayView::from_shape((1, FEATURES), row.as_slice())
                .map_err(|e| polyffi::Error::new("ValueError", e.to_string()))?;
            let outputs = self.graph.infer(&[&input])?; // a view in; new arrays out
            let mut probs = [0f32; CLASSES];
            probs.copy_from_slice(outputs[0].as_slice::<f32>()?);
            out.push(probs);
        }
        Ok(out)
    }

    /// Executors the runner has made (it grows to the number of concurrent inferences).
    pub fn executors(&self) -> usize {
        self.graph
            .runner()
            .and_then(|r| r.function("pool_size").ok())
            .and_then(|f| f.invoke::<i64>(()).ok())
            .unwrap_or(0) as usize
    }
}

pub fn argmax(p: &[f32]) -> usize {
    p.iter()
        .enumerate()
        .fold(0, |best, (i, &x)| if x > p[best] { i } else { best })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictRequest {
    /// A batch of rows, each 64 pixel intensities (0..16 as in the training set).
    pub rows: Vec<Vec<f32>>,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct PredictResponse {
    pub classes: Vec<usize>,
    pub probabilities: Vec<Vec<f32>>,
}

#[derive(Serialize)]
struct ErrorBody {
    error: String,
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(ErrorBody {
            error: message.into(),
        }),
    )
        .into_response()
}

/// Checks a request body; the error is what the client is told.
pub fn validate(body: &[u8]) -> Result<PredictRequest, (StatusCode, String)> {
    let request: PredictRequest = serde_json::from_slice(body).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("malformed JSON: {e} (expected {{\"rows\": [[64 numbers], ...]}})"),
        )
    })?;
    if request.rows.is_empty() {
        return Err((
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty batch: send at least one row".into(),
        ));
    }
    if request.rows.len() > MAX_BATCH {
        return Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "batch of {} rows is larger than {MAX_BATCH}",
                request.rows.len()
            ),
        ));
    }
    if let Some((i, row)) = request
        .rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.len() != FEATURES)
    {
        return Err((
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("row {i} has {} values, expected {FEATURES}", row.len()),
        ));
    }
    if let Some(i) = request
        .rows
        .iter()
        .position(|r| r.iter().any(|x| !x.is_finite()))
    {
        return Err((
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("row {i} holds a non-finite value"),
        ));
    }
    Ok(request)
}

async fn predict(State(model): State<Arc<Model>>, body: Bytes) -> Response {
    let request = match validate(&body) {
        Ok(r) => r,
        Err((status, message)) => return error(status, message),
    };
    let result = tokio::task::spawn_blocking(move || model.predict(&request.rows)).await;
    match result {
        Ok(Ok(probs)) => Json(PredictResponse {
            classes: probs.iter().map(|p| argmax(p)).collect(),
            probabilities: probs.iter().map(|p| p.to_vec()).collect(),
        })
        .into_response(),
        Ok(Err(e)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("model error: {e}"),
        ),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("inference task failed: {e}"),
        ),
    }
}

async fn health(State(model): State<Arc<Model>>) -> Response {
    Json(serde_json::json!({
        "status": "ok",
        "model": "digits",
        "runtime": polyffi::runtime_version().unwrap_or_default(),
        "executors": model.executors(),
    }))
    .into_response()
}

/// The service's routes over a loaded model.
pub fn app(model: Arc<Model>) -> Router {
    Router::new()
        .route("/predict", post(predict))
        .route("/health", get(health))
        .with_state(model)
}

/// Where the model files are by default: this repository's examples/digits/model and the
/// library directory polyffi was linked against (or POLYFFI_LIB_DIR).
pub fn default_paths() -> (PathBuf, PathBuf) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib_dir = std::env::var_os("POLYFFI_LIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("POLYFFI_BUILD_LIB_DIR")));
    (
        lib_dir.join("libdigits_model.so"),
        repo.join("examples/digits/model"),
    )
}
