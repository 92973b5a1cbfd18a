'use strict';
// GraphModule: the graph executor's functions behind named methods. TypedArrays and Buffers
// pass as zero-copy views shaped like the executor's own input / output.
const { getGlobalFunc } = require('./registry');
const { NDArray, nd } = require('./ndarray');
const { cpu } = require('./value');
const { disposeSymbol } = require('./function');

class GraphModule {
  /** From a graph-executor module (what tvm.graph_executor.create returns). */
  constructor(module) {
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
      throw new TypeError('polyffi: GraphModule needs a graph-executor module');
    }
    this._inputShapes = new Map();
    this._outputShapes = new Map();
  }

  /** tvm.graph_executor.create(graphJson, lib, device) as a GraphModule. */
  static create(graphJson, lib, device = cpu()) {
    const create = getGlobalFunc('tvm.graph_executor.create');
    return new GraphModule(create(graphJson, lib, device.deviceType, device.deviceId));
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
