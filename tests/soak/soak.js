'use strict';
// Soak of the Node binding: ffi.convert(fn) + dispose() (issue 25's growth), callbacks called
// through the runtime, global lookups, NDArray round trips (typed array in, Buffer out) and runs
// of TVM 0.18's digits model. Each phase runs `cycles` iterations; after a warm-up (the first
// fifth) the resident set may grow by at most `bound` MiB over the rest, and the runtime's live
// objects (runtime.LiveObjectCount) must be back at the end where they were after the warm-up. Prints one
// line per phase; exit status 1 when a phase grows.
//
//   node --expose-gc tests/soak/soak.js [cycles] [bound_mib]   (defaults: 1000000, 8)
//
// The binding's CI runs it with 20,000 cycles (bindings/node/test/soak.test.js).
const fs = require('node:fs');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..', '..');
const ffi = require(path.join(REPO, 'bindings', 'node'));
const LIB_DIR = process.env.POLYFFI_TEST_LIB_DIR || path.join(REPO, 'build', 'lib');
const DIGITS = path.join(REPO, 'tests', 'tvm_models', 'tvm018', 'digits_b1');

const cycles = Number(process.argv[2] || 1000000);
const boundMiB = Number(process.argv[3] || 8);
const collect = () => {
  if (global.gc) {
    global.gc();
    global.gc();
  }
};
const rssKiB = () => {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : -1;
};

ffi.loadModule(path.join(LIB_DIR, 'libpolyffi_testing.so'));
const live = ffi.getGlobalFunc('runtime.LiveObjectCount');
const apply = ffi.getGlobalFunc('testing.apply');
let failures = 0;

function phase(name, body) {
  const warm = Math.floor(cycles / 5);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < warm; i++) body(i);
  collect();
  const liveBefore = live();
  const before = rssKiB();
  for (let i = warm; i < cycles; i++) body(i);
  collect();
  const after = rssKiB();
  const liveAfter = live();
  const ok = after - before <= boundMiB * 1024 && liveAfter === liveBefore;
  if (!ok) failures++;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(
    `${name.padEnd(44)} ${String(cycles).padStart(9)}  ${secs.toFixed(2).padStart(7)} s  ` +
      `RSS ${before} KiB -> ${after} KiB (${after - before >= 0 ? '+' : ''}${after - before} KiB ` +
      `after warm-up), live objects ${liveBefore} -> ${liveAfter} ${ok ? 'ok' : 'GROWS'}`,
  );
}

phase('convert(fn) + dispose()', () => {
  const f = ffi.convert((x) => x);
  f.dispose();
});

phase('callback convert/call through runtime/dispose', (i) => {
  const f = ffi.convert((x) => x * 2);
  if (apply(f, i) !== 2 * i) throw new Error('apply');
  f.dispose();
});

phase('global lookup/call/dispose (testing.add)', (i) => {
  const f = ffi.getGlobalFunc('testing.add');
  if (f(i, 1) !== i + 1) throw new Error('testing.add');
  f.dispose();
});

const src = new Float32Array(64).map((_, k) => k);
phase('NDArray round trip (typed array in, Buffer out)', () => {
  const a = ffi.nd.empty([64], 'float32');
  a.copyFrom(src);
  const out = a.toBuffer();
  if (out.readFloatLE(63 * 4) !== 63) throw new Error('round trip');
  a.dispose();
});

const factory = ffi.loadModule(path.join(DIGITS, 'factory.so'));
const executor = factory.getFunction('default')(ffi.cpu());
const setInput = executor.getFunction('set_input');
const run = executor.getFunction('run');
const getOutput = executor.getFunction('get_output');
const x = ffi.nd.empty([1, 64], 'float32');
const input = fs.readFileSync(path.join(DIGITS, 'input_data.bin'));
x.copyFrom(new Float32Array(input.buffer, input.byteOffset, 64));
const expected = fs.readFileSync(path.join(DIGITS, 'output_0.bin'));
phase('model run (digits: set_input/run/get_output)', (i) => {
  setInput('data', x);
  run();
  const y = getOutput(0);
  if (i === 0) {
    const got = y.toBuffer();
    for (let k = 0; k < 10; k++) {
      const e = expected.readFloatLE(4 * k);
      if (Math.abs(got.readFloatLE(4 * k) - e) > 1e-5 * (1 + Math.abs(e))) {
        throw new Error('digits output differs');
      }
    }
  }
  y.dispose();
});
for (const h of [x, setInput, run, getOutput, executor, factory]) h.dispose();

console.log(failures === 0 ? 'soak: ok' : 'soak: FAILED');
process.exitCode = failures === 0 ? 0 : 1;
