'use strict';
// GraphModule: the graph executor's functions behind named methods. TypedArrays and Buffers
// pass as zero-copy views shaped like the executor's own input / output.
// GraphModule.fromFactory is backed by the core's model runner (polyffi.runner.graph): infer /
// inferAsync are stateless (inputs in, outputs out) and run on an executor of the runner's pool,
// which share the weights, so concurrent inferAsync calls run in parallel on the core's worker pool.
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
  constructor(module, runner = null) {
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
    /** The core's model runner (infer), or null for a bare executor. */
    this.runner = null;
    this._infer = null;
    this._inputNames = [];
    this._retired = [];
    if (runner) this._useRunner(runner);
  }

  _useRunner(runner) {
    const names = runner.getFunction('input_names');
    try {
      this._inputNames = GraphModule._outputs(names());
    } finally {
      names.dispose();
    }
    // The old runner may have calls in flight on the core's worker pool: released in dispose().
    if (this.runner) this._retired.push(this._infer, this.runner);
    this._infer = runner.getFunction('run');
    this.runner = runner;
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
    const runner = getGlobalFunc('polyffi.runner.graph')(factory, device.deviceType,
      device.deviceId);
    const executor = runner.getFunction('executor');
    try {
      return new GraphModule(executor(), runner);
    } finally {
      executor.dispose();
    }
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
    const runner = getGlobalFunc('polyffi.runner.graph')(graphJson, lib, params ?? null,
      device.deviceType, device.deviceId);
    const executor = runner.getFunction('executor');
    try {
      return new GraphModule(executor(), runner);
    } finally {
      executor.dispose();
    }
  }

  /** The graph's inputs that are not weights: what infer takes by position. */
  get inputNames() {
    return [...this._inputNames];
  }

  _inferArgs(inputs, temps) {
    if (!this._infer) {
      throw new FFIError('polyffi: GraphModule.infer needs a GraphModule made by fromFactory ' +
        '(a bare executor has no model runner)', 'TypeError');
    }
    const named = inputs.length === 1 && inputs[0] !== null && typeof inputs[0] === 'object' &&
      !(inputs[0] instanceof NDArray) && !ArrayBuffer.isView(inputs[0]);
    const pairs = named ? Object.entries(inputs[0])
      : inputs.map((a, i) => [this._inputNames[i] === undefined ? i : this._inputNames[i], a]);
    const args = [];
    for (const [key, arr] of pairs) {
      // A TypedArray is shaped like the executor's input (a view; the executor copies it).
      const [value, temp] = this._inputView(arr, key);
      if (temp) temps.push(temp);
      if (named) args.push(key);
      args.push(value);
    }
    return args;
  }

  static _outputs(arr) {
    try {
      return arr.toArray();
    } finally {
      arr.dispose();
    }
  }

  /**
   * Runs the graph on these inputs (positional, or one object of name: array) and returns every
   * output as a new NDArray. Stateless and thread-safe: it never touches setInput's inputs.
   */
  infer(...inputs) {
    const temps = [];
    try {
      return GraphModule._outputs(this._infer(...this._inferArgs(inputs, temps)));
    } finally {
      for (const t of temps) t.dispose();
    }
  }

  /** infer() on the core's worker pool: concurrent calls run in parallel. */
  async inferAsync(...inputs) {
    const temps = [];
    try {
      return GraphModule._outputs(await this._infer.callAsync(...this._inferArgs(inputs, temps)));
    } finally {
      for (const t of temps) t.dispose();
    }
  }

  // A view of a TypedArray shaped like input `key` (a name or an index). For a key the graph
  // does not have, a flat view: the call it goes to then reports the key as every binding does
  // (KeyError / IndexError naming that call), not the get_input used here to learn the shape.
  _inputView(arr, key) {
    if (arr instanceof NDArray || !ArrayBuffer.isView(arr)) return [arr, null];
    let shape = this._inputShapes.get(key);
    if (shape === undefined) {
      let ref = null;
      try {
        ref = this._getInput(key);
      } catch {
        // a bad key or key type: reported by the caller's own call
      }
      if (ref === null || ref === undefined) {
        const flat = nd.array(arr, [arr.length]);
        return [flat, flat];
      }
      shape = ref.shape;
      ref.dispose();
      this._inputShapes.set(key, shape);
    }
    const view = nd.array(arr, shape);
    return [view, view];
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
    const [value, temp] = this._inputView(array, nameOrIndex);
    try {
      this._setInput(nameOrIndex, value);
    } finally {
      if (temp) temp.dispose();
    }
    return this;
  }

  run() {
    this._run();
  }

  /** run() on the core's worker pool: the event loop stays free while the model runs. An
   *  AbortSignal in `signal` stops it between nodes (rejects with kind CancelledError). */
  runAsync({ signal } = {}) {
    return this._run.callAsyncWithSignal(signal);
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
    throw new FFIError('polyffi: this executor has no get_input_index', 'AttributeError');
  }

  /** Loads a params blob into the executor; infer takes these weights too (a new runner). */
  loadParams(bytes) {
    this._loadParams(bytes);
    if (this.runner) {
      const withParams = this.runner.getFunction('with_params');
      try {
        this._useRunner(withParams(bytes));
      } finally {
        withParams.dispose();
      }
    }
  }

  dispose() {
    for (const f of [this._setInput, this._run, this._getOutput, this._getNumOutputs,
      this._getNumInputs, this._getInput, this._getInputIndex, this._loadParams]) {
      if (f) f.dispose();
    }
    if (this._infer) this._infer.dispose();
    this.module.dispose();
    if (this.runner) this.runner.dispose();
    for (const h of this._retired) h.dispose();
    this._retired = [];
  }

  [disposeSymbol]() {
    this.dispose();
  }
}

module.exports = { GraphModule };
