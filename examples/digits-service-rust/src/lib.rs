//! An Open Inference Protocol (KServe v2) REST server over polyffi: every model of a folder
//! (TVM 0.18 graph exports, TVM 0.27 relax executables, the digits model's three artifacts),
//! served with axum on tokio.
//!
//! | route | |
//! |---|---|
//! | `GET /v2/health/live`, `GET /v2/health/ready` | 200 while the server runs |
//! | `GET /v2` | server metadata |
//! | `GET /v2/models/{name}` | model metadata: inputs and outputs (name, datatype, shape, -1 dynamic) |
//! | `GET /v2/models/{name}/ready` | 200 for a loaded model |
//! | `POST /v2/models/{name}/infer` | JSON tensors in and out, or Triton's binary tensors |
//!
//! (`/v2/models/{name}/versions/1/...` as well.) Errors are `{"error": "..."}`: 404 for an
//! unknown model, 400 for a bad request, with the binding's typed error text (`ValueError:
//! ...`) when the model refused the inputs; the server keeps serving.
//!
//! Language models (a subfolder holding `lm-config.json`) are served with OpenAI's completions
//! API under `/v1` ([`completions`]).
//!
//! Every model is loaded once; its runner's calls are stateless and thread-safe, so requests run
//! at once on one shared model, on the core's async worker pool (`infer_async`): no tokio thread
//! waits while a model runs, and a full pool queue is a 503.
pub mod completions;
pub mod models;
pub mod tensor;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use polyffi::{DataType, NDArray};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as JsonValue};

pub use completions::{load_language_models, LanguageModels, ServedLm};
pub use models::{load_dir, Model, TensorSpec};

/// The models served, by name.
pub type Models = Arc<BTreeMap<String, Model>>;

/// Largest request body accepted.
pub const MAX_BODY: usize = 256 << 20;

/// A request that failed: its status and message.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl ApiError {
    fn bad(message: impl Into<String>) -> ApiError {
        ApiError(StatusCode::BAD_REQUEST, message.into())
    }
}

/// POLYFFI_SERVE_SYNC=1: run models on the request's tokio worker, for comparison.
fn sync_inference() -> bool {
    static SYNC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SYNC.get_or_init(|| std::env::var("POLYFFI_SERVE_SYNC").is_ok_and(|v| v == "1"))
}

/// A refused submit: a full queue of the core's pool is 503 (retry later), anything else 400.
fn infer_error(e: polyffi::Error) -> ApiError {
    if e.kind() == "QueueFullError" {
        ApiError(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
    } else {
        ApiError::bad(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

fn model<'a>(models: &'a Models, name: &str) -> Result<&'a Model, ApiError> {
    models
        .get(name)
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("unknown model '{name}'")))
}

fn check_version(version: &str) -> Result<(), ApiError> {
    if version == "1" {
        Ok(())
    } else {
        Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("unknown model version '{version}' (every model has version 1)"),
        ))
    }
}

fn spec_json(s: &TensorSpec) -> JsonValue {
    json!({
        "name": s.name,
        "datatype": tensor::oip_datatype(&s.dtype).unwrap_or("BYTES"),
        "shape": s.shape,
    })
}

/// The model metadata response of `m`.
pub fn metadata(m: &Model) -> JsonValue {
    json!({
        "name": m.name,
        "versions": ["1"],
        "platform": m.platform,
        "inputs": m.inputs.iter().map(spec_json).collect::<Vec<_>>(),
        "outputs": m.outputs.iter().map(spec_json).collect::<Vec<_>>(),
    })
}

#[derive(Serialize)]
struct InferResponse {
    model_name: String,
    model_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    outputs: Vec<OutputTensor>,
}

#[derive(Serialize)]
struct OutputTensor {
    name: String,
    datatype: &'static str,
    shape: Vec<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<tensor::Data>,
    /// `{"binary_data_size": n}` for an output sent as binary.
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<JsonValue>,
}

