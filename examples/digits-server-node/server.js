#!/usr/bin/env node
'use strict';
// An Open Inference Protocol (KServe v2) REST server on node:http over the polyffi Node binding.
//
//   node server.js MODEL_DIR PORT [--host 127.0.0.1]
//
// Serves every model in MODEL_DIR under its file's stem (docs/serving.md, "The model folder"):
//   NAME.so   a TVM 0.18 export (graph executor factory) or a TVM 0.27 relax VM executable (its
//             function `main`, or `forward` when it has no `main`);
//   NAME/     graph.json, an optional params.bin and one kernel library *.so (a graph model's
//             three artifacts, e.g. examples/digits).
// Routes: GET /v2/health/live, GET /v2/health/ready, GET /v2/models/NAME (metadata),
// GET /v2/models/NAME/ready, POST /v2/models/NAME/infer (JSON tensors). Errors: {"error": "..."}
// with 400 (the binding's typed error, "ValueError: ...") or 404 (unknown model or route).
// Tensors travel as JSON or in the binary tensor data extension (tritonclient's default).
// Models run with inferAsync / invokeAsync on the core's async pool over its stateless model
// runners, so concurrent requests share one loaded model and the event loop keeps answering.
// POLYFFI_SERVE_SYNC=1 runs them on the event loop instead (bench/async/serve.sh compares both).
//
// A subfolder NAME/ holding lm-config.json is a language model (docs/lm.md), served as NAME over
// OpenAI's completions API: GET /v1/models, GET /v1/models/NAME, POST /v1/completions (with
// `stream: true`: server-sent events, one per token, written as each token is generated). Each
// step runs on the core's async pool (the Generation's async iterator); generations beyond the
// model's KV cache batch size wait for a free slot. Errors: OpenAI's {"error": {...}} with 400 or
// 404.
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const ffi = (() => {
  try {
    return require('polyffi'); // after `npm install` here
  } catch {
    return require('../../bindings/node'); // straight from the repository
  }
})();

const MAX_BODY = 64 * 1024 * 1024;
const SYNC_INFER = process.env.POLYFFI_SERVE_SYNC === '1';

// OIP datatype -> [TVM dtype, TypedArray]; FP16 has no TypedArray in the Node versions we support.
const DATATYPES = {
  BOOL: ['bool', Uint8Array],
  UINT8: ['uint8', Uint8Array],
  UINT16: ['uint16', Uint16Array],
  UINT32: ['uint32', Uint32Array],
  UINT64: ['uint64', BigUint64Array],
  INT8: ['int8', Int8Array],
  INT16: ['int16', Int16Array],
  INT32: ['int32', Int32Array],
  INT64: ['int64', BigInt64Array],
  FP32: ['float32', Float32Array],
  FP64: ['float64', Float64Array],
};
const OIP_OF_DTYPE = Object.fromEntries(Object.entries(DATATYPES).map(([k, [d]]) => [d, k]));
OIP_OF_DTYPE.float16 = 'FP16';

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// A JS exception from the binding as the text clients get: "Kind: message".
function typedError(e) {
  if (e instanceof ffi.FFIError) return `${e.kind}: ${e.message}`;
  return `${e && e.name ? e.name : 'Error'}: ${e && e.message ? e.message : String(e)}`;
}

function call(fn, ...args) {
  try {
    return fn(...args);
  } finally {
    fn.dispose();
  }
}

function oip(tensor) {
  return {
    name: tensor.name,
    datatype: tensor.dtype === null ? null : OIP_OF_DTYPE[tensor.dtype] || tensor.dtype,
    shape: tensor.shape,
  };
}

function loadGraph(name, gm) {
  const sig = JSON.parse(call(gm.runner.getFunction('signature')));
  return {
    name, kind: 'graph', inputs: sig.inputs, outputs: sig.outputs,
    run: async (arrays) => {
      const named = {};
      sig.inputs.forEach((t, i) => { named[t.name] = arrays[i]; });
      return SYNC_INFER ? gm.infer(named) : gm.inferAsync(named);
    },
  };
}

