/* dlpack_compat.h on its own, as strict C11, included twice, and after the system dlpack.h it
 * extends (the usual order in a binding). Built, never run. */
#include <dlpack/dlpack.h>
#include <polyffi/dlpack_compat.h>

int polyffi_header_compat_c11_probe(void);
int polyffi_header_compat_c11_probe(void) {
  DLManagedTensorVersioned t;
  t.version.major = 1;
  t.version.minor = 0;
  t.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  t.dl_tensor.dtype.code = (uint8_t)kDLBool;
  return (int)t.version.minor;
}
