/* c_runtime_api.h on its own, as strict C11: nothing included before it, included twice (the
 * include guard must make the second inclusion a no-op). Built, never run. */
#include <polyffi/c_runtime_api.h>

/* Use a few declarations so an unused-everything TU cannot hide a broken typedef. */
int polyffi_header_runtime_c11_probe(void);
int polyffi_header_runtime_c11_probe(void) {
  TVMValue v;
  TVMByteArray b;
  int code = kTVMStr;
  TVMFunctionHandle f = NULL;
  v.v_int64 = 0;
  b.data = "x";
  b.size = 1;
  (void)b;
  (void)f;
  return (int)v.v_int64 + code - (int)kTVMStr;
}
