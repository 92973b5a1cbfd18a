#!/usr/bin/env node
'use strict';
// A digits inference server on node:http.
//   POST /predict  body: {"inputs": [[64 floats], ...]} (or the bare array of rows)
//                  -> {"classes": [...], "probabilities": [[10 floats], ...]}
//   GET  /health   -> {"status": "ok", "activePredictions": n, "uptimeSeconds": s}
// The model runs through callAsync (GraphModule.runAsync) on the libuv pool, so /health and
// other requests are answered while a large batch is being classified.
// usage: node server.js [--host 127.0.0.1] [--port 8080] [--model DIR] [--lib PATH]
const http = require('node:http');
const path = require('node:path');
const { DigitsModel, FEATURES, CLASSES } = require('./model');

const ROOT = path.resolve(__dirname, '..', '..');
const MAX_BODY = 16 * 1024 * 1024;
const MAX_ROWS = 100000;

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
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

// The request's rows as one Float32Array; 400 on anything that is not a batch of 64 numbers.
function parseRows(body) {
  let doc;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new HttpError(400, `body is not JSON: ${e.message}`);
  }
  const rows = Array.isArray(doc) ? doc : doc && doc.inputs;
  if (!Array.isArray(rows) || rows.length === 0) {
    throw new HttpError(400, 'expected {"inputs": [[64 numbers], ...]} with at least one row');
  }
  if (rows.length > MAX_ROWS) throw new HttpError(413, `at most ${MAX_ROWS} rows per request`);
  const x = new Float32Array(rows.length * FEATURES);
  rows.forEach((row, r) => {
    if (!Array.isArray(row) || row.length !== FEATURES) {
      throw new HttpError(400, `row ${r}: expected ${FEATURES} numbers`);
    }
    for (let j = 0; j < FEATURES; j++) {
      const v = row[j];
      if (typeof v !== 'number' || !Number.isFinite(v)) {
        throw new HttpError(400, `row ${r}, column ${j}: expected a finite number`);
      }
      x[r * FEATURES + j] = v;
    }
  });
  return x;
}

function send(res, status, doc) {
  const body = JSON.stringify(doc);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function createServer(model) {
  const started = Date.now();
  let active = 0;
  return http.createServer(async (req, res) => {
    const url = req.url.split('?')[0];
    try {
      if (url === '/health') {
        if (req.method !== 'GET') throw new HttpError(405, 'use GET');
        send(res, 200, { status: 'ok', activePredictions: active,
          uptimeSeconds: (Date.now() - started) / 1000 });
        return;
      }
      if (url !== '/predict') throw new HttpError(404, `no route ${url}`);
      if (req.method !== 'POST') throw new HttpError(405, 'use POST');
      active += 1;
      try {
        const x = parseRows(await readBody(req));
        const { classes, probs } = await model.classify(x);
        const probabilities = classes.map((_, r) =>
          Array.from(probs.subarray(r * CLASSES, (r + 1) * CLASSES)));
        send(res, 200, { classes, probabilities });
      } finally {
        active -= 1;
      }
    } catch (e) {
      if (e instanceof HttpError) {
        send(res, e.status, { error: e.message });
      } else {
        send(res, 500, { error: String(e && e.message) });
      }
    }
  });
}

function parseArgs(argv) {
  const opts = {
    host: '127.0.0.1', port: 8080,
    model: path.join(ROOT, 'examples', 'digits', 'model'),
    lib: path.join(process.env.POLYFFI_LIB_DIR || path.join(ROOT, 'build', 'lib'), 'libdigits_model.so'),
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in opts) || argv[i + 1] === undefined) throw new Error(`unknown option ${argv[i]}`);
    opts[key] = key === 'port' ? Number(argv[i + 1]) : argv[i + 1];
  }
  return opts;
}

if (require.main === module) {
  const opts = parseArgs(process.argv.slice(2));
  const model = new DigitsModel({ modelDir: opts.model, libPath: opts.lib });
  const server = createServer(model);
  server.listen(opts.port, opts.host, () => {
    const { address, port } = server.address();
    console.log(`digits server listening on http://${address}:${port}`);
  });
  const stop = () => server.close(() => { model.dispose(); process.exit(0); });
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

module.exports = { createServer, parseRows };
