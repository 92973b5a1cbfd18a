'use strict';
// Models compiled by Apache TVM 0.27 (tests/tvm_models/tvm027) through the Node binding. Kernel
// libraries (`__tvm_ffi_<name>` functions) are called as module functions; relax VM executables
// run through ffi.VirtualMachine. Every output must equal, byte for byte, what TVM 0.27's own
// runtime computed, with inputs given as NDArrays, as 64-byte-aligned TypedArray views (passed
// zero-copy) and as misaligned ones (copied first); bad calls give errors of the kinds TVM raised.
const test = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { REPO_ROOT } = require('./helpers');
const { native } = require('../lib/library');
const ffi = require('..');

const FIXTURES = path.join(REPO_ROOT, 'tests', 'tvm_models', 'tvm027');
const MANIFEST = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'manifest.json'), 'utf8'));
const KERNELS = path.join(FIXTURES, 'kernels');
const KERNEL_IO = JSON.parse(fs.readFileSync(path.join(KERNELS, 'io.json'), 'utf8'));
const RELAX = path.join(FIXTURES, 'relax');
const MODELS = Object.keys(MANIFEST.relax).sort();

const TYPED = {
  float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array,
  int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array,
  uint32: Uint32Array, uint64: BigUint64Array,
};

const modelIo = (name) => JSON.parse(fs.readFileSync(path.join(RELAX, name, 'io.json'), 'utf8'));
const count = (shape) => shape.reduce((a, b) => a * b, 1);

/**
 * A TypedArray of desc's dtype holding the file's values, its data `offset` bytes past a 64-byte
 * boundary (runtime-allocated memory is 64-byte aligned; the array keeps it alive).
 */
function hostArray(bytes, dtype, offset = 0) {
  const Typed = TYPED[dtype];
  const n = bytes.byteLength / Typed.BYTES_PER_ELEMENT;
  const backing = ffi.nd.empty([bytes.byteLength + 128], 'uint8').toTypedArray();
  assert.ok(native.isAligned(backing, 64));
  const out = new Typed(backing.buffer, backing.byteOffset + offset, n);
  new Uint8Array(out.buffer, out.byteOffset, out.byteLength).set(bytes);
  assert.strictEqual(native.isAligned(out, 64), offset % 64 === 0);
  return out;
}

const readFile = (dir, desc) => new Uint8Array(fs.readFileSync(path.join(dir, desc.file)));

function loadTensor(dir, desc, offset = 0) {
  const bytes = readFile(dir, desc);
  assert.strictEqual(bytes.byteLength, count(desc.shape) * TYPED[desc.dtype].BYTES_PER_ELEMENT,
    desc.file);
  return hostArray(bytes, desc.dtype, offset);
}

const bytesOf = (ta) => Buffer.from(ta.buffer, ta.byteOffset, ta.byteLength);

function assertTensor(got, dir, desc, what) {
  assert.ok(got instanceof ffi.NDArray, `${what}: not an NDArray`);
  assert.deepStrictEqual(got.shape.map(Number), desc.shape, `${what}: shape`);
  assert.strictEqual(String(got.dtype), desc.dtype, `${what}: dtype`);
  const a = got.toBuffer();
  const b = Buffer.from(readFile(dir, desc));
  assert.strictEqual(a.length, b.length, `${what}: byte length`);
  assert.ok(a.equals(b), `${what} differs from TVM's output`);
}

/** Compares a result with the run's outputs (disposing it unless `keep`). */
function checkResult(name, run, result, what, { keep = false } = {}) {
  const dir = path.join(RELAX, name);
  const got = modelIo(name).tuple_output ? result : [result];
  if (modelIo(name).tuple_output) assert.ok(Array.isArray(result), `${name} ${what}: a tuple`);
  assert.strictEqual(got.length, run.outputs.length, `${name} ${what}: outputs`);
  got.forEach((g, i) => assertTensor(g, dir, run.outputs[i], `${name} b${run.batch} ${what} output ${i}`));
  if (!keep) got.forEach((g) => g.dispose());
}

function withVm(name, run, fn, options) {
  const lib = ffi.loadModule(path.join(RELAX, run.library));
  const vm = new ffi.VirtualMachine(lib, ffi.cpu(), options);
  try {
    return fn(vm, lib);
  } finally {
    vm.dispose();
    lib.dispose();
  }
}

