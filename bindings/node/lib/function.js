'use strict';
// PackedFunc: the addon creates each one as a native JS function whose prototype is
// PackedFunc.prototype, so `f(...args)`, `f.callAsync(...args)`, `f.dispose()` and
// `f instanceof PackedFunc` all work.
const { native } = require('./library');

const disposeSymbol = Symbol.dispose || Symbol.for('nodejs.dispose');

function PackedFunc() {
  throw new TypeError('polyffi: PackedFuncs come from getGlobalFunc, convert, modules, ...');
}
PackedFunc.prototype = Object.create(Function.prototype, {
  constructor: { value: PackedFunc, writable: true, configurable: true },
});

Object.assign(PackedFunc.prototype, {
  /** Runs the call on the libuv pool; the event loop stays free. Resolves with the result. */
  callAsync(...args) {
    return native.callAsync(this, ...args);
  },
  /** Releases the function now; calling it afterwards throws an FFIError. */
  dispose() {
    native.dispose(this);
  },
});
Object.defineProperty(PackedFunc.prototype, 'disposed', {
  get() {
    return native.isDisposed(this);
  },
});
PackedFunc.prototype[disposeSymbol] = PackedFunc.prototype.dispose;

module.exports = { PackedFunc, disposeSymbol };
