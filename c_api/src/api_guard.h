// The exception barrier of every exported function: exceptions inside, error codes outside.
#ifndef POLYFFI_C_API_API_GUARD_H_
#define POLYFFI_C_API_API_GUARD_H_

#include "polyffi/error.h"

// Exceptions inside, error codes outside: the core's one translation of an exception into
// the last error (and -1, or -2 when the host holds the error).
#define API_BEGIN() try {
#define API_END()                                         \
  }                                                       \
  catch (...) {                                           \
    return ::polyffi::SetLastErrorFromCurrentException(); \
  }                                                       \
  return 0;

#endif  // POLYFFI_C_API_API_GUARD_H_
