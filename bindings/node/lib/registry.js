'use strict';
// Registry: global functions, callbacks, init_api-style namespaces, modules and the generic
// object wrappers (containers included).
const { native } = require('./library');
const { FFIError } = require('./errors');
const { PackedFunc, disposeSymbol } = require('./function');

const token = Object.freeze({ polyffiNativeToken: true });

/** Base of every handle-carrying object that is not a function. */
class HandleBase extends native.Handle {
  /** Releases the handle now; later use throws an FFIError (kind ValueError). */
  dispose() {
    native.dispose(this);
  }

  get disposed() {
    return native.isDisposed(this);
  }

  [disposeSymbol]() {
    native.dispose(this);
  }
}

function fromNativeOnly(a) {
  if (a !== token) throw new TypeError('polyffi: this object is created by the library');
}

class Module extends HandleBase {
  constructor(a, b) {
    fromNativeOnly(a);
    super(a, b);
  }

  /** The function `name`; missing: FFIError kind AttributeError, or null with allowMissing. */
  getFunction(name, { queryImports = false, allowMissing = false } = {}) {
    const f = native.modGetFunction(this, name, queryImports);
    if (f === null && !allowMissing) {
      throw new FFIError(`Module has no function '${name}'`, 'AttributeError');
    }
    return f;
  }

  importModule(dep) {
    native.modImport(this, dep);
  }

  /** The entry function named by the library's __tvm_main__. */
  get entryFunc() {
    return this.getFunction('__tvm_main__');
  }

  get typeKey() {
    const f = cachedGlobal('runtime.ModuleGetTypeKey');
    return f(this);
  }

  /** The modules this one imports (a TVM export's factory imports its `library`), in order. */
  get imports() {
    const n = cachedGlobal('runtime.ModuleImportsSize')(this);
    const get = cachedGlobal('runtime.ModuleGetImport');
    const out = [];
    for (let i = 0; i < n; i++) out.push(get(this, i));
    return out;
  }
}

class ObjectRef extends HandleBase {
  constructor(a, b) {
    fromNativeOnly(a);
    super(a, b);
  }

  get typeKey() {
    return native.typeKey(this);
  }
}

const globalCache = new Map();
function cachedGlobal(name) {
  let f = globalCache.get(name);
  if (f === undefined) {
    f = getGlobalFunc(name);
    globalCache.set(name, f);
  }
  return f;
}

/** runtime.Array: `new ffi.Array([1, 'a'])`, or as returned by a call. */
class FFIArray extends ObjectRef {
  constructor(a, b) {
    if (a === token) {
      super(a, b);
    } else {
      if (!Array.isArray(a)) throw new TypeError('polyffi: new Array() needs a JS array');
      return cachedGlobal('runtime.Array')(...a);
    }
  }

  get length() {
    return cachedGlobal('runtime.ArraySize')(this);
  }

  get(i) {
    return cachedGlobal('runtime.ArrayGetItem')(this, i);
  }

  toArray() {
    const n = this.length;
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.get(i);
    return out;
  }

  *[Symbol.iterator]() {
    const n = this.length;
    for (let i = 0; i < n; i++) yield this.get(i);
  }
}

/** runtime.Map: `new ffi.Map([[k, v], ...])` or from a JS Map / plain object. */
class FFIMap extends ObjectRef {
  constructor(a, b) {
    if (a === token) {
      super(a, b);
    } else {
      const entries = a instanceof Map || Array.isArray(a) ? [...a] : Object.entries(a || {});
      return cachedGlobal('runtime.Map')(...entries.flat(1));
    }
  }

  get size() {
    return cachedGlobal('runtime.MapSize')(this);
  }

  get(key) {
    return cachedGlobal('runtime.MapGetItem')(this, key);
  }

  has(key) {
    return cachedGlobal('runtime.MapCount')(this, key) > 0;
  }

  entries() {
    const flat = cachedGlobal('runtime.MapItems')(this);
    const out = [];
    const n = flat.length;
    for (let i = 0; i < n; i += 2) out.push([flat.get(i), flat.get(i + 1)]);
    flat.dispose();
    return out;
  }

  keys() {
    return this.entries().map((e) => e[0]);
  }

  [Symbol.iterator]() {
    return this.entries()[Symbol.iterator]();
  }
}

const objectClasses = Object.create(null);
objectClasses.Array = FFIArray;
objectClasses.Map = FFIMap;

/** Returned objects of `typeKey` become instances of `cls` (a subclass of ObjectRef). */
function registerObject(typeKey, cls) {
  if (!(cls.prototype instanceof ObjectRef)) {
    throw new TypeError('polyffi: registerObject needs a subclass of ObjectRef');
  }
  objectClasses[typeKey] = cls;
}

function getGlobalFunc(name, { allowMissing = false } = {}) {
  const f = native.getGlobal(name);
  if (f === null && !allowMissing) {
    throw new FFIError(`Cannot find global function ${name}`, 'ValueError');
  }
  return f;
}

/** A JS function as a PackedFunc (a PackedFunc is returned as it is). */
function convert(fn, { onFinalize } = {}) {
  return native.convert(fn, onFinalize);
}

function registerFunc(name, fn, { override = false } = {}) {
  const f = convert(fn);
  native.registerGlobal(name, f, override);
  return f;
}

const listGlobalFuncNames = () => native.listGlobalNames();
const removeGlobalFunc = (name) => native.removeGlobal(name);

/** { x: PackedFunc } for every global PREFIX.x (PREFIX.a.b is not attached). */
function initApi(prefix) {
  const api = {};
  const start = `${prefix}.`;
  for (const name of listGlobalFuncNames()) {
    if (!name.startsWith(start)) continue;
    const rest = name.slice(start.length);
    if (rest.length === 0 || rest.includes('.')) continue;
    api[rest] = getGlobalFunc(name);
  }
  return api;
}

function loadModule(path, fmt = '') {
  return native.loadModule(path, fmt);
}

module.exports = {
  token, HandleBase, Module, ObjectRef, FFIArray, FFIMap, objectClasses, registerObject,
  getGlobalFunc, convert, registerFunc, listGlobalFuncNames, removeGlobalFunc, initApi,
  loadModule, cachedGlobal, PackedFunc,
};
