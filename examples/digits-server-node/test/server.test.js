'use strict';
// Starts the Open Inference Protocol server on 127.0.0.1 with a free port over a model folder
// holding examples/digits (graph.json + params.bin + its kernel library) and the same model
// compiled by TVM 0.27 (a relax executable with a dynamic batch), sends real requests, checks
// predictions against examples/digits/model/expected.json (the C demo's and train.py's), checks
// that /v2/health/ready answers while a large batch is being classified, and that malformed
// input gets a 4xx with {"error"} while the server keeps serving. The folder also links the TVM
// 0.27 tiny llama fixture as `tiny_llama`, served over OpenAI's completions API: greedy
// completions (plain and streamed token by token) give the fixture's tokens, more requests than
// the KV cache's batch size all complete, and bad requests get OpenAI's error JSON. The
// tritonclient- and openai-driven suites of every server are tests/serving (ci/test-serving.sh).
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MODEL = path.join(ROOT, 'examples', 'digits', 'model');
const LIB_DIR = process.env.POLYFFI_LIB_DIR || path.join(ROOT, 'build', 'lib');
const expected = JSON.parse(fs.readFileSync(path.join(MODEL, 'expected.json'), 'utf8'));
const raw = fs.readFileSync(path.join(MODEL, 'test_x.bin'));
const x = Array.from(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)));
const N = expected.num_samples;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polyffi-oip-'));
fs.mkdirSync(path.join(dir, 'digits'));
fs.symlinkSync(path.join(MODEL, 'graph.json'), path.join(dir, 'digits', 'graph.json'));
fs.symlinkSync(path.join(MODEL, 'params.bin'), path.join(dir, 'digits', 'params.bin'));
fs.symlinkSync(path.join(LIB_DIR, 'libdigits_model.so'), path.join(dir, 'digits', 'libdigits_model.so'));
fs.symlinkSync(path.join(ROOT, 'tests', 'tvm_models', 'tvm027', 'relax', 'digits.so'),
  path.join(dir, 'relax_digits.so'));
const LM_DIR = path.join(ROOT, 'tests', 'tvm_models', 'tvm027', 'lm');
fs.symlinkSync(LM_DIR, path.join(dir, 'tiny_llama'));
const LM_IO = JSON.parse(fs.readFileSync(path.join(LM_DIR, 'io.json'), 'utf8'));
// The fixture's vocabulary: id 0 is "\n", ids 1..95 the printable ASCII characters 32..126.
const chars = (ids) => ids.map((i) => (i === 0 ? '\n' : String.fromCharCode(i + 31))).join('');

let server;
let base;

function request(method, url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${url}`, { method, agent: false,
      headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch { /* reported by the caller's assertion */ }
        resolve({ status: res.statusCode, json, text });
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(typeof body === 'string' ? body : JSON.stringify(body));
    req.end();
  });
}

test.before(async () => {
  server = spawn(process.execPath, [path.join(__dirname, '..', 'server.js'), dir, '0'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  base = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /listening on ([\d.]+:\d+)/.exec(out);
      if (m) resolve(`http://${m[1]}`);
    });
    server.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
});

test.after(() => {
  server.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
});

const argmax = (data, rows) => Array.from({ length: rows }, (_, r) => {
  let best = 0;
  for (let j = 1; j < 10; j++) if (data[r * 10 + j] > data[r * 10 + best]) best = j;
  return best;
});
const inferBody = (rows, data, extra = {}) =>
  ({ ...extra, inputs: [{ name: 'data', shape: [rows, 64], datatype: 'FP32', data }] });

test('health, readiness and metadata', async () => {
  assert.strictEqual((await request('GET', '/v2/health/live')).status, 200);
  assert.strictEqual((await request('GET', '/v2/health/ready')).status, 200);
  const ready = await request('GET', '/v2/models/digits/ready');
  assert.deepStrictEqual(ready.json, { name: 'digits', ready: true });
  const md = await request('GET', '/v2/models/digits');
  assert.deepStrictEqual(md.json.inputs, [{ name: 'data', datatype: 'FP32', shape: [N, 64] }]);
  assert.deepStrictEqual(md.json.outputs, [{ name: 'output_0', datatype: 'FP32', shape: [N, 10] }]);
  const relax = await request('GET', '/v2/models/relax_digits');
  assert.deepStrictEqual(relax.json.inputs, [{ name: 'data', datatype: 'FP32', shape: [-1, 64] }]);
});

test('both models classify the held-out digits as the C demo does', async () => {
  for (const model of ['digits', 'relax_digits']) {
    const r = await request('POST', `/v2/models/${model}/infer`, inferBody(N, x, { id: model }));
    assert.strictEqual(r.status, 200, r.text);
    assert.strictEqual(r.json.id, model);
    const [out] = r.json.outputs;
    assert.deepStrictEqual(out.shape, [N, 10]);
    assert.deepStrictEqual(argmax(out.data, N), expected.predictions);
  }
});