async function withVmAsync(name, run, fn) {
  const lib = ffi.loadModule(path.join(RELAX, run.library));
  const vm = new ffi.VirtualMachine(lib, ffi.cpu());
  try {
    return await fn(vm, lib);
  } finally {
    vm.dispose();
    lib.dispose();
  }
}

const shaped = (ta, desc) => ffi.nd.array(ta, desc.shape);

test('the manifest checksums match the fixture files', () => {
  assert.ok(MANIFEST.tvm_version.startsWith('0.27'));
  const entries = Object.entries(MANIFEST.sha256);
  assert.ok(entries.length > 0);
  for (const [rel, digest] of entries) {
    const got = crypto.createHash('sha256').update(fs.readFileSync(path.join(FIXTURES, rel)));
    assert.strictEqual(got.digest('hex'), digest, rel);
  }
  assert.deepStrictEqual(MODELS,
    ['conv', 'digits', 'dyn_batch', 'mlp_const', 'mlp_params', 'two_outputs']);
});

// ---------------------------------------------------------------- kernels

test('every kernel matches TVM (NDArrays, aligned views in place, async), host global included',
  async () => {
    // The kernel resolves the global once and keeps it (as TVM's generated code does), so a
    // failure is switched on inside the same callback rather than by registering another one.
    const calls = [];
    let failWith = null;
    ffi.registerFunc(MANIFEST.host_global, (src, dst, bias) => {
      if (failWith !== null) throw failWith;
      calls.push(bias);
      dst.copyFrom(src.toTypedArray().map((v) => v + bias));  // float32 sums, as TVM's
    }, { override: true });
    try {
      const libs = new Set(KERNEL_IO.cases.map((c) => c.library));
      for (const k of MANIFEST.kernels) assert.ok(libs.has(`${k}.so`), `no case for ${k}`);
      for (const c of KERNEL_IO.cases) {
        const lib = ffi.loadModule(path.join(KERNELS, c.library));
        const fn = lib.getFunction(c.function);
        const temps = [];
        const args = c.args.map((a) => {
          if ('file' in a) {
            const v = shaped(loadTensor(KERNELS, a), a);
            temps.push(v);
            return v;
          }
          return 'float' in a ? ffi.float(a.float) : ffi.int(a.int);
        });
        const Typed = TYPED[c.output.dtype];
        const out = hostArray(new Uint8Array(count(c.output.shape) * Typed.BYTES_PER_ELEMENT),
          c.output.dtype);
        const outView = shaped(out, c.output);
        assert.strictEqual(fn(...args, outView), null);  // a kernel returns None
        assert.ok(bytesOf(out).equals(Buffer.from(readFile(KERNELS, c.output))), `${c.name} (sync)`);
        out.fill(Typed === BigInt64Array || Typed === BigUint64Array ? 0n : 0);
        await fn.callAsync(...args, outView);
        assert.ok(bytesOf(out).equals(Buffer.from(readFile(KERNELS, c.output))), `${c.name} (async)`);
        // Runtime-allocated NDArrays too.
        const outNd = ffi.nd.empty(c.output.shape, c.output.dtype);
        fn(...args, outNd);
        assertTensor(outNd, KERNELS, c.output, `${c.name} (NDArray out)`);
        outNd.dispose();
        for (const t of temps) t.dispose();
        outView.dispose();
        fn.dispose();
        lib.dispose();
      }
      assert.deepStrictEqual(calls, Array(calls.length).fill(KERNEL_IO.host_bias));
      assert.strictEqual(calls.length, 3);

      // A JS exception in the host global comes out of the kernel call as the same object.
      const boom = new RangeError('no bias today');
      failWith = boom;
      const lib = ffi.loadModule(path.join(KERNELS, 'callpacked.so'));
      const callpacked = lib.getFunction('callpacked');
      const x = ffi.nd.array(new Float32Array(64).fill(1));
      const y = ffi.nd.empty([64]);
      assert.throws(() => callpacked(x, y), (e) => e === boom);
      failWith = null;
      callpacked(x, y);
      assert.deepStrictEqual(y.toTypedArray(), new Float32Array(64).fill(4.5));
      for (const h of [x, y, callpacked, lib]) h.dispose();
    } finally {
      ffi.removeGlobalFunc(MANIFEST.host_global);
    }
  });

