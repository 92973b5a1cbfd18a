// The C functions of TVM 0.18's runtime beyond docs/spec/abi.md section 3 (functions), through
// the C headers alone:
// device memory and copies, streams on the CPU, array type indices, AnyList cells, the host
// environment hooks and the host-exception protocol (driven from C with fake hooks that count
// their calls), TVMThrowLastError, TVMLogf and TVMPlatformAbort.
#include <polyffi/c_backend_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.h"

namespace {

using namespace abitests;  // NOLINT(build/namespaces)

DLDevice Cpu() { return DLDevice{kDLCPU, 0}; }
DLDataType F32() { return DLDataType{kDLFloat, 32, 1}; }

DLTensor Tensor(void* data, int64_t* shape, int ndim, DLDataType dtype = F32()) {
  DLTensor t;
  t.data = data;
  t.device = Cpu();
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

// ---- Device memory ---------------------------------------------------------------------------

TEST(DeviceMemory, AllocIsAlignedWritableAndFreed) {
  for (size_t align : {1, 8, 64, 256, 4096}) {
    void* p = nullptr;
    ASSERT_EQ(TVMDeviceAllocDataSpace(Cpu(), 1000, align, F32(), &p), 0) << LastError();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (align < 64 ? 64 : align), 0u) << align;
    std::memset(p, 0xAB, 1000);
    EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), p), 0) << LastError();
  }
  // Zero bytes: a distinct, freeable pointer.
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(TVMDeviceAllocDataSpace(Cpu(), 0, 64, F32(), &a), 0);
  ASSERT_EQ(TVMDeviceAllocDataSpace(Cpu(), 0, 64, F32(), &b), 0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), a), 0);
  EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), b), 0);
  // CUDA host memory is CPU memory here.
  void* h = nullptr;
  ASSERT_EQ(TVMDeviceAllocDataSpace(DLDevice{kDLCUDAHost, 0}, 16, 64, F32(), &h), 0);
  EXPECT_EQ(TVMDeviceFreeDataSpace(DLDevice{kDLCUDAHost, 0}, h), 0);
  EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), nullptr), 0);  // NULL is a no-op
}

