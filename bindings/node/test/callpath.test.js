'use strict';
// The call path's shortcuts: JS callbacks are direct functions that write their result straight
// into the caller's slot (strings through the runtime's return storage, objects with a reference
// of their own), a callback passed to a synchronous call uses its JS function's value only while
// that call lasts, and a PackedFunc calls its function's direct entry.
const test = require('node:test');
const assert = require('node:assert');
const { tick } = require('./helpers');
const ffi = require('..');

const apply = ffi.getGlobalFunc('testing.apply');
const wrap = ffi.getGlobalFunc('testing.wrap_callback');
const onThread = ffi.getGlobalFunc('testing.call_on_thread');
const callN = ffi.getGlobalFunc('testing.call_n');
const liveObjects = ffi.getGlobalFunc('testing.live_objects');

test('every kind of callback result reaches C unchanged', () => {
  const cases = [
    [7, 7], [-3, -3], [2 ** 53 - 1, 2 ** 53 - 1], [1.5, 1.5], [NaN, NaN], [Infinity, Infinity],
    [true, true], [false, false], [null, null], [undefined, null], [2n ** 62n, 2n ** 62n],
    ['', ''], ['abc', 'abc'], ['日本語', '日本語'], ['x'.repeat(1000), 'x'.repeat(1000)],
  ];
  for (const [value, want] of cases) {
    assert.deepStrictEqual(apply(() => value), want, `callback returning ${String(value)}`);
  }
  assert.ok(Object.is(apply(() => -0), -0), '-0 stays a float');
  // More arguments than the trampoline keeps inline.
  assert.strictEqual(apply((...xs) => xs.reduce((a, b) => a + b, 0), 1, 2, 3, 4, 5, 6, 7, 8, 9), 45);
  const bytes = apply(() => Buffer.from([0, 1, 2, 255]));
  assert.deepStrictEqual([...bytes], [0, 1, 2, 255]);
});

test('objects returned by a callback are handed over with a reference of their own', async () => {
  global.gc();
  await tick();
  const before = liveObjects();
  const inner = ffi.getGlobalFunc('testing.return_closure')(10);
  const got = apply(() => inner);
  inner.dispose();  // the result holds its own reference
  assert.strictEqual(got(5), 15);
  const made = apply(() => (x) => x * 2);  // a JS function becomes a callback on the way out
  assert.strictEqual(made(21), 42);
  const arr = apply(() => [1, 2, 'three']);  // a runtime Array, made for the result
  assert.strictEqual(arr.length, 3);
  assert.strictEqual(arr.get(2), 'three');
  for (const h of [got, made, arr]) h.dispose();
  assert.strictEqual(liveObjects(), before);
});

test('an unsupported callback result is a TypeError, and nothing leaks', () => {
  assert.throws(() => apply(() => Symbol('s')),
    (e) => e instanceof TypeError && /unsupported/.test(e.message));
  const err = new RangeError('from the callback');
  assert.throws(() => apply(() => { throw err; }), (e) => e === err);
  assert.strictEqual(apply(() => 5), 5);  // the next call is clean
});

test('a callback kept by C outlives the call that passed it', () => {
  // wrap_callback keeps the callback: after the call returned, later calls reach the JS
  // function through its reference, not through the value of the finished call.
  const wrappers = [];
  for (let i = 0; i < 50; i++) wrappers.push(wrap((x) => x + i));
  global.gc();
  for (let i = 0; i < 50; i++) assert.strictEqual(wrappers[i](100), 100 + i);
  // A wrapper called inside another synchronous call (nested scopes).
  assert.strictEqual(callN((i) => wrappers[3](i), 5), 0 + 1 + 2 + 3 + 4 + 5 * 3);
  for (const w of wrappers) w.dispose();
});

test('strings and bytes returned by a callback on a native thread', async () => {
  assert.strictEqual(await onThread.callAsync((s) => `${s}!\0end`, 'hi'), 'hi!\0end');
  const out = await onThread.callAsync(() => Buffer.from([9, 8, 7]));
  assert.deepStrictEqual([...out], [9, 8, 7]);
  assert.strictEqual(await onThread.callAsync(() => 2.5), 2.5);
  assert.strictEqual(await onThread.callAsync(() => null), null);
});

test('a PackedFunc over a classic or a direct function, and after dispose', () => {
  const add3 = ffi.getGlobalFunc('testing.add3');
  assert.strictEqual(add3(1, 2, 3), 6);
  assert.throws(() => add3(2 ** 62, 2 ** 62, 2 ** 62), ffi.FFIError);  // the callee's error
  const direct = ffi.convert((a, b) => a * b);  // a JS callback: a direct function
  assert.strictEqual(direct(6, 7), 42);
  const viaC = wrap(direct);
  assert.strictEqual(viaC(3, 4), 12);
  direct.dispose();
  assert.throws(() => direct(1, 2), (e) => e instanceof ffi.FFIError && e.kind === 'ValueError');
  assert.strictEqual(viaC(5, 5), 25);
  viaC.dispose();
  add3.dispose();
  assert.throws(() => add3(1, 2, 3), (e) => e.kind === 'ValueError');
});

