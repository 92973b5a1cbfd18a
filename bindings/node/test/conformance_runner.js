'use strict';
// Runs one case of tests/conformance/cases/*.json through the polyffi Node binding.
//
// Mirrors bindings/python/tests/conformance_runner.py: the same tags, steps and checks, with the
// host callbacks of docs/spec/conformance.md section 2 (host callbacks) written in JS. The runner
// works in exact-number mode (ffi.exactNumbers(true)): numbers come out as ffi.Int / ffi.Float
// boxes, so that a JS callback forwarding a value keeps its int/float type code, which plain JS
// numbers cannot carry. Calls to testing.call_on_thread go through callAsync: a JS callback can
// only run on the JS thread, which must not be blocked in a synchronous call meanwhile (see
// README).
const ffi = require('..');

class Failure extends Error {}

// ---- Host callables -------------------------------------------------------------------------

const created = new Map();
const finalized = new Map();
let currentCase = 0;

function bump(map, serial) {
  map.set(serial, (map.get(serial) || 0) + 1);
}

const isInt = (x) => x instanceof ffi.Int;
const intValue = (x) => BigInt(x.value);

function checkInt(who, i, x) {
  if (!isInt(x)) throw new TypeError(`${who}: argument ${i} expected int but got ${typeName(x)}`);
  return intValue(x);
}

const hosts = {
  'host.add': (...args) => ffi.int(args.reduce((s, a, i) => s + checkInt('host.add', i, a), 0n)),
  'host.concat': (...args) =>
    args.map((a, i) => {
      if (Buffer.isBuffer(a)) return a.toString('utf8');
      if (typeof a !== 'string') {
        throw new TypeError(`host.concat: argument ${i} expected str but got ${typeName(a)}`);
      }
      return a;
    }).join(''),
  'host.identity': (...args) => {
    if (args.length === 0) return null;
    if (args.length !== 1) {
      throw new TypeError(`host.identity expected 1 argument but got ${args.length}`);
    }
    return args[0];
  },
  'host.raise_value_error': () => {
    throw new ffi.FFIError('host boom', 'ValueError');
  },
  'host.return_none': () => null,
  'host.adder': (...args) => {
    if (args.length !== 1) throw new TypeError(`host.adder expected 1 argument but got ${args.length}`);
    const y = checkInt('host.adder', 0, args[0]);
    const closure = (...xs) => {
      if (xs.length !== 1) {
        throw new TypeError(`host.adder.<closure> expected 1 argument but got ${xs.length}`);
      }
      return ffi.int(checkInt('host.adder.<closure>', 0, xs[0]) + y);
    };
    return hostFunction(closure, currentCase);
  },
  'host.call_echo': (...args) => echo()(...args),
  'host.return_unsupported': () => Symbol('unsupported'),
};

let echoFn = null;
const echo = () => echoFn || (echoFn = ffi.getGlobalFunc('testing.echo'));

// A host callable counted alive from creation until the runtime's finalizer drops it.
function hostFunction(impl, serial) {
  bump(created, serial);
  return ffi.convert((...args) => impl(...args), { onFinalize: () => bump(finalized, serial) });
}

function makeHostFunction(name, serial) {
  const impl = hosts[name];
  if (!impl) throw new Failure(`unknown host function ${name}`);
  return hostFunction(impl, serial);
}

const live = (serial) => (created.get(serial) || 0) - (finalized.get(serial) || 0);
const tick = () => new Promise((resolve) => setImmediate(resolve));

// Wrappers the JS side no longer references are collected, their handles freed, and finalizers
// handed to the JS thread run; give that a few turns of the event loop to settle on `want`.
async function hostLive(serial, want) {
  let n = live(serial);
  for (let round = 0; round < 40 && n !== want; round++) {
    if (global.gc) global.gc();
    await tick();
    await tick();
    n = live(serial);
  }
  return n;
}

// ---- Values ---------------------------------------------------------------------------------

function parseFloatBody(body) {
  if (typeof body === 'number') return body;
  if (typeof body === 'bigint') return Number(body);
  const table = { nan: NaN, inf: Infinity, '-inf': -Infinity, '-0.0': -0 };
  if (body in table) return table[body];
  throw new Failure(`bad float ${body}`);
}

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);
function floatBits(x) {
  f64[0] = x;
  return u64[0];
}

