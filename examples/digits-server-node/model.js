'use strict';
// The digits classifier behind the server: one GraphModule per batch size over one loaded model
// library, each backed by polyffi's model runner, whose inferAsync is stateless: concurrent
// requests share it, and the runner gives each call an executor of its own (sharing the weights).
// Batches are padded to a power of two (at most MAX_CHUNK rows) and larger ones are split, so
// only a handful of graph shapes exist. Inference runs on the libuv pool, never on the event loop.
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
  constructor({ modelDir, libPath }) {
    this.lib = ffi.loadModule(libPath);
    this.params = fs.readFileSync(path.join(modelDir, 'params.bin'));
    this.graph = JSON.parse(fs.readFileSync(path.join(modelDir, 'graph.json'), 'utf8'));
    this.batchOfGraph = this.graph.attrs.shape[1][0][0];
    this.models = new Map();  // rows -> GraphModule (thread-safe inferAsync)
  }

  graphFor(rows) {
    const g = structuredClone(this.graph);
    g.attrs.shape[1] = g.attrs.shape[1].map((s) => (s[0] === this.batchOfGraph ? [rows, ...s.slice(1)] : s));
    return JSON.stringify(g);
  }

  modelFor(rows) {
    let gm = this.models.get(rows);
    if (!gm) {
      gm = ffi.GraphModule.fromParts(this.graphFor(rows), this.lib, this.params);
      this.models.set(rows, gm);
    }
    return gm;
  }

  // rows x 64 floats (a Float32Array) -> rows x 10 probabilities (a Float32Array).
  async classifyChunk(x, rows) {
    let padded = 1;
    while (padded < rows) padded *= 2;
    const input = new Float32Array(padded * FEATURES);
    input.set(x);
    const [out] = await this.modelFor(padded).inferAsync(input);
    try {
      return out.toTypedArray().slice(0, rows * CLASSES);
    } finally {
      out.dispose();
    }
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
    for (const gm of this.models.values()) gm.dispose();
    this.models.clear();
    this.lib.dispose();
  }
}

module.exports = { DigitsModel, FEATURES, CLASSES };