TEST(DeviceMemory, BadRequestsAreErrors) {
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_TRUE(
      FailsWith(TVMDeviceAllocDataSpace(Cpu(), 16, 48, F32(), &p), "ValueError", "power of two"));
  EXPECT_TRUE(FailsWith(TVMDeviceAllocDataSpace(Cpu(), 16, 0, F32(), &p), "ValueError"));
  EXPECT_EQ(p, reinterpret_cast<void*>(0x1));  // untouched on failure
  EXPECT_TRUE(FailsWith(TVMDeviceAllocDataSpace(DLDevice{kDLCUDA, 0}, 16, 64, F32(), &p),
                        "ValueError", "not available"));
  EXPECT_TRUE(FailsWith(TVMDeviceAllocDataSpace(Cpu(), 16, 64, F32(), nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMDeviceAllocDataSpace(Cpu(), SIZE_MAX - 8, 64, F32(), &p), "ValueError",
                        "too large"));
}

TEST(DeviceMemory, ForeignAndDoubleFreesAreRefused) {
  void* p = nullptr;
  ASSERT_EQ(TVMDeviceAllocDataSpace(Cpu(), 64, 64, F32(), &p), 0);
  ASSERT_EQ(TVMDeviceFreeDataSpace(Cpu(), p), 0);
  EXPECT_TRUE(FailsWith(TVMDeviceFreeDataSpace(Cpu(), p), "ValueError", "freed already"));
  int on_stack = 0;
  EXPECT_TRUE(FailsWith(TVMDeviceFreeDataSpace(Cpu(), &on_stack), "ValueError", "not allocated"));
  EXPECT_TRUE(FailsWith(TVMDeviceFreeDataSpace(DLDevice{kDLCUDA, 0}, &on_stack), "ValueError"));
}

TEST(DeviceMemory, WithScopeSizesAndAlignsLikeTvm) {
  int64_t shape[2] = {3, 5};
  void* p = nullptr;
  ASSERT_EQ(TVMDeviceAllocDataSpaceWithScope(Cpu(), 2, shape, F32(), nullptr, &p), 0)
      << LastError();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::memset(p, 1, 3 * 5 * 4);
  EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), p), 0);
  ASSERT_EQ(TVMDeviceAllocDataSpaceWithScope(Cpu(), 2, shape, F32(), "global", &p), 0);
  EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), p), 0);
  // An element wider than 64 bytes (float32x32: 128 bytes) aligns to its size, as in TVM.
  EXPECT_TRUE(FailsWith(
      TVMDeviceAllocDataSpaceWithScope(Cpu(), 2, shape, DLDataType{kDLFloat, 32, 32}, "", &p),
      "ValueError"));  // "" is not a scope the CPU has
  ASSERT_EQ(
      TVMDeviceAllocDataSpaceWithScope(Cpu(), 2, shape, DLDataType{kDLFloat, 32, 32}, nullptr, &p),
      0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 128, 0u);
  EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), p), 0);
  // Scalars (ndim 0) get one element.
  ASSERT_EQ(TVMDeviceAllocDataSpaceWithScope(Cpu(), 0, nullptr, F32(), nullptr, &p), 0);
  EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), p), 0);

  EXPECT_TRUE(FailsWith(TVMDeviceAllocDataSpaceWithScope(Cpu(), 2, shape, F32(), "texture", &p),
                        "ValueError", "texture"));
  EXPECT_TRUE(FailsWith(TVMDeviceAllocDataSpaceWithScope(Cpu(), 2, nullptr, F32(), nullptr, &p),
                        "ValueError", "shape"));
  int64_t negative[1] = {-1};
  EXPECT_TRUE(FailsWith(TVMDeviceAllocDataSpaceWithScope(Cpu(), 1, negative, F32(), nullptr, &p),
                        "ValueError", "negative"));
  int64_t huge[2] = {INT64_MAX, 4};
  EXPECT_TRUE(FailsWith(TVMDeviceAllocDataSpaceWithScope(Cpu(), 2, huge, F32(), nullptr, &p),
                        "ValueError", "too large"));
  EXPECT_TRUE(FailsWith(
      TVMDeviceAllocDataSpaceWithScope(Cpu(), 1, shape, DLDataType{kDLFloat, 32, 0}, nullptr, &p),
      "ValueError", "dtype"));
}

TEST(DeviceMemory, CopyMovesBytesBetweenEqualSizedTensors) {
  float src[6] = {1, 2, 3, 4, 5, 6};
  float dst[6] = {};
  int64_t s23[2] = {2, 3};
  int64_t s6[1] = {6};
  DLTensor a = Tensor(src, s23, 2);
  DLTensor b = Tensor(dst, s6, 1);
  // As TVM: only the byte sizes must agree (a [2, 3] float32 into a [6] one, or into int32).
  ASSERT_EQ(TVMDeviceCopyDataFromTo(&a, &b, nullptr), 0) << LastError();
  EXPECT_EQ(std::memcmp(src, dst, sizeof(src)), 0);
  int32_t as_int[6] = {};
  DLTensor c = Tensor(as_int, s6, 1, DLDataType{kDLInt, 32, 1});
  ASSERT_EQ(TVMDeviceCopyDataFromTo(&a, &c, nullptr), 0);
  EXPECT_EQ(std::memcmp(src, as_int, sizeof(src)), 0);
  // byte_offset is honoured on both sides.
  float wide[8] = {};
  DLTensor d = Tensor(wide, s6, 1);
  d.byte_offset = 2 * sizeof(float);
  ASSERT_EQ(TVMDeviceCopyDataFromTo(&a, &d, nullptr), 0);
  EXPECT_EQ(wide[0], 0.0f);
  EXPECT_EQ(wide[2], 1.0f);
  EXPECT_EQ(wide[7], 6.0f);
  // Memory from TVMDeviceAllocDataSpace works as either side.
  void* p = nullptr;
  ASSERT_EQ(TVMDeviceAllocDataSpace(Cpu(), sizeof(src), 64, F32(), &p), 0);
  DLTensor e = Tensor(p, s6, 1);
  ASSERT_EQ(TVMDeviceCopyDataFromTo(&a, &e, nullptr), 0);
  EXPECT_EQ(std::memcmp(p, src, sizeof(src)), 0);
  EXPECT_EQ(TVMDeviceFreeDataSpace(Cpu(), p), 0);
}