#[derive(Deserialize)]
struct InferRequest {
    id: Option<String>,
    #[serde(default)]
    parameters: Option<JsonValue>,
    inputs: Vec<InputTensor>,
    #[serde(default)]
    outputs: Option<Vec<RequestedOutput>>,
}

#[derive(Deserialize)]
struct InputTensor {
    name: String,
    shape: Vec<i64>,
    datatype: String,
    #[serde(default)]
    parameters: Option<JsonValue>,
    #[serde(default)]
    data: Option<JsonValue>,
}

#[derive(Deserialize)]
struct RequestedOutput {
    name: String,
    #[serde(default)]
    parameters: Option<JsonValue>,
}

/// Splits a body into its JSON and, with Triton's binary tensor extension (header
/// `Inference-Header-Content-Length`), the binary part.
fn split_body<'a>(headers: &HeaderMap, body: &'a [u8]) -> Result<(&'a [u8], &'a [u8]), ApiError> {
    let Some(len) = headers.get("inference-header-content-length") else {
        return Ok((body, &[]));
    };
    let len: usize = len
        .to_str()
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| ApiError::bad("Inference-Header-Content-Length is not a number"))?;
    if len > body.len() {
        return Err(ApiError::bad(format!(
            "Inference-Header-Content-Length {len} is larger than the body ({} bytes)",
            body.len()
        )));
    }
    Ok(body.split_at(len))
}

/// The arrays of a request, in the order of the model's inputs.
fn request_arrays(
    m: &Model,
    request: &InferRequest,
    mut binary: &[u8],
) -> Result<Vec<NDArray>, ApiError> {
    let mut arrays: Vec<Option<NDArray>> = (0..m.inputs.len()).map(|_| None).collect();
    for input in &request.inputs {
        let index = m
            .inputs
            .iter()
            .position(|s| s.name == input.name)
            .ok_or_else(|| {
                let names: Vec<&str> = m.inputs.iter().map(|s| s.name.as_str()).collect();
                ApiError::bad(format!(
                    "model '{}' has no input '{}' (inputs: {})",
                    m.name,
                    input.name,
                    names.join(", ")
                ))
            })?;
        let spec = &m.inputs[index];
        if arrays[index].is_some() {
            return Err(ApiError::bad(format!("input '{}' given twice", input.name)));
        }
        let want = tensor::oip_datatype(&spec.dtype).unwrap_or("BYTES");
        if input.datatype != want {
            return Err(ApiError::bad(format!(
                "input '{}' has datatype {}, the model takes {want}",
                input.name, input.datatype
            )));
        }
        // Only what JSON cannot say is checked here: a shape that fits the model's (rank and
        // static sizes) is the model's own check, whose typed error the client gets.
        if input.shape.iter().any(|&d| d < 0) {
            return Err(ApiError::bad(format!(
                "input '{}' has shape {:?}: a dimension is negative",
                input.name, input.shape
            )));
        }
        let count = input
            .shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d as usize))
            .ok_or_else(|| {
                ApiError::bad(format!(
                    "input '{}' has shape {:?}: too many elements",
                    input.name, input.shape
                ))
            })?;
        let size = tensor::element_size(want).unwrap_or(0);
        let binary_size = input
            .parameters
            .as_ref()
            .and_then(|p| p.get("binary_data_size"))
            .map(|v| v.as_u64().map(|n| n as usize));
        let bytes = match (binary_size, &input.data) {
            (Some(Some(n)), _) => {
                if n > binary.len() {
                    return Err(ApiError::bad(format!(
                        "input '{}': binary_data_size {n} is past the end of the body",
                        input.name
                    )));
                }
                let (mine, rest) = binary.split_at(n);
                binary = rest;
                mine.to_vec()
            }
            (Some(None), _) => {
                return Err(ApiError::bad(format!(
                    "input '{}': binary_data_size is not a number",
                    input.name
                )))
            }
            (None, Some(data)) => tensor::json_to_bytes(data, want)
                .map_err(|e| ApiError::bad(format!("input '{}': {e}", input.name)))?,
            (None, None) => {
                return Err(ApiError::bad(format!("input '{}' has no data", input.name)))
            }
        };
        if Some(bytes.len()) != count.checked_mul(size) {
            return Err(ApiError::bad(format!(
                "input '{}' has {} elements of data, its shape {:?} holds {count}",
                input.name,
                bytes.len() / size.max(1),
                input.shape
            )));
        }
        let dtype = DataType::parse(&spec.dtype).map_err(|e| ApiError::bad(e.to_string()))?;
        let array = NDArray::from_bytes(&bytes, &input.shape, dtype)
            .map_err(|e| ApiError::bad(e.to_string()))?;
        arrays[index] = Some(array);
    }
    if !binary.is_empty() {
        return Err(ApiError::bad(format!(
            "{} bytes of binary data that no input claims",
            binary.len()
        )));
    }
    arrays
        .into_iter()
        .zip(&m.inputs)
        .map(|(a, s)| a.ok_or_else(|| ApiError::bad(format!("input '{}' is missing", s.name))))
        .collect()
}

