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

module.exports = { Device, cpu, DataType, Float, Int, float, int };
