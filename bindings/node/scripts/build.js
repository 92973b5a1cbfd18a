#!/usr/bin/env node
// Builds the addon (build/polyffi.node) with CMake. In the repository: against the repository's
// libpolyffi, which it builds first with ci/build.sh when build/lib lacks it or the test
// fixtures. Installed from npm: nothing when a platform package (@polyffi/linux-x64-gnu, ...)
// supplies the prebuilt addon, else libpolyffi and the addon from the package's own sources
// (polyffi_src/). Headers come from the npm packages node-api-headers and node-addon-api;
// nothing is downloaded.
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

/** Installed from npm: the packaged sources (core in polyffi_src/), no repository around. */
function packaged() {
  const src = path.join(here, 'polyffi_src');
  if (!fs.existsSync(path.join(src, 'CMakeLists.txt'))) return false;
  // A prebuilt platform package that npm installed makes the build unnecessary.
  const { native } = (() => {
    try {
      return require(path.join(here, 'lib', 'library.js'));
    } catch (e) {
      return {};
    }
  })();
  if (native && !fs.existsSync(path.join(out, 'polyffi.node'))) return true;
  console.log('polyffi: no prebuilt addon for this platform; building from source (cmake, C++17)');
  for (const tool of ['cmake', 'c++']) {
    if (!have(tool)) throw new Error(`polyffi: building from source needs ${tool} on PATH`);
  }
  const core = path.join(out, 'core');
  const generator = have('ninja') ? ['-G', 'Ninja'] : [];
  const vendor = path.join(src, 'vendor');
  run('cmake', ['-S', src, '-B', core, ...generator, '-DCMAKE_BUILD_TYPE=Release',
    '-DPOLYFFI_BUILD_LIBRARY_ONLY=ON', '-DPOLYFFI_INSTALL=OFF', `-DDLPACK_INCLUDE_DIR=${path.join(vendor, 'include')}`,
    `-Dnlohmann_json_DIR=${path.join(vendor, 'cmake', 'nlohmann_json')}`],
  { stdio: ['ignore', 'ignore', 'inherit'] });
  run('cmake', ['--build', core, '-j', '2']);
  addon(path.join(core, 'lib'), src, generator, [`-DCMAKE_CXX_FLAGS=-isystem ${path.join(vendor, 'include')}`]);
  return true;
}

function addon(libDir, polyffiRoot, generator, extra = []) {
  const headers = path.dirname(require.resolve('node-api-headers/package.json'));
  const addonApi = path.dirname(require.resolve('node-addon-api/package.json'));
  run('cmake', ['-S', here, '-B', out, ...generator, '-DCMAKE_BUILD_TYPE=Release',
    `-DPOLYFFI_ROOT=${polyffiRoot}`, `-DPOLYFFI_LIB_DIR=${libDir}`,
    `-DNODE_API_HEADERS_DIR=${path.join(headers, 'include')}`,
    `-DNODE_ADDON_API_DIR=${path.resolve(here, addonApi)}`, ...extra],
  { stdio: ['ignore', 'ignore', 'inherit'] });
  run('cmake', ['--build', out, '-j', '2']);
}

function main() {
  if (packaged()) return;
  // The tests also need the fixture libraries of an up-to-date core build: the TVM exports that
  // the modules.factory.*, modules.tvmffi.* and modules.relaxvm.* cases load came later than
  // libpolyffi itself.
  const missing = ['libpolyffi.so', 'libpolyffi_test_factory.so', 'libpolyffi_test_tvmffi.so',
    'libpolyffi_test_relax.so']
    .filter((f) => !fs.existsSync(path.join(libDir, f)));
  if (process.env.POLYFFI_LIB_DIR && missing.includes('libpolyffi.so')) {
    throw new Error(`polyffi: POLYFFI_LIB_DIR=${libDir} holds no libpolyffi.so`);
  }
  if (missing.length > 0 && !process.env.POLYFFI_LIB_DIR) {
    console.log(`polyffi: ${libDir} lacks ${missing.join(', ')}; building it with ci/build.sh`);
    console.log('polyffi: (ci/install-deps.sh installs the compilers and libraries it needs)');
    run(path.join(root, 'ci', 'build.sh'), [path.join(root, 'build')]);
  }
  addon(libDir, root, have('ninja') ? ['-G', 'Ninja'] : []);
}

try {
  main();
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
