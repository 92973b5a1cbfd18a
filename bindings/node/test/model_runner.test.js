'use strict';
// The core's model runner through the Node binding: one loaded model, many calls at once.
// VirtualMachine.invokeAsync and GraphModule.inferAsync are stateless and run on the runner's
// pool of executors (sharing the weights) on libuv threads: 8 concurrent calls (and 8 worker
// threads, each with its own runner over the same library) must give exactly the one-call outputs.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { REPO_ROOT } = require('./helpers');
const ffi = require('..');

const TVM018 = path.join(REPO_ROOT, 'tests', 'tvm_models', 'tvm018');
const RELAX = path.join(REPO_ROOT, 'tests', 'tvm_models', 'tvm027', 'relax');
const CONCURRENT = 8;
const ROUNDS = 10;
const TYPED = { float32: Float32Array, float64: Float64Array, int32: Int32Array };

function loadTensor(dir, desc) {
  const bytes = fs.readFileSync(path.join(dir, desc.file));
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return ffi.nd.array(new TYPED[desc.dtype](copy.buffer), desc.shape);
}

/** Inputs that differ from call to call: float32 inputs scaled by 1 + k/8. */
function variants(dir, descs, n = 6) {
  const out = [];
  for (let k = 0; k < n; k++) {
    out.push(descs.map((d) => {
      const a = loadTensor(dir, d);
      if (d.dtype === 'float32') {
        const ta = a.toTypedArray();
        for (let i = 0; i < ta.length; i++) ta[i] *= 1 + k / 8;
      }
      return a;
    }));
  }
  return out;
}

const bytes = (outs) => outs.map((o) => o.toBuffer().toString('hex'));
const asList = (r) => (Array.isArray(r) ? r : [r]);

async function concurrentEqualsSerial(call, cases) {
  const expected = [];
  for (const c of cases) expected.push(bytes(asList(await call(c))));
  assert.notDeepStrictEqual(expected[0], expected[1], 'the variants really differ');
  let mismatches = 0;
  await Promise.all(Array.from({ length: CONCURRENT }, async (_, t) => {
    for (let r = 0; r < ROUNDS; r++) {
      const k = (t + r) % cases.length;
      const got = asList(await call(cases[k]));
      if (JSON.stringify(bytes(got)) !== JSON.stringify(expected[k])) mismatches++;
      got.forEach((g) => g.dispose());
    }
  }));
  assert.strictEqual(mismatches, 0);
  return expected;
}

for (const name of ['digits', 'two_outputs', 'mlp_params']) {
  test(`VirtualMachine ${name}: ${CONCURRENT} concurrent invokeAsync equal one call`, async () => {
    const io = JSON.parse(fs.readFileSync(path.join(RELAX, name, 'io.json'), 'utf8'));
    const run = io.runs[0];
    const lib = ffi.loadModule(path.join(RELAX, run.library));
    const vm = new ffi.VirtualMachine(lib, ffi.cpu());
    const cases = variants(path.join(RELAX, name), run.inputs);
    try {
      await concurrentEqualsSerial((c) => vm.invokeAsync('forward', ...c), cases);
      const poolSize = vm.runner.getFunction('pool_size');
      const n = Number(poolSize());
      poolSize.dispose();
      assert.ok(n >= 1 && n <= CONCURRENT, `pool of ${n}`);
    } finally {
      cases.flat().forEach((a) => a.dispose());
      vm.dispose();
      lib.dispose();
    }
  });
}

for (const name of ['digits_b1', 'multi_io_b1']) {
  test(`GraphModule ${name}: ${CONCURRENT} concurrent inferAsync equal one call`, async () => {
    const dir = path.join(TVM018, name);
    const io = JSON.parse(fs.readFileSync(path.join(dir, 'io.json'), 'utf8'));
    const lib = ffi.loadModule(path.join(dir, 'factory.so'));
    const gm = ffi.GraphModule.fromFactory(lib, ffi.cpu());
    const cases = variants(dir, io.inputs);
    try {
      assert.deepStrictEqual(gm.inputNames, io.inputs.map((d) => d.name));
      const expected = await concurrentEqualsSerial((c) => gm.inferAsync(...c), cases);
      // By name, synchronously, the same outputs.
      const named = Object.fromEntries(io.inputs.map((d, i) => [d.name, cases[0][i]]));
      const got = gm.infer(named);
      assert.deepStrictEqual(bytes(got), expected[0]);
      got.forEach((g) => g.dispose());
    } finally {
      cases.flat().forEach((a) => a.dispose());
      gm.dispose();
      lib.dispose();
    }
  });
}

test('GraphModule.infer errors are typed', () => {
  const dir = path.join(TVM018, 'multi_io_b1');
  const lib = ffi.loadModule(path.join(dir, 'factory.so'));
  const gm = ffi.GraphModule.fromFactory(lib);
  const bare = new ffi.GraphModule(lib.getFunction('default')(ffi.cpu()));
  try {
    const x = ffi.nd.empty([1, 8]);
    assert.throws(() => gm.infer(x), (e) => e.kind === 'TypeError' && /takes 3 inputs/.test(e.message));
    assert.throws(() => bare.infer(x), (e) => e.kind === 'TypeError' && /fromFactory/.test(e.message));
    // A Buffer is a uint8 array to the executor (not bytes): a float32 input refuses its dtype.
    for (const call of [() => bare.setInput(0, Buffer.alloc(32)), () => gm.infer(Buffer.alloc(32),
      Buffer.alloc(32), Buffer.alloc(32))]) {
      assert.throws(call, (e) => e.kind === 'ValueError' && /uint8/.test(e.message));
    }
    x.dispose();
  } finally {
    bare.dispose();
    gm.dispose();
    lib.dispose();
  }
});

test(`${CONCURRENT} worker threads run one model library at once`, async () => {
  const name = 'digits';
  const dir = path.join(RELAX, name);
  const io = JSON.parse(fs.readFileSync(path.join(dir, 'io.json'), 'utf8'));
  const run = io.runs[0];
  const want = fs.readFileSync(path.join(dir, run.outputs[0].file)).toString('hex');
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const fs = require('node:fs');
    const ffi = require(${JSON.stringify(require.resolve('..'))});
    const lib = ffi.loadModule(workerData.lib);
    const vm = new ffi.VirtualMachine(lib);
    const data = new Float32Array(new Uint8Array(fs.readFileSync(workerData.input)).buffer);
    const x = ffi.nd.array(data, [1, 64]);
    const outs = [];
    for (let i = 0; i < ${ROUNDS}; i++) {
      const y = vm.invoke('forward', x);
      outs.push(y.toBuffer().toString('hex'));
      y.dispose();
    }
    x.dispose(); vm.dispose(); lib.dispose();
    parentPort.postMessage(outs);
  `;
  const results = await Promise.all(Array.from({ length: CONCURRENT }, () => new Promise(
    (resolve, reject) => {
      const w = new Worker(source, {
        eval: true,
        workerData: { lib: path.join(RELAX, run.library), input: path.join(dir, run.inputs[0].file) },
      });
      let outs = null;
      w.on('message', (m) => { outs = m; });
      w.on('error', reject);
      w.on('exit', (code) => (code === 0 ? resolve(outs) : reject(new Error(`exit ${code}`))));
    })));
  for (const outs of results) assert.deepStrictEqual(outs, Array(ROUNDS).fill(want));
});