test('single rows and concurrent requests give the same classes', async () => {
  const picks = [0, 1, 2, 3, 50, 100, 200, 358];
  const results = await Promise.all(picks.map((i) => request('POST', '/v2/models/relax_digits/infer',
    inferBody(1, x.slice(i * 64, (i + 1) * 64)))));
  results.forEach((r, k) => {
    assert.strictEqual(r.status, 200, r.text);
    assert.deepStrictEqual(argmax(r.json.outputs[0].data, 1), [expected.predictions[picks[k]]]);
  });
});

test('/v2/health/ready answers while a large batch is being classified', async () => {
  const big = [];
  for (let k = 0; k < 40; k++) big.push(...x); // 14360 rows
  let done = false;
  const predict = request('POST', '/v2/models/relax_digits/infer', inferBody(40 * N, big))
    .then((r) => { done = true; return r; });
  const during = [];
  while (!done) {
    const t0 = process.hrtime.bigint();
    const h = await request('GET', '/v2/health/ready');
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    assert.strictEqual(h.status, 200);
    if (!done) during.push(ms);
  }
  const r = await predict;
  assert.strictEqual(r.status, 200, r.text.slice(0, 200));
  const classes = argmax(r.json.outputs[0].data, 40 * N);
  assert.deepStrictEqual(classes.slice(0, N), expected.predictions);
  assert.deepStrictEqual(classes.slice(-N), expected.predictions);
  assert.ok(during.length > 0, 'no health answer arrived while the batch was in flight');
  during.sort((a, b) => a - b);
  console.log(`# health answered ${during.length} times during the batch; ` +
    `median ${during[during.length >> 1].toFixed(2)} ms, max ${during[during.length - 1].toFixed(2)} ms`);
});

test('malformed input gets a 4xx with {"error"} and the server keeps serving', async () => {
  const infer = '/v2/models/relax_digits/infer';
  const bad = [
    ['POST', infer, '{not json', 400],
    ['POST', infer, 'null', 400],
    ['POST', infer, { inputs: [] }, 400],
    ['POST', infer, inferBody(1, [1, 2, 3]), 400],
    ['POST', infer, inferBody(1, Array(64).fill('x')), 400],
    ['POST', infer, { inputs: [{ name: 'data', shape: [1, 64], datatype: 'FP64', data: Array(64).fill(0) }] }, 400],
    ['POST', '/v2/models/digits/infer', inferBody(1, x.slice(0, 64)), 400], // graph wants [359, 64]
    ['POST', '/v2/models/nothing/infer', inferBody(1, x.slice(0, 64)), 404],
    ['GET', infer, undefined, 404],
    ['GET', '/nowhere', undefined, 404],
  ];
  for (const [method, url, body, status] of bad) {
    const r = await request(method, url, body);
    assert.strictEqual(r.status, status, `${method} ${url} ${String(JSON.stringify(body)).slice(0, 80)}: ${r.text}`);
    assert.strictEqual(typeof r.json.error, 'string');
  }
  const ok = await request('POST', infer, inferBody(1, x.slice(5 * 64, 6 * 64)));
  assert.strictEqual(ok.status, 200);
  assert.deepStrictEqual(argmax(ok.json.outputs[0].data, 1), [expected.predictions[5]]);
});

const completion = (extra) => ({ model: 'tiny_llama', prompt: chars(LM_IO.greedy.prompt),
  max_tokens: LM_IO.greedy.tokens.length, temperature: 0, ...extra });

test('/v1/models lists the language model only', async () => {
  const r = await request('GET', '/v1/models');
  assert.strictEqual(r.status, 200, r.text);
  assert.deepStrictEqual(r.json, { object: 'list',
    data: [{ id: 'tiny_llama', object: 'model', created: 0, owned_by: 'polyffi' }] });
  assert.strictEqual((await request('GET', '/v2/models/tiny_llama')).status, 404);
});

test('a greedy completion gives the fixture tokens as text', async () => {
  const r = await request('POST', '/v1/completions', completion({ logprobs: null, echo: false }));
  assert.strictEqual(r.status, 200, r.text);
  assert.match(r.json.id, /^cmpl-/);
  assert.strictEqual(r.json.object, 'text_completion');
  assert.strictEqual(r.json.model, 'tiny_llama');
  assert.ok(Number.isInteger(r.json.created));
  assert.deepStrictEqual(r.json.choices, [{ index: 0, text: chars(LM_IO.greedy.tokens),
    logprobs: null, finish_reason: 'length' }]);
  const p = LM_IO.greedy.prompt.length;
  const c = LM_IO.greedy.tokens.length;
  assert.deepStrictEqual(r.json.usage, { prompt_tokens: p, completion_tokens: c,
    total_tokens: p + c });
  const stopped = await request('POST', '/v1/completions',
    completion({ stop: chars([LM_IO.greedy.tokens[3]]) }));
  assert.strictEqual(stopped.status, 200, stopped.text);
  assert.strictEqual(stopped.json.choices[0].text, chars(LM_IO.greedy.tokens.slice(0, 3)));
  assert.strictEqual(stopped.json.choices[0].finish_reason, 'stop');
});