test('a single-function library has main; two_funcs has not', () => {
  const one = ffi.loadModule(path.join(KERNELS, 'elementwise.so'));
  assert.ok(one.getFunction('main', { allowMissing: true }) !== null);
  const two = ffi.loadModule(path.join(KERNELS, 'two_funcs.so'));
  assert.ok(two.getFunction('scale', { allowMissing: true }) !== null);
  assert.strictEqual(two.getFunction('main', { allowMissing: true }), null);
  assert.throws(() => two.getFunction('main'), (e) => e.kind === 'AttributeError');
});

test('kernel errors have the kinds and messages TVM raised', () => {
  const two = ffi.loadModule(path.join(KERNELS, 'two_funcs.so'));
  const scale = two.getFunction('scale');
  const shift = two.getFunction('shift');
  const x4 = ffi.nd.empty([4]);
  const i4 = ffi.nd.empty([4], 'int32');
  const calls = {
    scale_arity: () => scale(x4, ffi.float(2)),
    scale_dtype: () => scale(ffi.nd.empty([4], 'float64'), ffi.float(2), x4),
    scale_ndim: () => scale(ffi.nd.empty([2, 2]), ffi.float(2), x4),
    scale_shape: () => scale(x4, ffi.float(2), ffi.nd.empty([5])),
    shift_float_for_int: () => shift(i4, 1.5, i4),
    scale_null_tensor: () => scale(null, ffi.float(2), x4),
  };
  assert.deepStrictEqual(Object.keys(KERNEL_IO.errors).sort(), Object.keys(calls).sort());
  for (const [key, tvm] of Object.entries(KERNEL_IO.errors)) {
    assert.throws(calls[key], (e) => {
      assert.ok(e instanceof ffi.FFIError, `${key}: ${e}`);
      assert.strictEqual(e.kind, tvm.kind, `${key}: ${e.message}`);
      assert.ok(e.message.includes(tvm.message), `${key}: ${JSON.stringify(e.message)}`);
      return true;
    });
  }
  const x = ffi.nd.array(new Float32Array([1, 2, 3, 4]));
  scale(x, 2.5, x4);
  assert.deepStrictEqual(Array.from(x4.toTypedArray()), [2.5, 5, 7.5, 10]);
});

test('a kernel given misaligned views computes correctly or refuses clearly', () => {
  const f = ffi.loadModule(path.join(KERNELS, 'elementwise.so')).getFunction('elementwise');
  const a = Float32Array.from({ length: 1000 }, (_, i) => i);
  const expected = a.map((v) => v * 2 + 1);
  for (const offset of [4, 8, 16, 32]) {
    const av = hostArray(new Uint8Array(a.buffer), 'float32', offset);
    const bv = hostArray(new Uint8Array(new Float32Array(1000).fill(2).buffer), 'float32', offset);
    const out = ffi.nd.empty([1000]);
    try {
      f(av, bv, out);
      assert.deepStrictEqual(out.toTypedArray(), expected, `offset ${offset}`);
    } catch (e) {
      assert.match(e.message, /align/, `offset ${offset}`);
    }
    out.dispose();
  }
});

// ---------------------------------------------------------------- relax VM

