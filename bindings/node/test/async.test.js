'use strict';
// callAsync and callbacks from native threads.
const test = require('node:test');
const assert = require('node:assert');
const { isMainThread } = require('node:worker_threads');
require('./helpers');
const ffi = require('..');

const sleep = ffi.getGlobalFunc('testing.sleep_ms');
const onThread = ffi.getGlobalFunc('testing.call_on_thread');

test('callAsync keeps the event loop turning during testing.sleep_ms', async () => {
  let ticks = 0;
  const timer = setInterval(() => { ticks += 1; }, 5);
  const result = await sleep.callAsync(200);
  clearInterval(timer);
  assert.strictEqual(result, null);
  assert.ok(ticks > 0, 'no timer fired while the call ran');
});

test('a synchronous call blocks the loop (the contrast)', async () => {
  let ticks = 0;
  const timer = setInterval(() => { ticks += 1; }, 5);
  sleep(50);
  const seen = ticks;
  clearInterval(timer);
  assert.strictEqual(seen, 0);
});

test('four concurrent callAsync calls overlap', async () => {
  // A long call queued first resolves last: the short ones ran beside it, not after it.
  const order = [];
  const calls = [sleep.callAsync(600).then(() => order.push('long'))];
  for (let i = 0; i < 3; i++) calls.push(sleep.callAsync(20).then(() => order.push(`short${i}`)));
  await Promise.all(calls);
  assert.strictEqual(order.length, 4);
  assert.strictEqual(order[3], 'long');
});

test('callAsync converts arguments before the hop and results after', async () => {
  const concat = ffi.getGlobalFunc('testing.concat');
  const args = ['ab', 'c\0d', '日本'];
  const p = concat.callAsync(...args);
  args[0] = 'changed';
  assert.strictEqual(await p, 'abc\0d日本');
  const reverse = ffi.getGlobalFunc('testing.bytes_reverse');
  const out = await reverse.callAsync(Buffer.from([1, 2, 3]));
  assert.deepStrictEqual([...out], [3, 2, 1]);
  const big = await ffi.getGlobalFunc('testing.echo').callAsync(2n ** 62n);
  assert.strictEqual(big, 2n ** 62n);
  const f32 = new Float32Array([1, 2]);
  assert.strictEqual(await ffi.getGlobalFunc('testing.nd_sum').callAsync(f32), 3);
});

test('a callback called from a native thread runs on the JS thread during callAsync', async () => {
  const seen = [];
  const result = await onThread.callAsync((a, b) => {
    seen.push(isMainThread);
    return a + b;
  }, 20, 22);
  assert.strictEqual(result, 42);
  assert.deepStrictEqual(seen, [true]);
});

test('callbacks from the pool worker itself (testing.call_n under callAsync)', async () => {
  const callN = ffi.getGlobalFunc('testing.call_n');
  let calls = 0;
  const total = await callN.callAsync((i) => { calls += 1; return i; }, 100);
  assert.strictEqual(total, 4950);
  assert.strictEqual(calls, 100);
});

test('a callback from a native thread while the JS thread is blocked fails at once', () => {
  let ran = false;
  assert.throws(() => onThread(() => { ran = true; return 1; }),
    (e) => e instanceof ffi.FFIError && e.kind === 'RuntimeError' && /callAsync/.test(e.message));
  assert.strictEqual(ran, false);
});

test('an exception thrown by a callback on a native thread keeps its identity', async () => {
  const boom = new TypeError('from the pool');
  await assert.rejects(onThread.callAsync(() => { throw boom; }), (e) => e === boom);
});

test('a release on a native thread is handed to the JS thread: finalizer once', async () => {
  let finalized = 0;
  const f = ffi.convert(() => 0, { onFinalize: () => { finalized += 1; } });
  ffi.getGlobalFunc('testing.release_on_thread')(f);
  f.dispose();
  ffi.getGlobalFunc('testing.join_release_threads')();
  for (let i = 0; i < 20 && finalized === 0; i++) await new Promise((r) => setImmediate(r));
  assert.strictEqual(finalized, 1);
});

test('many concurrent async calls with callbacks from threads', async () => {
  const results = await Promise.all(Array.from({ length: 16 }, (_, i) =>
    onThread.callAsync((x) => x * 2, i)));
  assert.deepStrictEqual(results, Array.from({ length: 16 }, (_, i) => i * 2));
});

// The core's pool: every worker held by a testing.sleep_ms call (long enough that none ends
// before the test has queued what it needs), returned once they have all started.
async function holdWorkers(ms) {
  const { numWorkers } = ffi.configureAsync();
  const holds = Array.from({ length: numWorkers }, () => sleep.callAsync(ms));
  while (ffi.configureAsync().queued > 0) await new Promise((r) => setImmediate(r));
  return holds;
}

test('configureAsync reports the core pool and rejects a negative setting', () => {
  const { numWorkers, queueLimit, queued } = ffi.configureAsync();
  assert.ok(numWorkers >= 1);
  assert.strictEqual(queueLimit, 1024);
  assert.strictEqual(queued, 0);
  assert.throws(() => ffi.configureAsync(0, -1),
    (e) => e instanceof ffi.FFIError && e.kind === 'ValueError');
  assert.throws(() => ffi.configureAsync('x'), TypeError);
});

test('a full queue rejects with an FFIError of kind QueueFullError', async () => {
  const holds = await holdWorkers(300);
  ffi.configureAsync(0, 1);
  try {
    const add = ffi.getGlobalFunc('testing.add');
    const queued = add.callAsync(1, 2);
    await assert.rejects(add.callAsync(3, 4),
      (e) => e instanceof ffi.FFIError && e.kind === 'QueueFullError' && /limit of 1/.test(e.message));
    assert.strictEqual(await queued, 3);
  } finally {
    ffi.configureAsync(0, 1024);
    await Promise.all(holds);
  }
});

test('aborting a call that has not started: it never runs, CancelledError', async () => {
  const holds = await holdWorkers(300);
  const apply = ffi.getGlobalFunc('testing.apply');
  let ran = false;
  const controller = new AbortController();
  const late = apply.callAsyncWithSignal(controller.signal, () => { ran = true; return 1; });
  assert.strictEqual(ffi.configureAsync().queued, 1);
  controller.abort();
  await assert.rejects(late, (e) => e instanceof ffi.FFIError && e.kind === 'CancelledError');
  assert.strictEqual(ffi.configureAsync().queued, 0);
  await Promise.all(holds);
  assert.strictEqual(ran, false);
});

test('an already aborted signal rejects without submitting; no signal or a late abort changes nothing',
  async () => {
    const add = ffi.getGlobalFunc('testing.add');
    const aborted = AbortSignal.abort();
    await assert.rejects(add.callAsyncWithSignal(aborted, 1, 2),
      (e) => e instanceof ffi.FFIError && e.kind === 'CancelledError');
    assert.strictEqual(await add.callAsyncWithSignal(undefined, 1, 2), 3);
    const controller = new AbortController();
    assert.strictEqual(await add.callAsyncWithSignal(controller.signal, 5, 6), 11);
    controller.abort();  // after completion: nothing left to cancel
  });
