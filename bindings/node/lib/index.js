'use strict';
// polyffi for Node.js: the public API (see index.d.ts and ../../README.md).
const { native } = require('./library');
const { FFIError } = require('./errors');
const value = require('./value');
const { PackedFunc } = require('./function');
const registry = require('./registry');
const { NDArray, nd } = require('./ndarray');
const { GraphModule } = require('./graph');
const { VirtualMachine } = require('./vm');
const { LanguageModel, Generation } = require('./lm');
const { version } = require('../package.json');

native.setup({
  funcProto: PackedFunc.prototype,
  token: registry.token,
  Module: registry.Module,
  NDArray,
  ObjectRef: registry.ObjectRef,
  objectClasses: registry.objectClasses,
  FFIError,
  Device: value.Device,
  DataType: value.DataType,
  Float: value.Float,
  Int: value.Int,
  Shape: value.Shape,
});

module.exports = {
  version,
  runtimeVersion: native.runtimeVersion,
  getGlobalFunc: registry.getGlobalFunc,
  registerFunc: registry.registerFunc,
  listGlobalFuncNames: registry.listGlobalFuncNames,
  removeGlobalFunc: registry.removeGlobalFunc,
  convert: registry.convert,
  initApi: registry.initApi,
  loadModule: registry.loadModule,
  registerObject: registry.registerObject,
  PackedFunc,
  Module: registry.Module,
  ObjectRef: registry.ObjectRef,
  Array: registry.FFIArray,
  Map: registry.FFIMap,
  NDArray,
  nd,
  Device: value.Device,
  cpu: value.cpu,
  DataType: value.DataType,
  Float: value.Float,
  Int: value.Int,
  float: value.float,
  int: value.int,
  Shape: value.Shape,
  shape: value.shape,
  FFIError,
  GraphModule,
  VirtualMachine,
  LanguageModel,
  Generation,
  /** Numbers out as ffi.Int / ffi.Float boxes (keeps int and float apart); returns the old mode. */
  exactNumbers: (on) => native.setExactNumbers(on),
  /** The address of a handle: equal for the same runtime object. */
  handleAddress: (x) => native.handleAddress(x),
  /** Sizes the core's async pool (0 keeps a setting); returns its settings and load. */
  configureAsync: (numWorkers = 0, queueLimit = 0) => {
    const [workers, limit, queued] = native.configureAsync(numWorkers, queueLimit);
    return { numWorkers: workers, queueLimit: limit, queued };
  },
};