for (const name of MODELS) {
  const io = modelIo(name);
  const dir = path.join(RELAX, name);

  test(`${name}: every run matches TVM with NDArrays, aligned and misaligned TypedArrays`, () => {
    for (const run of io.runs) {
      withVm(name, run, (vm, lib) => {
        assert.strictEqual(lib.typeKey, 'relax.VMExecutable');
        const imports = lib.imports;
        assert.deepStrictEqual(imports.map((m) => m.typeKey), ['library']);
        imports.forEach((m) => m.dispose());
        // Runtime NDArrays (aligned): passed as they are.
        const arrays = run.inputs.map((d) => {
          const a = ffi.nd.empty(d.shape, d.dtype);
          a.copyFrom(readFile(dir, d));
          return a;
        });
        checkResult(name, run, vm.invoke('forward', ...arrays), 'NDArrays');
        arrays.forEach((a) => a.dispose());
        // Shaped views of aligned memory (zero-copy) and of memory 4 / 16 bytes off (copied).
        const forward = vm.getFunction('forward');
        for (const offset of [0, 4, 16]) {
          const views = run.inputs.map((d) => shaped(loadTensor(dir, d, offset), d));
          checkResult(name, run, forward(...views), `views at +${offset}`);
          views.forEach((v) => v.dispose());
        }
      });
    }
  });

  test(`${name}: invokeAsync on the libuv pool matches TVM`, async () => {
    const run = io.runs[io.runs.length - 1];
    await withVmAsync(name, run, async (vm) => {
      const views = run.inputs.map((d) => shaped(loadTensor(dir, d, 4), d));
      const [a, b] = await Promise.all([vm.invokeAsync('forward', ...views),
        vm.getFunction('forward').callAsync(...views)]);
      checkResult(name, run, a, 'invokeAsync');
      checkResult(name, run, b, 'callAsync');
      views.forEach((v) => v.dispose());
      await assert.rejects(vm.invokeAsync('backward'), (e) => e.kind === 'AttributeError');
    });
  });

  test(`${name}: results stay valid after the next call`, () => {
    const run = io.runs[0];
    withVm(name, run, (vm) => {
      const inputs = run.inputs.map((d) => shaped(loadTensor(dir, d), d));
      const first = vm.invoke('forward', ...inputs);
      const halves = run.inputs.map((d) => ffi.nd.array(new Float32Array(count(d.shape)).fill(0.5),
        d.shape));
      for (let i = 0; i < 3; i++) {
        const other = vm.invoke('forward', ...halves);
        (Array.isArray(other) ? other : [other]).forEach((o) => o.dispose());
      }
      checkResult(name, run, first, 'first result after three more calls');
      [...inputs, ...halves].forEach((v) => v.dispose());
    });
  });

  test(`${name}: stateful API (setInput, invokeStateful, getOutputs, paramNames)`, () => {
    const run = io.runs[io.runs.length - 1];
    withVm(name, run, (vm) => {
      assert.deepStrictEqual(vm.paramNames('forward'), io.param_names);
      const views = run.inputs.map((d) => shaped(loadTensor(dir, d, 4), d));
      vm.setInput('forward', ...views);
      views.forEach((v) => v.dispose());  // set_input copied them
      vm.invokeStateful('forward');
      checkResult(name, run, vm.getOutputs('forward'), 'stateful');
    });
  });

  test(`${name}: a wrong shape, dtype or arity is a clear error; the VM still works`, () => {
    const run = io.runs[0];
    withVm(name, run, (vm) => {
      const good = run.inputs.map((d) => shaped(loadTensor(dir, d), d));
      const param = io.param_names[0];
      const shape0 = run.inputs[0].shape;
      const badShape = shape0.map((s, i) => (i === 0 ? s : s + 1));
      const bad = {
        wrong_shape: ffi.nd.empty(badShape, 'float32'),
        wrong_dtype: ffi.nd.empty(shape0, 'float64'),
      };
      for (const [error, arr] of Object.entries(bad)) {
        const tvm = io.errors[error];
        assert.throws(() => vm.invoke('forward', arr, ...good.slice(1)), (e) => {
          assert.ok(e instanceof ffi.FFIError, String(e));
          assert.strictEqual(e.kind, tvm.kind, e.message);
          assert.ok(e.message.includes(`param=${param}`), e.message);
          if (error === 'wrong_dtype') assert.match(e.message, /float64[\s\S]*float32|float32[\s\S]*float64/);
          else assert.match(e.message, /shape/);
          return true;
        });
        arr.dispose();
        checkResult(name, run, vm.invoke('forward', ...good), `after ${error}`);
      }
      const n = io.param_names.length;
      assert.throws(() => vm.invoke('forward', ...good.slice(0, n - 1)),
        (e) => e instanceof ffi.FFIError && e.message.includes(`expects ${n} arguments`));
      assert.throws(() => vm.invoke('forward', ...good, good[0]), ffi.FFIError);
      assert.throws(() => vm.invoke('backward', ...good), (e) => e instanceof ffi.FFIError &&
        e.kind === 'AttributeError' && e.message.includes("no function 'backward'"));
      assert.throws(() => vm.getFunction('backward'), (e) => e.kind === 'AttributeError');
      assert.ok(vm.hasFunction('forward'));
      assert.ok(!vm.hasFunction('backward'));
      good.forEach((v) => v.dispose());
    });
  });
}

test('dyn_batch runs batch 1, 7, 64, 7, 1 on one VM; earlier results keep their values', () => {
  const io = modelIo('dyn_batch');
  const dir = path.join(RELAX, 'dyn_batch');
  withVm('dyn_batch', io.runs[0], (vm) => {
    const kept = [];
    for (const batch of [1, 7, 64, 7, 1]) {
      const run = io.runs.find((r) => r.batch === batch);
      const x = shaped(loadTensor(dir, run.inputs[0]), run.inputs[0]);
      const y = vm.invoke('forward', x);
      x.dispose();
      checkResult('dyn_batch', run, y, `batch ${batch}`, { keep: true });
      kept.push([run, y]);
    }
    for (const [run, y] of kept) checkResult('dyn_batch', run, y, 'kept');
  });
});

