#!/usr/bin/env node
// Builds the addon (build/polyffi.node) with CMake against the repository's libpolyffi, which
// it builds first with ci/build.sh when build/lib lacks libpolyffi.so or the test fixture
// libpolyffi_test_factory.so. Headers come from the
// npm packages node-api-headers and node-addon-api; nothing is downloaded.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = path.resolve(__dirname, '..');
const root = path.resolve(here, '..', '..');
const libDir = process.env.POLYFFI_LIB_DIR || path.join(root, 'build', 'lib');
const out = path.join(here, 'build');

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) throw new Error(`polyffi: cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`polyffi: ${cmd} ${args.join(' ')} failed (${r.status})`);
}

function have(cmd) {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

function main() {
  // The tests also need the fixture libraries of an up-to-date core build: the TVM exports that
  // the modules.factory.* and modules.tvmffi.* cases load came later than libpolyffi itself.
  const missing = ['libpolyffi.so', 'libpolyffi_test_factory.so', 'libpolyffi_test_tvmffi.so']
    .filter((f) => !fs.existsSync(path.join(libDir, f)));
  if (process.env.POLYFFI_LIB_DIR && missing.includes('libpolyffi.so')) {
    throw new Error(`polyffi: POLYFFI_LIB_DIR=${libDir} holds no libpolyffi.so`);
  }
  if (missing.length > 0 && !process.env.POLYFFI_LIB_DIR) {
    console.log(`polyffi: ${libDir} lacks ${missing.join(', ')}; building it with ci/build.sh`);
    console.log('polyffi: (ci/install-deps.sh installs the compilers and libraries it needs)');
    run(path.join(root, 'ci', 'build.sh'), [path.join(root, 'build')]);
  }
  const headers = path.dirname(require.resolve('node-api-headers/package.json'));
  const addonApi = path.dirname(require.resolve('node-addon-api/package.json'));
  const generator = have('ninja') ? ['-G', 'Ninja'] : [];
  run('cmake', ['-S', here, '-B', out, ...generator, '-DCMAKE_BUILD_TYPE=Release',
    `-DPOLYFFI_LIB_DIR=${libDir}`, `-DNODE_API_HEADERS_DIR=${path.join(headers, 'include')}`,
    `-DNODE_ADDON_API_DIR=${path.resolve(here, addonApi)}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  run('cmake', ['--build', out, '-j', '2']);
}

try {
  main();
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