function tagOf(tagged) {
  if (tagged === null || typeof tagged !== 'object' || Object.keys(tagged).length !== 1) {
    throw new Failure(`expected a tagged value with exactly one key, got ${show(tagged)}`);
  }
  return Object.entries(tagged)[0];
}

function stringOf(tag, body) {
  if (tag === 'str') return body;
  const [unit, count] = body;
  return unit.repeat(Number(count));
}

const typedArrays = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, int16: Int16Array,
  int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array, uint16: Uint16Array,
  uint32: Uint32Array, bool: Uint8Array,
};

// The bytes of an {ndarray} body, little-endian like the runtime's CPU arrays.
function ndarrayBytes(body) {
  const dtype = body.dtype;
  const m = /^(float|int|uint|bool)(\d*)(?:x(\d+))?$/.exec(dtype);
  if (!m) throw new Failure(`bad dtype ${dtype}`);
  const base = m[1] === 'bool' ? 'bool' : `${m[1]}${m[2]}`;
  if (base === 'float16') {
    const out = new Uint16Array(body.data.length);
    body.data.forEach((e, i) => { out[i] = toHalf(parseFloatBody(e)); });
    return Buffer.from(out.buffer);
  }
  const T = typedArrays[base];
  if (!T) throw new Failure(`no TypedArray for ${dtype}`);
  const data = body.data.map((e) => {
    if (m[1] === 'float') return parseFloatBody(e);
    if (T === BigInt64Array) return BigInt(e);
    return typeof e === 'boolean' ? Number(e) : Number(e);
  });
  return Buffer.from(T.from(data).buffer);
}

function toHalf(x) {
  const f = new Float32Array([x]);
  const b = new Uint32Array(f.buffer)[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m2 = (mant | 0x800000) >> (1 - e);
    return sign | ((m2 + 0x1000) >> 13);
  }
  return sign | (e << 10) | ((mant + 0x1000) >> 13);
}

function typeName(v) {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return 'bool';
  if (v instanceof ffi.Int) return 'int';
  if (v instanceof ffi.Float) return 'float';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'string') return 'str';
  if (Buffer.isBuffer(v)) return 'bytes';
  if (v instanceof ffi.Device) return 'Device';
  if (v instanceof ffi.DataType) return 'dtype';
  if (v instanceof ffi.PackedFunc) return 'Function';
  if (v instanceof ffi.Module) return 'Module';
  if (v instanceof ffi.NDArray) return 'NDArray';
  if (v instanceof ffi.ObjectRef) return 'Object';
  return (v.constructor && v.constructor.name) || typeof v;
}

function show(v) {
  let text;
  try {
    text = typeof v === 'bigint' ? `${v}n` : JSON.stringify(v, (k, x) =>
      (typeof x === 'bigint' ? `${x}n` : x));
  } catch {
    text = String(v);
  }
  if (text === undefined) text = String(v);
  if (v instanceof ffi.Float) text += ` (bits 0x${floatBits(Number(v.value)).toString(16)})`;
  return `${typeName(v)} ${String(text).slice(0, 200)}`;
}

function errorParts(e) {
  const kind = (e && (e.kind || e.name)) || 'Error';
  const full = e && e.message !== undefined ? String(e.message) : String(e);
  return [kind, full.split('\n')[0], `${kind}: ${full}`];
}

const isHandle = (v) => v instanceof ffi.PackedFunc || v instanceof ffi.Module ||
  v instanceof ffi.NDArray || v instanceof ffi.ObjectRef;

class CaseRun {
  constructor(libDir, serial) {
    this.libDir = libDir;
    this.serial = serial;
    this.vars = new Map();
    this.modules = [];
    this.registered = [];
    this.owned = [];  // handles bound for the whole case (let, load_module): disposed at the end
    this.temps = [];  // handles made or received by the current step: disposed after it
  }

  // Python drops a step's arguments and unbound results when the step ends; so does the runner.
  own(v) {
    if (isHandle(v)) this.temps.push(v);
    return v;
  }

  keep(v) {
    const i = this.temps.lastIndexOf(v);
    if (i >= 0) this.temps.splice(i, 1);
    if (isHandle(v)) this.owned.push(v);
    return v;
  }

  endStep() {
    const bound = new Set([...this.vars.values(), ...this.modules, ...this.owned]);
    for (const h of this.temps) if (!bound.has(h)) h.dispose();
    this.temps.length = 0;
  }

