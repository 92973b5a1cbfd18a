'use strict';
// VirtualMachine: a relax VM executable (what TVM 0.2x's export_library writes), run by function
// name. Built on the executable module's own protocol, as tvm.relax.VirtualMachine does it:
//   const vm = new ffi.VirtualMachine(ffi.loadModule('model.so'), ffi.cpu());
//   const y = vm.invoke('forward', ffi.nd.array(x, [1, 16]));   // or vm.getFunction('forward')(...)
// Calls run on the core's model runner (polyffi.runner.vm), which owns the VM protocol, stages
// what TVM's kernels could not take as it is (misaligned or borrowed memory is copied into an
// aligned array the call owns) and runs each call on a VM of its own pool: invoke / invokeAsync
// are stateless, so many async calls on one VirtualMachine run in parallel on the core's worker pool.
// TypedArrays are 1-D (shape them with ffi.nd.array(ta, shape)). Results: an NDArray, or a JS
// array for a relax Tuple. A result holds its own storage, so it stays valid after the next call.
const { FFIError } = require('./errors');
const { Module, FFIArray, getGlobalFunc } = require('./registry');
const { nd } = require('./ndarray');
const { Device, cpu, Shape } = require('./value');
const { disposeSymbol } = require('./function');

/** `arg` as passed: a TypedArray as a 1-D view (disposed after the call); Buffers too if asked. */
function prepare(arg, temps, buffers = false) {
  if (ArrayBuffer.isView(arg) && !(arg instanceof DataView) && (buffers || !Buffer.isBuffer(arg))) {
    const view = nd.array(arg);
    temps.push(view);
    return view;
  }
  if (Array.isArray(arg) && !(arg instanceof Shape)) {
    return arg.map((x) => prepare(x, temps, buffers));  // a tuple parameter (a Shape passes as it is)
  }
  return arg;
}

/** An NDArray, or a JS array (recursively) for a tuple; other values as they are. */
function convertResult(value) {
  if (value instanceof FFIArray) {
    try {
      return value.toArray().map(convertResult);
    } finally {
      value.dispose();
    }
  }
  return value;
}

/**
 * call(values): `args` with TypedArrays as 1-D views, disposed once the call (or the Promise it
 * returns, for callAsync) settles; its result through convertResult. One path for sync and async.
 */
function withViews(args, call, { buffers = false } = {}) {
  const temps = [];
  const dispose = () => temps.forEach((t) => t.dispose());
  let result;
  try {
    result = call(args.map((a) => prepare(a, temps, buffers)));
  } catch (e) {
    dispose();
    throw e;
  }
  if (result instanceof Promise) return result.then(convertResult).finally(dispose);
  dispose();
  return convertResult(result);
}

class VirtualMachine {
  /**
   * A VM for the executable `lib` (ffi.loadModule of a library exported by TVM 0.2x's relax
   * pipeline) on `device`. `allocator` is 'pooled' (TVM's default) or 'naive'. For a device other
   * than the CPU, the CPU is added as the last device, as TVM's wrapper does.
   */
  constructor(lib, device = cpu(), { allocator = 'pooled' } = {}) {
    if (!(lib instanceof Module)) {
      throw new FFIError('polyffi: new VirtualMachine(lib, device) needs a Module (ffi.loadModule ' +
        'of a relax VM executable)', 'TypeError');
    }
    if (!(device instanceof Device)) {
      throw new FFIError('polyffi: VirtualMachine: device must be an ffi.Device (e.g. ffi.cpu())',
        'TypeError');
    }
    /**
     * The core's model runner (polyffi.runner.vm): the VM protocol, staging and the pool; it
     * refuses a library that is not a relax VM executable and an unknown allocator.
     */
    this.runner = getGlobalFunc('polyffi.runner.vm')(lib, device.deviceType, device.deviceId,
      allocator);
    this._run = this.runner.getFunction('run');
    const getVm = this.runner.getFunction('vm');
    try {
      /** The runner's own VM: the stateful API and the VM module's other functions. */
      this.module = getVm();
    } finally {
      getVm.dispose();
    }
    this.device = device;
    this._functions = new Map();
    this._runnerFns = new Map();
  }

  /** The VM module's function `name`, looked up once; AttributeError naming it when missing. */
  _function(name) {
    let f = this._functions.get(name);
    if (f === undefined) {
      if (typeof name !== 'string') {
        throw new FFIError('polyffi: VirtualMachine: a function name must be a string', 'TypeError');
      }
      f = this.module.getFunction(name, { allowMissing: true });
      if (f === null) {
        throw new FFIError(`VirtualMachine: the executable has no function '${name}'`,
          'AttributeError');
      }
      this._functions.set(name, f);
    }
    return f;
  }

  /** The runner's function `name`, looked up once. */
  _runner(name) {
    if (!this._runnerFns.has(name)) this._runnerFns.set(name, this.runner.getFunction(name));
    return this._runnerFns.get(name);
  }

  /** Runs VM function `name` (stateless): an NDArray, or an array of results for a tuple. */
  invoke(name, ...args) {
    this._function(name);
    return withViews(args, (values) => this._run(name, ...values));
  }

  /** invoke() on the core's worker pool: the event loop stays free; concurrent calls run in parallel. */
  async invokeAsync(name, ...args) {
    this._function(name);
    return withViews(args, (values) => this._run.callAsync(name, ...values));
  }

  /** `vm["name"]`: a JS function running VM function `name` (with `.callAsync(...)`). */
  getFunction(name) {
    this._function(name);
    const call = (...args) => this.invoke(name, ...args);
    call.callAsync = (...args) => this.invokeAsync(name, ...args);
    Object.defineProperty(call, 'name', { value: name });
    return call;
  }

  hasFunction(name) {
    if (this._functions.has(name)) return true;
    const f = this.module.getFunction(name, { allowMissing: true });
    if (f === null) return false;
    this._functions.set(name, f);
    return true;
  }

  /** Stores the inputs of `funcName` for invokeStateful (the VM copies them). */
  setInput(funcName, ...args) {
    withViews(args, (values) => this._runner('set_input')(funcName, ...values));
  }

  /** Runs `funcName` on the inputs given to setInput. */
  invokeStateful(funcName) {
    this._runner('invoke_stateful')(funcName);
  }

  /** The result of the last invokeStateful(funcName): an NDArray or an array of results. */
  getOutputs(funcName) {
    return convertResult(this._runner('get_outputs')(funcName));
  }

  /** The parameter names of `funcName`, in order. */
  paramNames(funcName) {
    return convertResult(this._runner('param_names')(funcName));
  }

  dispose() {
    for (const f of this._functions.values()) f.dispose();
    this._functions.clear();
    for (const f of this._runnerFns.values()) f.dispose();
    this._runnerFns.clear();
    this._run.dispose();
    this.module.dispose();
    this.runner.dispose();
  }

  [disposeSymbol]() {
    this.dispose();
  }
}

module.exports = { VirtualMachine, withViews, convertResult };
