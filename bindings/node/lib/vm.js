'use strict';
// VirtualMachine: a relax VM executable (what TVM 0.2x's export_library writes), run by function
// name. Built on the executable module's own protocol, as tvm.relax.VirtualMachine does it:
//   const vm = new ffi.VirtualMachine(ffi.loadModule('model.so'), ffi.cpu());
//   const y = vm.invoke('forward', ffi.nd.array(x, [1, 16]));   // or vm.getFunction('forward')(...)
// Arguments: NDArrays and TypedArrays (1-D; shape them with ffi.nd.array(ta, shape)) pass
// zero-copy when their data is 64-byte aligned and compact, and are otherwise copied into a new
// aligned array first: the kernels TVM compiles assume 64-byte-aligned buffers without checking.
// Results: an NDArray, or a JS array for a relax Tuple. A result holds its own storage, so it
// stays valid after the next call.
const { native } = require('./library');
const { FFIError } = require('./errors');
const { Module, FFIArray } = require('./registry');
const { NDArray, nd } = require('./ndarray');
const { Device, cpu, Shape } = require('./value');
const { disposeSymbol } = require('./function');

/** The alignment TVM's compiled kernels assume of every tensor's data. */
const KERNEL_ALIGNMENT = 64;
/** vm_initialization's allocator kinds: 1 naive, 2 pooled (TVM's default). */
const ALLOCATORS = { naive: 1, pooled: 2 };

/** The value passed for `arg`; arrays made for the call go to `temps` (disposed after it). */
function stage(arg, temps) {
  if (arg instanceof NDArray) {
    if (native.isAligned(arg, KERNEL_ALIGNMENT)) return arg;  // one native call on the fast path
    if (arg.device.deviceType !== 1) return arg;
    const copy = native.alignedCopy(arg);  // a compact, aligned runtime array
    temps.push(copy);
    return copy;
  }
  if (ArrayBuffer.isView(arg) && !(arg instanceof DataView) && !Buffer.isBuffer(arg)) {
    const staged = native.isAligned(arg, KERNEL_ALIGNMENT) ? nd.array(arg) : native.alignedCopy(arg);
    temps.push(staged);
    return staged;
  }
  if (Array.isArray(arg) && !(arg instanceof Shape)) {
    return arg.map((x) => stage(x, temps));  // a tuple parameter (a Shape passes as it is)
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

function callStaged(f, args) {
  const temps = [];
  try {
    return convertResult(f(...args.map((a) => stage(a, temps))));
  } finally {
    for (const t of temps) t.dispose();
  }
}

async function callStagedAsync(f, args) {
  const temps = [];
  try {
    return convertResult(await f.callAsync(...args.map((a) => stage(a, temps))));
  } finally {
    for (const t of temps) t.dispose();
  }
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
    const alloc = ALLOCATORS[allocator];
    if (alloc === undefined) {
      throw new FFIError(`polyffi: VirtualMachine: allocator must be 'pooled' or 'naive', not ` +
        `${JSON.stringify(allocator)}`, 'ValueError');
    }
    const load = lib.getFunction('vm_load_executable', { allowMissing: true });
    if (load === null) {
      const key = lib.typeKey;
      const hint = /^Graph(Executor|Runtime)/.test(key)
        ? '; a TVM 0.18 graph export goes to GraphModule.fromFactory' : '';
      throw new FFIError(`polyffi: VirtualMachine: a ${key} module is not a relax VM executable ` +
        `(it has no vm_load_executable)${hint}`, 'TypeError');
    }
    let module;
    try {
      module = load();
    } finally {
      load.dispose();
    }
    try {
      const init = module.getFunction('vm_initialization');
      try {
        const args = [device.deviceType, device.deviceId, alloc];
        if (device.deviceType !== 1) args.push(1, 0, alloc);
        init(...args);
      } finally {
        init.dispose();
      }
    } catch (e) {
      module.dispose();
      throw e;
    }
    /** The VM module (lib.vm_load_executable()), for its other functions. */
    this.module = module;
    this.device = device;
    this._functions = new Map();
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

  /** Runs VM function `name`: an NDArray, or an array of results for a tuple. */
  invoke(name, ...args) {
    return callStaged(this._function(name), args);
  }

  /** invoke() on the libuv pool: the event loop stays free while the model runs. */
  invokeAsync(name, ...args) {
    let f;
    try {
      f = this._function(name);
    } catch (e) {
      return Promise.reject(e);
    }
    return callStagedAsync(f, args);
  }

  /** `vm["name"]`: a JS function running VM function `name` (with `.callAsync(...)`). */
  getFunction(name) {
    const f = this._function(name);
    const call = (...args) => callStaged(f, args);
    call.callAsync = (...args) => callStagedAsync(f, args);
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
    callStaged(this._function('set_input'), [funcName, ...args]);
  }

  /** Runs `funcName` on the inputs given to setInput. */
  invokeStateful(funcName) {
    this._function('invoke_stateful')(funcName);
  }

  /** The result of the last invokeStateful(funcName): an NDArray or an array of results. */
  getOutputs(funcName) {
    const arity = this._function('get_output_arity');
    const get = this._function('get_output');
    const at = (index) => {
      const n = arity(funcName, ...index);
      if (n < 0) return get(funcName, ...index);
      const out = [];
      for (let i = 0; i < n; i++) out.push(at([...index, i]));
      return out;
    };
    return at([]);
  }

  /** The parameter names of `funcName`, in order. */
  paramNames(funcName) {
    const n = this._function('get_function_arity')(funcName);
    const get = this._function('get_function_param_name');
    const out = [];
    for (let i = 0; i < n; i++) out.push(get(funcName, i));
    return out;
  }

  dispose() {
    for (const f of this._functions.values()) f.dispose();
    this._functions.clear();
    this.module.dispose();
  }

  [disposeSymbol]() {
    this.dispose();
  }
}

// stage is exported for the binding's own tests (not part of the public API).
module.exports = { VirtualMachine, KERNEL_ALIGNMENT, stage };
