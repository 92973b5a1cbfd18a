#!/usr/bin/env node
'use strict';
// Classify the held-out digits from Node through polyffi's graph executor: same model, kernels
// and executor as examples/digits/demo.c; checks every prediction against the training script's
// and prints accuracy and per-inference latency.
// usage: node demo.js [MODEL_DIR] [MODEL_LIB]
const fs = require('node:fs');
const path = require('node:path');
const ffi = (() => {
  try {
    return require('polyffi');
  } catch {
    return require('../../bindings/node');
  }
})();

const ROOT = path.resolve(__dirname, '..', '..');
const modelDir = process.argv[2] || path.join(ROOT, 'examples', 'digits', 'model');
const libPath = process.argv[3] || path.join(ROOT, 'build', 'lib', 'libdigits_model.so');

const lib = ffi.loadModule(libPath);
const read = (name) => fs.readFileSync(path.join(modelDir, name));
const f32 = (b) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
const x = f32(read('test_x.bin'));
const yb = read('test_y.bin');
const y = new Int32Array(yb.buffer.slice(yb.byteOffset, yb.byteOffset + yb.length));
const expected = JSON.parse(read('expected.json'));
const n = y.length;

function load(graphName) {
  const g = ffi.GraphModule.create(read(graphName).toString('utf8'), lib);
  g.loadParams(read('params.bin'));
  return g;
}
const argmax = (p, r) => {
  let best = 0;
  for (let j = 1; j < 10; j++) if (p[r * 10 + j] > p[r * 10 + best]) best = j;
  return best;
};

const batch = load('graph.json');
batch.setInput('data', x);  // a zero-copy view; the executor copies into its own storage
batch.run();
const probs = batch.getOutput(0).toTypedArray();
let agree = 0;
let correct = 0;
for (let i = 0; i < n; i++) {
  const p = argmax(probs, i);
  agree += p === expected.predictions[i] ? 1 : 0;
  correct += p === y[i] ? 1 : 0;
}

const single = load('graph_b1.json');
const out = new Float32Array(10);
const times = [];
for (let rep = 0; rep < 3; rep++) {
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    single.setInput(0, x.subarray(i * 64, (i + 1) * 64));
    single.run();
    single.getOutput(0, out);
    times.push(Number(process.hrtime.bigint() - t0));
  }
}
times.sort((a, b) => a - b);

console.log(`held-out samples:        ${n}`);
console.log(`accuracy:                ${(correct / n).toFixed(4)} (${correct}/${n} correct)`);
console.log(`agreement with train.py: ${agree}/${n}`);
console.log(`batch-1 latency:         median ${(times[times.length >> 1] / 1000).toFixed(2)} us ` +
  `(setInput+run+getOutput from Node, ${times.length} inferences)`);
if (agree !== n) {
  console.error('predictions differ from the training script');
  process.exit(1);
}