function loadVm(name, lib) {
  const vm = new ffi.VirtualMachine(lib, ffi.cpu());
  const fn = vm.hasFunction('main') ? 'main' : vm.hasFunction('forward') ? 'forward' : null;
  if (fn === null) {
    throw new ffi.FFIError("the relax executable has neither a 'main' nor a 'forward' function",
      'TypeError');
  }
  const sig = JSON.parse(call(vm.runner.getFunction('signature'), fn));
  const flatten = (r) => (Array.isArray(r) ? r.flatMap(flatten) : [r]);
  return {
    name, kind: 'relax_vm', inputs: sig.inputs, outputs: sig.outputs,
    run: async (arrays) =>
      flatten(SYNC_INFER ? vm.invoke(fn, ...arrays) : await vm.invokeAsync(fn, ...arrays)),
  };
}

// The model at `file` (a .so or a three-artifact folder), or null for anything else.
function loadModel(file) {
  const base = path.basename(file);
  if (fs.statSync(file).isDirectory()) {
    const graph = path.join(file, 'graph.json');
    const libs = fs.readdirSync(file).filter((f) => f.endsWith('.so')).sort();
    if (!fs.existsSync(graph) || libs.length !== 1) return null;
    const params = path.join(file, 'params.bin');
    const gm = ffi.GraphModule.fromParts(fs.readFileSync(graph, 'utf8'),
      ffi.loadModule(path.join(file, libs[0])),
      fs.existsSync(params) ? fs.readFileSync(params) : null);
    return loadGraph(base, gm);
  }
  if (!base.endsWith('.so')) return null;
  const lib = ffi.loadModule(file);
  const has = (n) => {
    const f = lib.getFunction(n, { allowMissing: true });
    if (f) f.dispose();
    return f !== null;
  };
  const name = base.slice(0, -3);
  if (has('vm_load_executable')) return loadVm(name, lib);
  if (has('default')) return loadGraph(name, ffi.GraphModule.fromFactory(lib));
  return null;
}

// Whether `file` is a language model's folder (it holds lm-config.json).
const isLanguageModel = (file) => fs.existsSync(path.join(file, 'lm-config.json'));

// Waiters for one of `size` slots, first come first served.
class Slots {
  constructor(size) {
    this.free = size;
    this.waiting = [];
  }

  async acquire() {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise((resolve) => this.waiting.push(resolve));
  }

