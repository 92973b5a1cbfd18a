// dlpack_compat.h on its own, as strict C++17, included twice. Built, never run.
#include <polyffi/dlpack_compat.h>

extern "C" {
typedef void (*PolyffiVersionedDeleter)(DLManagedTensorVersioned*);
}
PolyffiVersionedDeleter polyffi_header_compat_cxx17_probe = nullptr;