TEST(DeviceMemory, CopyRefusesBadTensors) {
  float src[6] = {1, 2, 3, 4, 5, 6};
  float dst[6] = {};
  int64_t s6[1] = {6};
  int64_t s5[1] = {5};
  DLTensor a = Tensor(src, s6, 1);
  DLTensor b = Tensor(dst, s5, 1);
  EXPECT_TRUE(FailsWith(TVMDeviceCopyDataFromTo(&a, &b, nullptr), "ValueError", "24 bytes"));
  EXPECT_EQ(dst[0], 0.0f);  // nothing copied
  EXPECT_TRUE(FailsWith(TVMDeviceCopyDataFromTo(nullptr, &b, nullptr), "ValueError", "from"));
  EXPECT_TRUE(FailsWith(TVMDeviceCopyDataFromTo(&a, nullptr, nullptr), "ValueError", "to"));
  DLTensor c = Tensor(dst, s6, 1);
  EXPECT_TRUE(FailsWith(TVMDeviceCopyDataFromTo(&a, &c, &c), "ValueError", "streams"));
  c.device.device_type = kDLCUDA;
  EXPECT_TRUE(FailsWith(TVMDeviceCopyDataFromTo(&a, &c, nullptr), "ValueError", "not available"));
  DLTensor d = Tensor(nullptr, s6, 1);
  EXPECT_TRUE(FailsWith(TVMDeviceCopyDataFromTo(&a, &d, nullptr), "ValueError", "NULL"));
  int64_t s23[2] = {2, 3};
  int64_t strides[2] = {1, 2};  // column-major: not compact
  DLTensor e = Tensor(src, s23, 2);
  e.strides = strides;
  DLTensor f = Tensor(dst, s6, 1);
  EXPECT_TRUE(FailsWith(TVMDeviceCopyDataFromTo(&e, &f, nullptr), "ValueError", "contiguous"));
  DLTensor g = Tensor(dst, nullptr, 1);
  EXPECT_TRUE(FailsWith(TVMDeviceCopyDataFromTo(&a, &g, nullptr), "ValueError", "shape"));
}

// ---- Streams -----------------------------------------------------------------------------------

TEST(Streams, CpuStreamsAreNull) {
  TVMStreamHandle s = reinterpret_cast<TVMStreamHandle>(0x1);
  ASSERT_EQ(TVMStreamCreate(kDLCPU, 0, &s), 0) << LastError();
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(TVMSetStream(kDLCPU, 0, s), 0);
  EXPECT_EQ(TVMSynchronize(kDLCPU, 0, s), 0);
  EXPECT_EQ(TVMStreamStreamSynchronize(kDLCPU, 0, s, nullptr), 0);
  EXPECT_EQ(TVMStreamFree(kDLCPU, 0, s), 0);
  ASSERT_EQ(TVMStreamCreate(kDLCUDAHost, 0, &s), 0);
  EXPECT_EQ(s, nullptr);
}

