// ESM entry: the CommonJS module's exports, default and named.
import ffi from './index.js';

export default ffi;
export const {
  version, runtimeVersion, getGlobalFunc, registerFunc, listGlobalFuncNames, removeGlobalFunc,
  convert, initApi, loadModule, registerObject, PackedFunc, Module, ObjectRef, NDArray, nd,
  Device, cpu, DataType, Float, Int, float, int, Shape, shape, FFIError, GraphModule, VirtualMachine, exactNumbers,
  LanguageModel, Generation,
  handleAddress,
} = ffi;
export const Array = ffi.Array;
export const Map = ffi.Map;
