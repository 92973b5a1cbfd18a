// The tvm-ffi ABI of libraries compiled by TVM >= 0.20 (docs/spec/tvm-formats.md part 2): our own
// minimal declarations of its value cell and type indices, the wrapper that exposes a
// `__tvm_ffi_<name>` kernel as an ordinary function, the services its context slots point to, and
// the reader of `__tvm_ffi__library_bin`. Only the facts of apache/tvm-ffi's c_api.h are used
// (layouts, type indices, signatures); nothing here depends on tvm-ffi.
#ifndef POLYFFI_CORE_TVM_FFI_ABI_H_
#define POLYFFI_CORE_TVM_FFI_ABI_H_

#include <polyffi/dlpack_compat.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "polyffi/error.h"
#include "polyffi/function.h"
#include "polyffi/module.h"

namespace polyffi {
namespace tvmffi {

/*! \brief tvm-ffi's on-stack value (TVMFFIAny): 16 bytes, type index first. */
struct Any {
  int32_t type_index;
  uint32_t zero_padding;  // the length of a small string (type index 11 / 12)
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_c_str;
    DLDataType v_dtype;
    DLDevice v_device;
    char v_bytes[8];
  };
};
static_assert(sizeof(Any) == 16, "TVMFFIAny is 16 bytes");

/*! \brief tvm-ffi's type indices (the static ones a value can carry here). */
enum AnyTypeIndex : int32_t {
  kNone = 0,
  kInt = 1,
  kBool = 2,
  kFloat = 3,
  kOpaquePtr = 4,
  kDataType = 5,
  kDevice = 6,
  kDLTensorPtr = 7,
  kRawStr = 8,
  kByteArrayPtr = 9,
  kObjectRValueRef = 10,
  kSmallStr = 11,
  kSmallBytes = 12,
  kStaticObjectBegin = 64,
  kStr = 65,
  kBytes = 66,
  kTensor = 70,
};

/*! \brief Size of tvm-ffi's object header (ref counts, type index, deleter): cells follow it. */
constexpr size_t kObjectHeaderBytes = 24;

/*! \brief `int32_t f(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result)`. */
using SafeCall = int (*)(void* self, const Any* args, int32_t num_args, Any* result);

/*!
 * \brief Alignment tvm-ffi kernels assume of tensor data (llvm.assume(align 64), unchecked).
 *  Tensors not aligned this way are staged through an aligned copy (docs/abi-decisions.md).
 */
constexpr uintptr_t kKernelAlignment = 64;

/*!
 * \brief Wrap a `__tvm_ffi_<name>` kernel: classic arguments are converted to tvm-ffi values,
 *  the result (preset to None) converted back, a raised error rethrown with its kind. owner
 *  keeps the library alive; name is for messages.
 */
ObjectPtr<FunctionObj> WrapKernel(void* faddr, ObjectPtr<ModuleObj> owner, std::string name);

/*!
 * \brief The function-pointer slots of a tvm-ffi library that only tvm-ffi has (the
 *  `__TVMBackend*` ones are the classic functions). Null-terminated by name.
 */
struct ContextSlot {
  const char* name;
  void* value;
};
extern const ContextSlot kContextSlots[];

/*!
 * \brief Make libpolyffi's exported symbols global (dlopen(self, RTLD_NOLOAD | RTLD_GLOBAL)),
 *  once, so a library importing TVMFFIErrorSetRaisedFromCStrParts without DT_NEEDED resolves
 *  it even when libpolyffi itself came in RTLD_LOCAL (Python, Node, Java).
 */
void PromoteSelfToGlobalScope();

/*!
 * \brief Read `__tvm_ffi__library_bin` (size prefix included, at most size bytes): the CSR
 *  import tree, then per module a kind and, unless the kind is "_lib", its bytes, loaded by
 *  the global `ffi.Module.load_from_bytes.<kind>`. lib stands for "_lib"; origin names the
 *  file in errors. Returns module 0. Bounds-checked: a corrupt blob is a ValueError.
 */
ObjectPtr<ModuleObj> LoadLibraryBin(const char* blob, size_t size, ObjectPtr<ModuleObj> lib,
                                    const std::string& origin);

}  // namespace tvmffi
}  // namespace polyffi
#endif  // POLYFFI_CORE_TVM_FFI_ABI_H_
