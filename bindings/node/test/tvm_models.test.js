'use strict';
// Models compiled by Apache TVM 0.18 (tests/tvm_models/tvm018) through the Node binding. Every
// graph fixture runs as the exported factory library (GraphModule.fromFactory and
// new GraphModule(lib.getFunction('default')(cpu))) and as the three artifacts (graph.json +
// kernels.so + params.bin); the TE kernels run with scalars and a call back into a JS global.
// Every output must equal the bytes TVM's own runtime wrote. Inputs are TypedArray views over
// the bytes read from the files (passed to the runtime zero-copy).
const test = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { REPO_ROOT } = require('./helpers');
const ffi = require('..');

const FIXTURES = path.join(REPO_ROOT, 'tests', 'tvm_models', 'tvm018');
const MANIFEST = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'manifest.json'), 'utf8'));
const GRAPHS = MANIFEST.fixtures.filter((name) => name !== 'te_kernels');

const TYPED = {
  float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array,
  int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array,
  uint32: Uint32Array, uint64: BigUint64Array,
};

const readIo = (dir) => JSON.parse(fs.readFileSync(path.join(dir, 'io.json'), 'utf8'));
const count = (shape) => shape.reduce((a, b) => a * b, 1);

/** The file's bytes in a fresh (aligned) ArrayBuffer. */
function readBytes(file) {
  const size = fs.statSync(file).size;
  const bytes = new Uint8Array(new ArrayBuffer(size));
  const fd = fs.openSync(file, 'r');
  try {
    let done = 0;
    while (done < size) done += fs.readSync(fd, bytes, done, size - done, done);
  } finally {
    fs.closeSync(fd);
  }
  return bytes;
}

/** A TypedArray of the tensor's dtype over the file's bytes (no copy). */
function loadTensor(dir, desc) {
  const Typed = TYPED[desc.dtype];
  assert.ok(Typed, `no TypedArray for ${desc.dtype}`);
  const bytes = readBytes(path.join(dir, desc.file));
  assert.strictEqual(bytes.byteLength, count(desc.shape) * Typed.BYTES_PER_ELEMENT, desc.file);
  return new Typed(bytes.buffer, bytes.byteOffset, bytes.byteLength / Typed.BYTES_PER_ELEMENT);
}

const bytesOf = (ta) => Buffer.from(ta.buffer, ta.byteOffset, ta.byteLength);

function assertSameBytes(got, expected, what) {
  const a = bytesOf(got);
  const b = bytesOf(expected);
  assert.strictEqual(a.length, b.length, `${what}: byte length`);
  if (!a.equals(b)) {
    let i = 0;
    while (i < got.length && Object.is(got[i], expected[i])) i++;
    assert.fail(`${what} differs from TVM's output; first at element ${i}: ${got[i]} != ${expected[i]}`);
  }
}

/** Sets the inputs (views over the file bytes), runs, and compares every output with TVM's. */
async function checkOutputs(gm, dir, io, { async }) {
  for (const desc of io.inputs) gm.setInput(desc.name, loadTensor(dir, desc));
  if (async) await gm.runAsync();
  else gm.run();
  assert.strictEqual(gm.getNumOutputs(), io.outputs.length);
  // get_num_inputs counts the bound params too (TVM's graph executor does the same).
  assert.strictEqual(gm.getNumInputs(), io.inputs.length + io.params.length);
  for (const [i, desc] of io.outputs.entries()) {
    const expected = loadTensor(dir, desc);
    const out = gm.getOutput(i);
    try {
      assert.deepStrictEqual(out.shape.map(Number), desc.shape, `output ${i} shape`);
      assert.strictEqual(String(out.dtype), desc.dtype, `output ${i} dtype`);
      assertSameBytes(out.toTypedArray(), expected, `output ${i}`);
    } finally {
      out.dispose();
    }
    // The same output copied into a caller's TypedArray (a zero-copy view as destination).
    const into = gm.getOutput(i, new expected.constructor(expected.length));
    assertSameBytes(into, expected, `output ${i} (into a TypedArray)`);
  }
}

test('the manifest checksums match the fixture files', () => {
  assert.strictEqual(MANIFEST.tvm_version, '0.18.0');
  const entries = Object.entries(MANIFEST.sha256);
  assert.ok(entries.length > 0);
  for (const [rel, digest] of entries) {
    const got = crypto.createHash('sha256').update(fs.readFileSync(path.join(FIXTURES, rel)));
    assert.strictEqual(got.digest('hex'), digest, rel);
  }
  assert.deepStrictEqual(GRAPHS.sort(),
    ['conv_b1', 'conv_b16', 'digits_b1', 'digits_b359', 'multi_io_b1', 'multi_io_b64']);
});

