'use strict';
// Shapes as values: a runtime.ShapeTuple is an ffi.Shape (an Array of numbers, bigints beyond
// 2^53) both ways; ffi.shape([...]) makes one to pass, a plain array stays a runtime.Array.
const test = require('node:test');
const assert = require('node:assert');
require('./helpers');
const ffi = require('..');

const g = (name) => ffi.getGlobalFunc(name);
const echo = g('testing.echo');
const typeOf = g('testing.return_type');

test('ffi.shape() is an Array of dimensions', () => {
  const s = ffi.shape([2, 3, 4]);
  assert.ok(Array.isArray(s));
  assert.ok(s instanceof ffi.Shape);
  assert.deepStrictEqual([...s], [2, 3, 4]);
  assert.strictEqual(s.length, 3);
  assert.strictEqual(s[2], 4);
  assert.ok(!(s.map((d) => d) instanceof ffi.Shape), 'map gives a plain array');
  assert.deepStrictEqual([...ffi.shape([])], []);
  assert.deepStrictEqual([...ffi.shape(new Set([5, 6]))], [5, 6]);
  assert.deepStrictEqual([...ffi.shape([7n, 2n ** 60n])], [7, 2n ** 60n]);
});

test('ffi.shape() refuses what is not an int64', () => {
  assert.throws(() => ffi.shape([1.5]), TypeError);
  assert.throws(() => ffi.shape(['2']), TypeError);
  assert.throws(() => ffi.shape([2 ** 53]), RangeError);
  assert.throws(() => ffi.shape([2n ** 63n]), RangeError);
  assert.throws(() => ffi.shape(3), TypeError);
});

test('a Shape passes as a runtime.ShapeTuple and comes back as a Shape', () => {
  assert.strictEqual(typeOf(ffi.shape([1])), 'Object');
  for (const dims of [[2, 3], [], [1, 2, 3, 4, 5, 6, 7, 8, 9]]) {
    const out = echo(ffi.shape(dims));
    assert.ok(out instanceof ffi.Shape && Array.isArray(out));
    assert.deepStrictEqual([...out], dims);
  }
});

test('dimensions beyond 2^53 come back as bigints, the others as numbers', () => {
  const max = 2n ** 63n - 1n;
  const min = -(2n ** 63n);
  const out = echo(ffi.shape([max, min, 0, -1, 2 ** 53 - 1]));
  assert.deepStrictEqual([...out], [max, min, 0, -1, 2 ** 53 - 1]);
  // under exactNumbers too: dimensions are never boxed
  const old = ffi.exactNumbers(true);
  try {
    assert.deepStrictEqual([...echo(ffi.shape([3, 4]))], [3, 4]);
  } finally {
    ffi.exactNumbers(old);
  }
});

test('a plain array stays a runtime.Array', () => {
  const out = echo([1, 2]);
  assert.ok(out instanceof ffi.Array);
  assert.throws(() => g('runtime.GetShapeTupleSize')([1, 2]), ffi.FFIError);
});

test('shapes made and read by the core', () => {
  assert.deepStrictEqual([...g('runtime.ShapeTuple')(1, -2, 65536)], [1, -2, 65536]);
  assert.deepStrictEqual([...g('runtime.ShapeTuple')()], []);
  const s = ffi.shape([5, 6, 7]);
  assert.strictEqual(g('runtime.GetShapeTupleSize')(s), 3);
  assert.strictEqual(g('runtime.GetShapeTupleElem')(s, 2), 7);
  const x = ffi.nd.empty([2, 3], 'int32');
  x.copyFrom(new Int32Array([1, 2, 3, 4, 5, 6]));
  assert.deepStrictEqual([...g('vm.builtin.shape_of')(x)], [2, 3]);
  const y = g('vm.builtin.reshape')(x, ffi.shape([3, 2]));
  assert.deepStrictEqual(y.shape, [3, 2]);
  const bytes = y.toBuffer();
  assert.deepStrictEqual([0, 1, 2, 3, 4, 5].map((i) => bytes.readInt32LE(4 * i)), [1, 2, 3, 4, 5, 6]);
});

test('shapes inside containers and through a JS callback', () => {
  const arr = g('runtime.Array')(ffi.shape([1, 2]), ffi.shape([]));
  assert.ok(arr.get(0) instanceof ffi.Shape);
  assert.deepStrictEqual([...arr.get(0)], [1, 2]);
  assert.deepStrictEqual([...arr.get(1)], []);
  let seen = null;
  const out = g('testing.apply')((x) => {
    seen = x;
    return x;
  }, ffi.shape([3, 4]));
  assert.ok(seen instanceof ffi.Shape);
  assert.deepStrictEqual([...out], [3, 4]);
  assert.deepStrictEqual([...g('testing.apply')(() => ffi.shape([9, 8]))], [9, 8]);
});

test('a Shape whose items were changed after ffi.shape() is checked again', () => {
  const s = ffi.shape([1, 2]);
  s[1] = 'x';
  assert.throws(() => echo(s), /Shape dimension 1/);
  s[1] = 2.5;
  assert.throws(() => echo(s), TypeError);
});
