'use strict';
// Starts the Open Inference Protocol server on 127.0.0.1 with a free port over a model folder
// holding examples/digits (graph.json + params.bin + its kernel library) and the same model
// compiled by TVM 0.27 (a relax executable with a dynamic batch), sends real requests, checks
// predictions against examples/digits/model/expected.json (the C demo's and train.py's), checks
// that /v2/health/ready answers while a large batch is being classified, and that malformed
// input gets a 4xx with {"error"} while the server keeps serving. The tritonclient-driven suite
// of every server is tests/serving (ci/test-serving.sh).
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
