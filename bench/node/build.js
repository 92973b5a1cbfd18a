#!/usr/bin/env node
// Builds bench/node's floors (build/bench_addon.node, build/libbench_node_c.so) with CMake,
// headers from the npm packages node-api-headers and node-addon-api (nothing downloaded).
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const here = __dirname;
const out = path.join(here, 'build');
const headers = path.join(path.dirname(require.resolve('node-api-headers/package.json')), 'include');
const addonApi = path.dirname(require.resolve('node-addon-api/package.json'));
for (const args of [
  ['-S', here, '-B', out, '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release',
    `-DNODE_API_HEADERS_DIR=${headers}`, `-DNODE_ADDON_API_DIR=${addonApi}`],
  ['--build', out, '-j', '2'],
]) {
  const r = spawnSync('cmake', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) process.exit(1);
}
