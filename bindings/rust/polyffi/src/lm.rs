//! [`LanguageModel`]: text generation with a model directory (`lm-config.json`, docs/lm.md),
//! thin over the core's `polyffi.lm.load` module. The core owns tokenizing, the KV cache and
//! sampling; this file only converts arguments and results.
//!
//! ```no_run
//! use polyffi::{GenerateOptions, LanguageModel};
//!
//! fn main() -> polyffi::Result<()> {
//!     let lm = LanguageModel::load("tests/tvm_models/tvm027/lm")?;
//!     let options = GenerateOptions { max_tokens: 8, temperature: 0.0, ..Default::default() };
//!     let mut generation = lm.generate("Hello", &options)?;
//!     for token in &mut generation {
//!         print!("{}", token?.text);
//!     }
//!     println!(" ({:?})", generation.finish_reason()?);   // Some(Length) or Some(Stop)
//!     Ok(())
//! }
//! ```
use std::fmt::Write as _;
use std::path::Path;

use crate::errors::{Error, Result};
use crate::function::Function;
use crate::ndarray::NDArray;
use crate::registry::Module;
use crate::value::core_global;

/// A loaded language model. Clone shares the model; `Send + Sync`: the core serialises calls on
/// one model, so generations may run on several threads at once.
#[derive(Clone, Debug)]
pub struct LanguageModel {
    module: Module,
    config: Function,
    encode: Function,
    decode: Function,
    token_text: Function,
    generate: Function,
}

/// What to generate from: text (encoded by the model's tokenizer) or token ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    Text(String),
    Tokens(Vec<i32>),
}

impl From<&str> for Prompt {
    fn from(s: &str) -> Prompt {
        Prompt::Text(s.to_owned())
    }
}

impl From<String> for Prompt {
    fn from(s: String) -> Prompt {
        Prompt::Text(s)
    }
}

impl From<&String> for Prompt {
    fn from(s: &String) -> Prompt {
        Prompt::Text(s.clone())
    }
}

impl From<Vec<i32>> for Prompt {
    fn from(ids: Vec<i32>) -> Prompt {
        Prompt::Tokens(ids)
    }
}

impl From<&[i32]> for Prompt {
    fn from(ids: &[i32]) -> Prompt {
        Prompt::Tokens(ids.to_vec())
    }
}

impl From<&Vec<i32>> for Prompt {
    fn from(ids: &Vec<i32>) -> Prompt {
        Prompt::Tokens(ids.clone())
    }
}

impl<const N: usize> From<[i32; N]> for Prompt {
    fn from(ids: [i32; N]) -> Prompt {
        Prompt::Tokens(ids.to_vec())
    }
}

/// The options of [`LanguageModel::generate`]; `Default` gives the core's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateOptions {
    /// Tokens to generate at most (finish reason "length" when reached). Default 16.
    pub max_tokens: u32,
    /// 0 picks the most likely token (greedy); above 0 samples. Default 1.0.
    pub temperature: f64,
    /// Nucleus sampling: the smallest set of tokens whose probability reaches `top_p`, in
    /// (0, 1]. Default 1.0.
    pub top_p: f64,
    /// Seed of the sampler's random numbers: the same seed gives the same tokens. Default 0.
    pub seed: u64,
    /// Strings that end the generation; each must be exactly one token.
    pub stop: Vec<String>,
    /// Token ids that end the generation, besides the model's own stop tokens.
    pub stop_token_ids: Vec<i32>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: 16,
            temperature: 1.0,
            top_p: 1.0,
            seed: 0,
            stop: Vec::new(),
            stop_token_ids: Vec::new(),
        }
    }
}

impl GenerateOptions {
    /// The options as the JSON object the core reads; ValueError for a temperature or top_p
    /// that JSON cannot hold (NaN, infinite).
    pub fn to_json(&self) -> Result<String> {
        let number = |name: &str, x: f64| {
            if x.is_finite() {
                Ok(format!("{x:?}"))
            } else {
                Err(Error::value_error(format!(
                    "{name} must be a finite number, not {x}"
                )))
            }
        };
        let mut json = format!(
            "{{\"max_tokens\":{},\"temperature\":{},\"top_p\":{},\"seed\":{},\"stop\":[",
            self.max_tokens,
            number("temperature", self.temperature)?,
            number("top_p", self.top_p)?,
            self.seed
        );
        for (i, s) in self.stop.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json_string(&mut json, s);
        }
        json.push_str("],\"stop_token_ids\":[");
        for (i, id) in self.stop_token_ids.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            let _ = write!(json, "{id}");
        }
        json.push_str("]}");
        Ok(json)
    }
}

