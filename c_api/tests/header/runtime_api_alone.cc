// c_runtime_api.h on its own, as strict C++17, included twice. Built, never run.
#include <polyffi/c_runtime_api.h>

// The declarations must have C linkage in C++ (extern "C" block), so a C++ caller links against
// the unmangled TVM* symbols; taking their address as C function pointer types checks that.
extern "C" {
typedef int (*PolyffiFuncCallType)(TVMFunctionHandle, TVMValue*, int*, int, TVMValue*, int*);
}
PolyffiFuncCallType polyffi_header_runtime_cxx17_probe = &TVMFuncCall;
