'use strict';
// The digits model through GraphModule: the same predictions as the C demo and train.py.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { REPO_ROOT, LIB_DIR } = require('./helpers');
const ffi = require('..');

const MODEL = path.join(REPO_ROOT, 'examples', 'digits', 'model');
const expected = JSON.parse(fs.readFileSync(path.join(MODEL, 'expected.json'), 'utf8'));
const raw = fs.readFileSync(path.join(MODEL, 'test_x.bin'));
const x = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
const lib = ffi.loadModule(path.join(LIB_DIR, 'libdigits_model.so'));
const params = fs.readFileSync(path.join(MODEL, 'params.bin'));

function load(graphName) {
  const g = ffi.GraphModule.create(fs.readFileSync(path.join(MODEL, graphName), 'utf8'), lib);
  g.loadParams(params);
  return g;
}

function argmax(probs, row) {
  let best = 0;
  for (let j = 1; j < 10; j++) if (probs[row * 10 + j] > probs[row * 10 + best]) best = j;
  return best;
}

test('the whole batch gives the expected predictions', () => {
  const g = load('graph.json');
  assert.strictEqual(g.getNumOutputs(), 1);
  g.setInput('data', x);
  g.run();
  const out = g.getOutput(0);
  assert.deepStrictEqual(out.shape, [expected.num_samples, 10]);
  const probs = out.toTypedArray();
  const pred = Array.from({ length: expected.num_samples }, (_, i) => argmax(probs, i));
  assert.deepStrictEqual(pred, expected.predictions);
  const ref = fs.readFileSync(path.join(MODEL, 'expected_probs.bin'));
  const want = new Float32Array(ref.buffer.slice(ref.byteOffset, ref.byteOffset + ref.length));
  let maxDiff = 0;
  for (let i = 0; i < want.length; i++) maxDiff = Math.max(maxDiff, Math.abs(want[i] - probs[i]));
  assert.ok(maxDiff < 1e-4, `probabilities differ by ${maxDiff}`);
  g.dispose();
});

test('batch 1 with runAsync and getOutput into a TypedArray', async () => {
  const g = load('graph_b1.json');
  const out = new Float32Array(10);
  for (const i of [0, 1, 2, 100, expected.num_samples - 1]) {
    g.setInput(0, x.subarray(i * 64, (i + 1) * 64));
    await g.runAsync();
    g.getOutput(0, out);
    assert.strictEqual(argmax(out, 0), expected.predictions[i]);
  }
  g.dispose();
});

test('setInput reports a bad key as every binding does, naming set_input', () => {
  const g = load('graph_b1.json');
  const row = x.subarray(0, 64);
  const n = g.getNumInputs();
  for (const value of [row, ffi.nd.array(row, [1, 64])]) {
    assert.throws(() => g.setInput('dta', value), (e) => e instanceof ffi.FFIError &&
      e.kind === 'KeyError' && e.message === "set_input: the graph has no input named 'dta'");
    for (const index of [7, -1]) {
      assert.throws(() => g.setInput(index, value), (e) => e instanceof ffi.FFIError &&
        e.kind === 'IndexError' &&
        e.message.startsWith(`set_input: input index ${index} out of range [0, ${n})`));
    }
    if (value instanceof ffi.NDArray) value.dispose();
  }
  // the executor is unharmed: the right name still works
  g.setInput('data', row);
  g.run();
  const out = g.getOutput(0).toTypedArray();
  assert.strictEqual(argmax(out, 0), expected.predictions[0]);
  g.dispose();
});
