'use strict';
// Starts the server on 127.0.0.1 with a free port, sends real requests, checks predictions
// against examples/digits/model/expected.json (the C demo's and train.py's), checks that /health
// answers while a large batch is being classified, and that malformed input gets a 4xx while the
// server keeps serving.
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MODEL = path.join(ROOT, 'examples', 'digits', 'model');
const expected = JSON.parse(fs.readFileSync(path.join(MODEL, 'expected.json'), 'utf8'));
const raw = fs.readFileSync(path.join(MODEL, 'test_x.bin'));
const x = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
const rows = Array.from({ length: expected.num_samples }, (_, i) =>
  Array.from(x.subarray(i * 64, (i + 1) * 64)));

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
  server = spawn(process.execPath, [path.join(__dirname, '..', 'server.js'), '--host', '127.0.0.1',
    '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  base = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve(m[1]);
    });
    server.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
});

test.after(() => {
  server.kill('SIGTERM');
});

test('GET /health answers', async () => {
  const r = await request('GET', '/health');
  assert.strictEqual(r.status, 200);
  assert.strictEqual(r.json.status, 'ok');
});

test('POST /predict classifies the held-out digits as the C demo does', async () => {
  const r = await request('POST', '/predict', { inputs: rows });
  assert.strictEqual(r.status, 200, r.text);
  assert.deepStrictEqual(r.json.classes, expected.predictions);
  assert.strictEqual(r.json.probabilities.length, rows.length);
  for (const p of r.json.probabilities) {
    assert.strictEqual(p.length, 10);
    assert.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-4);
  }
});

test('single rows and concurrent requests give the same classes', async () => {
  const picks = [0, 1, 2, 3, 50, 100, 200, 358];
  const results = await Promise.all(picks.map((i) => request('POST', '/predict', [rows[i]])));
  results.forEach((r, k) => {
    assert.strictEqual(r.status, 200, r.text);
    assert.deepStrictEqual(r.json.classes, [expected.predictions[picks[k]]]);
  });
});

test('/health answers while a large batch is being classified', async () => {
  const big = [];
  for (let k = 0; k < 40; k++) big.push(...rows);  // 14360 rows
  let done = false;
  const predict = request('POST', '/predict', { inputs: big }).then((r) => { done = true; return r; });
  const during = [];
  while (!done) {
    const t0 = process.hrtime.bigint();
    const h = await request('GET', '/health');
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    assert.strictEqual(h.status, 200);
    if (!done && h.json.activePredictions > 0) during.push(ms);
  }
  const r = await predict;
  assert.strictEqual(r.status, 200, r.text.slice(0, 200));
  assert.deepStrictEqual(r.json.classes.slice(0, rows.length), expected.predictions);
  assert.deepStrictEqual(r.json.classes.slice(-rows.length), expected.predictions);
  assert.ok(during.length > 0, 'no /health answer arrived while the batch was in flight');
  during.sort((a, b) => a - b);
  console.log(`# /health answered ${during.length} times during the batch; ` +
    `median ${during[during.length >> 1].toFixed(2)} ms, max ${during[during.length - 1].toFixed(2)} ms`);
});

test('malformed input gets a 4xx and the server keeps serving', async () => {
  const bad = [
    ['POST', '/predict', '{not json'],
    ['POST', '/predict', { inputs: [] }],
    ['POST', '/predict', { inputs: [[1, 2, 3]] }],
    ['POST', '/predict', { inputs: [Array(64).fill('x')] }],
    ['POST', '/predict', { rows: rows.slice(0, 1) }],
    ['POST', '/predict', 'null'],
    ['GET', '/predict', undefined],
    ['GET', '/nowhere', undefined],
  ];
  for (const [method, url, body] of bad) {
    const r = await request(method, url, body);
    assert.ok(r.status >= 400 && r.status < 500, `${method} ${url} ${JSON.stringify(body)}: ${r.status}`);
    assert.strictEqual(typeof r.json.error, 'string');
  }
  const ok = await request('POST', '/predict', [rows[5]]);
  assert.strictEqual(ok.status, 200);
  assert.deepStrictEqual(ok.json.classes, [expected.predictions[5]]);
});