  release() {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

// The language models of `dir`: name -> { name, lm, slots }.
function loadLanguageModels(dir) {
  const lms = new Map();
  for (const entry of fs.readdirSync(dir).sort()) {
    const file = path.join(dir, entry);
    if (!fs.statSync(file).isDirectory() || !isLanguageModel(file)) continue;
    try {
      const lm = ffi.LanguageModel.load(file);
      const batch = Number(lm.config.kv_cache && lm.config.kv_cache.max_batch_size) || 1;
      lms.set(entry, { name: entry, lm, slots: new Slots(batch) });
    } catch (e) {
      console.error(`skipping ${entry}: ${typedError(e)}`);
    }
  }
  return lms;
}

function loadModels(dir) {
  const models = new Map();
  for (const entry of fs.readdirSync(dir).sort()) {
    if (isLanguageModel(path.join(dir, entry))) continue; // loadLanguageModels' business
    let model;
    try {
      model = loadModel(path.join(dir, entry));
    } catch (e) {
      console.error(`skipping ${entry}: ${typedError(e)}`);
      continue;
    }
    if (model === null) console.error(`skipping ${entry}: not a model`);
    else models.set(model.name, model);
  }
  return models;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new HttpError(413, `body larger than ${MAX_BODY} bytes`));
        req.destroy();
        return;
      }
      parts.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

// One request tensor as a TypedArray of the model's dtype, checked against its own shape; `raw`
// is its bytes from the binary part of the request, if it came that way.
function toTypedArray(t, spec, raw) {
  const entry = DATATYPES[t.datatype];
  if (!entry) {
    throw new HttpError(400, `input '${spec.name}': unsupported datatype ${JSON.stringify(t.datatype)}`);
  }
  const [dtype, Ctor] = entry;
  if (spec.dtype !== null && spec.dtype !== dtype) {
    throw new HttpError(400, `input '${spec.name}': datatype ${t.datatype} but the model takes ` +
      `${OIP_OF_DTYPE[spec.dtype] || spec.dtype}`);
  }
  const count = t.shape.reduce((a, b) => a * b, 1);
  if (raw !== undefined) {
    if (raw.length !== count * Ctor.BYTES_PER_ELEMENT) {
      throw new HttpError(400, `input '${spec.name}': shape [${t.shape}] of ${t.datatype} needs ` +
        `${count * Ctor.BYTES_PER_ELEMENT} bytes but binary_data_size is ${raw.length}`);
    }
    const out = new Ctor(count);
    new Uint8Array(out.buffer).set(raw);
    return [out, dtype];
  }
  const data = Array.isArray(t.data) ? t.data.flat(Infinity) : [t.data];
  if (data.length !== count) {
    throw new HttpError(400, `input '${spec.name}': shape [${t.shape}] holds ${count} elements ` +
      `but data has ${data.length}`);
  }
  const out = new Ctor(count);
  const big = Ctor === BigInt64Array || Ctor === BigUint64Array;
  for (let i = 0; i < count; i++) {
    const v = data[i];
    const ok = dtype === 'bool' ? typeof v === 'boolean' || v === 0 || v === 1
      : dtype.startsWith('float') ? typeof v === 'number'
        : Number.isInteger(v);
    if (ok) out[i] = big ? BigInt(v) : Number(v);
    // An integer the TypedArray wrapped (300 in an INT8), or a float that overflowed (1e39 in an
    // FP32), is out of the datatype's range.
    const kept = dtype === 'bool' || (dtype.startsWith('float') ? Number.isFinite(out[i])
      : out[i] === (big ? BigInt(v) : v));
    if (!ok || !kept) {
      throw new HttpError(400, `input '${spec.name}': data[${i}] = ${JSON.stringify(v)} is not ` +
        `${t.datatype}${ok ? ' (out of its range)' : ''}`);
    }
  }
  return [out, dtype];
}

// The request's inputs as NDArrays in the model's order. `blob`: the binary part of a request of
// the binary tensor data extension (each input with a binary_data_size, in the order of inputs).
function parseInputs(model, body, blob) {
  if (!Array.isArray(body.inputs)) throw new HttpError(400, "the request has no 'inputs' list");
  const byName = new Map();
  const binary = new Map();
  let offset = 0;
  body.inputs.forEach((t, i) => {
    if (t === null || typeof t !== 'object' || Array.isArray(t)) {
      throw new HttpError(400, `inputs[${i}]: expected an object with name, shape, datatype, data`);
    }
    for (const key of ['name', 'shape', 'datatype']) {
      if (!(key in t)) throw new HttpError(400, `inputs[${i}]: missing '${key}'`);
    }
    const params = t.parameters ?? {};
    const size = params.binary_data_size;
    if (size !== undefined && !(Number.isInteger(size) && size >= 0)) {
      throw new HttpError(400, `inputs[${i}]: binary_data_size must be an integer >= 0`);
    }
    if (size === undefined && !('data' in t)) throw new HttpError(400, `inputs[${i}]: missing 'data'`);
    if (size !== undefined) {
      if (offset + size > blob.length) {
        throw new HttpError(400, `input '${t.name}': binary_data_size ${size} runs past the ` +
          `${blob.length} bytes of binary data`);
      }
      binary.set(t.name, blob.subarray(offset, offset + size));
      offset += size;
    }
    if (typeof t.name !== 'string') throw new HttpError(400, `inputs[${i}]: 'name' must be a string`);
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new HttpError(400, `input '${t.name}': shape must be a list of integers >= 0`);
    }
    if (byName.has(t.name)) throw new HttpError(400, `input '${t.name}' given twice`);
    byName.set(t.name, t);
  });
  if (offset !== blob.length) {
    throw new HttpError(400, `the request has ${blob.length - offset} bytes of binary data that ` +
      'no input claims');
  }
  const known = model.inputs.map((t) => t.name);
  const unknown = [...byName.keys()].filter((n) => !known.includes(n)).sort();
  if (unknown.length) {
    throw new HttpError(400, `model '${model.name}' has no input named ` +
      `${unknown.map((u) => `'${u}'`).join(', ')} (inputs: ${JSON.stringify(known)})`);
  }
  return model.inputs.map((spec) => {
    const t = byName.get(spec.name);
    if (!t) throw new HttpError(400, `missing input '${spec.name}'`);
    const [data, dtype] = toTypedArray(t, spec, binary.get(spec.name));
    return ffi.nd.array(data, t.shape, dtype);
  });
}

