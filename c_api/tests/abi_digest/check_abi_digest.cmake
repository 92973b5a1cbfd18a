# Checks that POLYFFI_ABI_DIGEST in c_runtime_api.h is the SHA-256 of what abi_canonical prints
# for these headers on this compiler (declarations without comments, plus struct layouts).
#   cmake -DCANONICAL=path/to/abi_canonical -DINCLUDE_DIR=c_api/include -P check_abi_digest.cmake
# A header change that alters a declaration or a layout fails here with the value to write.
foreach(_var CANONICAL INCLUDE_DIR)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "check_abi_digest.cmake: -D${_var}=... is required")
  endif()
endforeach()
set(_rt "${INCLUDE_DIR}/polyffi/c_runtime_api.h")
execute_process(COMMAND "${CANONICAL}" "${_rt}" "${INCLUDE_DIR}/polyffi/c_backend_api.h"
  "${INCLUDE_DIR}/polyffi/c_async_api.h"
  OUTPUT_VARIABLE _text ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "abi_canonical failed (${_rc}): ${_err}")
endif()
string(SHA256 _digest "${_text}")
file(STRINGS "${_rt}" _line REGEX "^#define POLYFFI_ABI_DIGEST ")
if(NOT _line MATCHES "\"([0-9a-f]+)\"")
  message(FATAL_ERROR "no #define POLYFFI_ABI_DIGEST \"<hex>\" in ${_rt}")
endif()
set(_declared "${CMAKE_MATCH_1}")
if(NOT _declared STREQUAL _digest)
  message(FATAL_ERROR "POLYFFI_ABI_DIGEST is ${_declared} but the headers' declarations and "
    "layouts hash to ${_digest}: the ABI changed; if that is intended, set "
    "POLYFFI_ABI_DIGEST to \"${_digest}\" (bindings built earlier will then refuse this "
    "library, as they must)")
endif()
message(STATUS "POLYFFI_ABI_DIGEST ${_digest} matches the headers")