  variable(name) {
    if (!this.vars.has(name)) throw new Failure(`variable ${name} is not bound`);
    return this.vars.get(name);
  }

  loadModule(name) {
    return this.own(ffi.loadModule(`${this.libDir}/lib${name}.so`));
  }

  resolveModule(ref) {
    const m = typeof ref === 'string' ? this.loadModule(ref) : this.build(ref);
    if (!(m instanceof ffi.Module)) throw new Failure(`expected a module but got ${show(m)}`);
    return m;
  }

  moduleFunction(spec, required) {
    const m = this.resolveModule(spec.module);
    const f = m.getFunction(spec.function, {
      queryImports: Boolean(spec.query_imports), allowMissing: true,
    });
    if (f === null && required) throw new Failure(`module has no function ${spec.function}`);
    return this.own(f);
  }

  build(tagged) {
    const [tag, body] = tagOf(tagged);
    switch (tag) {
      case 'int': return ffi.int(body);
      case 'float': return ffi.float(parseFloatBody(body));
      case 'bool': return Boolean(body);
      case 'str':
      case 'str_repeat': return stringOf(tag, body);
      case 'bytes_hex': return Buffer.from(body, 'hex');
      case 'null': return null;
      case 'device': return new ffi.Device(Number(body[0]), Number(body[1]));
      case 'dtype': return new ffi.DataType(body);
      case 'host': return this.own(makeHostFunction(body, this.serial));
      case 'global': return this.own(ffi.getGlobalFunc(body));
      case 'var': return this.variable(body);
      case 'module': return this.loadModule(body);
      case 'array': return this.own(new ffi.Array(body.map((item) => this.build(item))));
      case 'map':
        return this.own(new ffi.Map(body.map(([k, v]) => [this.build(k), this.build(v)])));
      case 'shape': return ffi.shape(body);
      case 'ndarray': {
        const out = this.own(ffi.nd.empty(body.shape.map(Number), body.dtype));
        out.copyFrom(ndarrayBytes(body));
        return out;
      }
      default: throw new Failure(`unknown value tag ${tag}`);
    }
  }