// Whether an output goes in the binary part: its own binary_data, else the request's
// binary_data_output (what tritonclient sends when it names no outputs).
function wantsBinary(body, requested) {
  const own = requested && requested.parameters;
  if (own && typeof own === 'object' && 'binary_data' in own) return own.binary_data === true;
  return Boolean(body.parameters && body.parameters.binary_data_output === true);
}

// The response document, and the bytes of the outputs that go in the binary part.
function buildResponse(model, body, results) {
  const names = results.map((_, i) =>
    (model.outputs && model.outputs[i] ? model.outputs[i].name : `output_${i}`));
  let chosen = results.map((_, i) => i);
  let requested = chosen.map(() => null);
  if (body.outputs !== undefined) {
    if (!Array.isArray(body.outputs) ||
      !body.outputs.every((o) => o && typeof o === 'object' && typeof o.name === 'string')) {
      throw new HttpError(400, `'outputs' must be a list of {"name": ...}`);
    }
    chosen = body.outputs.map((o) => {
      const i = names.indexOf(o.name);
      if (i < 0) {
        throw new HttpError(400, `model '${model.name}' has no output named '${o.name}' ` +
          `(outputs: ${JSON.stringify(names)})`);
      }
      return i;
    });
    requested = body.outputs;
  }
  const blobs = [];
  const outputs = chosen.map((i, k) => {
    const a = results[i];
    const dtype = a.dtype;
    if (wantsBinary(body, requested[k])) {
      const raw = a.toBuffer();
      blobs.push(raw);
      return { name: names[i], datatype: OIP_OF_DTYPE[dtype] || dtype, shape: a.shape,
        parameters: { binary_data_size: raw.length } };
    }
    let data = Array.from(a.toTypedArray(), (v) => (typeof v === 'bigint' ? Number(v) : v));
    if (dtype === 'bool') data = data.map((v) => v !== 0);
    return { name: names[i], datatype: OIP_OF_DTYPE[dtype] || dtype, shape: a.shape, data };
  });
  const doc = { model_name: model.name, model_version: '1', outputs };
  if (body.id !== undefined) doc.id = body.id;
  return { doc, blobs };
}

