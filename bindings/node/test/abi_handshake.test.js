'use strict';
// The ABI handshake: the addon refuses a libpolyffi whose ABI digest differs from the one it was
// compiled against, with an Error (code POLYFFI_ABI_MISMATCH) naming both digests.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { REPO_ROOT, LIB_DIR } = require('./helpers');
const { native } = require('../lib/library');

function headerDigest() {
  const header = fs.readFileSync(
    path.join(REPO_ROOT, 'c_api', 'include', 'polyffi', 'c_runtime_api.h'), 'utf8');
  const m = /^#define POLYFFI_ABI_DIGEST "([0-9a-f]{64})"$/m.exec(header);
  assert.ok(m, 'no POLYFFI_ABI_DIGEST in c_runtime_api.h');
  return m[1];
}

test('the addon was built against the headers digest', () => {
  assert.strictEqual(native.abiDigest, headerDigest());
});

test('a library with another digest is refused, naming both digests', () => {
  const variant = path.join(LIB_DIR, 'abi_variant', 'libpolyffi.so');
  assert.ok(fs.existsSync(variant), `${variant} not built`);
  const code = `
    try { require(${JSON.stringify(path.join(__dirname, '..'))}); }
    catch (e) { console.log(e.code + ': ' + e.message); process.exit(3); }`;
  // The variant has libpolyffi's SONAME: preloaded, it is the libpolyffi the addon binds.
  const r = spawnSync(process.execPath, ['-e', code], {
    env: { ...process.env, LD_PRELOAD: variant },
    encoding: 'utf8',
    timeout: 60000,
  });
  const out = r.stdout + r.stderr;
  const digest = headerDigest();
  assert.strictEqual(r.status, 3, out);
  assert.match(out, /^POLYFFI_ABI_MISMATCH: polyffi: ABI mismatch/m);
  assert.ok(out.includes(`ABI digest ${digest},`), out);
  assert.ok(out.includes(`ABI digest variant-for-tests-${digest}`), out);
});
