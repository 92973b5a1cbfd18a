'use strict';
// A short run of the Node soak (tests/soak/soak.js): 20,000 cycles per phase, RSS after warm-up
// within 4 MiB and the runtime's live objects back at their start after each phase.
const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { REPO_ROOT, LIB_DIR } = require('./helpers');

test('soak: flat memory and live objects over 20,000 cycles per phase', () => {
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', path.join(REPO_ROOT, 'tests', 'soak', 'soak.js'), '20000', '4'],
    { env: { ...process.env, POLYFFI_TEST_LIB_DIR: LIB_DIR }, encoding: 'utf8', timeout: 600000 },
  );
  const out = r.stdout + r.stderr;
  assert.strictEqual(r.status, 0, out);
  assert.match(r.stdout, /^soak: ok$/m);
  assert.strictEqual((r.stdout.match(/live objects .* ok$/gm) || []).length, 5, out);
});
