'use strict';
// PackedFunc: the addon creates each one as a native JS function whose prototype is
// PackedFunc.prototype, so `f(...args)`, `f.callAsync(...args)`, `f.dispose()` and
// `f instanceof PackedFunc` all work.
const { native } = require('./library');
const { FFIError } = require('./errors');

const disposeSymbol = Symbol.dispose || Symbol.for('nodejs.dispose');

function PackedFunc() {
  throw new TypeError('polyffi: PackedFuncs come from getGlobalFunc, convert, modules, ...');
}
PackedFunc.prototype = Object.create(Function.prototype, {
  constructor: { value: PackedFunc, writable: true, configurable: true },
});

// Submits fn(...args) to the core's worker pool; `signal` (an AbortSignal or undefined) cancels
// it: a call not yet started never runs, a running one is asked to stop. Either way the Promise
// rejects with an FFIError of kind CancelledError (unless the call finished first). A signal
// already aborted rejects at once, without submitting.
function submitAsync(fn, signal, args) {
  if (signal == null) return native.callAsync(fn, undefined, ...args);
  if (signal.aborted) {
    return Promise.reject(new FFIError('the signal was aborted before the call', 'CancelledError'));
  }
  let cancel = null;
  const promise = native.callAsync(fn, (c) => { cancel = c; }, ...args);
  if (cancel !== null) {
    signal.addEventListener('abort', cancel, { once: true });
    const forget = () => signal.removeEventListener('abort', cancel);
    promise.then(forget, forget);
  }
  return promise;
}

Object.assign(PackedFunc.prototype, {
  /** Runs the call on the core's worker pool; the event loop stays free. Resolves with the
   *  result; a full queue rejects with an FFIError of kind QueueFullError. */
  callAsync(...args) {
    return native.callAsync(this, undefined, ...args);
  },
  /** callAsync that `signal` (an AbortSignal) cancels: rejects with kind CancelledError. */
  callAsyncWithSignal(signal, ...args) {
    return submitAsync(this, signal, args);
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

module.exports = { PackedFunc, disposeSymbol, submitAsync };
