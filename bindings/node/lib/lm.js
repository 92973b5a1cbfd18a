'use strict';
// Language models: a thin layer over the core's polyffi.lm.load module (docs/lm.md). The core
// owns the tokenizer, the KV cache and sampling; this file only converts arguments and results:
//   const lm = ffi.LanguageModel.load('tests/tvm_models/tvm027/lm');
//   for await (const t of lm.generate('Hello', { maxTokens: 8, temperature: 0 })) out += t.text;
// A Generation is a sync iterator (next() runs the step on the JS thread) and an async one (each
// step through callAsync on the core's async pool, so the event loop stays free). Tokens are
// {id, text}.
const { FFIError } = require('./errors');
const { Module, getGlobalFunc } = require('./registry');
const { nd } = require('./ndarray');
const { disposeSymbol } = require('./function');

// The options generate() takes, JS name -> the core's JSON key.
const OPTION_KEYS = {
  maxTokens: 'max_tokens',
  temperature: 'temperature',
  topP: 'top_p',
  seed: 'seed',
  stop: 'stop',
  stopTokenIds: 'stop_token_ids',
};

/** The options as the core's JSON object; unknown names are a ValueError naming them. */
function optionsJson(options) {
  if (options === undefined || options === null) return '{}';
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new FFIError('LanguageModel.generate: options must be an object such as ' +
      '{ maxTokens: 16, temperature: 0 }', 'TypeError');
  }
  const out = {};
  for (const [key, v] of Object.entries(options)) {
    const coreKey = OPTION_KEYS[key];
    if (coreKey === undefined) {
      throw new FFIError(`LanguageModel.generate: unknown option '${key}' (options: ` +
        `${Object.keys(OPTION_KEYS).join(', ')})`, 'ValueError');
    }
    if (v === undefined) continue;
    if (typeof v === 'number' && !Number.isFinite(v)) {
      throw new FFIError(`LanguageModel.generate: option ${key} must be a finite number, not ${v}`,
        'ValueError');
    }
    out[coreKey] = typeof v === 'bigint' ? Number(v) : v;
  }
  return JSON.stringify(out);
}

/**
 * Token ids (Int32Array, or an array of integers) as an int32 NDArray owning a copy; a TypeError
 * naming the first element that is not an int32.
 */
function tokenArray(tokens, what) {
  let ids;
  if (tokens instanceof Int32Array) {
    ids = tokens;
  } else if (Array.isArray(tokens)) {
    ids = new Int32Array(tokens.length);
    tokens.forEach((t, i) => {
      const v = typeof t === 'bigint' ? Number(t) : t;
      if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) {
        throw new FFIError(`${what}: token ${i} is ${typeof t === 'bigint' ? `${t}n` : JSON.stringify(t)}, ` +
          'not an int32 token id', 'TypeError');
      }
      ids[i] = v;
    });
  } else {
    throw new FFIError(`${what}: expected an Int32Array or an array of token ids`, 'TypeError');
  }
  const array = nd.empty([ids.length], 'int32');
  if (ids.length > 0) array.copyFrom(ids);
  return array;
}

/** Calls `f(...args)` and disposes the NDArray arguments afterwards. */
function callWith(f, args) {
  try {
    return f(...args);
  } finally {
    for (const a of args) if (a !== null && typeof a === 'object' && 'dispose' in a) a.dispose();
  }
}

/** The module's functions `names`, looked up once. */
function functions(module, names) {
  const out = {};
  for (const n of names) out[n] = module.getFunction(n);
  return out;
}

class LanguageModel {
  /** Loads the model directory `dir` (holding lm-config.json); typed errors for a bad one. */
  constructor(dir) {
    if (typeof dir !== 'string') {
      throw new FFIError('LanguageModel: the model directory must be a string path', 'TypeError');
    }
    const load = getGlobalFunc('polyffi.lm.load');
    try {
      /** The core's polyffi.LanguageModel module. */
      this.module = load(dir);
    } finally {
      load.dispose();
    }
    if (!(this.module instanceof Module)) {
      throw new FFIError('polyffi.lm.load did not return a module', 'TypeError');
    }
    this._f = functions(this.module, ['config', 'encode', 'decode', 'token_text', 'generate']);
    /** The parsed lm-config.json as the core reports it (vocab_size, kv_cache, tokenizer, ...). */
    this.config = JSON.parse(this._f.config());
  }

  static load(dir) {
    return new LanguageModel(dir);
  }

  /** The token ids of `text` (ValueError naming a character outside the vocabulary). */
  encode(text) {
    if (typeof text !== 'string') {
      throw new FFIError('LanguageModel.encode: text must be a string', 'TypeError');
    }
    const ids = this._f.encode(text);
    try {
      return Int32Array.from(ids.toTypedArray());
    } finally {
      ids.dispose();
    }
  }

