'use strict';
// The addon in worker_threads: load, call, and exit while callbacks made there are alive.
const test = require('node:test');
const assert = require('node:assert');
const { Worker } = require('node:worker_threads');
const { LIB_DIR } = require('./helpers');
const ffi = require('..');

function runWorker(source) {
  return new Promise((resolve, reject) => {
    const w = new Worker(source, { eval: true, workerData: { LIB_DIR } });
    const messages = [];
    w.on('message', (m) => messages.push(m));
    w.on('error', reject);
    w.on('exit', (code) => resolve({ code, messages }));
  });
}

const prelude = `
const { parentPort, workerData } = require('node:worker_threads');
const ffi = require(${JSON.stringify(require.resolve('..'))});
ffi.loadModule(workerData.LIB_DIR + '/libpolyffi_testing.so');
`;

test('the addon loads and calls in a worker', async () => {
  const { code, messages } = await runWorker(`${prelude}
    const add3 = ffi.getGlobalFunc('testing.add3');
    parentPort.postMessage(add3(1, 2, 3));
    ffi.getGlobalFunc('testing.sleep_ms').callAsync(5).then(() => parentPort.postMessage('async'));
  `);
  assert.strictEqual(code, 0);
  assert.deepStrictEqual(messages, [6, 'async']);
});

test('a worker exits while a callback it made is still registered', async () => {
  const { code, messages } = await runWorker(`${prelude}
    ffi.registerFunc('node.worker.cb', (x) => x + 1, { override: true });
    parentPort.postMessage(ffi.getGlobalFunc('node.worker.cb')(1));
  `);
  assert.strictEqual(code, 0);
  assert.deepStrictEqual(messages, [2]);
  // The worker's environment is gone: calling its callback is an error, not a crash.
  const cb = ffi.getGlobalFunc('node.worker.cb');
  assert.throws(() => cb(1), (e) => e instanceof ffi.FFIError && /exited/.test(e.message));
  await assert.rejects(cb.callAsync(1), (e) => e instanceof ffi.FFIError);
  // Dropping the last reference runs its finalizer without touching the dead environment.
  ffi.removeGlobalFunc('node.worker.cb');
  cb.dispose();
});

test('a worker calls a callback of the main thread through callAsync', async () => {
  let calls = 0;
  ffi.registerFunc('node.main.cb', (x) => { calls += 1; return x * 10; }, { override: true });
  const { code, messages } = await runWorker(`${prelude}
    const cb = ffi.getGlobalFunc('node.main.cb');
    cb.callAsync(4).then((v) => parentPort.postMessage(v), (e) => parentPort.postMessage(e.message));
  `);
  assert.strictEqual(code, 0);
  assert.deepStrictEqual(messages, [40]);
  assert.strictEqual(calls, 1);
  ffi.removeGlobalFunc('node.main.cb');
});

test('terminating a worker in the middle of callAsync is clean', async () => {
  const w = new Worker(`${prelude}
    const apply = ffi.getGlobalFunc('testing.call_on_thread');
    parentPort.postMessage('started');
    apply.callAsync(() => { while (true) {} });
  `, { eval: true, workerData: { LIB_DIR } });
  await new Promise((resolve) => w.once('message', resolve));
  await new Promise((r) => setTimeout(r, 50));
  const code = await w.terminate();
  assert.strictEqual(typeof code, 'number');
});
