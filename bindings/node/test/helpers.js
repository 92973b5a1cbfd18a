'use strict';
// Paths shared by the tests: the repository, its build/lib (POLYFFI_TEST_LIB_DIR overrides),
// and the fixture library loaded once per process (it registers testing.* globals).
const path = require('node:path');
const ffi = require('..');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const LIB_DIR = process.env.POLYFFI_TEST_LIB_DIR || path.join(REPO_ROOT, 'build', 'lib');

let fixtures = null;
function loadFixtures() {
  if (fixtures === null) fixtures = ffi.loadModule(path.join(LIB_DIR, 'libpolyffi_testing.so'));
  return fixtures;
}
loadFixtures();

const tick = () => new Promise((resolve) => setImmediate(resolve));

module.exports = { REPO_ROOT, LIB_DIR, loadFixtures, tick };