for (const name of GRAPHS) {
  const dir = path.join(FIXTURES, name);

  test(`${name}: factory.so through GraphModule.fromFactory and runAsync`, async () => {
    const io = readIo(dir);
    assert.ok(io.forms.includes('factory'));
    const lib = ffi.loadModule(path.join(dir, 'factory.so'));
    assert.strictEqual(lib.typeKey, 'GraphExecutorFactory');
    const imports = lib.imports;
    assert.deepStrictEqual(imports.map((m) => m.typeKey), ['library']);
    for (const m of imports) m.dispose();
    const gm = ffi.GraphModule.fromFactory(lib, ffi.cpu());
    try {
      await checkOutputs(gm, dir, io, { async: true });
    } finally {
      gm.dispose();
      lib.dispose();
    }
  });

  test(`${name}: factory default(cpu) passed to new GraphModule, run`, async () => {
    const io = readIo(dir);
    const lib = ffi.loadModule(path.join(dir, 'factory.so'));
    const gm = new ffi.GraphModule(lib.getFunction('default')(ffi.cpu()));
    try {
      await checkOutputs(gm, dir, io, { async: false });
      // Run again on the same executor: the same bytes (nothing left over from the first run).
      await checkOutputs(gm, dir, io, { async: true });
    } finally {
      gm.dispose();
      lib.dispose();
    }
  });

  test(`${name}: graph.json + kernels.so + params.bin through tvm.graph_executor.create`, async () => {
    const io = readIo(dir);
    assert.ok(io.forms.includes('three_artifacts'));
    const kernels = ffi.loadModule(path.join(dir, 'kernels.so'));
    assert.strictEqual(kernels.typeKey, 'library');
    const gm = ffi.GraphModule.create(fs.readFileSync(path.join(dir, 'graph.json'), 'utf8'),
      kernels, ffi.cpu());
    try {
      gm.loadParams(fs.readFileSync(path.join(dir, 'params.bin')));
      await checkOutputs(gm, dir, io, { async: false });
    } finally {
      gm.dispose();
      kernels.dispose();
    }
  });
}

test('factory accessors: get_graph_json, get_graph_params, remove_params', () => {
  const dir = path.join(FIXTURES, 'conv_b1');
  const io = readIo(dir);
  const lib = ffi.loadModule(path.join(dir, 'factory.so'));
  assert.strictEqual(lib.getFunction('get_graph_json')(),
    fs.readFileSync(path.join(dir, 'graph.json'), 'utf8'));
  const params = lib.getFunction('get_graph_params')();
  assert.ok(params instanceof ffi.Map);
  assert.deepStrictEqual(params.keys().sort(), io.params);
  for (const [, v] of params.entries()) {
    assert.ok(v instanceof ffi.NDArray);
    v.dispose();
  }
  const bare = lib.getFunction('remove_params')();
  assert.strictEqual(bare.typeKey, 'GraphExecutorFactory');
  const none = bare.getFunction('get_graph_params')();
  assert.strictEqual(none.size, 0);
  // Without its params the executor still loads them from params.bin.
  const gm = ffi.GraphModule.fromFactory(bare);
  gm.loadParams(fs.readFileSync(path.join(dir, 'params.bin')));
  return checkOutputs(gm, dir, io, { async: false }).finally(() => {
    gm.dispose();
    for (const h of [none, params, bare, lib]) h.dispose();
  });
});

test('GraphModule rejects the factory itself and says to call default(device)', () => {
  const lib = ffi.loadModule(path.join(FIXTURES, 'digits_b1', 'factory.so'));
  assert.throws(() => new ffi.GraphModule(lib), (e) => e instanceof ffi.FFIError &&
    e.kind === 'TypeError' && /GraphExecutorFactory/.test(e.message) &&
    /default\(device\)/.test(e.message));
  const kernels = ffi.loadModule(path.join(FIXTURES, 'digits_b1', 'kernels.so'));
  assert.throws(() => ffi.GraphModule.fromFactory(kernels), (e) => e instanceof ffi.FFIError &&
    e.kind === 'TypeError' && /GraphExecutorFactory/.test(e.message) && /library/.test(e.message));
  assert.throws(() => new ffi.GraphModule(kernels), (e) => e instanceof ffi.FFIError &&
    e.kind === 'TypeError' && /graph-executor/.test(e.message));
  assert.throws(() => ffi.GraphModule.fromFactory({}), (e) => e instanceof ffi.FFIError &&
    e.kind === 'TypeError');
  // default() needs a device: the runtime's TypeError, not a crash.
  assert.throws(() => lib.getFunction('default')(), (e) => e instanceof ffi.FFIError &&
    e.kind === 'TypeError' && /device/.test(e.message));
  // The factory is still usable after the failed attempts.
  const gm = ffi.GraphModule.fromFactory(lib);
  assert.strictEqual(gm.getNumOutputs(), 1);
  gm.dispose();
  kernels.dispose();
  lib.dispose();
});

