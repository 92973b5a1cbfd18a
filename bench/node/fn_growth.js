#!/usr/bin/env node
// Why a PackedFunc is one native function bound to a token rather than a native function of its
// own: memory over a synchronous loop that makes function after function.
//   raw      napi_create_function per call (bench_addon's rawMakeFunction): what giving every
//            PackedFunc its own callback data takes. Node keeps each function's callback record
//            until its finalizer runs, which it defers to the event loop.
//   polyffi  getGlobalFunc('testing.nop') + dispose(): the binding's own path.
// Prints RSS (MB, after a GC) after each eighth of the loop, then once more after the event loop
// has turned. usage: node --expose-gc fn_growth.js [raw|polyffi] [--count 2000000]
'use strict';
const path = require('node:path');
const ffi = require('../../bindings/node');
const floors = require('./build/bench_addon.node');

const args = process.argv.slice(2);
const i = args.indexOf('--count');
const COUNT = i >= 0 ? Number(args[i + 1]) : 2000000;
const ROOT = path.resolve(__dirname, '..', '..');
ffi.loadModule(path.join(process.env.POLYFFI_LIB_DIR || path.join(ROOT, 'build', 'lib'),
  'libpolyffi_testing.so'));

const mb = () => {
  global.gc();
  return (process.memoryUsage().rss / 1048576).toFixed(1);
};
const cases = {
  raw: () => floors.rawMakeFunction(),
  polyffi: () => ffi.getGlobalFunc('testing.nop').dispose(),
};

async function run(name) {
  const make = cases[name];
  const series = [];
  for (let chunk = 0; chunk < 8; chunk++) {
    for (let k = 0; k < COUNT / 8; k++) make();
    series.push(mb());
  }
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  console.log(`| ${name} | ${series.join(' ')} | ${mb()} |`);
}

if (args[0] in cases) {
  run(args[0]);
} else {
  // Each path in a process of its own, so that neither inherits the other's heap.
  const { spawnSync } = require('node:child_process');
  console.log(`${COUNT} functions made in one synchronous loop; RSS (MB) after a GC:`);
  console.log('| path | after each eighth | after the event loop turned |');
  console.log('|---|---|---|');
  for (const name of Object.keys(cases)) {
    const r = spawnSync(process.execPath, ['--expose-gc', __filename, name, '--count', String(COUNT)],
      { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    if (r.status !== 0) process.exit(1);
    process.stdout.write(r.stdout);
  }
}
