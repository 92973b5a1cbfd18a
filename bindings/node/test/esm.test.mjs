// The ESM entry exposes the same API as CommonJS, default and named.
import test from 'node:test';
import assert from 'node:assert';
import { createRequire } from 'node:module';
import ffi, { getGlobalFunc, FFIError, nd, GraphModule, VirtualMachine } from 'polyffi';

const require = createRequire(import.meta.url);

test('import and require give the same module', () => {
  assert.strictEqual(ffi, require('polyffi'));
  assert.strictEqual(getGlobalFunc, ffi.getGlobalFunc);
  assert.strictEqual(typeof nd.empty, 'function');
  assert.strictEqual(typeof GraphModule, 'function');
  assert.strictEqual(VirtualMachine, ffi.VirtualMachine);
  assert.throws(() => getGlobalFunc('no.such.global'), FFIError);
  assert.strictEqual(getGlobalFunc('runtime.ArraySize')(new ffi.Array([1, 2])), 2);
});