test('a direct callee\'s dtype and unsigned results come out as a classic call gives them', async () => {
  // The direct entry hands on the callee's own type code; the classic path (TVMFuncCall, which
  // callAsync's pool uses) turns a dtype into its string and an unsigned int into an int.
  const dtype = ffi.getGlobalFunc('testing.dtype');
  const uint = ffi.getGlobalFunc('testing.uint');
  const echo = ffi.getGlobalFunc('testing.echo');
  for (const text of ['float32', 'int8', 'uint64', 'float16x4', 'bool', 'handle']) {
    assert.strictEqual(dtype(text), text);
    assert.strictEqual(await dtype.callAsync(text), text);
  }
  assert.strictEqual(echo(new ffi.DataType('int32x2')), 'int32x2');
  for (const x of [0, 7, -1, 2 ** 53 - 1, -(2 ** 53) + 1, 2n ** 62n, -(2n ** 63n)]) {
    const want = typeof x === 'bigint' && x >= -(2n ** 53n) + 1n && x <= 2n ** 53n - 1n ? Number(x) : x;
    assert.strictEqual(uint(x), want, `uint(${x})`);
    assert.strictEqual(await uint.callAsync(x), want, `uint(${x}) through callAsync`);
  }
  const previous = ffi.exactNumbers(true);
  try {
    const got = uint(5);
    assert.ok(got instanceof ffi.Int, 'an unsigned result is an Int under exactNumbers');
    assert.strictEqual(Number(got), 5);
  } finally {
    ffi.exactNumbers(previous);
  }
  assert.throws(() => uint('x'), (e) => e instanceof ffi.FFIError && e.kind === 'TypeError');
  for (const f of [dtype, uint, echo]) f.dispose();
});

test('numbers first, then other values: the call goes on where the number path stopped', () => {
  const sum = ffi.getGlobalFunc('testing.sum');
  const makeArray = ffi.getGlobalFunc('testing.make_array');
  const typeOf = ffi.getGlobalFunc('testing.return_type');
  assert.strictEqual(sum(), 0);
  assert.strictEqual(sum(1, 2, 3, 4), 10);  // the most the number path takes
  assert.strictEqual(sum(1, 2, 3, 4, 5), 15);  // more than the inline arguments
  assert.strictEqual(sum(1, 2, true), 4);  // a bool after two numbers
  assert.throws(() => sum(1, 2, 'x'), (e) => e instanceof ffi.FFIError && e.kind === 'TypeError' &&
    /argument 2 expected int but got str/.test(e.message));
  const arr = makeArray(1, 2.5, 'three', 4, -0);
  assert.deepStrictEqual([0, 1, 2, 3].map((i) => arr.get(i)), [1, 2.5, 'three', 4]);
  assert.ok(Object.is(arr.get(4), -0));  // converted after the string: still a float
  arr.dispose();
  for (const [v, want] of [[1, 'int'], [-0, 'float'], [1.5, 'float'], [NaN, 'float'],
    [2 ** 53, 'float'], [-(2 ** 53) + 1, 'int'], ['s', 'str'], [null, 'None']]) {
    assert.strictEqual(typeOf(v), want, `${String(v)}`);
  }
  const f = ffi.getGlobalFunc('testing.add3');
  f.dispose();
  assert.throws(() => f(1, 'x', 3), (e) => e instanceof ffi.FFIError && e.kind === 'ValueError');
});

test('int results on either side of 32 bits and of 2^53', () => {
  const add3 = ffi.getGlobalFunc('testing.add3');
  for (const [args, want] of [
    [[2 ** 31 - 1, 0, 0], 2 ** 31 - 1], [[2 ** 31 - 1, 1, 0], 2 ** 31],
    [[-(2 ** 31), 0, 0], -(2 ** 31)], [[-(2 ** 31), -1, 0], -(2 ** 31) - 1],
    [[2 ** 53 - 1, 0, 0], 2 ** 53 - 1], [[-(2 ** 53) + 1, 0, 0], -(2 ** 53) + 1], [[0, 0, 0], 0],
  ]) {
    const got = add3(...args);
    assert.ok(Object.is(got, want), `add3(${args}) = ${got}`);
  }
  assert.strictEqual(add3(2 ** 53 - 1, 1, 0), 2n ** 53n);  // past the safe range: a BigInt
  assert.strictEqual(add3(-(2 ** 53) + 1, -1, 0), -(2n ** 53n));
  add3.dispose();
});
