/* c_async_api.h on its own, as strict C11, included twice. Built, never run. */
#include <polyffi/c_async_api.h>

int polyffi_header_async_c11_probe(void);
int polyffi_header_async_c11_probe(void) {
  TVMAsyncCallHandle call = NULL;
  TVMAsyncCallback done = NULL;
  (void)call;
  (void)done;
  return (int)kTVMAsyncReturned + (int)kTVMAsyncCancelledBeforeStart;
}