TEST(Streams, BadDevicesAndHandlesAreErrors) {
  TVMStreamHandle s = reinterpret_cast<TVMStreamHandle>(0x1);
  EXPECT_TRUE(FailsWith(TVMStreamCreate(kDLCUDA, 0, &s), "ValueError", "not available"));
  EXPECT_EQ(s, reinterpret_cast<TVMStreamHandle>(0x1));
  EXPECT_TRUE(FailsWith(TVMStreamCreate(kDLCPU, 0, nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMStreamFree(kDLCPU, 0, s), "ValueError", "no streams"));
  EXPECT_TRUE(FailsWith(TVMStreamFree(kDLCUDA, 0, nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMStreamStreamSynchronize(kDLCPU, 0, s, nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMStreamStreamSynchronize(kDLOpenCL, 0, nullptr, nullptr), "ValueError"));
}

// ---- Array type index
// ----------------------------------------------------------------------------

TEST(ArrayTypeIndex, IsTheNDArrayTypeKey) {
  int64_t shape[1] = {3};
  TVMArrayHandle a = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &a), 0);
  unsigned index = 0xFFFF;
  ASSERT_EQ(TVMArrayGetTypeIndex(a, &index), 0) << LastError();
  EXPECT_EQ(index, TypeIndexOfKey("runtime.NDArray"));
  EXPECT_TRUE(FailsWith(TVMArrayGetTypeIndex(nullptr, &index), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayGetTypeIndex(a, nullptr), "ValueError"));
  TVMArrayFree(a);
}

// ---- AnyList cells
// ---------------------------------------------------------------------------------

// A cell of an anylist: TVM's TVMRetValue layout.
struct Cell {
  TVMValue value;
  int code;
};

TEST(AnyList, CellsHoldMoveAndLendValues) {
  Cell cells[3];
  for (Cell& c : cells) c.code = kTVMNullptr;
  // A function result (an owned array) moves into cell 0; a string is copied into cell 1.
  int64_t shape[1] = {2};
  TVMArrayHandle a = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &a), 0);
  TVMValue stack[4];
  int codes[4];
  stack[1].v_handle = a;
  codes[1] = kTVMNDArrayHandle;
  ASSERT_EQ(TVMBackendAnyListMoveFromPackedReturn(cells, 0, stack, codes, 1), 0) << LastError();
  std::string text = "kept by the cell";
  stack[2].v_str = text.c_str();
  codes[2] = kTVMStr;
  ASSERT_EQ(TVMBackendAnyListMoveFromPackedReturn(cells, 1, stack, codes, 2), 0);
  text = "changed";  // the cell has its own copy
  stack[3].v_int64 = 42;
  codes[3] = kTVMArgInt;
  ASSERT_EQ(TVMBackendAnyListMoveFromPackedReturn(cells, 2, stack, codes, 3), 0);

  // Lending them as arguments: the array as itself, the string from the cell.
  TVMValue args[3];
  int arg_codes[3];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(TVMBackendAnyListSetPackedArg(cells, i, args, arg_codes, i), 0) << LastError();
  }
  EXPECT_EQ(arg_codes[0], kTVMNDArrayHandle);
  EXPECT_EQ(args[0].v_handle, a);
  EXPECT_EQ(UseCount(a, kTVMNDArrayHandle), 1);  // the cell holds the only reference
  EXPECT_EQ(arg_codes[1], kTVMStr);
  EXPECT_STREQ(args[1].v_str, "kept by the cell");
  EXPECT_EQ(arg_codes[2], kTVMArgInt);
  EXPECT_EQ(args[2].v_int64, 42);

  // The lent values work as real arguments of a call.
  TVMFunctionHandle echo = MakeEcho();
  Ret r = CallV(echo, {Handle(args[0].v_handle, arg_codes[0])});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.value.v_handle, a);
  EXPECT_EQ(UseCount(a, kTVMNDArrayHandle), 2);
  TVMArrayFree(static_cast<TVMArrayHandle>(r.value.v_handle));
  TVMFuncFree(echo);

  for (int i = 0; i < 3; ++i) EXPECT_EQ(TVMBackendAnyListResetItem(cells, i), 0);
  for (Cell& c : cells) EXPECT_EQ(c.code, kTVMNullptr);
}

TEST(AnyList, BadCellsAndOffsetsAreErrors) {
  Cell cells[1];
  cells[0].code = kTVMNullptr;
  TVMValue stack[1];
  int codes[1] = {kTVMNullptr};
  EXPECT_TRUE(FailsWith(TVMBackendAnyListSetPackedArg(nullptr, 0, stack, codes, 0), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMBackendAnyListSetPackedArg(cells, -1, stack, codes, 0), "IndexError"));
  EXPECT_TRUE(FailsWith(TVMBackendAnyListSetPackedArg(cells, 0, stack, codes, -1), "IndexError"));
  EXPECT_TRUE(FailsWith(TVMBackendAnyListSetPackedArg(cells, 0, nullptr, codes, 0), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMBackendAnyListResetItem(nullptr, 0), "ValueError"));
  EXPECT_TRUE(
      FailsWith(TVMBackendAnyListMoveFromPackedReturn(cells, 0, stack, nullptr, 0), "ValueError"));
  codes[0] = 99;
  EXPECT_TRUE(FailsWith(TVMBackendAnyListMoveFromPackedReturn(cells, 0, stack, codes, 0),
                        "TypeError", "unknown type code"));
  EXPECT_EQ(cells[0].code, kTVMNullptr);  // unchanged
  // Bytes can be stored but, as in TVM, not lent as an argument.
  TVMByteArray b{"ab", 2};
  stack[0].v_handle = &b;
  codes[0] = kTVMBytes;
  ASSERT_EQ(TVMBackendAnyListMoveFromPackedReturn(cells, 0, stack, codes, 0), 0);
  EXPECT_TRUE(FailsWith(TVMBackendAnyListSetPackedArg(cells, 0, stack, codes, 0), "TypeError"));
  EXPECT_EQ(TVMBackendAnyListResetItem(cells, 0), 0);
}