test('the naive allocator gives the same outputs', () => {
  const io = modelIo('conv');
  const run = io.runs.find((r) => r.batch === 16);
  withVm('conv', run, (vm) => {
    const x = shaped(loadTensor(path.join(RELAX, 'conv'), run.inputs[0]), run.inputs[0]);
    checkResult('conv', run, vm.invoke('forward', x), 'naive allocator');
    x.dispose();
  }, { allocator: 'naive' });
});

test("an executable's kernels are reachable through its imports", () => {
  const lib = ffi.loadModule(path.join(RELAX, 'two_outputs.so'));
  const [kernels] = lib.imports;
  const a = ffi.nd.array(Float32Array.from({ length: 8 }, (_, i) => i), [1, 8]);
  const b = ffi.nd.array(new Float32Array(8).fill(1), [1, 8]);
  const out = ffi.nd.empty([1, 8]);
  kernels.getFunction('add')(a, b, out);
  assert.deepStrictEqual(Array.from(out.toTypedArray()), [1, 2, 3, 4, 5, 6, 7, 8]);
  for (const h of [a, b, out, kernels, lib]) h.dispose();
});

test('VirtualMachine rejects what is not an executable, with clear errors', () => {
  const kernels = ffi.loadModule(path.join(KERNELS, 'elementwise.so'));
  assert.throws(() => new ffi.VirtualMachine(kernels, ffi.cpu()), (e) =>
    e instanceof ffi.FFIError && e.kind === 'TypeError' && /not a relax VM executable/.test(e.message));
  const factory = ffi.loadModule(path.join(REPO_ROOT, 'tests', 'tvm_models', 'tvm018',
    'digits_b1', 'factory.so'));
  assert.throws(() => new ffi.VirtualMachine(factory), (e) => e.kind === 'TypeError' &&
    /GraphModule/.test(e.message));
  assert.throws(() => new ffi.VirtualMachine('mlp_const.so'), (e) => e.kind === 'TypeError');
  const lib = ffi.loadModule(path.join(RELAX, 'mlp_const.so'));
  assert.throws(() => new ffi.VirtualMachine(lib, 'cpu'), (e) => e.kind === 'TypeError' &&
    /Device/.test(e.message));
  assert.throws(() => new ffi.VirtualMachine(lib, ffi.cpu(), { allocator: 'arena' }),
    (e) => e.kind === 'ValueError' && /allocator/.test(e.message));
  const vm = new ffi.VirtualMachine(lib);
  // A bare TypedArray is 1-D: the VM names the mismatch instead of reading out of bounds.
  assert.throws(() => vm.invoke('forward', new Float32Array(16)), ffi.FFIError);
  const y = vm.invoke('forward', ffi.nd.array(new Float32Array(16), [1, 16]));
  assert.deepStrictEqual(y.shape, [1, 10]);
  y.dispose();
  vm.dispose();
  for (const h of [lib, factory, kernels]) h.dispose();
});

test('the digits relax export classifies like the training script', () => {
  const model = path.join(REPO_ROOT, 'examples', 'digits', 'model');
  const expected = JSON.parse(fs.readFileSync(path.join(model, 'expected.json'), 'utf8'));
  const rows = expected.predictions.length;
  const bytes = new Uint8Array(fs.readFileSync(path.join(model, 'test_x.bin')));
  const x = hostArray(bytes, 'float32');
  assert.strictEqual(x.length, rows * 64);
  withVm('digits', { library: 'digits.so' }, (vm) => {
    const argmax = (p, r) => {
      let best = 0;
      for (let j = 1; j < 10; j++) if (p[r * 10 + j] > p[r * 10 + best]) best = j;
      return best;
    };
    const all = vm.invoke('forward', ffi.nd.array(x, [rows, 64]));
    const probs = all.toTypedArray();
    assert.deepStrictEqual(Array.from({ length: rows }, (_, r) => argmax(probs, r)),
      expected.predictions);
    all.dispose();
    for (let r = 0; r < rows; r += 37) {
      const one = vm.invoke('forward', ffi.nd.array(x.subarray(r * 64, (r + 1) * 64), [1, 64]));
      assert.strictEqual(argmax(one.toTypedArray(), 0), expected.predictions[r], `digit ${r}`);
      one.dispose();
    }
  });
});
