//! OpenAI's completions API over polyffi's language models: a subfolder of the model folder
//! holding `lm-config.json` is served under the subfolder's name.
//!
//! | route | |
//! |---|---|
//! | `GET /v1/models` | the language models, as OpenAI lists models |
//! | `GET /v1/models/{name}` | one of them; 404 for another name |
//! | `POST /v1/completions` | a completion, whole or streamed (server-sent events, one per token) |
//!
//! Errors are OpenAI's `{"error": {"message", "type", "param", "code"}}`: 400 for a bad request
//! (malformed JSON, a bad field, a character outside the vocabulary, a prompt too long), 404 for
//! an unknown model.
//!
//! Generation runs on tokio's blocking pool: a streamed completion's tokens go through a channel
//! to the response as each is made. A model's KV cache holds a fixed number of generations
//! (`kv_cache.max_batch_size`); requests beyond that wait for a slot.
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use polyffi::{FinishReason, GenerateOptions, Generation, LanguageModel, Prompt};
use serde::Deserialize;
use serde_json::{json, Value as JsonValue};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// A served language model and the slots of its cache.
pub struct ServedLm {
    pub lm: LanguageModel,
    slots: Arc<Semaphore>,
}

impl ServedLm {
    /// Loads the model directory `dir`; its cache's `max_batch_size` bounds the generations
    /// run at once.
    pub fn load(dir: &Path) -> polyffi::Result<ServedLm> {
        let lm = LanguageModel::load(dir)?;
        let config: JsonValue = serde_json::from_str(&lm.config()?)
            .map_err(|e| polyffi::Error::new("ValueError", format!("config(): {e}")))?;
        let slots = config["kv_cache"]["max_batch_size"]
            .as_u64()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                polyffi::Error::new("ValueError", "config() has no kv_cache.max_batch_size")
            })?;
        Ok(ServedLm {
            lm,
            slots: Arc::new(Semaphore::new(slots as usize)),
        })
    }
}

/// The language models served, by name.
pub type LanguageModels = Arc<BTreeMap<String, ServedLm>>;

/// Every subfolder of `dir` holding `lm-config.json`, by name; what cannot be loaded is
/// reported on stderr and skipped.
pub fn load_language_models(dir: &Path) -> std::io::Result<BTreeMap<String, ServedLm>> {
    let mut models = BTreeMap::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if !path.join("lm-config.json").is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        match ServedLm::load(&path) {
            Ok(m) => {
                models.insert(name, m);
            }
            Err(e) => eprintln!("polyffi-serve: skipping {}: {e}", path.display()),
        }
    }
    Ok(models)
}

/// A request that failed, as OpenAI reports it.
#[derive(Debug)]
pub struct OpenAiError(pub StatusCode, pub String);

impl OpenAiError {
    fn bad(message: impl Into<String>) -> OpenAiError {
        OpenAiError(StatusCode::BAD_REQUEST, message.into())
    }

    /// An error of the model: the request's fault (400) when the core calls it a ValueError or
    /// a RuntimeError (a full cache), else the server's (500).
    fn from_model(e: polyffi::Error) -> OpenAiError {
        match e.kind() {
            "ValueError" | "TypeError" | "RuntimeError" => OpenAiError::bad(e.to_string()),
            _ => OpenAiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }

    fn body(&self) -> JsonValue {
        let kind = if self.0.is_server_error() {
            "server_error"
        } else {
            "invalid_request_error"
        };
        json!({ "error": { "message": self.1, "type": kind, "param": null, "code": null } })
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        (self.0, Json(self.body())).into_response()
    }
}

fn model_object(name: &str) -> JsonValue {
    json!({ "id": name, "object": "model", "created": 0, "owned_by": "polyffi" })
}

fn find<'a>(models: &'a LanguageModels, name: &str) -> Result<&'a ServedLm, OpenAiError> {
    models.get(name).ok_or_else(|| {
        OpenAiError(
            StatusCode::NOT_FOUND,
            format!("The model '{name}' does not exist"),
        )
    })
}