// ---- Host environment hooks and host exceptions
// ----------------------------------------------------

// Fake host: objects with a reference count, a re-entrant "GIL" that records which thread holds
// it, and a signal check that reports an error after a number of calls.
struct FakeHost {
  std::recursive_mutex mu;
  std::atomic<int> inc{0}, dec{0}, ensure{0}, release{0}, checks{0};
  std::atomic<int> fail_check_at{-1};  // the call number (1-based) that reports an error
  std::atomic<int> lock_depth{0};
  std::atomic<bool> ref_without_lock{false};
  std::vector<std::thread::id> dec_threads;
};
FakeHost* g_host = nullptr;

struct FakeObject {
  std::atomic<int> refs{1};
};

void FakeIncRef(void* obj) {
  g_host->inc++;
  if (g_host->lock_depth.load() == 0) g_host->ref_without_lock = true;
  static_cast<FakeObject*>(obj)->refs++;
}
void FakeDecRef(void* obj) {
  g_host->dec++;
  if (g_host->lock_depth.load() == 0) g_host->ref_without_lock = true;
  {
    std::lock_guard<std::recursive_mutex> lock(g_host->mu);
    g_host->dec_threads.push_back(std::this_thread::get_id());
  }
  static_cast<FakeObject*>(obj)->refs--;
}
int FakeEnsure() {
  g_host->ensure++;
  g_host->mu.lock();  // a real lock: hooks on two threads must not overlap
  return g_host->lock_depth++;
}
void FakeRelease(int state) {
  g_host->release++;
  g_host->lock_depth = state;
  g_host->mu.unlock();
}
int FakeCheckSignals() {
  int n = ++g_host->checks;
  return n == g_host->fail_check_at.load() ? -1 : 0;
}

class HostHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    g_host = &host_;
    ASSERT_EQ(TVMBackendRegisterEnvCAPI("Py_IncRef", reinterpret_cast<void*>(FakeIncRef)), 0);
    ASSERT_EQ(TVMBackendRegisterEnvCAPI("Py_DecRef", reinterpret_cast<void*>(FakeDecRef)), 0);
    ASSERT_EQ(TVMBackendRegisterEnvCAPI("PyGILState_Ensure", reinterpret_cast<void*>(FakeEnsure)),
              0);
    ASSERT_EQ(TVMBackendRegisterEnvCAPI("PyGILState_Release", reinterpret_cast<void*>(FakeRelease)),
              0);
  }
  void TearDown() override {
    TVMDropLastPythonError();
    for (const char* name : {"Py_IncRef", "Py_DecRef", "PyGILState_Ensure", "PyGILState_Release",
                             "PyErr_CheckSignals"}) {
      EXPECT_EQ(TVMBackendRegisterEnvCAPI(name, nullptr), 0);
    }
    EXPECT_FALSE(host_.ref_without_lock.load()) << "a reference hook ran without the host lock";
    EXPECT_EQ(host_.ensure.load(), host_.release.load());
    g_host = nullptr;
  }
  FakeHost host_;
};

TEST_F(HostHooks, RegisterRefusesUnknownNames) {
  EXPECT_TRUE(FailsWith(TVMBackendRegisterEnvCAPI("Py_Finalize", reinterpret_cast<void*>(1)),
                        "ValueError", "Py_Finalize"));
  EXPECT_TRUE(FailsWith(TVMBackendRegisterEnvCAPI(nullptr, nullptr), "ValueError"));
}