function send(res, status, doc) {
  const body = JSON.stringify(doc);
  res.writeHead(status, { 'content-type': 'application/json',
    'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function infer(model, req) {
  let raw = await readBody(req);
  let blob = Buffer.alloc(0);
  const header = req.headers['inference-header-content-length'];
  if (header !== undefined) { // the binary tensor data extension: JSON, then the tensors' bytes
    if (!/^\d+$/.test(header) || Number(header) > raw.length) {
      throw new HttpError(400, `Inference-Header-Content-Length ${JSON.stringify(header)} is not ` +
        `a length within the ${raw.length}-byte body`);
    }
    blob = raw.subarray(Number(header));
    raw = raw.subarray(0, Number(header));
  }
  let body;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    if (e instanceof HttpError) throw e;
    throw new HttpError(400, `the body is not JSON: ${e.message}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(400, 'the body must be a JSON object');
  }
  const arrays = parseInputs(model, body, blob);
  let results;
  try {
    results = await model.run(arrays);
  } catch (e) {
    throw new HttpError(400, typedError(e));
  } finally {
    for (const a of arrays) a.dispose();
  }
  try {
    return buildResponse(model, body, results);
  } finally {
    for (const r of results) r.dispose();
  }
}

// ---- OpenAI completions

class OpenAIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function openaiError(message, type = 'invalid_request_error') {
  return { error: { message, type, param: null, code: null } };
}

const modelObject = (name) => ({ id: name, object: 'model', created: 0, owned_by: 'polyffi' });

// The request's field `key` (null or absent: `fallback`), checked with `ok`.
function field(body, key, fallback, ok, what) {
  const v = body[key];
  if (v === undefined || v === null) return fallback;
  if (!ok(v)) throw new OpenAIError(400, `'${key}' must be ${what}, not ${JSON.stringify(v)}`);
  return v;
}

const isNumber = (v) => typeof v === 'number' && Number.isFinite(v);

// The body of POST /v1/completions as [model entry, prompt, generate options, stream].
function parseCompletion(lms, raw) {
  let body;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new OpenAIError(400, `the body is not JSON: ${e.message}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new OpenAIError(400, 'the body must be a JSON object');
  }
  if (typeof body.model !== 'string') throw new OpenAIError(400, "'model' must be a string");
  const entry = lms.get(body.model);
  if (!entry) {
    throw new OpenAIError(404, `The model '${body.model}' does not exist (served: ` +
      `${JSON.stringify([...lms.keys()])})`);
  }
  for (const key of ['n', 'best_of']) {
    if (body[key] !== undefined && body[key] !== null && body[key] !== 1) {
      throw new OpenAIError(400, `'${key}' must be 1 (one completion per request), not ` +
        `${JSON.stringify(body[key])}`);
    }
  }
  let prompt = body.prompt;
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === 'string') {
    [prompt] = prompt;
  }
  const tokenIds = Array.isArray(prompt) && prompt.every((t) => Number.isInteger(t));
  if (typeof prompt !== 'string' && !tokenIds) {
    throw new OpenAIError(400, "'prompt' must be a string (or a list of token ids)");
  }
  let stop = field(body, 'stop', [], (v) => typeof v === 'string' ||
    (Array.isArray(v) && v.every((x) => typeof x === 'string')), 'a string or a list of strings');
  if (typeof stop === 'string') stop = [stop];
  const options = {
    maxTokens: field(body, 'max_tokens', 16, (v) => Number.isInteger(v) && v >= 0,
      'an integer >= 0'),
    temperature: field(body, 'temperature', 1.0, (v) => isNumber(v) && v >= 0, 'a number >= 0'),
    topP: field(body, 'top_p', 1.0, (v) => isNumber(v) && v > 0 && v <= 1, 'a number in (0, 1]'),
    seed: field(body, 'seed', 0, (v) => Number.isSafeInteger(v), 'an integer'),
    stop,
  };
  const stream = field(body, 'stream', false, (v) => typeof v === 'boolean', 'true or false');
  return [entry, prompt, options, stream];
}

// A client error from the core (the prompt or an option it refused) as a 400.
function generationError(e) {
  if (e instanceof ffi.FFIError && (e.kind === 'ValueError' || e.kind === 'TypeError')) {
    return new OpenAIError(400, e.message);
  }
  return e;
}

// The KV cache filled up mid-generation: the completion ends there, as at its length limit.
const cacheFull = (e) => e instanceof ffi.FFIError && /KV cache is full/.test(e.message);

function sseWrite(res, doc) {
  res.write(`data: ${JSON.stringify(doc)}\n\n`);
}

async function completions(lms, req, res) {
  const [entry, prompt, options, stream] = parseCompletion(lms, await readBody(req));
  await entry.slots.acquire();
  let gen;
  try {
    try {
      gen = entry.lm.generate(prompt, options);
    } catch (e) {
      throw generationError(e);
    }
    const head = {
      id: `cmpl-${crypto.randomUUID().replace(/-/g, '')}`,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: entry.name,
    };
    const choice = (text, finishReason) =>
      ({ ...head, choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }] });
    if (!stream) {
      const ids = [];
      let finish = null;
      try {
        for await (const t of gen) ids.push(t.id);
      } catch (e) {
        if (!cacheFull(e)) throw e;
        finish = 'length';
      }
      const doc = choice(entry.lm.decode(ids), finish ?? gen.finishReason);
      const used = gen.promptTokens;
      doc.usage = { prompt_tokens: used, completion_tokens: ids.length,
        total_tokens: used + ids.length };
      return send(res, 200, doc);
    }
    let gone = false;
    res.on('close', () => { gone = true; });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache',
      connection: 'keep-alive' });
    res.flushHeaders();
    if (res.socket) res.socket.setNoDelay(true);
    let finish = null;
    try {
      for await (const t of gen) {
        if (gone) break; // the client left: the break frees the generation
        sseWrite(res, choice(t.text, null));
      }
    } catch (e) {
      if (!cacheFull(e)) {
        if (!gone) {
          sseWrite(res, openaiError(typedError(e), 'server_error'));
          res.end('data: [DONE]\n\n');
        }
        return undefined;
      }
      finish = 'length';
    }
    if (!gone) {
      sseWrite(res, choice('', finish ?? gen.finishReason));
      res.end('data: [DONE]\n\n');
    }
    return undefined;
  } finally {
    if (gen) gen.close();
    entry.slots.release();
  }
}

