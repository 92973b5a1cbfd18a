'use strict';
// Library: loads the addon (build/polyffi.node, linked against the repository's libpolyffi). The
// addon checks the runtime's major version and ABI digest on load and throws naming both sides.
const path = require('node:path');

let native;
try {
  native = require(path.join(__dirname, '..', 'build', 'polyffi.node'));
} catch (e) {
  // A library with another ABI digest: the addon's own error, naming both digests.
  if (e && e.code === 'POLYFFI_ABI_MISMATCH') throw e;
  const err = new Error(
    `polyffi: cannot load the addon build/polyffi.node (${e.message}); ` +
      'run `npm install` (or `npm run build`) in bindings/node');
  err.cause = e;
  throw err;
}

module.exports = { native };
