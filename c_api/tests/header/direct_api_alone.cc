// c_direct_api.h on its own, as strict C++17, included twice. Built, never run.
#include <polyffi/c_direct_api.h>
#include <polyffi/c_direct_api.h>

// C linkage: the address of each entry point as a C function pointer type.
extern "C" {
typedef int (*PolyffiFuncCreateDirectType)(TVMDirectCFunc, void*, TVMPackedCFuncFinalizer,
                                           TVMFunctionHandle*);
typedef int (*PolyffiFuncGetDirectType)(TVMFunctionHandle, TVMDirectCFunc*, void**);
typedef int (*PolyffiDirectReturnStringType)(const char*, size_t, int, TVMValue*, int*);
}
PolyffiFuncCreateDirectType polyffi_header_direct_create_probe = &TVMFuncCreateDirect;
PolyffiFuncGetDirectType polyffi_header_direct_get_probe = &TVMFuncGetDirect;
PolyffiDirectReturnStringType polyffi_header_direct_return_probe = &TVMDirectReturnString;
