// The exception barrier of every exported function: exceptions inside, error codes outside.
#ifndef POLYFFI_C_API_API_GUARD_H_
#define POLYFFI_C_API_API_GUARD_H_

#include <new>
#include <stdexcept>
#include <string>

#include "polyffi/error.h"

// Exceptions inside, error codes outside.
#define API_BEGIN() try {
#define API_END()                                                                               \
  }                                                                                             \
  catch (const ::polyffi::EnvErrorAlreadySet& e) {                                              \
    ::polyffi::SetEnvError(                                                                     \
        e.text.empty() ? "EnvErrorAlreadySet: the host language has a pending error" : e.text); \
    return -2;                                                                                  \
  }                                                                                             \
  catch (const ::polyffi::Error& e) {                                                           \
    ::polyffi::SetLastError(e.Full());                                                          \
    return -1;                                                                                  \
  }                                                                                             \
  catch (const std::bad_alloc&) {                                                               \
    ::polyffi::SetLastError("RuntimeError: out of memory");                                     \
    return -1;                                                                                  \
  }                                                                                             \
  catch (const std::exception& e) {                                                             \
    ::polyffi::SetLastError(std::string("RuntimeError: ") + e.what());                          \
    return -1;                                                                                  \
  }                                                                                             \
  catch (...) {                                                                                 \
    ::polyffi::SetLastError("InternalError: unknown exception");                                \
    return -1;                                                                                  \
  }                                                                                             \
  return 0;

#endif  // POLYFFI_C_API_API_GUARD_H_
