'use strict';
// NDArrays: ffi.nd.empty / ffi.nd.array (a zero-copy view of a TypedArray or Buffer) and the
// NDArray wrapper (shape, dtype, device, toTypedArray sharing memory, copyFrom).
const { native } = require('./library');
const { HandleBase, token } = require('./registry');
const { Device, cpu } = require('./value');

class NDArray extends HandleBase {
  constructor(a, b) {
    if (a !== token) throw new TypeError('polyffi: use ffi.nd.empty() or ffi.nd.array()');
    super(a, b);
  }

  get shape() {
    return native.ndInfo(this)[0];
  }

  get dtype() {
    return native.ndInfo(this)[1];
  }

  get device() {
    const info = native.ndInfo(this);
    return new Device(info[2], info[3]);
  }

  /** A TypedArray over the array's own memory (no copy; it keeps the array alive). */
  toTypedArray() {
    return native.ndToTypedArray(this);
  }

  /** A Buffer with a copy of the bytes. */
  toBuffer() {
    return native.ndToBuffer(this);
  }

  /** Copies a TypedArray / Buffer of the same byte size into the array. */
  copyFrom(src) {
    native.ndCopyFrom(this, src);
    return this;
  }
}

const nd = {
  empty(shape, dtype = 'float32', device = cpu()) {
    return native.ndEmpty(shape, String(dtype), device.deviceType, device.deviceId);
  },
  /** A view of `typedArray`'s memory (no copy), 1-D unless `shape` is given. */
  array(typedArray, shape, dtype) {
    return native.ndFromTypedArray(typedArray, shape, dtype === undefined ? undefined : String(dtype));
  },
};

module.exports = { NDArray, nd };
