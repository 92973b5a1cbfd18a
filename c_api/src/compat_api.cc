// The rest of TVM 0.18's exported C functions: the host-exception protocol and host hooks,
// device memory and streams (the CPU), array type indices, AnyList cells, and the C runtime's
// platform functions. Semantics as in TVM 0.18 (c_runtime_api.cc, cpu_device_api.cc,
// relax_vm/builtin.cc, micro_session.cc); differences are noted at each function.
#include <polyffi/c_backend_api.h>
#include <polyffi/c_runtime_api.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <unordered_set>

#include "api_guard.h"
#include "polyffi/env_api.h"
#include "polyffi/error.h"
#include "polyffi/ndarray.h"
#include "polyffi/value.h"

using namespace polyffi;  // NOLINT(build/namespaces): this file is the boundary of the core

namespace {

template <typename T>
T* NotNull(T* p, const char* what) {
  if (p == nullptr) Throw("ValueError", what, " is NULL");
  return p;
}

bool IsCPU(int32_t device_type) { return device_type == kDLCPU || device_type == kDLCUDAHost; }

void CheckCPU(int32_t device_type, const char* fn) {
  if (!IsCPU(device_type)) {
    Throw("ValueError", fn, ": device type ", device_type,
          " is not available (this runtime has CPU only)");
  }
}

// Allocations handed out by TVMDeviceAllocDataSpace, so that a foreign or freed pointer given to
// TVMDeviceFreeDataSpace is an error rather than heap corruption.
struct LiveAllocations {
  std::mutex mu;
  std::unordered_set<void*> ptrs;
};
LiveAllocations& Live() {
  static auto* live = new LiveAllocations();  // leaked: frees may come during exit
  return *live;
}

constexpr size_t kAllocAlignment = 64;  // TVM's kAllocAlignment

void* AllocAligned(size_t nbytes, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    Throw("ValueError", "TVMDeviceAllocDataSpace: alignment ", alignment, " is not a power of two");
  }
  if (alignment < kAllocAlignment) alignment = kAllocAlignment;
  // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a distinct block.
  size_t rounded = nbytes == 0 ? alignment : nbytes;
  if (rounded % alignment != 0) {
    if (rounded > SIZE_MAX - alignment) {
      Throw("ValueError", "TVMDeviceAllocDataSpace: ", nbytes, " bytes is too large");
    }
    rounded += alignment - rounded % alignment;
  }
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) Throw("RuntimeError", "out of memory allocating ", nbytes, " bytes");
  try {
    std::lock_guard<std::mutex> lock(Live().mu);
    Live().ptrs.insert(p);
  } catch (...) {
    std::free(p);
    throw;
  }
  return p;
}

RetValue* Cell(void* anylist, int index) {
  NotNull(anylist, "anylist");
  if (index < 0) Throw("IndexError", "anylist index ", index, " is negative");
  return static_cast<RetValue*>(anylist) + index;
}

}  // namespace

static_assert(sizeof(RetValue) == 16, "an anylist cell has the layout of TVM's TVMRetValue");

// ---- Host exceptions and hooks ----

void TVMAPISetLastPythonError(void* python_error) {
  try {
    SetLastHostError(RetainHostObject(python_error));
  } catch (...) {
    // Only allocation can fail here; the error text then says so (nothing is retained).
    SetLastError("RuntimeError: out of memory recording a host exception");
  }
}

void* TVMGetLastPythonError(void) { return GetLastHostError(); }

void TVMDropLastPythonError(void) { DropLastHostError(); }

const char* TVMGetLastBacktrace(void) { return nullptr; }

void TVMThrowLastError(void) { throw RethrownError(GetLastError()); }

int TVMBackendRegisterEnvCAPI(const char* name, void* ptr) {
  API_BEGIN();
  NotNull(name, "name");
  if (!RegisterEnvCAPI(name, ptr)) {
    Throw("ValueError", "TVMBackendRegisterEnvCAPI: unknown symbol '", name,
          "' (known: Py_IncRef, Py_DecRef, PyGILState_Ensure, PyGILState_Release, "
          "PyErr_CheckSignals)");
  }
  API_END();
}