async function openai(lms, req, res, url) {
  const get = req.method === 'GET';
  if (get && url === '/v1/models') {
    return send(res, 200, { object: 'list', data: [...lms.keys()].map(modelObject) });
  }
  if (get && url.startsWith('/v1/models/')) {
    let name = url.slice('/v1/models/'.length);
    try {
      name = decodeURIComponent(name);
    } catch {
      // not percent-encoded text: looked up as it is
    }
    if (!lms.has(name)) throw new OpenAIError(404, `The model '${name}' does not exist`);
    return send(res, 200, modelObject(name));
  }
  if (req.method === 'POST' && url === '/v1/completions') return completions(lms, req, res);
  throw new OpenAIError(404, `no route ${req.method} ${url}`);
}

function createServer(models, languageModels = new Map()) {
  const modelOf = (name) => {
    const m = models.get(name);
    if (!m) {
      throw new HttpError(404, `unknown model '${name}' (served: ${JSON.stringify([...models.keys()])})`);
    }
    return m;
  };
  return http.createServer(async (req, res) => {
    const url = req.url.split('?')[0];
    const parts = url.split('/').map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
    if (url === '/v1' || url.startsWith('/v1/')) {
      try {
        await openai(languageModels, req, res, url);
      } catch (e) {
        const status = e instanceof OpenAIError ? e.status : 500;
        const message = e instanceof OpenAIError ? e.message : typedError(e);
        if (!res.headersSent) {
          send(res, status, openaiError(message, status >= 500 ? 'server_error' : undefined));
        }
        else res.end();
      }
      return undefined;
    }
    try {
      const get = req.method === 'GET';
      if (get && url === '/v2/health/live') return send(res, 200, { live: true });
      if (get && url === '/v2/health/ready') return send(res, 200, { ready: true });
      if (parts[1] === 'v2' && parts[2] === 'models' && parts[3]) {
        const model = modelOf(parts[3]);
        if (get && parts.length === 4) {
          return send(res, 200, {
            name: model.name, versions: ['1'], platform: `polyffi_${model.kind}`,
            inputs: model.inputs.map(oip), outputs: (model.outputs || []).map(oip),
          });
        }
        if (get && parts.length === 5 && parts[4] === 'ready') {
          return send(res, 200, { name: model.name, ready: true });
        }
        if (req.method === 'POST' && parts.length === 5 && parts[4] === 'infer') {
          const { doc, blobs } = await infer(model, req);
          if (blobs.length === 0) return send(res, 200, doc);
          const head = Buffer.from(JSON.stringify(doc));
          const all = Buffer.concat([head, ...blobs]);
          res.writeHead(200, { 'content-type': 'application/octet-stream',
            'inference-header-content-length': head.length, 'content-length': all.length });
          return res.end(all);
        }
      }
      throw new HttpError(404, `no route ${req.method} ${url}`);
    } catch (e) {
      if (e instanceof HttpError) send(res, e.status, { error: e.message });
      else send(res, 500, { error: typedError(e) });
    }
    return undefined;
  });
}

if (require.main === module) {
  const args = process.argv.slice(2);
  let host = '127.0.0.1';
  const hostAt = args.indexOf('--host');
  if (hostAt >= 0) {
    host = args[hostAt + 1];
    args.splice(hostAt, 2);
  }
  if (args.length !== 2 || !/^\d+$/.test(args[1]) || !fs.statSync(args[0], { throwIfNoEntry: false })?.isDirectory()) {
    console.error('usage: node server.js MODEL_DIR PORT [--host 127.0.0.1]');
    process.exit(2);
  }
  const models = loadModels(args[0]);
  for (const m of models.values()) console.error(`model ${m.name} (${m.kind})`);
  const languageModels = loadLanguageModels(args[0]);
  for (const m of languageModels.values()) console.error(`model ${m.name} (language model)`);
  const server = createServer(models, languageModels);
  server.listen(Number(args[1]), host, () => {
    const { address, port } = server.address();
    console.log(`listening on ${address}:${port}`);
  });
  const stop = () => process.exit(0); // nothing to flush: requests in flight are abandoned
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

module.exports = { createServer, loadModels, loadLanguageModels };
