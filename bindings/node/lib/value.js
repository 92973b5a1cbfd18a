'use strict';
// Values: the small JS types that carry a TVM type code of their own.

/** A device (DLDevice): deviceType per DLPack (1 = CPU), deviceId. */
class Device {
  constructor(deviceType, deviceId = 0) {
    this.deviceType = deviceType;
    this.deviceId = deviceId;
  }

  equals(other) {
    return other instanceof Device && other.deviceType === this.deviceType &&
      other.deviceId === this.deviceId;
  }

  toString() {
    const names = { 1: 'cpu', 2: 'cuda', 4: 'opencl', 7: 'vulkan', 8: 'metal', 10: 'rocm' };
    return `${names[this.deviceType] || `device${this.deviceType}`}(${this.deviceId})`;
  }
}

const cpu = (id = 0) => new Device(1, id);

/** A dtype such as "float32"; passes as kTVMDataType (a plain string passes as a string). */
class DataType {
  constructor(text) {
    if (typeof text !== 'string') throw new TypeError('polyffi: DataType needs a string');
    this.text = text;
  }

  equals(other) {
    return String(other) === this.text;
  }

  toString() {
    return this.text;
  }
}

/** ffi.float(x): pass x as a float even when it is integral. */
class Float {
  constructor(value) {
    this.value = value;
  }

  valueOf() {
    return Number(this.value);
  }
}

/** ffi.int(x): pass x as an int (number or bigint). */
class Int {
  constructor(value) {
    this.value = value;
  }

  valueOf() {
    return this.value;
  }
}

const float = (x) => new Float(x);
const int = (x) => new Int(x);

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function shapeDim(d, i) {
  if (typeof d === 'bigint') {
    if (d < INT64_MIN || d > INT64_MAX) {
      throw new RangeError(`polyffi: shape dimension ${i} (${d}) is outside the int64 range`);
    }
    return d >= -9007199254740991n && d <= 9007199254740991n ? Number(d) : d;
  }
  if (typeof d !== 'number' || !Number.isInteger(d)) {
    throw new TypeError(`polyffi: shape dimension ${i} must be an integer, got ${String(d)}`);
  }
  if (!Number.isSafeInteger(d)) {
    throw new RangeError(`polyffi: shape dimension ${i} (${d}) is not a safe integer; pass a bigint`);
  }
  return d;
}

/**
 * A shape (TVM's runtime.ShapeTuple, ffi.Shape in TVM 0.27): an Array of integer dimensions.
 * Every shape a call returns is a Shape; ffi.shape([...]) makes one to pass (a plain array
 * passes as a runtime.Array). Dimensions within +-(2^53-1) are numbers, beyond that bigints.
 * map/filter/slice give plain arrays.
 */
class Shape extends Array {
  static get [Symbol.species]() {
    return Array;
  }
}

/** ffi.shape(dims): a Shape from an iterable of integer numbers or bigints. */
function shape(dims) {
  if (dims == null || typeof dims[Symbol.iterator] !== 'function') {
    throw new TypeError('polyffi: ffi.shape() needs an iterable of integers');
  }
  const out = new Shape();
  let i = 0;
  for (const d of dims) out.push(shapeDim(d, i++));
  return out;
}

module.exports = { Device, cpu, DataType, Float, Int, float, int, Shape, shape };