test('a streamed completion sends one event per token, then the finish reason and [DONE]',
  async () => {
    const r = await request('POST', '/v1/completions', completion({ stream: true }));
    assert.strictEqual(r.status, 200, r.text);
    assert.ok(r.text.endsWith('data: [DONE]\n\n'), r.text.slice(-80));
    const events = r.text.split('\n\n').filter((e) => e !== '');
    assert.ok(events.every((e) => e.startsWith('data: ')), r.text.slice(0, 200));
    const docs = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
    const tokens = LM_IO.greedy.tokens;
    assert.strictEqual(docs.length, tokens.length + 1);
    docs.forEach((d, i) => {
      assert.strictEqual(d.object, 'text_completion');
      assert.strictEqual(d.model, 'tiny_llama');
      assert.strictEqual(d.id, docs[0].id);
      const last = i === tokens.length;
      assert.deepStrictEqual(d.choices, [{ index: 0, text: last ? '' : chars([tokens[i]]),
        logprobs: null, finish_reason: last ? 'length' : null }]);
    });
  });

test('a completion that fills the KV cache ends with finish_reason "length"', async () => {
  // The prompt takes cap - 4 positions; the first token comes from the prefill and each later one
  // decodes the one before it into the cache, so 5 tokens fit.
  const cap = LM_IO.cache_args.max_total_seq_len;
  for (const stream of [false, true]) {
    const r = await request('POST', '/v1/completions',
      completion({ prompt: 'a'.repeat(cap - 4), max_tokens: 64, stream }));
    assert.strictEqual(r.status, 200, r.text);
    if (!stream) {
      assert.strictEqual(r.json.choices[0].finish_reason, 'length');
      assert.strictEqual(r.json.usage.completion_tokens, 5, JSON.stringify(r.json.usage));
    } else {
      const docs = r.text.split('\n\n').filter((e) => e.startsWith('data: {'))
        .map((e) => JSON.parse(e.slice(6)));
      assert.strictEqual(docs[docs.length - 1].choices[0].finish_reason, 'length');
      assert.strictEqual(docs.length, 6, r.text.slice(0, 200));
      assert.ok(r.text.endsWith('data: [DONE]\n\n'));
    }
  }
});

test('more concurrent completions than the KV cache batch size all complete', async () => {
  const n = LM_IO.cache_args.max_batch_size * 2 + 1;
  const rs = await Promise.all(Array.from({ length: n }, (_, i) =>
    request('POST', '/v1/completions', completion({ stream: i % 2 === 1 }))));
  for (const r of rs) {
    assert.strictEqual(r.status, 200, r.text);
    const text = r.json ? r.json.choices[0].text : r.text.split('\n\n')
      .filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)).choices[0].text)
      .join('');
    assert.strictEqual(text, chars(LM_IO.greedy.tokens));
  }
});

test('bad completion requests get OpenAI error JSON and the server keeps serving', async () => {
  const bad = [
    ['{not json', 400],
    ['[]', 400],
    [{ prompt: 'hi' }, 400],
    [completion({ model: 'nothing' }), 404],
    [completion({ prompt: 'caf\u00e9' }), 400],
    [completion({ prompt: '' }), 400],
    [completion({ prompt: 'a'.repeat(LM_IO.cache_args.max_total_seq_len + 1) }), 400],
    [completion({ prompt: 42 }), 400],
    [completion({ n: 2 }), 400],
    [completion({ best_of: 3 }), 400],
    [completion({ max_tokens: -1 }), 400],
    [completion({ max_tokens: 'many' }), 400],
    [completion({ temperature: -1 }), 400],
    [completion({ stop: ['ab'] }), 400],
    [completion({ stream: 'yes' }), 400],
  ];
  for (const [body, status] of bad) {
    const r = await request('POST', '/v1/completions', body);
    assert.strictEqual(r.status, status, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
    assert.strictEqual(r.json.error.type, 'invalid_request_error');
    assert.strictEqual(typeof r.json.error.message, 'string');
    assert.strictEqual(r.json.error.param, null);
    assert.strictEqual(r.json.error.code, null);
  }
  assert.strictEqual((await request('GET', '/v1/models/nothing')).status, 404);
  assert.strictEqual((await request('GET', '/v1/nowhere')).status, 404);
  const ok = await request('POST', '/v1/completions', completion());
  assert.strictEqual(ok.json.choices[0].text, chars(LM_IO.greedy.tokens));
});
