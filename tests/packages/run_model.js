'use strict';
// A Node.js consumer of the installed polyffi npm packages (ci/test-packages.sh runs it in a fresh
// npm project): `node run_model.js MODEL_DIR PACKAGE`. Runs the TVM-exported graph model
// MODEL_DIR/factory.so, compares output 0 byte for byte with what TVM's runtime recorded, and
// checks that the libpolyffi.so mapped into this process is the one in the npm package named by
// the second argument (the platform package).
const fs = require('node:fs');
const path = require('node:path');
const ffi = require('polyffi');

function mappedLibpolyffi() {
  for (const line of fs.readFileSync('/proc/self/maps', 'utf8').split('\n')) {
    const at = line.indexOf('/');
    if (at >= 0 && line.endsWith('/libpolyffi.so')) return fs.realpathSync(line.slice(at));
  }
  throw new Error('run_model.js: no libpolyffi.so is mapped');
}

const model = process.argv[2];
const input = fs.readFileSync(path.join(model, 'input_data.bin'));
const want = fs.readFileSync(path.join(model, 'output_0.bin'));
const x = new Float32Array(input.buffer.slice(input.byteOffset, input.byteOffset + input.length));
const gm = ffi.GraphModule.fromFactory(ffi.loadModule(path.join(model, 'factory.so')), ffi.cpu());
gm.setInput('data', ffi.nd.array(x, [1, x.length]));
gm.run();
const y = gm.getOutput(0).toTypedArray();
const got = Buffer.from(y.buffer, y.byteOffset, y.byteLength);
if (!got.equals(want)) throw new Error("run_model.js: output 0 differs from TVM's output_0.bin");
const lib = mappedLibpolyffi();
const pkg = fs.realpathSync(path.dirname(require.resolve(`${process.argv[3]}/package.json`)));
if (path.dirname(lib) !== pkg) throw new Error(`run_model.js: runs ${lib}, not the one in ${pkg}`);
console.log(`run_model.js: output equals TVM's (${want.length} bytes); libpolyffi ${lib}`);
