#!/usr/bin/env node
// The Open Inference Protocol server under load: autocannon POSTs batch-1 infer requests for the
// digits model (TVM 0.27 relax, tests/tvm_models/tvm027/relax/digits.so) for DURATION seconds
// while this process polls GET /v2/health/ready every 20 ms on its own connection, so the table
// shows how the event loop answers during inference.
// usage: node load.js [--duration 20] [--connections 16] [--batch 1]
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const DURATION = opt('duration', 20);
const CONNECTIONS = opt('connections', 16);
const BATCH = opt('batch', 1);
const ROOT = path.resolve(__dirname, '..', '..');
const raw = fs.readFileSync(path.join(ROOT, 'examples', 'digits', 'model', 'test_x.bin'));
const x = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
const body = JSON.stringify({ inputs: [{ name: 'data', shape: [BATCH, 64], datatype: 'FP32',
  data: Array.from(x.subarray(0, BATCH * 64)) }] });
const models = fs.mkdtempSync(path.join(os.tmpdir(), 'polyffi-load-'));
fs.symlinkSync(path.join(ROOT, 'tests', 'tvm_models', 'tvm027', 'relax', 'digits.so'),
  path.join(models, 'relax_digits.so'));

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

(async () => {
  const server = spawn(process.execPath, [path.join(ROOT, 'examples', 'digits-server-node', 'server.js'),
    models, '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /listening on ([\d.]+:\d+)/.exec(out);
      if (m) resolve(`http://${m[1]}`);
    });
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const health = [];
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const t0 = process.hrtime.bigint();
      await new Promise((resolve, reject) => {
        http.get(`${url}/v2/health/ready`, { agent }, (res) => {
          res.resume();
          res.on('end', resolve);
        }).on('error', reject);
      });
      health.push(Number(process.hrtime.bigint() - t0) / 1e6);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const result = await autocannon({
    url: `${url}/v2/models/relax_digits/infer`, method: 'POST', body, headers: { 'content-type': 'application/json' },
    connections: CONNECTIONS, duration: DURATION,
  });
  polling = false;
  await poll;
  agent.destroy();
  server.kill('SIGTERM');
  fs.rmSync(models, { recursive: true, force: true });
  health.sort((a, b) => a - b);
  console.log(`batch ${BATCH}, ${CONNECTIONS} connections, ${DURATION} s, node ${process.version}`);
  console.log(`infer: ${result.requests.average.toFixed(0)} req/s (${result.requests.total} requests, ` +
    `${result.non2xx} non-2xx, ${result.errors} errors); latency p50 ${result.latency.p50} ms, ` +
    `p99 ${result.latency.p99} ms, max ${result.latency.max} ms`);
  console.log(`/v2/health/ready during the load: ${health.length} probes, p50 ${pct(health, 50).toFixed(2)} ms, ` +
    `p99 ${pct(health, 99).toFixed(2)} ms, max ${health[health.length - 1].toFixed(2)} ms`);
})();
