/* c_backend_api.h on its own, as strict C11, included twice. It must pull in what it needs
 * (c_runtime_api.h, dlpack.h) itself. Built, never run. */
#include <polyffi/c_backend_api.h>

int polyffi_header_backend_c11_probe(void);
int polyffi_header_backend_c11_probe(void) {
  TVMParallelGroupEnv env;
  FTVMParallelLambda lambda = NULL;
  TVMBackendPackedCFunc packed = NULL;
  env.sync_handle = NULL;
  env.num_task = 1;
  (void)lambda;
  (void)packed;
  return (int)env.num_task - 1;
}
