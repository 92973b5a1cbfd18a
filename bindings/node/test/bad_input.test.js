'use strict';
// Bad input gives an error in JS, never a crash.
const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { LIB_DIR } = require('./helpers');
const ffi = require('..');

const echo = ffi.getGlobalFunc('testing.echo');

test('unsupported argument types are TypeErrors naming the type', () => {
  assert.throws(() => echo(Symbol('s')), TypeError);
  class Thing {}
  assert.throws(() => echo(new Thing()), /Thing/);
  assert.throws(() => echo(new DataView(new ArrayBuffer(4))), TypeError);
  assert.throws(() => ffi.getGlobalFunc(42), TypeError);
  assert.throws(() => ffi.loadModule(null), TypeError);
});

test('typed functions reject wrong types and arity with their kind', () => {
  const add = ffi.getGlobalFunc('testing.add');
  assert.throws(() => add('a', 1), (e) => e.kind === 'TypeError');
  assert.throws(() => add(1), (e) => e.kind === 'TypeError');
});

test('int64 overflow is a RangeError', () => {
  assert.throws(() => echo(2n ** 64n), RangeError);
  assert.throws(() => echo(ffi.int(2n ** 63n)), RangeError);
});

test('a missing file is a ValueError', () => {
  assert.throws(() => ffi.loadModule('/no/such/lib.so'),
    (e) => e instanceof ffi.FFIError && e.kind === 'ValueError');
});

test('a non-library file fails with the loader\'s message', () => {
  assert.throws(() => ffi.loadModule(path.join(LIB_DIR, 'libpolyffi_corrupt.so')),
    (e) => e instanceof ffi.FFIError && e.message.length > 0);
  const tmp = path.join(os.tmpdir(), `polyffi-node-not-a-lib-${process.pid}.so`);
  fs.writeFileSync(tmp, 'not an ELF file');
  try {
    assert.throws(() => ffi.loadModule(tmp), ffi.FFIError);
  } finally {
    fs.unlinkSync(tmp);
  }
});

test('freed handles are errors', () => {
  const nd = ffi.nd.empty([3], 'float32');
  nd.dispose();
  assert.throws(() => echo(nd), (e) => e.kind === 'ValueError');
  assert.throws(() => nd.toTypedArray(), ffi.FFIError);
  const arr = new ffi.Array([1]);
  arr.dispose();
  assert.throws(() => arr.length, ffi.FFIError);
});

test('handles cannot be forged from JS', () => {
  assert.throws(() => new ffi.NDArray(), TypeError);
  assert.throws(() => new ffi.Module({}, {}), TypeError);
  assert.throws(() => new ffi.PackedFunc(), TypeError);
});

test('bad shapes and dtypes for arrays', () => {
  assert.throws(() => ffi.nd.empty([-1]), TypeError);
  assert.throws(() => ffi.nd.empty([2], 'float7x'), (e) => e.kind === 'ValueError');
  assert.throws(() => ffi.nd.array(new Float32Array(3), [2, 2]), (e) => e.kind === 'ValueError');
  assert.throws(() => ffi.nd.array([1, 2]), TypeError);
});

test('a callback returning an unsupported value fails the call', () => {
  const apply = ffi.getGlobalFunc('testing.apply');
  assert.throws(() => apply(() => Symbol('x')), TypeError);
  assert.strictEqual(apply(() => 3), 3);  // and the binding keeps working
});
