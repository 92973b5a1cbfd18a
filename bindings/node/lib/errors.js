'use strict';
// Errors: every runtime error is an FFIError whose `kind` is the kind of the error text
// ("ValueError", "TypeError", ...). A JS exception thrown inside a callback comes out of the
// outer call as the same object instead.

class FFIError extends Error {
  constructor(message, kind = 'TVMError') {
    super(message);
    this.kind = kind;
  }

  get name() {
    return 'FFIError';
  }
}

module.exports = { FFIError };
