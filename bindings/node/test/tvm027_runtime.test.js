'use strict';
// TVM 0.27's runtime-library fixtures (tests/tvm_models/tvm027/runtime) from Node: relax models
// whose executables call TVM's runtime globals at run time (sort, argsort, top-k, seeded random,
// unique, nonzero, tensor_to_shape, ...) or take Shape and int arguments, with two symbolic
// dimensions, float16/int kernels, recursion and nested tuples. Every run's result must equal
// what TVM 0.27's own runtime returned: tensors bit for bit (dtype, shape, bytes), Shapes as
// ffi.Shape and ints by value, tuples (JS arrays) recursively.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { REPO_ROOT } = require('./helpers');
const ffi = require('..');

const FIXTURES = path.join(REPO_ROOT, 'tests', 'tvm_models', 'tvm027');
const RUNTIME = path.join(FIXTURES, 'runtime');
const MANIFEST = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'manifest.json'), 'utf8'));
const MODELS = Object.keys(MANIFEST.runtime || {}).sort();

const readIo = (name) => JSON.parse(fs.readFileSync(path.join(RUNTIME, name, 'io.json'), 'utf8'));

function argument(desc, dir, temps) {
  if (desc.kind === 'tensor') {
    const t = ffi.nd.empty(desc.shape, desc.dtype);
    t.copyFrom(fs.readFileSync(path.join(dir, desc.file)));
    temps.push(t);
    return t;
  }
  if (desc.kind === 'shape') return ffi.shape(desc.value);
  assert.strictEqual(desc.kind, 'int');
  return ffi.int(desc.value);
}

function check(got, want, dir, at) {
  switch (want.kind) {
    case 'tensor':
      assert.ok(got instanceof ffi.NDArray, `${at}: not a tensor`);
      assert.strictEqual(got.dtype, want.dtype, at);
      assert.deepStrictEqual(got.shape, want.shape, at);
      assert.ok(got.toBuffer().equals(fs.readFileSync(path.join(dir, want.file))),
        `${at}: tensor differs from TVM's`);
      break;
    case 'shape':
      assert.ok(got instanceof ffi.Shape, `${at}: ${String(got)} is not an ffi.Shape`);
      assert.deepStrictEqual([...got], want.value, at);
      break;
    case 'int':
      assert.strictEqual(got, want.value, at);
      break;
    default:
      assert.strictEqual(want.kind, 'tuple');
      assert.ok(Array.isArray(got) && !(got instanceof ffi.Shape), `${at}: not a tuple`);
      assert.strictEqual(got.length, want.items.length, `${at}: tuple size`);
      want.items.forEach((item, i) => check(got[i], item, dir, `${at}[${i}]`));
  }
}

function dispose(value) {
  if (value instanceof ffi.NDArray) value.dispose();
  else if (Array.isArray(value) && !(value instanceof ffi.Shape)) value.forEach(dispose);
}

test('every runtime fixture is listed in the manifest', () => {
  const onDisk = fs.readdirSync(RUNTIME)
    .filter((d) => fs.existsSync(path.join(RUNTIME, d, 'io.json'))).sort();
  assert.ok(onDisk.length > 0);
  assert.deepStrictEqual(onDisk, MODELS);
});

for (const name of MODELS) {
  test(`${name}: every run matches TVM 0.27`, () => {
    const io = readIo(name);
    const dir = path.join(RUNTIME, name);
    const lib = ffi.loadModule(path.join(RUNTIME, io.library));
    const vm = new ffi.VirtualMachine(lib, ffi.cpu());
    try {
      io.runs.forEach((run, r) => {
        const temps = [];
        try {
          const args = run.inputs.map((d) => argument(d, dir, temps));
          const at = `${name} run ${r}`;
          const out = vm.invoke(io.function, ...args);
          check(out, run.output, dir, at);
          // Again on the same VM: the same result, the first one (still held) intact.
          const again = vm.invoke(io.function, ...args);
          check(again, run.output, dir, `${at} (second call)`);
          check(out, run.output, dir, `${at} (first result)`);
          dispose(out);
          dispose(again);
        } finally {
          temps.forEach((t) => t.dispose());
        }
      });
    } finally {
      vm.dispose();
    }
  });
}

test('a Shape parameter refuses a plain array; an int parameter refuses a Shape', (t) => {
  if (!MODELS.includes('shape_int_args')) return t.skip('no shape_int_args fixture');
  const io = readIo('shape_int_args');
  const dir = path.join(RUNTIME, 'shape_int_args');
  const vm = new ffi.VirtualMachine(ffi.loadModule(path.join(RUNTIME, io.library)), ffi.cpu());
  const temps = [];
  try {
    const [x, s, k] = io.runs[0].inputs.map((d) => argument(d, dir, temps));
    assert.throws(() => vm.invoke('forward', x, [...s], k), ffi.FFIError);
    assert.throws(() => vm.invoke('forward', x, s, s), ffi.FFIError);
    dispose(vm.invoke('forward', x, s, k));
  } finally {
    temps.forEach((a) => a.dispose());
    vm.dispose();
  }
});
