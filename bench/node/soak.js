#!/usr/bin/env node
// Soak: 10M calls and 1M callback create/dispose cycles; RSS is printed after every chunk
// (after a GC) and must stay flat. usage: node --expose-gc soak.js [--calls 10000000]
// [--callbacks 1000000]
'use strict';
const path = require('node:path');
const ffi = require('../../bindings/node');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const CALLS = opt('calls', 10_000_000);
const CALLBACKS = opt('callbacks', 1_000_000);
const ROOT = path.resolve(__dirname, '..', '..');
ffi.loadModule(path.join(process.env.POLYFFI_LIB_DIR || path.join(ROOT, 'build', 'lib'),
  'libpolyffi_testing.so'));
const t = ffi.initApi('testing');
const tick = () => new Promise((r) => setImmediate(r));
const mb = () => (process.memoryUsage().rss / 1048576).toFixed(1);

async function settle() {
  for (let i = 0; i < 3; i++) {
    global.gc();
    await tick();
  }
}

function report(name, series) {
  const first = series[1] ?? series[0];
  const last = series[series.length - 1];
  console.log(`${name}: RSS MB per chunk ${series.join(' ')}; ` +
    `growth after the first chunk ${(last - first).toFixed(1)} MB`);
}

(async () => {
  const liveStart = t.live_objects();
  const calls = [];
  const chunk = CALLS / 10;
  let sum = 0;
  const s16 = 'abcdefghijklmnop';
  for (let c = 0; c < 10; c++) {
    for (let i = 0; i < chunk; i++) {
      sum += t.add3(i, 1, 2);
      if ((i & 7) === 0) t.echo(s16);
    }
    await settle();
    calls.push(Number(mb()));
  }
  report(`${CALLS} calls (add3, every 8th also echo(str))`, calls);

  const cbs = [];
  const cbChunk = CALLBACKS / 10;
  const apply = t.apply;
  for (let c = 0; c < 10; c++) {
    for (let i = 0; i < cbChunk; i++) {
      const f = ffi.convert((x) => x + i);
      if ((i & 63) === 0) apply(f, 1);
      f.dispose();
    }
    await settle();
    cbs.push(Number(mb()));
  }
  report(`${CALLBACKS} callback create/dispose cycles`, cbs);
  console.log(`testing.live_objects: ${liveStart} at start, ${t.live_objects()} at the end; ` +
    `checksum ${sum}`);
})();