// ---- Arrays ----

int TVMArrayGetTypeIndex(TVMArrayHandle handle, unsigned* out_tindex) {
  API_BEGIN();
  NDArrayObj* a = NDArrayObj::FromHandle(NotNull(handle, "array handle"));
  *NotNull(out_tindex, "out_tindex") = a->type_index();
  API_END();
}

// ---- Streams (the CPU has none: NULL) ----

int TVMStreamCreate(int device_type, int, TVMStreamHandle* out) {
  API_BEGIN();
  NotNull(out, "out");
  CheckCPU(device_type, "TVMStreamCreate");
  *out = nullptr;
  API_END();
}

int TVMStreamFree(int device_type, int, TVMStreamHandle stream) {
  API_BEGIN();
  CheckCPU(device_type, "TVMStreamFree");
  if (stream != nullptr) Throw("ValueError", "TVMStreamFree: the CPU has no streams but NULL");
  API_END();
}

int TVMStreamStreamSynchronize(int device_type, int, TVMStreamHandle src, TVMStreamHandle dst) {
  API_BEGIN();
  CheckCPU(device_type, "TVMStreamStreamSynchronize");
  if (src != nullptr || dst != nullptr) {
    Throw("ValueError", "TVMStreamStreamSynchronize: the CPU has no streams but NULL");
  }
  API_END();
}

// ---- Device memory ----

int TVMDeviceAllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment, DLDataType,
                            void** out_data) {
  API_BEGIN();
  NotNull(out_data, "out_data");
  CheckCPU(DeviceTypeOf(dev), "TVMDeviceAllocDataSpace");
  *out_data = AllocAligned(nbytes, alignment);
  API_END();
}

int TVMDeviceAllocDataSpaceWithScope(DLDevice dev, int ndim, const int64_t* shape, DLDataType dtype,
                                     const char* mem_scope, void** out_data) {
  API_BEGIN();
  NotNull(out_data, "out_data");
  CheckCPU(DeviceTypeOf(dev), "TVMDeviceAllocDataSpaceWithScope");
  if (mem_scope != nullptr && std::strcmp(mem_scope, "global") != 0) {
    Throw("ValueError", "TVMDeviceAllocDataSpaceWithScope: the CPU has no memory scope '",
          mem_scope, "' (only \"global\")");
  }
  if (ndim < 0) Throw("ValueError", "ndim is negative (", ndim, ")");
  if (ndim > 0) NotNull(shape, "shape");
  if (dtype.lanes == 0 || dtype.bits == 0) {
    Throw("ValueError", "TVMDeviceAllocDataSpaceWithScope: invalid dtype (code ", int(dtype.code),
          ", bits ", int(dtype.bits), ", lanes ", dtype.lanes, ")");
  }
  size_t nbytes = CheckedBytes(shape, ndim, dtype);
  // TVM aligns arrays to the element size when it exceeds kAllocAlignment.
  size_t alignment = ElementBytes(dtype);
  while (alignment & (alignment - 1)) alignment &= alignment - 1;  // a power of two below it
  *out_data = AllocAligned(nbytes, alignment < kAllocAlignment ? kAllocAlignment : alignment);
  API_END();
}

int TVMDeviceFreeDataSpace(DLDevice dev, void* ptr) {
  API_BEGIN();
  CheckCPU(DeviceTypeOf(dev), "TVMDeviceFreeDataSpace");
  if (ptr == nullptr) return 0;
  {
    std::lock_guard<std::mutex> lock(Live().mu);
    if (Live().ptrs.erase(ptr) == 0) {
      Throw("ValueError",
            "TVMDeviceFreeDataSpace: this pointer was not allocated by "
            "TVMDeviceAllocDataSpace, or was freed already");
    }
  }
  std::free(ptr);
  API_END();
}

