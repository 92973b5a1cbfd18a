#!/usr/bin/env node
// Call overhead of the polyffi Node binding beside its floors and a peer, in one run:
//   polyffi  the binding (testing.* fixtures through their cached direct entry)
//   na       a hand-written node-addon-api function of the same signature (libbench_node_c.so)
//   raw      the same on raw Node-API (the floor)
//   koffi    koffi (npm) calling the same C functions
// Prints the median ns per call over REPS repetitions and the ratios polyffi/na, /raw, /koffi.
// usage: node --expose-gc bench_calls.js [--reps 7] [--scale 1]
'use strict';
const path = require('node:path');
const ffi = require('../../bindings/node');
const koffi = require('koffi');
const floors = require('./build/bench_addon.node');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const REPS = opt('reps', 7);
const SCALE = opt('scale', 1);
const ROOT = path.resolve(__dirname, '..', '..');
const LIB_DIR = process.env.POLYFFI_LIB_DIR || path.join(ROOT, 'build', 'lib');

ffi.loadModule(path.join(LIB_DIR, 'libpolyffi_testing.so'));
// Every callee is a local constant, so that each loop pays for the call and nothing else.
const { nop, add3, echo, call_n: callN } = ffi.initApi('testing');
const { naNop, naAdd3, naEcho, naCallN, naAsyncNop, rawNop, rawAdd3, rawEcho, rawCallN,
  rawAsyncNop, rawMakeFunction } = floors;
const { getGlobalFunc } = ffi;
const lib = koffi.load(path.join(__dirname, 'build', 'libbench_node_c.so'));
const kNop = lib.func('void nb_nop()');
const kAdd3 = lib.func('int64_t nb_add3(int64_t, int64_t, int64_t)');
const kEcho = lib.func('const char* nb_echo(const char*)');
const Callback = koffi.proto('int64_t nb_cb(int64_t)');
const kCallN = lib.func('nb_call_n', 'int64_t', [koffi.pointer(Callback), 'int64_t']);

const S16 = 'abcdefghijklmnop';  // 16 bytes

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

// ns per operation: `body(n)` performs n operations.
function measure(body, n) {
  body(Math.max(1, n >> 4));  // warm-up: let the JIT settle
  const times = [];
  for (let r = 0; r < REPS; r++) {
    if (global.gc) global.gc();
    const t0 = process.hrtime.bigint();
    body(n);
    times.push(Number(process.hrtime.bigint() - t0) / n);
  }
  return median(times);
}

async function measureAsync(body, n) {
  await body(Math.max(1, n >> 4));
  const times = [];
  for (let r = 0; r < REPS; r++) {
    const t0 = process.hrtime.bigint();
    await body(n);
    times.push(Number(process.hrtime.bigint() - t0) / n);
  }
  return median(times);
}

const loop = (f) => (n) => {
  for (let i = 0; i < n; i++) f();
};

const N = 2_000_000 * SCALE;
const cases = [
  ['nop()', {
    polyffi: loop(() => nop()), na: loop(() => naNop()), raw: loop(() => rawNop()),
    koffi: loop(() => kNop()),
  }, N],
  ['add3(1, 2, 3)', {
    polyffi: loop(() => add3(1, 2, 3)), na: loop(() => naAdd3(1, 2, 3)),
    raw: loop(() => rawAdd3(1, 2, 3)), koffi: loop(() => kAdd3(1, 2, 3)),
  }, N],
  ['echo(16-byte string)', {
    polyffi: loop(() => echo(S16)), na: loop(() => naEcho(S16)),
    raw: loop(() => rawEcho(S16)), koffi: loop(() => kEcho(S16)),
  }, N],
  ['C calls JS callback (call_n, 1M)', (() => {
    const js = (i) => i;
    const kcb = koffi.register(js, koffi.pointer(Callback));
    const M = 1_000_000;
    const per = (f) => (n) => {
      for (let r = 0; r < n / M; r++) f();
    };
    return {
      polyffi: per(() => callN(js, M)), na: per(() => naCallN(js, M)),
      raw: per(() => rawCallN(js, M)), koffi: per(() => kCallN(kcb, M)),
    };
  })(), 1_000_000 * Math.max(1, SCALE)],
  // dispose() frees the function's slot at once: a synchronous loop never lets Node run the
  // finalizers that would recycle it, and 2^20 live PackedFuncs is the binding's limit.
  ['global lookup (+ dispose)', {
    polyffi: loop(() => getGlobalFunc('testing.add3').dispose()),
    raw: loop(() => rawMakeFunction()),
    koffi: loop(() => lib.func('int64_t nb_add3(int64_t, int64_t, int64_t)')),
  }, 200_000 * SCALE],
];

const asyncCases = [
  ['callAsync round trip (nop)', {
    polyffi: async (n) => { for (let i = 0; i < n; i++) await nop.callAsync(); },
    na: async (n) => { for (let i = 0; i < n; i++) await naAsyncNop(); },
    raw: async (n) => { for (let i = 0; i < n; i++) await rawAsyncNop(); },
    koffi: async (n) => {
      for (let i = 0; i < n; i++) {
        await new Promise((resolve, reject) => kNop.async((e) => (e ? reject(e) : resolve())));
      }
    },
  }, 20_000 * SCALE],
];

function row(name, r) {
  const cell = (x) => (x === undefined ? '—' : x.toFixed(1));
  const ratio = (x) => (x === undefined ? '—' : `${(r.polyffi / x).toFixed(2)}x`);
  return `| ${name} | ${cell(r.polyffi)} | ${cell(r.na)} | ${cell(r.raw)} | ${cell(r.koffi)} | ` +
    `${ratio(r.na)} | ${ratio(r.raw)} | ${ratio(r.koffi)} |`;
}

(async () => {
  console.log(`node ${process.version}, ${REPS} repetitions, median ns per call`);
  console.log('| case | polyffi | node-addon-api | raw Node-API | koffi | /na | /raw | /koffi |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [name, impls, n] of cases) {
    const r = {};
    for (const [who, body] of Object.entries(impls)) r[who] = measure(body, n);
    console.log(row(name, r));
  }
  for (const [name, impls, n] of asyncCases) {
    const r = {};
    for (const [who, body] of Object.entries(impls)) r[who] = await measureAsync(body, n);
    console.log(row(name, r));
  }
})();
