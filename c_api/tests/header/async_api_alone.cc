// c_async_api.h on its own, as strict C++17, included twice. Built, never run.
#include <polyffi/c_async_api.h>

// C linkage: the address of each entry point as a C function pointer type.
extern "C" {
typedef int (*PolyffiAsyncSubmitType)(TVMFunctionHandle, TVMValue*, int*, int, TVMAsyncCallback,
                                      void*, TVMAsyncCallHandle*);
}
PolyffiAsyncSubmitType polyffi_header_async_cxx17_probe = &TVMAsyncSubmit;
