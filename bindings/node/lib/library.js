'use strict';
// Library: loads the addon. Installed from npm, it is the prebuilt one of the platform package
// that npm picked through optionalDependencies (@polyffi/linux-x64-gnu, ...: polyffi.node and
// libpolyffi.so side by side); otherwise build/polyffi.node, built at install time from the
// package's own sources (or in the repository against its libpolyffi). The addon checks the
// runtime's major version and ABI digest on load and throws naming both sides.
const path = require('node:path');

/** The npm platform package for this machine, or null (musl, or a platform without one). */
function platformPackage() {
  if (process.platform !== 'linux') return null;
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
  if (report && !report.header?.glibcVersionRuntime) return null;  // not glibc
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch];
  return arch ? `@polyffi/linux-${arch}-gnu` : null;
}

function load() {
  const tried = [];
  const pkg = platformPackage();
  if (pkg) {
    let file = null;
    try {
      file = require.resolve(`${pkg}/polyffi.node`);
    } catch (e) {
      tried.push(`${pkg}: not installed`);
    }
    if (file) return { native: require(file), addonPath: file };
  }
  const file = path.join(__dirname, '..', 'build', 'polyffi.node');
  try {
    return { native: require(file), addonPath: file };
  } catch (e) {
    // A library with another ABI digest: the addon's own error, naming both digests.
    if (e && e.code === 'POLYFFI_ABI_MISMATCH') throw e;
    tried.push(`${file}: ${e.message}`);
    const err = new Error(
      `polyffi: cannot load the addon (tried ${tried.join('; ')}); reinstall polyffi ` +
        '(npm install builds it from source where no platform package fits), or run ' +
        '`npm install` in bindings/node');
    err.cause = e;
    throw err;
  }
}

module.exports = load();
