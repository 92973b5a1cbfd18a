#!/usr/bin/env node
// One case of the instruction-count comparison (run under callgrind by instructions.sh):
// node ir_case.js CASE N performs N operations of CASE.
'use strict';
const path = require('node:path');
const ffi = require('../../bindings/node');
const koffi = require('koffi');
const floors = require('./build/bench_addon.node');

const ROOT = path.resolve(__dirname, '..', '..');
ffi.loadModule(path.join(process.env.POLYFFI_LIB_DIR || path.join(ROOT, 'build', 'lib'),
  'libpolyffi_testing.so'));
const [which, nText] = process.argv.slice(2);
const n = Number(nText);
const t = ffi.initApi('testing');
const { nop, add3, echo, call_n: callN } = t;
const lib = koffi.load(path.join(__dirname, 'build', 'libbench_node_c.so'));
const kNop = lib.func('void nb_nop()');
const kAdd3 = lib.func('int64_t nb_add3(int64_t, int64_t, int64_t)');
const kEcho = lib.func('const char* nb_echo(const char*)');
const Cb = koffi.proto('int64_t nb_cb(int64_t)');
const kCallN = lib.func('nb_call_n', 'int64_t', [koffi.pointer(Cb), 'int64_t']);
const S16 = 'abcdefghijklmnop';
const js = (i) => i;
const kcb = koffi.register(js, koffi.pointer(Cb));
const { naNop, naAdd3, naEcho, naCallN, rawNop, rawAdd3, rawEcho, rawCallN } = floors;

const loops = {
  'polyffi.nop': () => { for (let i = 0; i < n; i++) nop(); },
  'na.nop': () => { for (let i = 0; i < n; i++) naNop(); },
  'raw.nop': () => { for (let i = 0; i < n; i++) rawNop(); },
  'koffi.nop': () => { for (let i = 0; i < n; i++) kNop(); },
  'polyffi.add3': () => { for (let i = 0; i < n; i++) add3(1, 2, 3); },
  'na.add3': () => { for (let i = 0; i < n; i++) naAdd3(1, 2, 3); },
  'raw.add3': () => { for (let i = 0; i < n; i++) rawAdd3(1, 2, 3); },
  'koffi.add3': () => { for (let i = 0; i < n; i++) kAdd3(1, 2, 3); },
  'polyffi.echo': () => { for (let i = 0; i < n; i++) echo(S16); },
  'na.echo': () => { for (let i = 0; i < n; i++) naEcho(S16); },
  'raw.echo': () => { for (let i = 0; i < n; i++) rawEcho(S16); },
  'koffi.echo': () => { for (let i = 0; i < n; i++) kEcho(S16); },
  'polyffi.callback': () => callN(js, n),
  'na.callback': () => naCallN(js, n),
  'raw.callback': () => rawCallN(js, n),
  'koffi.callback': () => kCallN(kcb, n),
};
loops[which]();