  /** The text of token ids (Int32Array or an array of integers). */
  decode(tokens) {
    return callWith(this._f.decode, [tokenArray(tokens, 'LanguageModel.decode')]);
  }

  /** The text of one token id. */
  tokenText(id) {
    if (!Number.isInteger(id)) {
      throw new FFIError('LanguageModel.tokenText: id must be an integer', 'TypeError');
    }
    return this._f.token_text(id);
  }

  /**
   * A new Generation from `prompt` (a string, an Int32Array or an array of token ids) with
   * options {maxTokens, temperature, topP, seed, stop, stopTokenIds} (the core's defaults for
   * those not given: 16, 1.0, 1.0, 0, [], []).
   */
  generate(prompt, options = {}) {
    const json = optionsJson(options);
    let arg;
    if (typeof prompt === 'string') arg = prompt;
    else arg = tokenArray(prompt, 'LanguageModel.generate: prompt');
    const module = callWith(this._f.generate, [arg, json]);
    return new Generation(module, this);
  }

  /** Releases this handle on the model (live generations keep it loaded until they end). */
  dispose() {
    for (const f of Object.values(this._f)) f.dispose();
    this.module.dispose();
  }

  [disposeSymbol]() {
    this.dispose();
  }
}

const FINISHED = Object.freeze({ done: true, value: undefined });

class Generation {
  constructor(module, model) {
    /** The core's polyffi.Generation module. */
    this.module = module;
    this.model = model;
    this._f = functions(module, ['next', 'finish_reason', 'logits', 'prompt_tokens',
      'completion_tokens', 'close']);
    this._queue = Promise.resolve();  // async steps run one after another, in call order
    this._closed = false;
    this._finishReason = '';
    this._completionTokens = null;
  }

  /** The iterator result of token id `id` (-1: finished). */
  _result(id) {
    if (id < 0) {
      this._finish();
      return FINISHED;
    }
    return { done: false, value: { id, text: this.model.tokenText(id) } };
  }

  /** Records how the generation ended and frees its sequence in the KV cache. */
  _finish() {
    if (this._closed) return;
    this._finishReason = this._f.finish_reason();
    this._completionTokens = this._f.completion_tokens();
    this.close();
  }

  /** The next token, on the JS thread: {done: false, value: {id, text}} or {done: true}. */
  next() {
    if (this._closed) return FINISHED;
    try {
      return this._result(this._f.next());
    } catch (e) {
      this._failed();
      throw e;
    }
  }

  /** next() on the core's async pool: resolves with the same iterator result. */
  nextAsync() {
    const step = this._queue.then(async () => {
      if (this._closed) return FINISHED;
      let id;
      try {
        id = await this._f.next.callAsync();
      } catch (e) {
        this._failed();
        throw e;
      }
      return this._result(id);
    });
    this._queue = step.catch(() => undefined);
    return step;
  }

  /** After an error from next() the generation is over (the core ended it): free it. */
  _failed() {
    if (this._closed) return;
    try {
      this._finishReason = this._f.finish_reason();
      this._completionTokens = this._f.completion_tokens();
    } catch {
      // the core's state is what it is; the handles are released below all the same
    }
    this.close();
  }

  /** Ends the iteration early (a `break` out of for...of): frees the generation. */
  return(value) {
    this.close();
    return { done: true, value };
  }

  [Symbol.iterator]() {
    return this;
  }

  [Symbol.asyncIterator]() {
    const gen = this;
    return {
      next: () => gen.nextAsync(),
      return: async (value) => {
        await gen._queue;
        return gen.return(value);
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  /** '' while running, then 'stop' or 'length'. */
  get finishReason() {
    return this._closed ? this._finishReason : this._f.finish_reason();
  }

  get promptTokens() {
    return this._promptTokens ?? (this._promptTokens = this._f.prompt_tokens());
  }

  get completionTokens() {
    if (this._closed) return this._completionTokens ?? 0;
    return this._f.completion_tokens();
  }

  get closed() {
    return this._closed;
  }

  /** A copy of the logits the last token was chosen from (ValueError before the first step). */
  logits() {
    if (this._closed) {
      throw new FFIError('Generation.logits: the generation is closed', 'ValueError');
    }
    const a = this._f.logits();
    try {
      return Float32Array.from(a.toTypedArray());
    } finally {
      a.dispose();
    }
  }

  /** Frees the generation's sequence in the KV cache now; later steps are done. Idempotent. */
  close() {
    if (this._closed) return;
    if (this._promptTokens === undefined) this._promptTokens = this._f.prompt_tokens();
    if (this._completionTokens === null) this._completionTokens = this._f.completion_tokens();
    this._closed = true;
    try {
      this._f.close();
    } finally {
      for (const f of Object.values(this._f)) f.dispose();
      this.module.dispose();
    }
  }

  dispose() {
    this.close();
  }

  [disposeSymbol]() {
    this.close();
  }
}

module.exports = { LanguageModel, Generation };
