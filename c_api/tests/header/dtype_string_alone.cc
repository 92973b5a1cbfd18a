// dtype_string.h on its own, as strict C++17, included twice. Built, never run.
#include <polyffi/dtype_string.h>

int polyffi_header_dtype_string_cxx17_probe(char* buf, size_t size) {
  DLDataType t = {kDLFloat, 32, 1};
  int rc = PolyffiDataTypeFromString("float32x4", &t);
  PolyffiDataTypeToString(t, buf, size);
  return rc;
}