async fn infer(models: Models, name: String, headers: HeaderMap, body: Bytes) -> Response {
    let result = async {
        let m = model(&models, &name)?;
        let (head, binary) = split_body(&headers, &body)?;
        let request: InferRequest = serde_json::from_slice(head)
            .map_err(|e| ApiError::bad(format!("malformed inference request: {e}")))?;
        // Triton's binary tensor extension: an output is sent as binary when it asks for it
        // ({"parameters": {"binary_data": true}}) or the request does ("binary_data_output").
        let flag = |p: &Option<JsonValue>, key: &str| {
            p.as_ref()
                .and_then(|p| p.get(key))
                .and_then(JsonValue::as_bool)
        };
        let all_binary = flag(&request.parameters, "binary_data_output").unwrap_or(false);
        // An output by name: its place in the metadata, or output_N when the metadata lists
        // none (a relax function whose outputs are unknown until it runs).
        let index_of = |n: &str| {
            m.outputs.iter().position(|s| s.name == n).or_else(|| {
                let i = n.strip_prefix("output_")?.parse::<usize>().ok()?;
                m.outputs.is_empty().then_some(i)
            })
        };
        let no_output = |n: &str| ApiError::bad(format!("model '{name}' has no output '{n}'"));
        let requested: Option<Vec<(usize, &str, bool)>> = match &request.outputs {
            None => None,
            Some(outs) => Some(
                outs.iter()
                    .map(|o| {
                        let i = index_of(&o.name).ok_or_else(|| no_output(&o.name))?;
                        let binary = flag(&o.parameters, "binary_data").unwrap_or(all_binary);
                        Ok((i, o.name.as_str(), binary))
                    })
                    .collect::<Result<_, ApiError>>()?,
            ),
        };
        let arrays = request_arrays(m, &request, binary)?;
        // On the core's worker pool: no tokio thread waits while the model runs (unless
        // POLYFFI_SERVE_SYNC=1, bench/async/serve.sh's contrast: on the tokio worker).
        let outputs = if sync_inference() {
            m.infer(&arrays)
        } else {
            m.infer_async(&arrays).map_err(infer_error)?.await
        }
        .map_err(|e| ApiError::bad(e.to_string()))?;
        let wanted: Vec<(usize, bool)> = match requested {
            None => (0..outputs.len()).map(|i| (i, all_binary)).collect(),
            Some(r) => r
                .into_iter()
                .map(|(i, n, b)| {
                    if i < outputs.len() {
                        Ok((i, b))
                    } else {
                        Err(no_output(n))
                    }
                })
                .collect::<Result<_, ApiError>>()?,
        };
        let mut out = Vec::with_capacity(wanted.len());
        let mut blob = Vec::new();
        for (i, binary) in wanted {
            let a = &outputs[i];
            let output_name = m
                .outputs
                .get(i)
                .map(|s| s.name.clone())
                .unwrap_or_else(|| format!("output_{i}"));
            let datatype = tensor::oip_datatype(&a.dtype().to_string()).unwrap_or("BYTES");
            let internal = |e: String| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e);
            let bytes = a.to_bytes().map_err(|e| internal(e.to_string()))?;
            let (data, parameters) = if binary {
                let p = json!({ "binary_data_size": bytes.len() });
                blob.extend_from_slice(&bytes);
                (None, Some(p))
            } else {
                let data = tensor::bytes_to_data(&bytes, datatype).map_err(internal)?;
                (Some(data), None)
            };
            out.push(OutputTensor {
                name: output_name,
                datatype,
                shape: a.shape().to_vec(),
                data,
                parameters,
            });
        }
        let response = InferResponse {
            model_name: name,
            model_version: "1",
            id: request.id,
            outputs: out,
        };
        if blob.is_empty() {
            return Ok(Json(response).into_response());
        }
        let mut body = serde_json::to_vec(&response)
            .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let head = body.len();
        body.extend_from_slice(&blob);
        Ok::<_, ApiError>(
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                    (
                        header::HeaderName::from_static("inference-header-content-length"),
                        head.to_string(),
                    ),
                ],
                body,
            )
                .into_response(),
        )
    }
    .await;
    match result {
        Ok(r) => r.into_response(),
        Err(e) => e.into_response(),
    }
}