  expect(expect, actual, args, path) {
    const [tag, body] = tagOf(expect);
    const fail = (why = '') => {
      throw new Failure(`${path}: expected ${show(expect).slice(0, 300)} but got ${show(actual)}` +
        (why ? ` (${why})` : ''));
    };
    const need = (kind) => {
      if (typeName(actual) !== kind) fail(`type ${typeName(actual)}, want ${kind}`);
    };
    switch (tag) {
      case 'int':
        need('int');
        if (intValue(actual) !== BigInt(body)) fail();
        break;
      case 'bool':
        need('bool');
        if (actual !== body) fail();
        break;
      case 'float':
        need('float');
        if (floatBits(Number(actual.value)) !== floatBits(parseFloatBody(body))) fail('bits differ');
        break;
      case 'str':
      case 'str_repeat':
        need('str');
        if (actual !== stringOf(tag, body)) fail();
        break;
      case 'bytes_hex':
        need('bytes');
        if (!actual.equals(Buffer.from(body, 'hex'))) fail();
        break;
      case 'null':
        need('None');
        break;
      case 'device':
        need('Device');
        if (actual.deviceType !== Number(body[0]) || actual.deviceId !== Number(body[1])) fail();
        break;
      case 'dtype':
        need('str');  // docs/abi-decisions.md: dtypes come back as their string form
        if (actual !== body) fail();
        break;
      case 'any':
        if (typeName(actual) !== body) fail();
        break;
      case 'same_as_arg':
      case 'var': {
        let want;
        if (tag === 'var') {
          want = this.variable(body);
        } else {
          if (body >= args.length) throw new Failure(`${path}: same_as_arg ${body} out of range`);
          want = args[body];
        }
        if (typeName(actual) !== typeName(want)) fail(`type differs from ${show(want)}`);
        if (isHandle(want)) {
          if (ffi.handleAddress(actual) !== ffi.handleAddress(want)) fail('not the same handle');
        } else if (want instanceof ffi.Float) {
          if (floatBits(Number(actual.value)) !== floatBits(Number(want.value))) fail();
        } else if (want instanceof ffi.Int) {
          if (intValue(actual) !== intValue(want)) fail();
        } else if (want instanceof ffi.Device) {
          if (!want.equals(actual)) fail();
        } else if (Buffer.isBuffer(want)) {
          if (!want.equals(actual)) fail();
        } else if (want instanceof ffi.DataType) {
          if (String(actual) !== String(want)) fail();
        } else if (actual !== want) {
          fail();
        }
        break;
      }
      case 'array': {
        if (!(actual instanceof ffi.Array)) fail('not an Array');
        const n = Number(actual.length.value);
        if (n !== body.length) fail(`size ${n}`);
        body.forEach((item, i) => this.expect(item, this.own(actual.get(i)), args, `${path}[${i}]`));
        break;
      }
      case 'map': {
        if (!(actual instanceof ffi.Map)) fail('not a Map');
        const n = Number(actual.size.value);
        if (n !== body.length) fail(`size ${n}`);
        for (const [k, v] of body) {
          const key = this.build(k);
          let item;
          try {
            item = this.own(actual.get(key));
          } catch (e) {
            fail(`looking up key ${show(k)}: ${e.message}`);
          }
          this.expect(v, item, args, `${path}[${show(k)}]`);
        }
        break;
      }
      case 'shape': {
        if (!(actual instanceof ffi.Shape) || !Array.isArray(actual)) fail('not an ffi.Shape');
        if (actual.length !== body.length) fail(`size ${actual.length}`);
        actual.forEach((d, i) => {
          // numbers within +-(2^53-1), bigints only beyond
          const safe = typeof d === 'number' && Number.isSafeInteger(d);
          const big = typeof d === 'bigint' && (d > 9007199254740991n || d < -9007199254740991n);
          if (!(safe || big)) fail(`dimension ${i} is ${typeof d} ${String(d)}`);
          if (BigInt(d) !== BigInt(body[i])) fail(`dimension ${i} differs`);
        });
        break;
      }
      case 'ndarray': {
        if (!(actual instanceof ffi.NDArray)) fail('not an NDArray');
        if (actual.dtype !== body.dtype) fail('dtype differs');
        const shape = actual.shape;
        if (shape.length !== body.shape.length || shape.some((d, i) => d !== Number(body.shape[i]))) {
          fail('shape differs');
        }
        const got = actual.toBuffer();
        if (!got.equals(ndarrayBytes(body))) fail(`data differs: ${got.toString('hex').slice(0, 200)}`);
        break;
      }
      default:
        throw new Failure(`${path}: unknown expectation tag ${tag}`);
    }
  }

  static expectError(spec, e) {
    const [kind, message, text] = errorParts(e);
    const fail = (why) => {
      throw new Failure(`expected error ${show(spec)} but got ${text} (${why})`);
    };
    if ('kind' in spec && kind !== spec.kind) fail('kind');
    if ('kind' in spec && !(e instanceof ffi.FFIError) && e.name !== spec.kind) fail('class');
    if ('message' in spec && message !== spec.message) fail('message');
    if ('contains' in spec && !text.includes(spec.contains)) fail('text');
  }

  async runCall(step, fn, viaThread) {
    if (!(fn instanceof ffi.PackedFunc)) throw new Failure(`callee is not a function: ${show(fn)}`);
    const args = step.args.map((a) => this.build(a));
    let result;
    try {
      result = viaThread || step.async === true ? await fn.callAsync(...args) : fn(...args);
    } catch (e) {
      if (e instanceof Failure) throw e;
      if ('expect_error' in step) {
        CaseRun.expectError(step.expect_error, e);
        return;
      }
      throw new Failure(`call failed: ${errorParts(e)[2]}`);
    }
    this.own(result);
    if ('expect_error' in step) {
      throw new Failure(`expected error ${show(step.expect_error)} but the call returned ${show(result)}`);
    }
    if ('expect' in step) this.expect(step.expect, result, args, 'result');
    if ('bind' in step) this.vars.set(step.bind, this.keep(result));
  }

