'use strict';
// The "Node.js in ten lines" example of the top-level README runs as written.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { REPO_ROOT } = require('./helpers');
const ffi = require('..');

test('the README example runs and its assertions hold', async () => {
  const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const m = /## Node\.js in ten lines\s+```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(m, 'README has no Node.js example');
  const lines = [];
  const fakeConsole = { log: (...a) => lines.push(a.join(' ')) };
  const req = (name) => (name === 'polyffi' ? ffi : require(name));
  const cwd = process.cwd();
  process.chdir(REPO_ROOT);
  try {
    new Function('require', 'console', m[1])(req, fakeConsole);
  } finally {
    process.chdir(cwd);
    ffi.removeGlobalFunc('demo.twice');
  }
  for (let i = 0; i < 100 && lines.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepStrictEqual(lines, ['the event loop stayed free']);
});