TEST_F(HostHooks, SetGetDropRetainsAndReleasesThroughTheHooks) {
  FakeObject exc;
  TVMAPISetLastPythonError(&exc);
  EXPECT_EQ(exc.refs.load(), 2);  // the runtime holds one
  EXPECT_EQ(host_.inc.load(), 1);
  EXPECT_EQ(TVMGetLastPythonError(), &exc);
  EXPECT_EQ(TVMGetLastPythonError(), &exc);  // borrowed: asking again takes nothing
  EXPECT_EQ(host_.inc.load(), 1);
  EXPECT_EQ(ErrorKind(LastError()), "TVMError");
  EXPECT_EQ(TVMGetLastBacktrace(), nullptr);
  TVMDropLastPythonError();
  EXPECT_EQ(exc.refs.load(), 1);
  EXPECT_EQ(host_.dec.load(), 1);
  EXPECT_EQ(TVMGetLastPythonError(), nullptr);
  EXPECT_EQ(LastError(), "");
  TVMDropLastPythonError();  // nothing attached: a no-op
  EXPECT_EQ(host_.dec.load(), 1);
}

TEST_F(HostHooks, AnotherErrorReleasesTheObject) {
  FakeObject first, second;
  TVMAPISetLastPythonError(&first);
  TVMAPISetLastPythonError(&second);  // replaces the first
  EXPECT_EQ(first.refs.load(), 1);
  EXPECT_EQ(TVMGetLastPythonError(), &second);
  TVMAPISetLastError("ValueError: something else");
  EXPECT_EQ(second.refs.load(), 1);
  EXPECT_EQ(TVMGetLastPythonError(), nullptr);
  EXPECT_EQ(host_.inc.load(), 2);
  EXPECT_EQ(host_.dec.load(), 2);
  // A failing API call is another error too.
  FakeObject third;
  TVMAPISetLastPythonError(&third);
  EXPECT_NE(TVMFuncCall(nullptr, nullptr, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(third.refs.load(), 1);
}

TEST_F(HostHooks, HostExceptionCrossesNestedCalls) {
  FakeObject exc;
  // inner raises the host exception; middle calls inner and propagates its error as text, the
  // way C++ layers and bindings do; the outer call comes back with the very same object.
  TVMFunctionHandle inner = MakeFunction([&exc](TVMValue*, int*, int, TVMRetValueHandle) {
    TVMAPISetLastPythonError(&exc);
    return -1;
  });
  TVMFunctionHandle middle = MakeFunction([inner](TVMValue*, int*, int, TVMRetValueHandle) {
    Ret r = Call(inner);
    if (r.rc != 0) TVMAPISetLastError(r.error.c_str());
    return r.rc;
  });
  Ret r = Call(middle);
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(TVMGetLastPythonError(), &exc);
  EXPECT_EQ(exc.refs.load(), 2);
  EXPECT_EQ(host_.inc.load(), 1);  // one reference all the way through
  TVMDropLastPythonError();
  EXPECT_EQ(exc.refs.load(), 1);
  TVMFuncFree(middle);
  TVMFuncFree(inner);
}

TEST_F(HostHooks, ThrowLastErrorCarriesTheTextAndKeepsTheObject) {
  FakeObject exc;
  TVMAPISetLastPythonError(&exc);
  std::string text = LastError();
  try {
    TVMThrowLastError();
    ADD_FAILURE() << "TVMThrowLastError returned";
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()), text);
    TVMAPISetLastError(e.what());  // reported on unchanged: the object stays attached
  }
  EXPECT_EQ(TVMGetLastPythonError(), &exc);
  TVMAPISetLastError("KeyError: 'k'");
  try {
    TVMThrowLastError();
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "KeyError: 'k'");
  }
  EXPECT_EQ(exc.refs.load(), 1);
}

// The error of a task on a pool thread comes back to the launching thread with its object.
int RaiseInTaskOne(int task_id, TVMParallelGroupEnv*, void* cdata) {
  if (task_id != 1) return 0;
  TVMAPISetLastPythonError(cdata);
  return -1;
}

TEST_F(HostHooks, HostExceptionFromAPoolThreadReachesTheLauncher) {
  FakeObject exc;
  int rc = TVMBackendParallelLaunch(RaiseInTaskOne, &exc, 2);
  if (rc == 0) GTEST_SKIP() << "the pool runs a single thread here (TVM_NUM_THREADS=1)";
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(TVMGetLastPythonError(), &exc);
  EXPECT_EQ(exc.refs.load(), 2);
  TVMDropLastPythonError();
  EXPECT_EQ(exc.refs.load(), 1);
  EXPECT_EQ(host_.dec.load(), 1);
}