  async runStep(step) {
    if ('call' in step) {
      const f = this.own(ffi.getGlobalFunc(step.call));
      await this.runCall(step, f, step.call === 'testing.call_on_thread');
    } else if ('call_value' in step) {
      await this.runCall(step, this.build(step.call_value), false);
    } else if ('module_call' in step) {
      await this.runCall(step, this.moduleFunction(step.module_call, true), false);
    } else if ('let' in step) {
      this.vars.set(step.let, this.keep(this.build(step.value)));
    } else if ('release' in step) {
      if (!this.vars.has(step.release)) throw new Failure(`release of unbound variable ${step.release}`);
      const v = this.vars.get(step.release);
      this.vars.delete(step.release);
      // The runner's one reference goes now, as Python's del does (other wrappers of the same
      // object are dropped at the end of the case or by the collector).
      if (isHandle(v)) v.dispose();
    } else if ('register' in step) {
      const name = step.register;
      const f = this.build(step.value);
      if (!(f instanceof ffi.PackedFunc)) throw new Failure('register needs a function');
      try {
        ffi.registerFunc(name, f, { override: Boolean(step.override) });
      } catch (e) {
        if (!('expect_error' in step)) throw new Failure(`register failed: ${e.message}`);
        CaseRun.expectError(step.expect_error, e);
        return;
      }
      this.registered.push(name);
      if ('expect_error' in step) throw new Failure(`register ${name} succeeded`);
    } else if ('remove' in step) {
      ffi.removeGlobalFunc(step.remove);
    } else if ('exists' in step) {
      const f = ffi.getGlobalFunc(step.exists, { allowMissing: true });
      if (f) f.dispose();
      if ((f !== null) !== step.expect) {
        throw new Failure(`getGlobalFunc(${step.exists}) ${f !== null ? 'found it' : 'did not find it'}`);
      }
    } else if ('listed' in step) {
      const names = ffi.listGlobalFuncNames();
      const found = names.includes(step.listed);
      if (found !== step.expect) {
        throw new Failure(`listGlobalFuncNames ${found ? 'lists' : 'does not list'} ${step.listed} ` +
          `(${names.length} names)`);
      }
    } else if ('host_live' in step) {
      const n = await hostLive(this.serial, step.host_live);
      if (n !== step.host_live) throw new Failure(`host callables alive: ${n}, want ${step.host_live}`);
    } else if ('load_module' in step) {
      let m;
      try {
        m = this.loadModule(step.load_module);
      } catch (e) {
        if (!('expect_error' in step)) throw new Failure(`load failed: ${e.message}`);
        CaseRun.expectError(step.expect_error, e);
        return;
      }
      if ('expect_error' in step) throw new Failure('loading the module succeeded');
      this.keep(m);
      if ('bind' in step) this.vars.set(step.bind, m);
      else this.modules.push(m);
    } else if ('import' in step) {
      const m = this.resolveModule(step.import.module);
      const dep = this.resolveModule(step.import.dep);
      m.importModule(dep);
    } else if ('module_get' in step) {
      const f = this.moduleFunction(step.module_get, false);
      if ('expect' in step && (f !== null) !== step.expect) {
        throw new Failure(`getFunction ${f !== null ? 'found' : 'did not find'} ${show(step.module_get)}`);
      }
      if ('bind' in step) {
        if (f === null) throw new Failure('module_get found nothing to bind');
        this.vars.set(step.bind, this.keep(f));
      }
    } else {
      throw new Failure(`unknown step ${show(step)}`);
    }
  }

  cleanup() {
    this.vars.clear();
    this.modules.length = 0;
    for (const name of this.registered) ffi.removeGlobalFunc(name);
    this.registered.length = 0;
    this.endStep();
    for (const h of this.owned) h.dispose();
    this.owned.length = 0;
  }
}

let serialCounter = 0;

/** Runs one case; resolves to null when it passes, else the failure message. */
async function runCase(c, libDir) {
  serialCounter += 1;
  const serial = serialCounter;
  currentCase = serial;
  const run = new CaseRun(libDir, serial);
  const steps = c.steps || [c];
  let message = null;
  for (let i = 0; i < steps.length; i++) {
    try {
      await run.runStep(steps[i]);
      run.endStep();
    } catch (e) {
      const prefix = c.steps ? `step ${i}: ` : '';
      message = `${prefix}${e instanceof Failure ? e.message : `${errorParts(e)[2]}\n${e.stack}`}`;
      break;
    }
  }
  run.cleanup();
  if (message === null) {
    const n = await hostLive(serial, 0);
    if (n !== 0) message = `after the case: ${n} host callable(s) never finalized`;
  }
  return message;
}

module.exports = { runCase };
