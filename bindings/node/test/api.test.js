'use strict';
// Registry, callbacks, errors, modules and dispose, in the default mode.
const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { LIB_DIR, tick } = require('./helpers');
const ffi = require('..');

test('version and runtimeVersion agree with package.json', () => {
  assert.strictEqual(ffi.version, require('../package.json').version);
  assert.strictEqual(ffi.runtimeVersion().split('.')[0], ffi.version.split('.')[0]);
});

test('getGlobalFunc: missing is an FFIError of kind ValueError, or null when allowed', () => {
  assert.throws(() => ffi.getGlobalFunc('no.such.function'),
    (e) => e instanceof ffi.FFIError && e.kind === 'ValueError' &&
      e.message === 'Cannot find global function no.such.function');
  assert.strictEqual(ffi.getGlobalFunc('no.such.function', { allowMissing: true }), null);
});

test('registerFunc, listGlobalFuncNames, removeGlobalFunc', () => {
  const f = ffi.registerFunc('node.test.mul', (a, b) => a * b);
  assert.ok(f instanceof ffi.PackedFunc);
  assert.strictEqual(ffi.getGlobalFunc('node.test.mul')(6, 7), 42);
  assert.ok(ffi.listGlobalFuncNames().includes('node.test.mul'));
  assert.throws(() => ffi.registerFunc('node.test.mul', () => 0), (e) => e.kind === 'ValueError');
  ffi.registerFunc('node.test.mul', () => 1, { override: true });
  assert.strictEqual(ffi.getGlobalFunc('node.test.mul')(6, 7), 1);
  ffi.removeGlobalFunc('node.test.mul');
  assert.strictEqual(ffi.getGlobalFunc('node.test.mul', { allowMissing: true }), null);
  assert.strictEqual(f(2, 3), 6);  // the handle outlives the registration
});

test('initApi attaches prefix.x but not prefix.a.b', () => {
  ffi.registerFunc('nodeapi.one', () => 1);
  ffi.registerFunc('nodeapi.deep.two', () => 2);
  const api = ffi.initApi('nodeapi');
  assert.strictEqual(api.one(), 1);
  assert.strictEqual(api.deep, undefined);
  assert.strictEqual(ffi.initApi('testing').add3(1, 2, 3), 6);
  ffi.removeGlobalFunc('nodeapi.one');
  ffi.removeGlobalFunc('nodeapi.deep.two');
});

test('a JS exception thrown in a callback comes out as the same object', () => {
  const apply = ffi.getGlobalFunc('testing.apply');
  const boom = new RangeError('boom');
  assert.throws(() => apply(() => { throw boom; }), (e) => e === boom);
  const custom = new ffi.FFIError('mine', 'MyKind');
  assert.throws(() => apply(() => { throw custom; }), (e) => e === custom);
  // C code that catches the error sees its kind and message.
  const catcher = ffi.getGlobalFunc('testing.call_and_catch');
  assert.match(catcher(() => { throw new TypeError('bad'); }), /^TypeError: bad/);
});

test('a JS exception keeps its identity through callAsync', async () => {
  const apply = ffi.getGlobalFunc('testing.apply');
  const boom = new Error('async boom');
  await assert.rejects(apply.callAsync(() => { throw boom; }), (e) => e === boom);
});

test('runtime errors are FFIErrors with the kind', () => {
  const raise = ffi.getGlobalFunc('testing.raise_error');
  assert.throws(() => raise('KeyError', 'k'), (e) => e instanceof ffi.FFIError &&
    e instanceof Error && e.kind === 'KeyError' && e.message === 'k');
  const add = ffi.getGlobalFunc('testing.add');
  assert.throws(() => add(1.5, 2), (e) => e.kind === 'TypeError' &&
    e.message.includes('expected int but got float'));
});

test('closures returned by C are PackedFuncs; JS functions passed in are callbacks', () => {
  const g = ffi.getGlobalFunc('testing.return_closure')(10);
  assert.ok(g instanceof ffi.PackedFunc);
  assert.strictEqual(g(5), 15);
  const callN = ffi.getGlobalFunc('testing.call_n');
  assert.strictEqual(callN((i) => i * 2, 10), 90);
});

test('the finalizer of a callback runs once, after dispose, on the JS thread', async () => {
  let finalized = 0;
  const f = ffi.convert((x) => x + 1, { onFinalize: () => { finalized += 1; } });
  const wrapped = ffi.getGlobalFunc('testing.wrap_callback')(f);
  f.dispose();
  assert.strictEqual(wrapped(1), 2);  // the wrapper keeps it alive
  await tick();
  assert.strictEqual(finalized, 0);
  wrapped.dispose();
  for (let i = 0; i < 5 && finalized === 0; i++) await tick();
  assert.strictEqual(finalized, 1);
});

test('dispose: use after dispose is an FFIError, double dispose is fine', () => {
  const f = ffi.getGlobalFunc('testing.add3');
  f.dispose();
  f.dispose();
  assert.ok(f.disposed);
  assert.throws(() => f(1, 2, 3), (e) => e instanceof ffi.FFIError && e.kind === 'ValueError');
  assert.throws(() => ffi.getGlobalFunc('testing.echo')(f), (e) => e.kind === 'ValueError');
  const g = ffi.getGlobalFunc('testing.nop');
  g[Symbol.dispose || Symbol.for('nodejs.dispose')]();
  assert.throws(() => g(), ffi.FFIError);
  const nd = ffi.nd.empty([2]);
  nd.dispose();
  assert.throws(() => nd.shape, ffi.FFIError);
});

test('dispose during callAsync: the call finishes, later calls fail', async () => {
  const sleep = ffi.getGlobalFunc('testing.sleep_ms');
  const p = sleep.callAsync(30);
  sleep.dispose();
  assert.strictEqual(await p, null);
  assert.throws(() => sleep(1), ffi.FFIError);
});

test('modules: getFunction, entryFunc, typeKey, importModule', () => {
  const m = ffi.loadModule(path.join(LIB_DIR, 'libpolyffi_test_dso.so'));
  assert.ok(m instanceof ffi.Module);
  assert.strictEqual(typeof m.typeKey, 'string');
  assert.throws(() => m.getFunction('no_such_fn'), (e) => e.kind === 'AttributeError');
  assert.strictEqual(m.getFunction('no_such_fn', { allowMissing: true }), null);
  m.dispose();
  assert.throws(() => m.getFunction('x'), ffi.FFIError);
});