/// The fields of a completion request this server reads; others are accepted and ignored.
#[derive(Deserialize)]
struct CompletionRequest {
    model: String,
    prompt: JsonValue,
    max_tokens: Option<i64>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    seed: Option<i64>,
    stop: Option<JsonValue>,
    stream: Option<bool>,
    n: Option<i64>,
    best_of: Option<i64>,
}

/// The prompt: a string, or token ids; a list of one of either is the same (a batch of
/// several prompts is refused).
fn prompt_of(v: &JsonValue) -> Result<Prompt, OpenAiError> {
    let ids = |items: &[JsonValue]| -> Option<Vec<i32>> {
        items
            .iter()
            .map(|x| x.as_i64().and_then(|i| i32::try_from(i).ok()))
            .collect()
    };
    match v {
        JsonValue::String(s) => Ok(Prompt::Text(s.clone())),
        JsonValue::Array(items) if !items.is_empty() && items.iter().all(JsonValue::is_number) => {
            ids(items)
                .map(Prompt::Tokens)
                .ok_or_else(|| OpenAiError::bad("prompt: token ids must be 32-bit integers"))
        }
        JsonValue::Array(items) if items.len() == 1 => prompt_of(&items[0]),
        JsonValue::Array(items) if items.len() > 1 => Err(OpenAiError::bad(
            "prompt: one prompt per request (a list of several is not supported)",
        )),
        _ => Err(OpenAiError::bad(
            "prompt must be a string (or a list of token ids)",
        )),
    }
}

fn options_of(r: &CompletionRequest) -> Result<GenerateOptions, OpenAiError> {
    if let Some(n) = r.n.filter(|&n| n != 1) {
        return Err(OpenAiError::bad(format!(
            "n must be 1 (one completion per request), not {n}"
        )));
    }
    if let Some(n) = r.best_of.filter(|&n| n != 1) {
        return Err(OpenAiError::bad(format!("best_of must be 1, not {n}")));
    }
    let defaults = GenerateOptions::default();
    let max_tokens = match r.max_tokens {
        None => defaults.max_tokens,
        Some(n) => u32::try_from(n).map_err(|_| {
            OpenAiError::bad(format!(
                "max_tokens must be a non-negative integer, not {n}"
            ))
        })?,
    };
    let seed = match r.seed {
        None => defaults.seed,
        Some(s) => u64::try_from(s)
            .map_err(|_| OpenAiError::bad(format!("seed must be non-negative, not {s}")))?,
    };
    let stop = match &r.stop {
        None => Vec::new(),
        Some(JsonValue::String(s)) => vec![s.clone()],
        Some(JsonValue::Array(items)) => items
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| OpenAiError::bad("stop must be a string or a list of strings"))?,
        Some(_) => {
            return Err(OpenAiError::bad(
                "stop must be a string or a list of strings",
            ))
        }
    };
    Ok(GenerateOptions {
        max_tokens,
        temperature: r.temperature.unwrap_or(defaults.temperature),
        top_p: r.top_p.unwrap_or(defaults.top_p),
        seed,
        stop,
        stop_token_ids: Vec::new(),
    })
}

fn completion_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("cmpl-{:x}{:06x}", std::process::id(), n)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Runs `f` on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, OpenAiError> + Send + 'static,
) -> Result<T, OpenAiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        OpenAiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("generation task: {e}"),
        )
    })?
}

/// What every chunk and the whole response share.
struct Head {
    id: String,
    created: u64,
    model: String,
}

impl Head {
    fn chunk(&self, text: &str, finish_reason: Option<&str>) -> JsonValue {
        json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "text": text, "logprobs": null,
                          "finish_reason": finish_reason }],
        })
    }
}

fn finish_str(g: &Generation) -> Result<&'static str, OpenAiError> {
    match g.finish_reason().map_err(OpenAiError::from_model)? {
        Some(r) => Ok(r.as_str()),
        // Not reached: a generation ends with a reason or an error.
        None => Ok(FinishReason::Length.as_str()),
    }
}