TEST_F(HostHooks, ReleaseOnAForeignThreadTakesTheHostLockThere) {
  FakeObject exc;
  std::thread::id worker_id;
  // Raised and dropped on a thread the host did not create.
  std::thread worker([&] {
    worker_id = std::this_thread::get_id();
    TVMAPISetLastPythonError(&exc);
    EXPECT_EQ(TVMGetLastPythonError(), &exc);
    TVMDropLastPythonError();
  });
  worker.join();
  EXPECT_EQ(exc.refs.load(), 1);
  ASSERT_EQ(host_.dec_threads.size(), 1u);
  EXPECT_EQ(host_.dec_threads[0], worker_id);
  // Raised in a callback run on another thread, released there by the next error.
  TVMFunctionHandle raise = MakeFunction([&exc](TVMValue*, int*, int, TVMRetValueHandle) {
    TVMAPISetLastPythonError(&exc);
    return -1;
  });
  std::thread caller([&] {
    worker_id = std::this_thread::get_id();
    Ret r = Call(raise);
    EXPECT_EQ(r.rc, -1);
    EXPECT_EQ(TVMGetLastPythonError(), &exc);
    TVMAPISetLastError("RuntimeError: next");
  });
  caller.join();
  EXPECT_EQ(exc.refs.load(), 1);
  ASSERT_EQ(host_.dec_threads.size(), 2u);
  EXPECT_EQ(host_.dec_threads[1], worker_id);
  EXPECT_EQ(TVMGetLastPythonError(), nullptr);  // errors are per thread
  TVMFuncFree(raise);
}

TEST_F(HostHooks, AThreadExitingWithAnErrorDoesNotCallTheHost) {
  FakeObject exc;
  std::thread t([&] { TVMAPISetLastPythonError(&exc); });
  t.join();
  // The host may be finalised when a thread's thread-locals die: no hook runs, the reference
  // stays (documented; TVM's frontend always drops right after reading).
  EXPECT_EQ(host_.dec.load(), 0);
  EXPECT_EQ(exc.refs.load(), 2);
}

TEST(HostHooksAbsent, ObjectIsHeldBorrowed) {
  // Without reference hooks nothing is called and nothing is counted: the host keeps it alive.
  FakeObject exc;
  TVMAPISetLastPythonError(&exc);
  EXPECT_EQ(TVMGetLastPythonError(), &exc);
  EXPECT_EQ(exc.refs.load(), 1);
  TVMDropLastPythonError();
  EXPECT_EQ(TVMGetLastPythonError(), nullptr);
  TVMAPISetLastPythonError(nullptr);  // no object: an error without one
  EXPECT_EQ(TVMGetLastPythonError(), nullptr);
  EXPECT_EQ(ErrorKind(LastError()), "TVMError");
}

