'use strict';
// The digits classifier behind the server: graph executors over one loaded model library, in a
// small pool per batch size so concurrent requests never share an executor's input buffer.
// Batches are padded to a power of two (at most MAX_CHUNK rows) and larger ones are split, so
// only a handful of executor shapes exist. Inference runs with GraphModule.runAsync: on the libuv
// pool, never on the event loop.
const fs = require('node:fs');
const path = require('node:path');
const ffi = (() => {
  try {
    return require('polyffi');  // after `npm install` here
  } catch {
    return require('../../bindings/node');  // straight from the repository
  }
})();

const FEATURES = 64;
const CLASSES = 10;
const MAX_CHUNK = 256;

class DigitsModel {
  constructor({ modelDir, libPath, executorsPerShape = 4 }) {
    this.lib = ffi.loadModule(libPath);
    this.params = fs.readFileSync(path.join(modelDir, 'params.bin'));
    this.graph = JSON.parse(fs.readFileSync(path.join(modelDir, 'graph.json'), 'utf8'));
    this.batchOfGraph = this.graph.attrs.shape[1][0][0];
    this.executorsPerShape = executorsPerShape;
    this.pools = new Map();  // rows -> { idle: GraphModule[], made: number, waiting: resolve[] }
  }

  graphFor(rows) {
    const g = structuredClone(this.graph);
    g.attrs.shape[1] = g.attrs.shape[1].map((s) => (s[0] === this.batchOfGraph ? [rows, ...s.slice(1)] : s));
    return JSON.stringify(g);
  }

  async acquire(rows) {
    let pool = this.pools.get(rows);
    if (!pool) {
      pool = { idle: [], made: 0, waiting: [] };
      this.pools.set(rows, pool);
    }
    if (pool.idle.length > 0) return pool.idle.pop();
    if (pool.made < this.executorsPerShape) {
      pool.made += 1;
      const gm = ffi.GraphModule.create(this.graphFor(rows), this.lib);
      gm.loadParams(this.params);
      return gm;
    }
    return new Promise((resolve) => pool.waiting.push(resolve));
  }

  release(rows, gm) {
    const pool = this.pools.get(rows);
    const next = pool.waiting.shift();
    if (next) next(gm);
    else pool.idle.push(gm);
  }

  // rows x 64 floats (a Float32Array) -> rows x 10 probabilities (a Float32Array).
  async classifyChunk(x, rows) {
    let padded = 1;
    while (padded < rows) padded *= 2;
    const input = new Float32Array(padded * FEATURES);
    input.set(x);
    const gm = await this.acquire(padded);
    const out = new Float32Array(padded * CLASSES);
    try {
      gm.setInput(0, input);
      await gm.runAsync();
      gm.getOutput(0, out);
    } finally {
      this.release(padded, gm);
    }
    return out.subarray(0, rows * CLASSES);
  }

  async classify(x) {
    const rows = x.length / FEATURES;
    const chunks = [];
    for (let start = 0; start < rows; start += MAX_CHUNK) {
      const n = Math.min(MAX_CHUNK, rows - start);
      chunks.push(this.classifyChunk(x.subarray(start * FEATURES, (start + n) * FEATURES), n));
    }
    const probs = new Float32Array(rows * CLASSES);
    (await Promise.all(chunks)).forEach((p, i) => probs.set(p, i * MAX_CHUNK * CLASSES));
    const classes = new Array(rows);
    for (let r = 0; r < rows; r++) {
      let best = 0;
      for (let j = 1; j < CLASSES; j++) if (probs[r * CLASSES + j] > probs[r * CLASSES + best]) best = j;
      classes[r] = best;
    }
    return { classes, probs };
  }

  dispose() {
    for (const pool of this.pools.values()) for (const gm of pool.idle) gm.dispose();
    this.pools.clear();
    this.lib.dispose();
  }
}

module.exports = { DigitsModel, FEATURES, CLASSES };
