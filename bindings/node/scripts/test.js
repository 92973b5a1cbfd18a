#!/usr/bin/env node
// npm test: builds the addon if needed, type-checks index.d.ts against test/types/usage.ts, then
// runs every test/*.test.{js,mjs} file with node:test, one process per file, in order.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = path.resolve(__dirname, '..');
const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit', cwd: here }).status === 0;

if (!run(process.execPath, [path.join(__dirname, 'build.js')])) process.exit(1);

let failed = [];
const tsc = path.join(here, 'node_modules', 'typescript', 'bin', 'tsc');
console.log('== tsc --noEmit -p test/types/tsconfig.json');
if (!run(process.execPath, [tsc, '-p', path.join('test', 'types', 'tsconfig.json')])) {
  failed.push('typescript check');
}

const only = process.argv.slice(2);
const files = fs.readdirSync(path.join(here, 'test'))
  .filter((f) => /\.test\.m?js$/.test(f))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
for (const f of files) {
  // Each file runs as a plain script (node:test reports TAP and sets the exit code), so that
  // --expose-gc reaches it on every Node version.
  console.log(`== node --expose-gc test/${f}`);
  if (!run(process.execPath, ['--expose-gc', path.join('test', f)])) failed.push(f);
}
if (failed.length > 0) {
  console.error(`polyffi: failed: ${failed.join(', ')}`);
  process.exit(1);
}
console.log(`polyffi: typescript check and ${files.length} test files passed`);
