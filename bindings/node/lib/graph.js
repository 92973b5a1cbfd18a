'use strict';
// GraphModule: the graph executor's functions behind named methods. TypedArrays and Buffers pass
// as zero-copy 1-D views; the executor takes a flat buffer for an input or output of any shape
// (same dtype and element count), so nothing here shapes them.
// GraphModule.fromFactory is backed by the core's model runner (polyffi.runner.graph): infer /
// inferAsync are stateless (inputs in, outputs out) and run on an executor of the runner's pool,
// which share the weights, so concurrent inferAsync calls run in parallel on the core's worker pool.
const { getGlobalFunc, Module } = require('./registry');
const { FFIError } = require('./errors');
const { NDArray } = require('./ndarray');
const { cpu } = require('./value');
const { disposeSymbol } = require('./function');
const vm = require('./vm');

// A Buffer is a uint8 array for the executor, as it always was (the VM takes it as bytes).
const withViews = (args, call) => vm.withViews(args, call, { buffers: true });

class GraphModule {
  /**
   * From a graph-executor module: what tvm.graph_executor.create returns, or what the
   * `default(device)` of a library exported by TVM (a GraphExecutorFactory) returns. The core
   * refuses anything else (a factory itself: call its default(device) first, or fromFactory).
   */
  constructor(module, runner = null) {
    if (!(module instanceof Module)) {
      throw new FFIError('polyffi: GraphModule needs a graph-executor module', 'TypeError');
    }
    getGlobalFunc('polyffi.runner.check_graph_executor')(module);
    this.module = module;
    this._functions = new Map();
    /** The core's model runner (infer), or null for a bare executor. */
    this.runner = runner;
    this._infer = runner ? runner.getFunction('run') : null;
  }

  /** The executor's function `name`, looked up once (null when it has none). */
  _fn(name) {
    if (!this._functions.has(name)) {
      this._functions.set(name, this.module.getFunction(name, { allowMissing: true }));
    }
    return this._functions.get(name);
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
    return GraphModule._fromRunner(factory, device.deviceType, device.deviceId);
  }

  /**
   * The three artifacts of an export (graph JSON, kernel library, params bytes) over the core's
   * model runner, so infer / inferAsync are available as with fromFactory.
   */
  static fromParts(graphJson, lib, params, device = cpu()) {
    if (!(lib instanceof Module)) {
      throw new FFIError('polyffi: GraphModule.fromParts needs the kernel library as a Module',
        'TypeError');
    }
    return GraphModule._fromRunner(graphJson, lib, params ?? null, device.deviceType,
      device.deviceId);
  }

  /** polyffi.runner.graph(...args) and its own executor as a GraphModule. */
  static _fromRunner(...args) {
    const runner = getGlobalFunc('polyffi.runner.graph')(...args);
    const executor = runner.getFunction('executor');
    try {
      return new GraphModule(executor(), runner);
    } finally {
      executor.dispose();
    }
  }

  /** The graph's inputs that are not weights: what infer takes by position. */
  get inputNames() {
    if (!this.runner) return [];
    const names = this.runner.getFunction('input_names');
    try {
      return vm.convertResult(names());
    } finally {
      names.dispose();
    }
  }

  /** infer's arguments: arrays by position, or key/array pairs from one object of name: array. */
  _inferArgs(inputs) {
    if (!this._infer) {
      throw new FFIError('polyffi: GraphModule.infer needs a GraphModule made by fromFactory ' +
        '(a bare executor has no model runner)', 'TypeError');
    }
    const named = inputs.length === 1 && inputs[0] !== null && typeof inputs[0] === 'object' &&
      !(inputs[0] instanceof NDArray) && !ArrayBuffer.isView(inputs[0]);
    return named ? Object.entries(inputs[0]).flat() : inputs;
  }

  /**
   * Runs the graph on these inputs (positional, or one object of name: array) and returns every
   * output as a new NDArray. Stateless and thread-safe: it never touches setInput's inputs.
   */
  infer(...inputs) {
    return withViews(this._inferArgs(inputs), (values) => this._infer(...values));
  }

  /** infer() on the core's worker pool: concurrent calls run in parallel. */
  async inferAsync(...inputs) {
    return withViews(this._inferArgs(inputs), (values) => this._infer.callAsync(...values));
  }

  setInput(nameOrIndex, array) {
    withViews([array], ([value]) => this._fn('set_input')(nameOrIndex, value));
    return this;
  }

  run() {
    this._fn('run')();
  }

  /** run() on the core's worker pool: the event loop stays free while the model runs. An
   *  AbortSignal in `signal` stops it between nodes (rejects with kind CancelledError). */
  runAsync({ signal } = {}) {
    return this._fn('run').callAsyncWithSignal(signal);
  }

  /** Output `index` as an NDArray, or copied into `out` (an NDArray or TypedArray). */
  getOutput(index, out) {
    if (out === undefined) return this._fn('get_output')(index);
    withViews([out], ([value]) => this._fn('get_output')(index, value));
    return out;
  }

  getNumOutputs() {
    return this._fn('get_num_outputs')();
  }

  getNumInputs() {
    return this._fn('get_num_inputs')();
  }

  getInputIndex(name) {
    if (this._fn('get_input_index')) return this._fn('get_input_index')(name);
    throw new FFIError('polyffi: this executor has no get_input_index', 'AttributeError');
  }

  /**
   * Loads a params blob into the executor; infer takes these weights too (the runner loads them
   * into this executor and its pool; calls in flight finish on the old weights).
   */
  loadParams(bytes) {
    if (!this.runner) return this._fn('load_params')(bytes);
    const load = this.runner.getFunction('load_params');
    try {
      load(bytes);
    } finally {
      load.dispose();
    }
  }

  dispose() {
    for (const f of this._functions.values()) if (f) f.dispose();
    this._functions.clear();
    if (this._infer) this._infer.dispose();
    this.module.dispose();
    if (this.runner) this.runner.dispose();
  }

  [disposeSymbol]() {
    this.dispose();
  }
}

module.exports = { GraphModule };
