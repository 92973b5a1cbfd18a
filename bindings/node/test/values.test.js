'use strict';
// The value rules of the default (plain-number) mode, checked through testing.return_type
// (the type code the C side saw) and testing.echo (what comes back).
const test = require('node:test');
const assert = require('node:assert');
require('./helpers');
const ffi = require('..');

const typeOf = ffi.getGlobalFunc('testing.return_type');
const echo = ffi.getGlobalFunc('testing.echo');

test('a safe-integer number is an int, any other number a float', () => {
  assert.strictEqual(typeOf(7), 'int');
  assert.strictEqual(typeOf(-(2 ** 53) + 1), 'int');
  assert.strictEqual(typeOf(2 ** 53), 'float');
  assert.strictEqual(typeOf(1.5), 'float');
  assert.strictEqual(typeOf(NaN), 'float');
  assert.strictEqual(typeOf(-0), 'float');  // an int cannot carry the sign of zero
  assert.ok(Object.is(echo(-0), -0));
});

test('ffi.float and ffi.int force the type code', () => {
  assert.strictEqual(typeOf(ffi.float(2)), 'float');
  assert.strictEqual(typeOf(ffi.int(3)), 'int');
  assert.strictEqual(typeOf(ffi.int(2n ** 60n)), 'int');
  assert.strictEqual(echo(ffi.float(2)), 2);
  assert.throws(() => typeOf(ffi.int(1.5)), TypeError);
});

test('bigint is an int64; ints beyond 2^53 come back as bigint', () => {
  assert.strictEqual(typeOf(5n), 'int');
  assert.strictEqual(echo(5n), 5);
  assert.strictEqual(echo(2n ** 53n), 2n ** 53n);
  assert.strictEqual(echo(2n ** 63n - 1n), 2n ** 63n - 1n);
  assert.strictEqual(echo(-(2n ** 63n)), -(2n ** 63n));
  assert.strictEqual(echo(2 ** 53 - 1), 2 ** 53 - 1);
});

test('a bigint outside int64 is a RangeError', () => {
  assert.throws(() => echo(2n ** 63n), RangeError);
  assert.throws(() => echo(-(2n ** 63n) - 1n), RangeError);
});

test('booleans, strings, null and undefined keep their meaning', () => {
  assert.strictEqual(echo(true), true);
  assert.strictEqual(typeOf(false), 'bool');
  assert.strictEqual(echo('日本 😀'), '日本 😀');
  assert.strictEqual(echo('a\0b'), 'a\0b');
  assert.strictEqual(echo(null), null);
  assert.strictEqual(echo(undefined), null);
});

test('Buffer and ArrayBuffer are bytes; bytes come back as a Buffer', () => {
  const reverse = ffi.getGlobalFunc('testing.bytes_reverse');
  const out = reverse(Buffer.from([0, 1, 2, 0]));
  assert.ok(Buffer.isBuffer(out));
  assert.deepStrictEqual([...out], [0, 2, 1, 0]);
  assert.strictEqual(typeOf(new Uint8Array([1, 2]).buffer), 'bytes');
});

test('a TypedArray passes as an NDArray view', () => {
  const sum = ffi.getGlobalFunc('testing.nd_sum');
  assert.strictEqual(sum(new Float32Array([1, 2, 3.5])), 6.5);
  assert.strictEqual(sum(new Int32Array([1, 2, 3])), 6);
});

test('arrays, Maps and plain objects become containers', () => {
  const sumInts = ffi.getGlobalFunc('testing.array_sum_ints');
  assert.strictEqual(sumInts([1, 2, 3, -10]), -4);
  const arr = echo([1, 'a', [2]]);
  assert.ok(arr instanceof ffi.Array);
  assert.strictEqual(arr.length, 3);
  assert.strictEqual(arr.get(1), 'a');
  assert.deepStrictEqual(arr.get(2).toArray(), [2]);
  const m = echo(new Map([['k', 1], ['j', 'two']]));
  assert.ok(m instanceof ffi.Map);
  assert.strictEqual(m.size, 2);
  assert.strictEqual(m.get('j'), 'two');
  assert.ok(m.has('k'));
  assert.strictEqual(echo({ x: 1.5 }).get('x'), 1.5);
  const built = new ffi.Array([1, 2]);
  assert.strictEqual(ffi.handleAddress(echo(built)), ffi.handleAddress(built));
});

test('devices and dtypes', () => {
  const d = echo(ffi.cpu(0));
  assert.ok(d instanceof ffi.Device);
  assert.ok(d.equals(ffi.cpu()));
  assert.strictEqual(echo(new ffi.DataType('float32')), 'float32');
  assert.strictEqual(typeOf(new ffi.DataType('int8x4')), 'dtype');
});

test('exactNumbers boxes numbers so a forwarded value keeps its code', () => {
  const previous = ffi.exactNumbers(true);
  try {
    const apply = ffi.getGlobalFunc('testing.apply');
    const out = apply((x) => x, ffi.float(2));
    assert.ok(out instanceof ffi.Float);
    assert.strictEqual(out.value, 2);
    assert.ok(apply((x) => x, 2) instanceof ffi.Int);
  } finally {
    ffi.exactNumbers(previous);
  }
});