/// Appends `s` as a JSON string literal.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn ids_array(ids: &[i32]) -> Result<NDArray> {
    NDArray::from_slice(ids, &[ids.len() as i64])
}

impl LanguageModel {
    /// Loads the model directory `dir` (its `lm-config.json`, model library and weights).
    /// A missing directory or file is a FileNotFoundError, a malformed one a ValueError.
    pub fn load(dir: impl AsRef<Path>) -> Result<LanguageModel> {
        let dir = dir.as_ref();
        let path = dir.to_str().ok_or_else(|| {
            Error::value_error(format!("model directory is not UTF-8: {}", dir.display()))
        })?;
        let module: Module = core_global!("polyffi.lm.load")?.invoke((path,))?;
        Ok(LanguageModel {
            config: module.function("config")?,
            encode: module.function("encode")?,
            decode: module.function("decode")?,
            token_text: module.function("token_text")?,
            generate: module.function("generate")?,
            module,
        })
    }

    /// The core's module (type key `polyffi.LanguageModel`).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The parsed configuration as JSON: vocab_size, kv_cache, tokenizer kind, stop_token_ids.
    pub fn config(&self) -> Result<String> {
        self.config.invoke(())
    }

    /// The token ids of `text`; ValueError naming a character the vocabulary lacks.
    pub fn encode(&self, text: &str) -> Result<Vec<i32>> {
        let ids: NDArray = self.encode.invoke((text,))?;
        ids.to_vec::<i32>()
    }

    /// The text of `ids`; ValueError for an id outside the vocabulary.
    pub fn decode(&self, ids: &[i32]) -> Result<String> {
        self.decode.invoke((&ids_array(ids)?,))
    }

    /// The text of one token id.
    pub fn token_text(&self, id: i32) -> Result<String> {
        self.token_text.invoke((i64::from(id),))
    }

    /// Starts a generation from `prompt` (text or token ids). Bad options, an empty prompt or
    /// one longer than the cache holds are ValueErrors; more generations alive than the cache
    /// has sequences is a RuntimeError.
    pub fn generate(
        &self,
        prompt: impl Into<Prompt>,
        options: &GenerateOptions,
    ) -> Result<Generation> {
        let options = options.to_json()?;
        let module: Module = match prompt.into() {
            Prompt::Text(text) => self.generate.invoke((text.as_str(), options.as_str()))?,
            Prompt::Tokens(ids) => self
                .generate
                .invoke((&ids_array(&ids)?, options.as_str()))?,
        };
        Ok(Generation {
            next: module.function("next")?,
            finish_reason: module.function("finish_reason")?,
            logits: module.function("logits")?,
            prompt_tokens: module.function("prompt_tokens")?,
            completion_tokens: module.function("completion_tokens")?,
            close: module.function("close")?,
            token_text: self.token_text.clone(),
            module,
            done: false,
        })
    }
}

/// One generated token: its id and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub id: i32,
    pub text: String,
}

/// Why a generation ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// A stop token came (it is not returned).
    Stop,
    /// `max_tokens` tokens were generated.
    Length,
}

impl FinishReason {
    /// `"stop"` or `"length"`, as OpenAI's API spells them.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

/// A running generation: an iterator of tokens, each computed when asked for. The first
/// `next()` runs the prompt through the model. An error (a full KV cache) ends it.
/// [`close`](Self::close) or dropping it frees its place in the model's cache.
#[derive(Debug)]
pub struct Generation {
    module: Module,
    next: Function,
    finish_reason: Function,
    logits: Function,
    prompt_tokens: Function,
    completion_tokens: Function,
    close: Function,
    token_text: Function,
    done: bool,
}

impl Generation {
    /// The core's module (type key `polyffi.Generation`).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// None while running, then why it ended. (None too after an error or `close()`.)
    pub fn finish_reason(&self) -> Result<Option<FinishReason>> {
        let reason: String = self.finish_reason.invoke(())?;
        match reason.as_str() {
            "" => Ok(None),
            "stop" => Ok(Some(FinishReason::Stop)),
            "length" => Ok(Some(FinishReason::Length)),
            other => Err(Error::new(
                "InternalError",
                format!("unknown finish reason '{other}'"),
            )),
        }
    }

