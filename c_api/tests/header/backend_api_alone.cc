// c_backend_api.h on its own, as strict C++17, included twice. Built, never run.
#include <polyffi/c_backend_api.h>

extern "C" {
typedef int (*PolyffiParallelLaunchType)(FTVMParallelLambda, void*, int);
}
PolyffiParallelLaunchType polyffi_header_backend_cxx17_probe = &TVMBackendParallelLaunch;
