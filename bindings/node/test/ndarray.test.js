'use strict';
// NDArrays: zero-copy views both ways.
const test = require('node:test');
const assert = require('node:assert');
require('./helpers');
const ffi = require('..');

const addOne = ffi.getGlobalFunc('testing.nd_add_one');
const ndSum = ffi.getGlobalFunc('testing.nd_sum');

test('nd.array is a view: a write from C is visible in the TypedArray', () => {
  const data = new Float32Array([1, 2, 3, 4]);
  const view = ffi.nd.array(data, [2, 2]);
  assert.deepStrictEqual(view.shape, [2, 2]);
  assert.strictEqual(view.dtype, 'float32');
  assert.ok(view.device.equals(ffi.cpu()));
  addOne(view, view);
  assert.deepStrictEqual([...data], [2, 3, 4, 5]);
  data[0] = 100;  // and a write from JS is visible to C
  assert.strictEqual(ndSum(view), 112);
});

test('a TypedArray argument is a view too', () => {
  const data = new Float32Array([0.5, 1.5]);
  addOne(data, data);
  assert.deepStrictEqual([...data], [1.5, 2.5]);
});

test('toTypedArray shares the array\'s memory', () => {
  const arr = ffi.nd.empty([3], 'float32');
  const view = arr.toTypedArray();
  assert.ok(view instanceof Float32Array);
  assert.ok(ffi.nd.empty([2], 'int64').toTypedArray() instanceof BigInt64Array);
  view.set([1, 2, 3]);
  addOne(arr, arr);
  assert.deepStrictEqual([...view], [2, 3, 4]);
  arr.dispose();  // the TypedArray keeps the memory alive
  assert.deepStrictEqual([...view], [2, 3, 4]);
});

test('a Buffer view with a dtype', () => {
  const buf = Buffer.alloc(8);
  const view = ffi.nd.array(buf, [2], 'float32');
  addOne(view, view);
  assert.strictEqual(buf.readFloatLE(0), 1);
  assert.strictEqual(buf.readFloatLE(4), 1);
});

test('copyFrom and toBuffer copy', () => {
  const arr = ffi.nd.empty([2, 2], 'float32');
  arr.copyFrom(new Float32Array([1, 2, 3, 4]));
  assert.strictEqual(ndSum(arr), 10);
  const bytes = arr.toBuffer();
  assert.strictEqual(bytes.length, 16);
  assert.throws(() => arr.copyFrom(new Float32Array(3)), ffi.FFIError);
});

test('the view keeps its TypedArray alive after JS drops it', async () => {
  let view = ffi.nd.array(new Float32Array([1, 2, 3]));
  global.gc();
  await new Promise((r) => setImmediate(r));
  assert.strictEqual(ndSum(view), 6);
  view.dispose();
  view = null;
});

test('a view lent to a callback is detached after it returns', () => {
  let kept = null;
  const apply = ffi.getGlobalFunc('testing.apply');
  const s = apply((nd) => { kept = nd; return ndSum(nd); }, new Float32Array([2, 3]));
  assert.strictEqual(s, 5);
  assert.throws(() => kept.shape, ffi.FFIError);
});

test('an unknown dtype is a ValueError worded as in every binding', () => {
  const check = (e) => e instanceof ffi.FFIError && e.kind === 'ValueError' &&
    e.message === "polyffi: unknown dtype 'floaty'";
  assert.throws(() => ffi.nd.empty([2], 'floaty'), check);
  assert.throws(() => ffi.nd.array(new Float32Array(2), [2], 'floaty'), check);
});