    /// A copy of the logits (float32, vocab_size) the last token was chosen from; ValueError
    /// before the first token.
    pub fn logits(&self) -> Result<NDArray> {
        self.logits.invoke(())
    }

    /// [`logits`](Self::logits) as a `Vec`.
    pub fn logits_vec(&self) -> Result<Vec<f32>> {
        self.logits()?.to_vec::<f32>()
    }

    /// The prompt's length in tokens.
    pub fn prompt_tokens(&self) -> Result<usize> {
        Ok(self.prompt_tokens.invoke::<i64>(())? as usize)
    }

    /// Tokens generated so far.
    pub fn completion_tokens(&self) -> Result<usize> {
        Ok(self.completion_tokens.invoke::<i64>(())? as usize)
    }

    /// Frees the generation's sequence in the cache now; it yields no more tokens.
    pub fn close(&mut self) -> Result<()> {
        self.done = true;
        self.close.invoke(())
    }

    /// The next token, None once finished (what `Iterator::next` gives, without the Option
    /// around the Result turned inside out).
    pub fn next_token(&mut self) -> Result<Option<Token>> {
        if self.done {
            return Ok(None);
        }
        let id: i64 = match self.next.invoke(()) {
            Ok(id) => id,
            Err(e) => {
                self.done = true;
                return Err(e);
            }
        };
        if id < 0 {
            self.done = true;
            return Ok(None);
        }
        let id = i32::try_from(id)
            .map_err(|_| Error::new("InternalError", format!("token id {id} out of range")))?;
        let text = self.token_text.invoke::<String>((i64::from(id),))?;
        Ok(Some(Token { id, text }))
    }
}

impl Iterator for Generation {
    type Item = Result<Token>;

    fn next(&mut self) -> Option<Result<Token>> {
        self.next_token().transpose()
    }
}

impl std::iter::FusedIterator for Generation {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_options_are_the_cores_defaults_as_json() {
        assert_eq!(
            GenerateOptions::default().to_json().unwrap(),
            r#"{"max_tokens":16,"temperature":1.0,"top_p":1.0,"seed":0,"stop":[],"stop_token_ids":[]}"#
        );
    }

    #[test]
    fn options_json_escapes_stop_strings() {
        let o = GenerateOptions {
            max_tokens: 3,
            temperature: 0.8,
            top_p: 0.9,
            seed: u64::MAX,
            stop: vec![
                "\n".into(),
                "\"".into(),
                "\\".into(),
                "\u{1}".into(),
                "é".into(),
            ],
            stop_token_ids: vec![4, -1],
        };
        assert_eq!(
            o.to_json().unwrap(),
            r#"{"max_tokens":3,"temperature":0.8,"top_p":0.9,"seed":18446744073709551615,"stop":["\n","\"","\\","\u0001","é"],"stop_token_ids":[4,-1]}"#
        );
    }

    #[test]
    fn non_finite_temperature_is_a_value_error() {
        let o = GenerateOptions {
            temperature: f64::NAN,
            ..Default::default()
        };
        let e = o.to_json().unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(e.message().contains("temperature"), "{e}");
    }

    #[test]
    fn prompts_from_text_and_ids() {
        assert_eq!(Prompt::from("ab"), Prompt::Text("ab".into()));
        assert_eq!(Prompt::from(vec![1, 2]), Prompt::Tokens(vec![1, 2]));
        assert_eq!(Prompt::from([3]), Prompt::Tokens(vec![3]));
        assert_eq!(Prompt::from(&[4, 5][..]), Prompt::Tokens(vec![4, 5]));
    }
}
