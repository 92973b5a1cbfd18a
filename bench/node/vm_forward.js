'use strict';
// Latency of a TVM 0.27 relax model's forward through ffi.VirtualMachine (the Node binding), for
// the three ways inputs arrive: runtime NDArrays (passed as they are), 64-byte-aligned TypedArray
// views (zero-copy) and misaligned ones (copied into aligned arrays per call).
// bench/models/vm_bindings.sh runs it beside the C driver and the Rust and Java ones.
// usage: node bench/node/vm_forward.js RUN_DIR IO_TXT [min_ms]   -> one JSON line (median ns)
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const ffi = require('../../bindings/node');

const [dir, ioTxt, minMsArg] = process.argv.slice(2);
const minMs = Number(minMsArg || 200);
let library = null;
const inputs = [];
const outputs = [];
for (const line of fs.readFileSync(path.join(dir, ioTxt), 'utf8').split('\n')) {
  const w = line.trim().split(/\s+/);
  if (w[0] === 'library') library = w[1];
  if (w[0] === 'input') {
    assert.deepStrictEqual([w[2], w[3]], ['2', '32'], 'float32 inputs only');
    const ndim = Number(w[4]);
    inputs.push({ shape: w.slice(5, 5 + ndim).map(Number), bytes: fs.readFileSync(path.join(dir, w[5 + ndim])) });
  }
  if (w[0] === 'output') outputs.push(fs.readFileSync(path.join(dir, w[3])));
}

/** A Float32Array holding bytes, `offset` bytes past a 64-byte boundary (runtime memory). */
const keep = [];
function host(bytes, offset) {
  const backing = ffi.nd.empty([bytes.length + 128], 'uint8');
  keep.push(backing);
  const u8 = backing.toTypedArray();
  const out = new Float32Array(u8.buffer, u8.byteOffset + offset, bytes.length / 4);
  new Uint8Array(out.buffer, out.byteOffset, bytes.length).set(bytes);
  return out;
}

function medianNs(fn) {
  let iters = 1;
  for (;;) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < iters; i++) fn();
    const dt = Number(process.hrtime.bigint() - t);
    if (dt > (minMs * 1e6) / 4) {
      iters = Math.floor(iters * ((minMs * 1e6) / dt)) + 1;
      break;
    }
    iters *= 4;
  }
  const per = [];
  for (let r = 0; r < 9; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < iters; i++) fn();
    per.push(Number(process.hrtime.bigint() - t) / iters);
  }
  per.sort((a, b) => a - b);
  return per[4];
}

const lib = ffi.loadModule(path.join(dir, '..', library));
const vm = new ffi.VirtualMachine(lib, ffi.cpu());
const forward = vm.getFunction('forward');
const release = (r) => (Array.isArray(r) ? r.forEach(release) : r.dispose());
const forms = {
  ndarray_ns: inputs.map((i) => {
    const a = ffi.nd.empty(i.shape, 'float32');
    a.copyFrom(i.bytes);
    return a;
  }),
  aligned_view_ns: inputs.map((i) => ffi.nd.array(host(i.bytes, 0), i.shape)),
  misaligned_view_ns: inputs.map((i) => ffi.nd.array(host(i.bytes, 4), i.shape)),
};
const row = { binding: 'node' };
for (const [name, args] of Object.entries(forms)) {
  const got = forward(...args);
  (Array.isArray(got) ? got : [got]).forEach((g, k) => {
    assert.ok(g.toBuffer().equals(outputs[k]), `${name}: output ${k} differs from TVM's`);
  });
  release(got);
  for (let i = 0; i < 200; i++) release(forward(...args));
  row[name] = Number(medianNs(() => release(forward(...args))).toFixed(1));
}
console.log(JSON.stringify(row));