/// The server's routes over loaded models: the OIP models and the language models.
pub fn app(models: Models, language_models: LanguageModels) -> Router {
    let live = || async { Json(json!({ "live": true })) };
    let ready = || async { Json(json!({ "ready": true })) };
    Router::new()
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route(
            "/v2",
            get(|| async {
                Json(json!({
                    "name": "polyffi-serve",
                    "version": env!("CARGO_PKG_VERSION"),
                    "extensions": ["binary_tensor_data"],
                }))
            }),
        )
        .route(
            "/v2/models/{name}",
            get(
                |State(ms): State<Models>, Path(name): Path<String>| async move {
                    model(&ms, &name).map(|m| Json(metadata(m)))
                },
            ),
        )
        .route(
            "/v2/models/{name}/versions/{version}",
            get(
                |State(ms): State<Models>, Path((name, v)): Path<(String, String)>| async move {
                    check_version(&v)?;
                    model(&ms, &name).map(|m| Json(metadata(m)))
                },
            ),
        )
        .route(
            "/v2/models/{name}/ready",
            get(
                |State(ms): State<Models>, Path(name): Path<String>| async move {
                    model(&ms, &name).map(|m| Json(json!({ "name": m.name, "ready": true })))
                },
            ),
        )
        .route(
            "/v2/models/{name}/versions/{version}/ready",
            get(
                |State(ms): State<Models>, Path((name, v)): Path<(String, String)>| async move {
                    check_version(&v)?;
                    model(&ms, &name).map(|m| Json(json!({ "name": m.name, "ready": true })))
                },
            ),
        )
        .route(
            "/v2/models/{name}/infer",
            post(
                |State(ms): State<Models>,
                 Path(name): Path<String>,
                 headers: HeaderMap,
                 body: Bytes| infer(ms, name, headers, body),
            ),
        )
        .route(
            "/v2/models/{name}/versions/{version}/infer",
            post(
                |State(ms): State<Models>,
                 Path((name, v)): Path<(String, String)>,
                 headers: HeaderMap,
                 body: Bytes| async move {
                    match check_version(&v) {
                        Ok(()) => infer(ms, name, headers, body).await,
                        Err(e) => e.into_response(),
                    }
                },
            ),
        )
        .merge(completions::routes(language_models))
        .fallback(|uri: axum::http::Uri| async move {
            ApiError(StatusCode::NOT_FOUND, format!("no route {}", uri.path()))
        })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(models)
}