// A callback that runs "long" (until the host's signal check reports an error) by calling a
// global that loops and checks signals: the graph executor's run is such a loop; here it is
// driven through tvm.graph_executor.create with a kernel module made of host callbacks.
TEST_F(HostHooks, SignalCheckStopsALongRun) {
  ASSERT_EQ(
      TVMBackendRegisterEnvCAPI("PyErr_CheckSignals", reinterpret_cast<void*>(FakeCheckSignals)),
      0);
  host_.fail_check_at = 3;
  std::atomic<int> kernel_calls{0};
  std::atomic<bool> sleep{true};
  TVMFunctionHandle slow =
      MakeFunction([&kernel_calls, &sleep](TVMValue* args, int*, int, TVMRetValueHandle) {
        kernel_calls++;
        auto* in = static_cast<DLTensor*>(args[0].v_handle);
        auto* out = static_cast<DLTensor*>(args[1].v_handle);
        static_cast<float*>(out->data)[0] = static_cast<float*>(in->data)[0] + 1;
        if (sleep) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 0;
      });
  Global make_module("runtime.ModuleFromFunctions");
  Ret lib = Call(make_module, {Str("test.Slow"), Str("slow"), Func(slow)});
  ASSERT_EQ(lib.rc, 0) << lib.error;
  // x -> slow -> slow -> ... 3000 nodes: three seconds without an interrupt.
  const int n = 3000;
  std::string nodes = R"({"op": "null", "name": "x", "inputs": []})";
  std::string sids = "0", shapes = "[1]", dtypes = R"("float32")", rows = "0, 1";
  for (int i = 1; i <= n; ++i) {
    nodes += R"(, {"op": "tvm_op", "name": "s)" + std::to_string(i) +
             R"(", "attrs": {"func_name": "slow", "num_inputs": "1", "num_outputs": "1"},)" +
             R"( "inputs": [[)" + std::to_string(i - 1) + ", 0, 0]]}";
    sids += ", " + std::to_string(1 + i % 2);
    shapes += ", [1]";
    dtypes += R"(, "float32")";
    rows += ", " + std::to_string(i + 1);
  }
  std::string graph = R"({"nodes": [)" + nodes + R"(], "arg_nodes": [0], "heads": [[)" +
                      std::to_string(n) + R"(, 0, 0]], "node_row_ptr": [)" + rows +
                      R"(], "attrs": {"storage_id": ["list_int", [)" + sids +
                      R"(]], "shape": ["list_shape", [)" + shapes +
                      R"(]], "dltype": ["list_str", [)" + dtypes + "]]}}";
  Global create("tvm.graph_executor.create");
  Ret ex = Call(create, {Str(graph.c_str()), Handle(lib.value.v_handle, kTVMModuleHandle),
                         Int(kDLCPU), Int(0)});
  ASSERT_EQ(ex.rc, 0) << ex.error;
  TVMFunctionHandle set_input = nullptr, run = nullptr;
  ASSERT_EQ(TVMModGetFunction(ex.value.v_handle, "set_input", 0, &set_input), 0);
  ASSERT_EQ(TVMModGetFunction(ex.value.v_handle, "run", 0, &run), 0);
  int64_t shape[1] = {1};
  TVMArrayHandle x = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &x), 0);
  ASSERT_EQ(Call(set_input, {Int(0), Handle(x, kTVMNDArrayHandle)}).rc, 0);

  Ret r = Call(run);
  EXPECT_EQ(r.rc, -2) << r.error;  // -2: the host's own exception is pending
  EXPECT_EQ(ErrorKind(r.error), "KeyboardInterrupt") << r.error;
  EXPECT_EQ(host_.checks.load(), 3);  // stopped at the check that reported the error
  EXPECT_GT(kernel_calls.load(), 3);  // checks come every 10 ms, not at every node
  EXPECT_LT(kernel_calls.load(), n / 2);
  // Without a pending signal the next run completes.
  host_.fail_check_at = -1;
  TVMBackendRegisterEnvCAPI("PyErr_CheckSignals", nullptr);
  kernel_calls = 0;
  sleep = false;
  EXPECT_EQ(Call(run).rc, 0);
  EXPECT_EQ(kernel_calls.load(), n);

  TVMArrayFree(x);
  TVMFuncFree(set_input);
  TVMFuncFree(run);
  TVMModFree(ex.value.v_handle);
  TVMModFree(lib.value.v_handle);
  TVMFuncFree(slow);
}

// ---- TVMLogf and TVMPlatformAbort
// ----------------------------------------------------------------

TEST(Platform, LogfWritesOneFormattedLine) {
  ::testing::internal::CaptureStderr();
  TVMLogf("model %s: %d of %d", "digits", 3, 10);
  TVMLogf(nullptr);  // ignored
  std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("TVMLogf: model digits: 3 of 10\n"), std::string::npos) << out;
  EXPECT_EQ(out[0], '[');
}

TEST(Platform, AbortInsideACallIsAnErrorOfThatCall) {
  TVMFunctionHandle f = MakeFunction(
      [](TVMValue*, int*, int, TVMRetValueHandle) -> int { TVMPlatformAbort(0x0105); });
  Ret r = Call(f);
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(ErrorKind(r.error), "InternalError");
  EXPECT_NE(r.error.find("TVMPlatformAbort: error code 0x105"), std::string::npos) << r.error;
  TVMFuncFree(f);
}

}  // namespace