int TVMDeviceCopyDataFromTo(DLTensor* from, DLTensor* to, TVMStreamHandle stream) {
  API_BEGIN();
  NotNull(from, "from");
  NotNull(to, "to");
  CheckCPU(DeviceTypeOf(from->device), "TVMDeviceCopyDataFromTo (source)");
  CheckCPU(DeviceTypeOf(to->device), "TVMDeviceCopyDataFromTo (destination)");
  if (stream != nullptr) Throw("ValueError", "TVMDeviceCopyDataFromTo: the CPU has no streams");
  if (from->ndim < 0 || to->ndim < 0 || (from->ndim > 0 && from->shape == nullptr) ||
      (to->ndim > 0 && to->shape == nullptr)) {
    Throw("ValueError", "TVMDeviceCopyDataFromTo: a tensor has no valid shape");
  }
  // As TVM: both compact, equal byte sizes; shapes and dtypes may differ.
  size_t n = CompactBytes(*from);
  size_t m = CompactBytes(*to);
  if (n != m) {
    Throw("ValueError", "TVMDeviceCopyDataFromTo: the source has ", n,
          " bytes but the destination ", m);
  }
  if (n != 0) {
    if (from->data == nullptr || to->data == nullptr) {
      Throw("ValueError", "TVMDeviceCopyDataFromTo: a tensor's data is NULL");
    }
    std::memmove(static_cast<char*>(to->data) + to->byte_offset,
                 static_cast<const char*>(from->data) + from->byte_offset, n);
  }
  API_END();
}

// ---- AnyList cells ----

int TVMBackendAnyListSetPackedArg(void* anylist, int index, TVMValue* args, int* type_codes,
                                  int arg_offset) {
  API_BEGIN();
  RetValue* cell = Cell(anylist, index);
  NotNull(args, "args");
  NotNull(type_codes, "type_codes");
  if (arg_offset < 0) Throw("IndexError", "arg_offset ", arg_offset, " is negative");
  if (cell->type_code() == kTVMBytes) {
    Throw("TypeError", "TVMBackendAnyListSetPackedArg: a bytes cell cannot be passed");
  }
  cell->AsArg(&args[arg_offset], &type_codes[arg_offset], nullptr);
  API_END();
}

int TVMBackendAnyListResetItem(void* anylist, int index) {
  API_BEGIN();
  Cell(anylist, index)->Clear();
  API_END();
}

int TVMBackendAnyListMoveFromPackedReturn(void* anylist, int index, TVMValue* args, int* type_codes,
                                          int ret_offset) {
  API_BEGIN();
  RetValue* cell = Cell(anylist, index);
  NotNull(args, "args");
  NotNull(type_codes, "type_codes");
  if (ret_offset < 0) Throw("IndexError", "ret_offset ", ret_offset, " is negative");
  TVMValue v = args[ret_offset];
  int code = type_codes[ret_offset];
  RetValue moved;
  if (IsObjectCode(code) && code != kTVMObjectRValueRefArg) {
    // The caller's reference is taken over (TVM's MoveFromCHost).
    Object* obj = ObjectOfArg(v, code);
    if (obj != nullptr) moved.SetObject(ObjectPtr<Object>::Adopt(obj));
  } else {
    moved.SetFromC(v, code);  // strings and bytes copied, plain values as they are
  }
  *cell = std::move(moved);
  API_END();
}

// ---- Platform functions of TVM's C runtime ----

void TVMLogf(const char* format, ...) {
  if (format == nullptr) return;
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string msg;
  if (n > 0) {
    msg.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(&msg[0], msg.size(), format, again);
    msg.resize(static_cast<size_t>(n));
  }
  va_end(again);
  char stamp[16] = "";
  std::time_t now = std::time(nullptr);
  std::tm tm_now{};
  if (localtime_r(&now, &tm_now) != nullptr)
    std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm_now);
  std::string line = std::string("[") + stamp + "] TVMLogf: " + msg + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void TVMPlatformAbort(tvm_crt_error_t code) {
  char hex[16];
  std::snprintf(hex, sizeof(hex), "0x%x", static_cast<unsigned>(code));
  throw Error("InternalError", std::string("TVMPlatformAbort: error code ") + hex);
}
