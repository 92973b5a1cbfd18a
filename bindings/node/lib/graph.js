'use strict';
// GraphModule: the graph executor's functions behind named methods. TypedArrays and Buffers
// pass as zero-copy views shaped like the executor's own input / output.
const { getGlobalFunc, Module } = require('./registry');
const { FFIError } = require('./errors');
const { NDArray, nd } = require('./ndarray');
const { cpu } = require('./value');
const { disposeSymbol } = require('./function');

class GraphModule {
  /**
   * From a graph-executor module: what tvm.graph_executor.create returns, or what the
   * `default(device)` of a library exported by TVM (a GraphExecutorFactory) returns.
   */
  constructor(module) {
    if (!(module instanceof Module)) {
      throw new FFIError('polyffi: GraphModule needs a graph-executor module', 'TypeError');
    }
    if (module.typeKey === 'GraphExecutorFactory') {
      throw new FFIError('polyffi: GraphModule needs a graph executor, but this module is a ' +
        "GraphExecutorFactory (a library exported by TVM): call its default(device) first, e.g. " +
        "new GraphModule(lib.getFunction('default')(ffi.cpu())) or GraphModule.fromFactory(lib)",
      'TypeError');
    }
    this.module = module;
    const fn = (name) => module.getFunction(name, { allowMissing: true });
    this._setInput = fn('set_input');
    this._run = fn('run');
    this._getOutput = fn('get_output');
    this._getNumOutputs = fn('get_num_outputs');
    this._getNumInputs = fn('get_num_inputs');
    this._getInput = fn('get_input');
    this._getInputIndex = fn('get_input_index');
    this._loadParams = fn('load_params');
    if (!this._setInput || !this._run || !this._getOutput) {
      throw new FFIError(`polyffi: GraphModule needs a graph-executor module, not a ${module.typeKey} ` +
        'module (it lacks set_input / run / get_output)', 'TypeError');
    }
    this._inputShapes = new Map();
    this._outputShapes = new Map();
  }

  /** tvm.graph_executor.create(graphJson, lib, device) as a GraphModule. */
  static create(graphJson, lib, device = cpu()) {
    const create = getGlobalFunc('tvm.graph_executor.create');
    return new GraphModule(create(graphJson, lib, device.deviceType, device.deviceId));
  }

  /**
   * From a library exported by TVM (`export_library`), which loads as its GraphExecutorFactory:
   * `factory.default(device)` with the params already set.
   */
  static fromFactory(factory, device = cpu()) {
    if (!(factory instanceof Module)) {
      throw new FFIError('polyffi: GraphModule.fromFactory needs a module (ffi.loadModule of a ' +
        'library exported by TVM)', 'TypeError');
    }
    const key = factory.typeKey;
    if (key !== 'GraphExecutorFactory') {
      throw new FFIError(`polyffi: GraphModule.fromFactory needs a GraphExecutorFactory, not a ${key} ` +
        'module (for separate graph.json + library use GraphModule.create)', 'TypeError');
    }
    const make = factory.getFunction('default');
    try {
      return new GraphModule(make(device));
    } finally {
      make.dispose();
    }
  }

  _view(arr, shapes, key, getter) {
    if (arr instanceof NDArray || !ArrayBuffer.isView(arr)) return [arr, null];
    let shape = shapes.get(key);
    if (shape === undefined) {
      const ref = getter(key);
      shape = ref.shape;
      ref.dispose();
      shapes.set(key, shape);
    }
    const view = nd.array(arr, shape);
    return [view, view];
  }

  setInput(nameOrIndex, array) {
    const index = typeof nameOrIndex === 'string' ? this.getInputIndex(nameOrIndex) : nameOrIndex;
    const [value, temp] = this._view(array, this._inputShapes, index, (i) => this._getInput(i));
    try {
      this._setInput(index, value);
    } finally {
      if (temp) temp.dispose();
    }
    return this;
  }

  run() {
    this._run();
  }

  /** run() on the libuv pool: the event loop stays free while the model runs. */
  runAsync() {
    return this._run.callAsync();
  }

  /** Output `index` as an NDArray, or copied into `out` (an NDArray or TypedArray). */
  getOutput(index, out) {
    if (out === undefined) return this._getOutput(index);
    const [value, temp] = this._view(out, this._outputShapes, index, (i) => this._getOutput(i));
    try {
      this._getOutput(index, value);
    } finally {
      if (temp) temp.dispose();
    }
    return out;
  }

  getNumOutputs() {
    return this._getNumOutputs();
  }

  getNumInputs() {
    return this._getNumInputs();
  }

  getInputIndex(name) {
    if (this._getInputIndex) return this._getInputIndex(name);
    throw new TypeError('polyffi: this executor has no get_input_index');
  }

  loadParams(bytes) {
    this._loadParams(bytes);
  }

  dispose() {
    for (const f of [this._setInput, this._run, this._getOutput, this._getNumOutputs,
      this._getNumInputs, this._getInput, this._getInputIndex, this._loadParams]) {
      if (f) f.dispose();
    }
    this.module.dispose();
  }

  [disposeSymbol]() {
    this.dispose();
  }
}

module.exports = { GraphModule };