test('digits_b359 compiled by TVM predicts what examples/digits expects', async () => {
  const model = path.join(REPO_ROOT, 'examples', 'digits', 'model');
  const expected = JSON.parse(fs.readFileSync(path.join(model, 'expected.json'), 'utf8'));
  const rows = expected.predictions.length;
  assert.strictEqual(rows, 359);
  const bytes = readBytes(path.join(model, 'test_x.bin'));
  const x = new Float32Array(bytes.buffer, 0, bytes.byteLength / 4);
  assert.strictEqual(x.length, rows * 64);
  const lib = ffi.loadModule(path.join(FIXTURES, 'digits_b359', 'factory.so'));
  const gm = ffi.GraphModule.fromFactory(lib, ffi.cpu());
  try {
    gm.setInput('data', x);
    await gm.runAsync();
    const probs = gm.getOutput(0, new Float32Array(rows * 10));
    const pred = [];
    for (let r = 0; r < rows; r++) {
      let best = 0;
      for (let j = 1; j < 10; j++) if (probs[r * 10 + j] > probs[r * 10 + best]) best = j;
      pred.push(best);
    }
    assert.deepStrictEqual(pred, expected.predictions);
  } finally {
    gm.dispose();
    lib.dispose();
  }
});

test('TE kernels match TVM, including a call back into a JS global', async () => {
  const dir = path.join(FIXTURES, 'te_kernels');
  const io = readIo(dir);
  assert.deepStrictEqual(io.cases.map((c) => c.name), ['vadd', 'scale_shift', 'host_call']);
  let hostCalls = 0;
  ffi.registerFunc('polyffi_test.add_one', (src, dst) => {
    hostCalls++;
    const s = src.toTypedArray();
    dst.copyFrom(s.map((v) => v + 1));  // Float32Array.map rounds each sum to float32
  }, { override: true });
  try {
    for (const c of io.cases) {
      const lib = ffi.loadModule(path.join(dir, c.library));
      const fn = lib.getFunction(c.function);
      const args = c.args.map((a) => {
        if ('file' in a) return ffi.nd.array(loadTensor(dir, a), a.shape);
        if ('float' in a) return ffi.float(a.float);
        return ffi.int(a.int);
      });
      const expected = loadTensor(dir, c.output);
      const out = new expected.constructor(expected.length);
      const outView = ffi.nd.array(out, c.output.shape);
      // Synchronously and on the libuv pool: both write `out` in place (zero-copy).
      fn(...args, outView);
      assertSameBytes(out, expected, `${c.name} (sync)`);
      out.fill(0);
      await fn.callAsync(...args, outView);
      assertSameBytes(out, expected, `${c.name} (async)`);
      for (const a of args) if (a instanceof ffi.NDArray) a.dispose();
      outView.dispose();
      fn.dispose();
      lib.dispose();
    }
    assert.ok(hostCalls >= 2, `polyffi_test.add_one called ${hostCalls} times`);
  } finally {
    ffi.removeGlobalFunc('polyffi_test.add_one');
  }
  assert.strictEqual(ffi.getGlobalFunc('polyffi_test.add_one', { allowMissing: true }), null);
});

test("the top-level README's Node.js line for a TVM export runs as written", () => {
  const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const m = /```js\n(const gm = ffi\.GraphModule\.fromFactory\(.*'model\.so'.*)\n```/.exec(readme);
  assert.ok(m, 'README has no Node.js line under "Models compiled by Apache TVM"');
  const dir = path.join(FIXTURES, 'digits_b1');
  const code = `${m[1].replace("'model.so'", JSON.stringify(path.join(dir, 'factory.so')))}\nreturn gm;`;
  const gm = new Function('ffi', code)(ffi);  // eslint-disable-line no-new-func
  try {
    const io = readIo(dir);
    gm.setInput('data', loadTensor(dir, io.inputs[0]));
    gm.run();
    assertSameBytes(gm.getOutput(0, new Float32Array(10)), loadTensor(dir, io.outputs[0]), 'digits_b1');
  } finally {
    gm.dispose();
  }
});
