'use strict';
// The shared conformance suite (tests/conformance/cases/*.json), one node:test test per case.
//
// Honours tests/conformance/capabilities/node.json (cases listed there with a reason must fail,
// and are reported as skipped), writes build/conformance/node.json (directory overridable with
// POLYFFI_CONFORMANCE_OUT) and ends with the leak check on testing.live_objects().
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const ffi = require('..');
const { parse } = require('./json_bigint');
const { runCase } = require('./conformance_runner');
const { REPO_ROOT, LIB_DIR } = require('./helpers');

const CONFORMANCE = path.join(REPO_ROOT, 'tests', 'conformance');
const cases = fs.readdirSync(path.join(CONFORMANCE, 'cases')).filter((f) => f.endsWith('.json'))
  .sort().flatMap((f) => parse(fs.readFileSync(path.join(CONFORMANCE, 'cases', f), 'utf8')).cases);
const capsPath = path.join(CONFORMANCE, 'capabilities', 'node.json');
const unsupported = fs.existsSync(capsPath) ?
  (JSON.parse(fs.readFileSync(capsPath, 'utf8')).unsupported || {}) : {};
const results = {};

ffi.exactNumbers(true);
const liveObjects = ffi.getGlobalFunc('testing.live_objects');
const liveAtStart = liveObjects().value;

for (const c of cases) {
  test(c.id, async (t) => {
    const failure = await runCase(c, LIB_DIR);
    const reason = unsupported[c.id];
    if (reason !== undefined) {
      if (failure === null) {
        results[c.id] = 'fail';
        assert.fail(`${c.id} is listed as unsupported (${reason}) but now passes`);
      }
      results[c.id] = 'skip';
      t.skip(`unsupported: ${reason}`);
      return;
    }
    results[c.id] = failure === null ? 'pass' : 'fail';
    if (failure !== null) assert.fail(failure);
  });
}

test('zz leak check: testing.live_objects() is back where it started', async () => {
  const outDir = process.env.POLYFFI_CONFORMANCE_OUT || path.join(REPO_ROOT, 'build', 'conformance');
  fs.mkdirSync(outDir, { recursive: true });
  const ordered = {};
  for (const c of cases) ordered[c.id] = results[c.id] || 'fail';
  fs.writeFileSync(path.join(outDir, 'node.json'), `${JSON.stringify(ordered, null, 1)}\n`);
  let live = liveObjects().value;
  for (let i = 0; i < 20 && live !== liveAtStart; i++) {
    if (global.gc) global.gc();
    await new Promise((r) => setImmediate(r));
    live = liveObjects().value;
  }
  assert.strictEqual(live, liveAtStart, `testing.live_objects() ${live}, was ${liveAtStart}`);
});