async fn completions(models: LanguageModels, body: Bytes) -> Response {
    match completions_impl(models, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn completions_impl(models: LanguageModels, body: Bytes) -> Result<Response, OpenAiError> {
    let request: CompletionRequest = serde_json::from_slice(&body)
        .map_err(|e| OpenAiError::bad(format!("malformed completion request: {e}")))?;
    let served = find(&models, &request.model)?;
    let prompt = prompt_of(&request.prompt)?;
    let options = options_of(&request)?;
    let head = Head {
        id: completion_id(),
        created: unix_now(),
        model: request.model.clone(),
    };
    // Held until the generation is dropped: the cache has a slot for it.
    let permit: OwnedSemaphorePermit = served
        .slots
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| OpenAiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let lm = served.lm.clone();
    if request.stream.unwrap_or(false) {
        let generation = blocking(move || {
            lm.generate(prompt, &options)
                .map_err(OpenAiError::from_model)
        })
        .await?;
        Ok(stream(head, generation, permit).into_response())
    } else {
        let (text, finish, prompt_tokens, completion_tokens) = blocking(move || {
            let _permit = permit;
            let mut g = lm
                .generate(prompt, &options)
                .map_err(OpenAiError::from_model)?;
            let mut text = String::new();
            for token in g.by_ref() {
                text.push_str(&token.map_err(OpenAiError::from_model)?.text);
            }
            let counts = (g.prompt_tokens(), g.completion_tokens());
            let (p, c) = (
                counts.0.map_err(OpenAiError::from_model)?,
                counts.1.map_err(OpenAiError::from_model)?,
            );
            Ok((text, finish_str(&g)?, p, c))
        })
        .await?;
        let mut body = head.chunk(&text, Some(finish));
        body["usage"] = json!({
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        });
        Ok(Json(body).into_response())
    }
}

/// The events of a streamed completion: one per token as it is generated, one with the finish
/// reason, then `[DONE]`; an error mid-way is an `{"error": ...}` event that ends the stream.
fn stream(
    head: Head,
    mut generation: Generation,
    permit: OwnedSemaphorePermit,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    // A small buffer: the generation runs at most a few tokens ahead of a slow client, and
    // stops (freeing its cache slot) when the client goes away.
    let (tx, rx) = mpsc::channel::<String>(4);
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let send = |data: String| tx.blocking_send(data).is_ok();
        loop {
            let event = match generation.next() {
                Some(Ok(token)) => head.chunk(&token.text, None),
                Some(Err(e)) => {
                    send(OpenAiError::from_model(e).body().to_string());
                    return;
                }
                None => break,
            };
            if !send(event.to_string()) {
                return;
            }
        }
        let last = match finish_str(&generation) {
            Ok(reason) => head.chunk("", Some(reason)),
            Err(e) => e.body(),
        };
        if send(last.to_string()) {
            send("[DONE]".to_string());
        }
    });
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        let data = rx.recv().await?;
        Some((Ok(Event::default().data(data)), rx))
    });
    Sse::new(events)
}

/// The `/v1` routes over `models` (merged into the server's router, whatever its state).
pub fn routes<S: Clone + Send + Sync + 'static>(models: LanguageModels) -> Router<S> {
    Router::new()
        .route(
            "/v1/models",
            get(|State(ms): State<LanguageModels>| async move {
                let data: Vec<JsonValue> = ms.keys().map(|n| model_object(n)).collect();
                Json(json!({ "object": "list", "data": data }))
            }),
        )
        .route(
            "/v1/models/{name}",
            get(
                |State(ms): State<LanguageModels>, UrlPath(name): UrlPath<String>| async move {
                    find(&ms, &name).map(|_| Json(model_object(&name)))
                },
            ),
        )
        .route(
            "/v1/completions",
            post(|State(ms): State<LanguageModels>, body: Bytes| completions(ms, body)),
        )
        .with_state(models)
}
