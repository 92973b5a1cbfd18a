// C-level tests of the array (TVMArray*, DLPack), module (TVMMod*) and backend (TVMBackend*)
// parts of the C ABI, through the C headers only.
#include <gtest/gtest.h>
#include <polyffi/c_backend_api.h>
#include <polyffi/c_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.h"

namespace abitests {
namespace {

// ---- Helpers ----------------------------------------------------------------------------------

/*! \brief The object handle around an owned NDArray handle (for use counts). */
void* NDArrayObject(TVMArrayHandle nd) {
  Global f("runtime.NDArrayObjectHandle");
  Ret r = Call(f, {Handle(nd, kTVMNDArrayHandle)});
  EXPECT_EQ(r.rc, 0) << r.error;
  return r.value.v_handle;
}

int64_t NDArrayUseCount(TVMArrayHandle nd) { return UseCount(NDArrayObject(nd)); }

TVMArrayHandle Alloc(std::vector<int64_t> shape, int code, int bits, int lanes = 1) {
  TVMArrayHandle out = nullptr;
  int rc = TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), code, bits, lanes, kDLCPU, 0,
                         &out);
  EXPECT_EQ(rc, 0) << LastError();
  return out;
}

struct DType {
  const char* name;
  int code, bits;
  size_t element_bytes;
};

// bool is TVM's uint1, stored one byte per element.
const DType kDTypes[] = {
    {"bool", kDLUInt, 1, 1},      {"int8", kDLInt, 8, 1},       {"int16", kDLInt, 16, 2},
    {"int32", kDLInt, 32, 4},     {"int64", kDLInt, 64, 8},     {"uint8", kDLUInt, 8, 1},
    {"uint16", kDLUInt, 16, 2},   {"uint32", kDLUInt, 32, 4},   {"uint64", kDLUInt, 64, 8},
    {"float16", kDLFloat, 16, 2}, {"float32", kDLFloat, 32, 4}, {"float64", kDLFloat, 64, 8},
};

// ---- TVMArrayAlloc / Free / CopyFromBytes / CopyToBytes -----------------------------------------

class ArrayDType : public ::testing::TestWithParam<DType> {};

TEST_P(ArrayDType, AllocDescribesTheArray) {
  const DType& d = GetParam();
  TVMArrayHandle a = Alloc({2, 3}, d.code, d.bits);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ndim, 2);
  ASSERT_NE(a->shape, nullptr);
  EXPECT_EQ(a->shape[0], 2);
  EXPECT_EQ(a->shape[1], 3);
  EXPECT_EQ(a->dtype.code, d.code);
  EXPECT_EQ(a->dtype.bits, d.bits);
  EXPECT_EQ(a->dtype.lanes, 1);
  EXPECT_EQ(a->device.device_type, kDLCPU);
  EXPECT_EQ(a->device.device_id, 0);
  EXPECT_EQ(a->byte_offset, 0u);
  if (a->strides != nullptr) {  // NULL means compact row-major; explicit strides must say so too
    EXPECT_EQ(a->strides[0], 3);
    EXPECT_EQ(a->strides[1], 1);
  }
  ASSERT_NE(a->data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % 64, 0u) << "CPU data is 64-byte aligned";
  EXPECT_EQ(TVMArrayFree(a), 0);
}

TEST_P(ArrayDType, BytesRoundTrip) {
  const DType& d = GetParam();
  TVMArrayHandle a = Alloc({2, 3}, d.code, d.bits);
  ASSERT_NE(a, nullptr);
  const size_t nbytes = 6 * d.element_bytes;
  std::vector<uint8_t> in(nbytes), out(nbytes, 0xEE);
  for (size_t i = 0; i < nbytes; ++i) in[i] = static_cast<uint8_t>(d.bits == 1 ? i % 2 : i * 7 + 1);
  ASSERT_EQ(TVMArrayCopyFromBytes(a, in.data(), nbytes), 0) << LastError();
  EXPECT_EQ(std::memcmp(a->data, in.data(), nbytes), 0) << "data lands in the array's buffer";
  ASSERT_EQ(TVMArrayCopyToBytes(a, out.data(), nbytes), 0) << LastError();
  EXPECT_EQ(in, out);
  TVMArrayFree(a);
}

TEST_P(ArrayDType, SizeMismatchIsValueError) {
  const DType& d = GetParam();
  TVMArrayHandle a = Alloc({4}, d.code, d.bits);
  ASSERT_NE(a, nullptr);
  const size_t nbytes = 4 * d.element_bytes;
  std::vector<uint8_t> buf(nbytes + 8, 0);
  EXPECT_TRUE(FailsWith(TVMArrayCopyFromBytes(a, buf.data(), nbytes + 1), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayCopyFromBytes(a, buf.data(), nbytes - 1), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayCopyToBytes(a, buf.data(), nbytes + 1), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayCopyToBytes(a, buf.data(), 0), "ValueError"));
  TVMArrayFree(a);
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, ArrayDType, ::testing::ValuesIn(kDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(info.param.name);
                         });

TEST(Array, VectorLanes) {
  TVMArrayHandle a = Alloc({3}, kDLFloat, 32, 4);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype.lanes, 4);
  std::vector<float> in(12), out(12);
  for (int i = 0; i < 12; ++i) in[i] = i * 0.5f;
  ASSERT_EQ(TVMArrayCopyFromBytes(a, in.data(), 48), 0) << LastError();
  ASSERT_EQ(TVMArrayCopyToBytes(a, out.data(), 48), 0) << LastError();
  EXPECT_EQ(in, out);
  TVMArrayFree(a);
}

TEST(Array, ScalarAndEmptyShapes) {
  TVMArrayHandle scalar = Alloc({}, kDLInt, 32);
  ASSERT_NE(scalar, nullptr);
  EXPECT_EQ(scalar->ndim, 0);
  int32_t v = 12345, back = 0;
  ASSERT_EQ(TVMArrayCopyFromBytes(scalar, &v, 4), 0) << LastError();
  ASSERT_EQ(TVMArrayCopyToBytes(scalar, &back, 4), 0) << LastError();
  EXPECT_EQ(back, 12345);
  TVMArrayFree(scalar);

  TVMArrayHandle empty = Alloc({0, 5}, kDLFloat, 32);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(TVMArrayCopyFromBytes(empty, nullptr, 0), 0) << LastError();
  TVMArrayFree(empty);
}

TEST(Array, NewArrayHasUseCountOne) {
  TVMArrayHandle a = Alloc({2}, kDLFloat, 32);
  EXPECT_EQ(NDArrayUseCount(a), 1);
  TVMArrayFree(a);
}

TEST(Array, FreeNullIsNoOp) { EXPECT_EQ(TVMArrayFree(nullptr), 0); }

TEST(Array, AllocBadInput) {
  int64_t shape[2] = {2, 2};
  int64_t negative[1] = {-1};
  TVMArrayHandle out = reinterpret_cast<TVMArrayHandle>(0x1);
  EXPECT_TRUE(
      FailsWith(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayAlloc(shape, -1, kDLFloat, 32, 1, kDLCPU, 0, &out), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayAlloc(nullptr, 2, kDLFloat, 32, 1, kDLCPU, 0, &out), "ValueError"));
  EXPECT_TRUE(
      FailsWith(TVMArrayAlloc(negative, 1, kDLFloat, 32, 1, kDLCPU, 0, &out), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayAlloc(shape, 2, kDLFloat, 7, 1, kDLCPU, 0, &out), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayAlloc(shape, 2, kDLFloat, 32, 0, kDLCPU, 0, &out), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayAlloc(shape, 2, 99, 32, 1, kDLCPU, 0, &out), "ValueError"));
  EXPECT_EQ(out, reinterpret_cast<TVMArrayHandle>(0x1)) << "out must be untouched on failure";
}

TEST(Array, AllocOnAnAbsentDeviceIsAnErrorNotACrash) {
  int64_t shape[1] = {4};
  TVMArrayHandle out = nullptr;
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCUDA, 0, &out), -1);
  EXPECT_FALSE(ErrorKind(LastError()).empty()) << LastError();
  EXPECT_EQ(out, nullptr);
}

TEST(Array, CopyBadInputIsValueError) {
  uint8_t buf[16];
  EXPECT_TRUE(FailsWith(TVMArrayCopyFromBytes(nullptr, buf, 16), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayCopyToBytes(nullptr, buf, 16), "ValueError"));
  TVMArrayHandle a = Alloc({4}, kDLFloat, 32);
  EXPECT_TRUE(FailsWith(TVMArrayCopyFromBytes(a, nullptr, 16), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayCopyToBytes(a, nullptr, 16), "ValueError"));
  TVMArrayFree(a);
}

TEST(Array, CopyFromTo) {
  TVMArrayHandle from = Alloc({2, 2}, kDLFloat, 64);
  TVMArrayHandle to = Alloc({2, 2}, kDLFloat, 64);
  double in[4] = {1.5, -2.5, 3.25, 1e300}, out[4] = {};
  ASSERT_EQ(TVMArrayCopyFromBytes(from, in, sizeof(in)), 0) << LastError();
  ASSERT_EQ(TVMArrayCopyFromTo(from, to, nullptr), 0) << LastError();
  ASSERT_EQ(TVMArrayCopyToBytes(to, out, sizeof(out)), 0) << LastError();
  EXPECT_EQ(std::memcmp(in, out, sizeof(in)), 0);
  EXPECT_NE(from->data, to->data);
  TVMArrayFree(from);
  TVMArrayFree(to);
}

// A strided source (a transposed matrix, numpy's a.T) is gathered in row-major order, as TVM's
// frontends copy it; a strided destination is still refused.
TEST(Array, CopyFromToGathersAStridedSource) {
  int32_t m[2][3] = {{1, 2, 3}, {4, 5, 6}};  // viewed as its 3 x 2 transpose
  int64_t shape[2] = {3, 2};
  int64_t strides[2] = {1, 3};
  DLTensor t{};
  t.data = m;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 2;
  t.dtype = DLDataType{kDLInt, 32, 1};
  t.shape = shape;
  t.strides = strides;
  TVMArrayHandle to = Alloc({3, 2}, kDLInt, 32);
  ASSERT_EQ(TVMArrayCopyFromTo(&t, to, nullptr), 0) << LastError();
  int32_t out[6] = {};
  ASSERT_EQ(TVMArrayCopyToBytes(to, out, sizeof(out)), 0) << LastError();
  const int32_t want[6] = {1, 4, 2, 5, 3, 6};
  EXPECT_EQ(std::memcmp(out, want, sizeof(want)), 0);
  EXPECT_TRUE(FailsWith(TVMArrayCopyFromTo(to, &t, nullptr), "ValueError", "not contiguous"));
  TVMArrayFree(to);
}

TEST(Array, CopyFromToMismatchIsAnError) {
  TVMArrayHandle a = Alloc({2, 2}, kDLFloat, 32);
  TVMArrayHandle other_shape = Alloc({4}, kDLFloat, 32);
  TVMArrayHandle other_size = Alloc({3}, kDLFloat, 32);
  TVMArrayHandle other_dtype = Alloc({2, 2}, kDLInt, 32);
  EXPECT_EQ(TVMArrayCopyFromTo(a, other_size, nullptr), -1);
  EXPECT_EQ(ErrorKind(LastError()), "ValueError") << LastError();
  EXPECT_EQ(TVMArrayCopyFromTo(a, other_dtype, nullptr), -1);
  EXPECT_FALSE(ErrorKind(LastError()).empty()) << LastError();
  EXPECT_EQ(TVMArrayCopyFromTo(a, other_shape, nullptr), -1);
  EXPECT_FALSE(ErrorKind(LastError()).empty()) << LastError();
  EXPECT_TRUE(FailsWith(TVMArrayCopyFromTo(nullptr, a, nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMArrayCopyFromTo(a, nullptr, nullptr), "ValueError"));
  TVMArrayFree(a);
  TVMArrayFree(other_shape);
  TVMArrayFree(other_size);
  TVMArrayFree(other_dtype);
}

TEST(Array, StreamFunctionsAreNoOpsOnCpu) {
  EXPECT_EQ(TVMSetStream(kDLCPU, 0, nullptr), 0) << LastError();
  EXPECT_EQ(TVMSynchronize(kDLCPU, 0, nullptr), 0) << LastError();
}

// ---- NDArray handles through calls ------------------------------------------------------------

TEST(NDArrayValue, EchoReturnsTheSameArrayOwned) {
  TVMArrayHandle a = Alloc({3}, kDLInt, 64);
  TVMFunctionHandle echo = MakeEcho();
  int64_t before = NDArrayUseCount(a);
  Ret r = Call(echo, {Handle(a, kTVMNDArrayHandle)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMNDArrayHandle);
  EXPECT_EQ(r.value.v_handle, a);
  EXPECT_EQ(NDArrayUseCount(a), before + 1);
  EXPECT_EQ(TVMArrayFree(static_cast<TVMArrayHandle>(r.value.v_handle)), 0);
  EXPECT_EQ(NDArrayUseCount(a), before);
  TVMFuncFree(echo);
  TVMArrayFree(a);
}

TEST(NDArrayValue, CbArgToReturnRetainsAnArrayArgument) {
  TVMArrayHandle a = Alloc({2}, kDLFloat, 32);
  int64_t before = NDArrayUseCount(a);
  void* kept = nullptr;
  int kept_code = -1;
  TVMFunctionHandle f = MakeFunction([&](TVMValue* args, int* codes, int, TVMRetValueHandle) {
    TVMValue v = args[0];
    int code = codes[0];
    if (TVMCbArgToReturn(&v, &code) != 0) return -1;
    kept = v.v_handle;
    kept_code = code;
    return 0;
  });
  ASSERT_EQ(Call(f, {Handle(a, kTVMNDArrayHandle)}).rc, 0) << LastError();
  EXPECT_EQ(kept, a);
  EXPECT_EQ(kept_code, kTVMNDArrayHandle);
  EXPECT_EQ(NDArrayUseCount(a), before + 1);
  TVMArrayFree(static_cast<TVMArrayHandle>(kept));
  EXPECT_EQ(NDArrayUseCount(a), before);
  TVMFuncFree(f);
  TVMArrayFree(a);
}

TEST(NDArrayValue, BorrowedViewIsNotAnNDArray) {
  // A kTVMDLTensorHandle view has no object around it: asking for one is an error.
  float data[2] = {0, 0};
  int64_t shape[1] = {2};
  DLTensor view;
  std::memset(&view, 0, sizeof(view));
  view.data = data;
  view.device.device_type = kDLCPU;
  view.ndim = 1;
  view.dtype.code = kDLFloat;
  view.dtype.bits = 32;
  view.dtype.lanes = 1;
  view.shape = shape;
  Global f("runtime.NDArrayObjectHandle");
  EXPECT_TRUE(FailsWith(Call(f, {Handle(&view, kTVMDLTensorHandle)}).rc, "TypeError"));
}

TEST(NDArrayValue, ArrayObjectTypeIsNDArray) {
  TVMArrayHandle a = Alloc({1}, kDLFloat, 32);
  EXPECT_EQ(TypeIndexOf(NDArrayObject(a)), TypeIndexOfKey("runtime.NDArray"));
  TVMArrayFree(a);
}

// ---- DLPack
// ---------------------------------------------------------------------------------------

struct Producer {
  std::atomic<int> deleted{0};
  alignas(64) float data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  DLManagedTensor managed;

  Producer() {
    std::memset(&managed, 0, sizeof(managed));
    managed.dl_tensor.data = data;
    managed.dl_tensor.device.device_type = kDLCPU;
    managed.dl_tensor.ndim = 2;
    managed.dl_tensor.dtype.code = kDLFloat;
    managed.dl_tensor.dtype.bits = 32;
    managed.dl_tensor.dtype.lanes = 1;
    managed.dl_tensor.shape = shape;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      static_cast<Producer*>(self->manager_ctx)->deleted++;
    };
  }
};

TEST(DLPack, FromDLPackIsZeroCopyAndDeletesOnce) {
  Producer p;
  TVMArrayHandle a = nullptr;
  ASSERT_EQ(TVMArrayFromDLPack(&p.managed, &a), 0) << LastError();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->data, p.data) << "zero-copy: the same data pointer";
  EXPECT_EQ(a->ndim, 2);
  EXPECT_EQ(a->shape[0], 2);
  EXPECT_EQ(a->shape[1], 3);
  EXPECT_EQ(a->dtype.code, kDLFloat);
  float out[6] = {};
  ASSERT_EQ(TVMArrayCopyToBytes(a, out, sizeof(out)), 0) << LastError();
  EXPECT_EQ(out[5], 6.0f);
  p.data[0] = 42;  // writes by the producer are visible: it is the same memory
  ASSERT_EQ(TVMArrayCopyToBytes(a, out, sizeof(out)), 0) << LastError();
  EXPECT_EQ(out[0], 42.0f);
  EXPECT_EQ(p.deleted, 0);
  ASSERT_EQ(TVMObjectRetain(NDArrayObject(a)), 0);
  TVMArrayFree(a);
  EXPECT_EQ(p.deleted, 0) << "a reference is still alive";
  TVMArrayFree(a);
  EXPECT_EQ(p.deleted, 1);
}

TEST(DLPack, FromDLPackFailureLeavesOwnershipWithCaller) {
  Producer p;
  EXPECT_TRUE(FailsWith(TVMArrayFromDLPack(&p.managed, nullptr), "ValueError"));
  EXPECT_EQ(p.deleted, 0) << "on failure the caller keeps the tensor";
  TVMArrayHandle out = nullptr;
  EXPECT_TRUE(FailsWith(TVMArrayFromDLPack(nullptr, &out), "ValueError"));
  EXPECT_EQ(out, nullptr);
  TVMDLManagedTensorCallDeleter(&p.managed);
  EXPECT_EQ(p.deleted, 1);
}

TEST(DLPack, LastReferenceOnAnotherThreadDeletesOnce) {
  Producer p;
  TVMArrayHandle a = nullptr;
  ASSERT_EQ(TVMArrayFromDLPack(&p.managed, &a), 0) << LastError();
  std::thread t([a] { TVMArrayFree(a); });
  t.join();
  EXPECT_EQ(p.deleted, 1);
}

TEST(DLPack, ToDLPackIsZeroCopyAndKeepsTheArrayAlive) {
  TVMArrayHandle a = Alloc({4}, kDLInt, 32);
  int32_t in[4] = {7, 8, 9, 10};
  ASSERT_EQ(TVMArrayCopyFromBytes(a, in, sizeof(in)), 0);
  void* obj = NDArrayObject(a);
  int64_t before = UseCount(obj);
  DLManagedTensor* managed = nullptr;
  ASSERT_EQ(TVMArrayToDLPack(a, &managed), 0) << LastError();
  ASSERT_NE(managed, nullptr);
  EXPECT_EQ(managed->dl_tensor.data, a->data) << "zero-copy: the same data pointer";
  EXPECT_EQ(managed->dl_tensor.ndim, 1);
  EXPECT_EQ(managed->dl_tensor.shape[0], 4);
  EXPECT_EQ(managed->dl_tensor.dtype.code, kDLInt);
  EXPECT_EQ(managed->dl_tensor.dtype.bits, 32);
  EXPECT_NE(managed->deleter, nullptr);
  EXPECT_EQ(UseCount(obj), before + 1) << "the DLPack tensor holds a reference";
  TVMArrayFree(a);  // our reference: the DLPack tensor keeps the data alive
  EXPECT_EQ(static_cast<int32_t*>(managed->dl_tensor.data)[3], 10);
  TVMDLManagedTensorCallDeleter(managed);
}

TEST(DLPack, RoundTripKeepsTheSameData) {
  TVMArrayHandle a = Alloc({2, 2}, kDLFloat, 32);
  DLManagedTensor* managed = nullptr;
  ASSERT_EQ(TVMArrayToDLPack(a, &managed), 0) << LastError();
  TVMArrayHandle b = nullptr;
  ASSERT_EQ(TVMArrayFromDLPack(managed, &b), 0) << LastError();
  EXPECT_EQ(b->data, a->data);
  void* obj = NDArrayObject(a);
  int64_t with_b = UseCount(obj);
  TVMArrayFree(b);  // runs the ToDLPack deleter once, dropping its reference to a
  EXPECT_EQ(UseCount(obj), with_b - 1);
  TVMArrayFree(a);
}

TEST(DLPack, ToDLPackBadInputIsValueError) {
  DLManagedTensor* managed = reinterpret_cast<DLManagedTensor*>(0x1);
  EXPECT_TRUE(FailsWith(TVMArrayToDLPack(nullptr, &managed), "ValueError"));
  EXPECT_EQ(managed, reinterpret_cast<DLManagedTensor*>(0x1));
  TVMArrayHandle a = Alloc({1}, kDLFloat, 32);
  EXPECT_TRUE(FailsWith(TVMArrayToDLPack(a, nullptr), "ValueError"));
  TVMArrayFree(a);
}

TEST(DLPack, CallDeleterNullIsNoOp) {
  TVMDLManagedTensorCallDeleter(nullptr);
  DLManagedTensor no_deleter;
  std::memset(&no_deleter, 0, sizeof(no_deleter));
  TVMDLManagedTensorCallDeleter(&no_deleter);  // deleter NULL: nothing to call
  SUCCEED();
}

// ---- Modules ------------------------------------------------------------------------------------

TEST(Module, FreeNullIsNoOp) { EXPECT_EQ(TVMModFree(nullptr), 0); }

TEST(Module, MissingFileIsValueError) {
  TVMModuleHandle m = reinterpret_cast<TVMModuleHandle>(0x1);
  EXPECT_TRUE(FailsWith(TVMModLoadFromFile("/nonexistent/abitests/libnothing.so", "", &m),
                        "ValueError", "libnothing.so"));
  EXPECT_EQ(m, reinterpret_cast<TVMModuleHandle>(0x1)) << "out must be untouched on failure";
}

TEST(Module, BadInputIsValueError) {
  TVMModuleHandle m = nullptr;
  TVMFunctionHandle f = nullptr;
  EXPECT_TRUE(FailsWith(TVMModLoadFromFile(nullptr, "", &m), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMModGetFunction(nullptr, "f", 0, &f), "ValueError"));
  void* array = MakeObject("runtime.Array", {});
  EXPECT_TRUE(FailsWith(TVMModGetFunction(array, "f", 0, &f), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMModImport(array, array), "ValueError"));
  TVMObjectFree(array);
}

int SysAdd(TVMValue* args, int* codes, int num_args, TVMValue* out, int* out_code, void*) {
  if (num_args != 2 || codes[0] != kTVMArgInt || codes[1] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: abitests_sys_add expects two ints");
    return -1;
  }
  out->v_int64 = args[0].v_int64 + args[1].v_int64;
  *out_code = kTVMArgInt;
  return 0;
}

TVMModuleHandle SystemLib() {
  Global f("runtime.SystemLib");
  Ret r = Call(f);
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMModuleHandle);
  return r.value.v_handle;
}

TEST(Module, SystemLibServesRegisteredSymbols) {
  ASSERT_EQ(TVMBackendRegisterSystemLibSymbol("abitests_sys_add", reinterpret_cast<void*>(&SysAdd)),
            0)
      << LastError();
  TVMModuleHandle lib = SystemLib();
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(TypeIndexOf(lib), TypeIndexOfKey("runtime.Module"));
  TVMFunctionHandle add = nullptr;
  ASSERT_EQ(TVMModGetFunction(lib, "abitests_sys_add", 0, &add), 0) << LastError();
  ASSERT_NE(add, nullptr);
  Ret r = Call(add, {Int(40), Int(2)});
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.value.v_int64, 42);
  EXPECT_TRUE(FailsWith(Call(add, {Float(1.0), Int(2)}).rc, "TypeError", "two ints"));
  TVMFunctionHandle missing = reinterpret_cast<TVMFunctionHandle>(0x1);
  EXPECT_EQ(TVMModGetFunction(lib, "abitests_no_such_symbol", 0, &missing), 0) << LastError();
  EXPECT_EQ(missing, nullptr) << "a missing function is not an error: *out is NULL";
  TVMFuncFree(add);
  EXPECT_EQ(TVMModFree(lib), 0);
}

TEST(Module, RegisterSystemLibSymbolBadInput) {
  EXPECT_TRUE(FailsWith(
      TVMBackendRegisterSystemLibSymbol(nullptr, reinterpret_cast<void*>(&SysAdd)), "ValueError"));
}

TEST(Module, ModuleHandleReturnIsRetained) {
  TVMModuleHandle lib = SystemLib();
  ASSERT_NE(lib, nullptr);
  TVMFunctionHandle echo = MakeEcho();
  int64_t before = UseCount(lib, kTVMModuleHandle);
  Ret r = Call(echo, {Handle(lib, kTVMModuleHandle)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMModuleHandle);
  EXPECT_EQ(r.value.v_handle, lib);
  EXPECT_EQ(UseCount(lib, kTVMModuleHandle), before + 1);
  TVMModFree(r.value.v_handle);
  EXPECT_EQ(UseCount(lib, kTVMModuleHandle), before);
  TVMFuncFree(echo);
  TVMModFree(lib);
}

TEST(Backend, GetFuncFromEnvFindsGlobals) {
  TVMModuleHandle lib = SystemLib();
  ASSERT_NE(lib, nullptr);
  TVMFunctionHandle size = nullptr;
  ASSERT_EQ(TVMBackendGetFuncFromEnv(lib, "runtime.ArraySize", &size), 0) << LastError();
  ASSERT_NE(size, nullptr);
  void* array = MakeObject("runtime.Array", {Int(1), Int(2)});
  EXPECT_EQ(Call(size, {Obj(array)}).value.v_int64, 2);
  // Borrowed: the module keeps it; not freed here.
  TVMObjectFree(array);
  TVMModFree(lib);
}

#if defined(POLYFFI_TEST_DSO_PATH)
TVMModuleHandle LoadTestDso() {
  TVMModuleHandle m = nullptr;
  EXPECT_EQ(TVMModLoadFromFile(POLYFFI_TEST_DSO_PATH, "", &m), 0) << LastError();
  return m;
}

TEST(ModuleDso, LoadGetCallFree) {
  TVMModuleHandle m = LoadTestDso();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(TypeIndexOf(m), TypeIndexOfKey("runtime.Module"));
  TVMFunctionHandle scale = nullptr;
  ASSERT_EQ(TVMModGetFunction(m, "scale_i64", 0, &scale), 0) << LastError();
  ASSERT_NE(scale, nullptr);
  Ret r = Call(scale, {Int(6), Int(7)});
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.value.v_int64, 42);
  TVMFunctionHandle missing = reinterpret_cast<TVMFunctionHandle>(0x1);
  EXPECT_EQ(TVMModGetFunction(m, "no_such_function", 0, &missing), 0);
  EXPECT_EQ(missing, nullptr);
  TVMFuncFree(scale);
  EXPECT_EQ(TVMModFree(m), 0);
}

TEST(ModuleDso, KernelResultsReadAsFromAClassicCallee) {
  // TVMFuncCall hands the caller's slot to the kernel; what it wrote is then made what a classic
  // callee's result gives: uint as int, a dtype as its string, a string copied into the thread's
  // return storage, None with no stale value.
  TVMModuleHandle m = LoadTestDso();
  ASSERT_NE(m, nullptr);
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMModGetFunction(m, "result_of_kind", 0, &f), 0) << LastError();
  ASSERT_NE(f, nullptr);
  Ret r = Call(f, {Int(0)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMArgInt);
  EXPECT_EQ(r.value.v_int64, 7);
  r = Call(f, {Int(1)});
  ASSERT_EQ(r.rc, 0) << r.error;
  ASSERT_EQ(r.code, kTVMStr);
  EXPECT_STREQ(r.value.v_str, "float32x4");
  r = Call(f, {Int(2)});
  ASSERT_EQ(r.rc, 0) << r.error;
  ASSERT_EQ(r.code, kTVMStr);
  EXPECT_STREQ(r.value.v_str, "from the kernel");
  Ret h = Call(f, {Int(3)});
  ASSERT_EQ(h.rc, 0) << h.error;
  EXPECT_EQ(h.code, kTVMOpaqueHandle);
  EXPECT_NE(static_cast<const char*>(h.value.v_handle), r.value.v_str) << "the string was copied";
  EXPECT_STREQ(static_cast<const char*>(h.value.v_handle), "from the kernel");
  r = Call(f, {Int(4)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMNullptr);
  EXPECT_EQ(r.value.v_handle, nullptr);
  r = Call(f, {Int(5)});
  EXPECT_TRUE(FailsWith(r.rc, "ValueError", "result_of_kind: unknown kind"));
  TVMFuncFree(f);
  TVMModFree(m);
}

TEST(ModuleDso, ExplicitFormat) {
  TVMModuleHandle m = nullptr;
  ASSERT_EQ(TVMModLoadFromFile(POLYFFI_TEST_DSO_PATH, "so", &m), 0) << LastError();
  TVMModFree(m);
}

TEST(ModuleDso, EntryFunctionByTvmMain) {
  TVMModuleHandle m = LoadTestDso();
  TVMFunctionHandle main_fn = nullptr;
  ASSERT_EQ(TVMModGetFunction(m, "__tvm_main__", 0, &main_fn), 0) << LastError();
  ASSERT_NE(main_fn, nullptr) << "__tvm_main__ names scale_i64";
  EXPECT_EQ(Call(main_fn, {Int(3), Int(5)}).value.v_int64, 15);
  TVMFuncFree(main_fn);
  TVMModFree(m);
}

TEST(ModuleDso, FunctionKeepsModuleAlive) {
  TVMModuleHandle m = LoadTestDso();
  ASSERT_NE(m, nullptr);
  int64_t before = UseCount(m, kTVMModuleHandle);
  TVMFunctionHandle scale = nullptr;
  ASSERT_EQ(TVMModGetFunction(m, "scale_i64", 0, &scale), 0) << LastError();
  EXPECT_GE(UseCount(m, kTVMModuleHandle), before + 1) << "the function references its module";
  TVMModFree(m);
  Ret r = Call(scale, {Int(2), Int(21)});  // the library must still be loaded
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.value.v_int64, 42);
  TVMFuncFree(scale);
}

TEST(ModuleDso, ErrorKeepsItsKind) {
  TVMModuleHandle m = LoadTestDso();
  TVMFunctionHandle fails = nullptr;
  ASSERT_EQ(TVMModGetFunction(m, "always_fails", 0, &fails), 0) << LastError();
  ASSERT_NE(fails, nullptr);
  EXPECT_TRUE(FailsWith(Call(fails).rc, "RuntimeError", "dso failure"));
  TVMFuncFree(fails);
  TVMModFree(m);
}

TEST(ModuleDso, ImportIsSearchedOnlyWhenAsked) {
  ASSERT_EQ(TVMBackendRegisterSystemLibSymbol("abitests_sys_add", reinterpret_cast<void*>(&SysAdd)),
            0);
  TVMModuleHandle m = LoadTestDso();
  TVMModuleHandle lib = SystemLib();
  ASSERT_NE(m, nullptr);
  ASSERT_NE(lib, nullptr);
  int64_t lib_before = UseCount(lib, kTVMModuleHandle);
  ASSERT_EQ(TVMModImport(m, lib), 0) << LastError();
  EXPECT_EQ(UseCount(lib, kTVMModuleHandle), lib_before + 1) << "mod takes its own reference";
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMModGetFunction(m, "abitests_sys_add", 0, &f), 0);
  EXPECT_EQ(f, nullptr);
  ASSERT_EQ(TVMModGetFunction(m, "abitests_sys_add", 1, &f), 0) << LastError();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Call(f, {Int(1), Int(1)}).value.v_int64, 2);
  TVMFuncFree(f);
  // No check that freeing m drops its import: the loader caches a module per path for the
  // whole process, so m (and its imports) outlive this handle by design.
  TVMModFree(m);
  TVMModFree(lib);
}
#endif  // POLYFFI_TEST_DSO_PATH

#if defined(POLYFFI_CORRUPT_LIB_PATH)
TEST(ModuleDso, CorruptLibraryFailsWithTheLoadersMessage) {
  TVMModuleHandle m = reinterpret_cast<TVMModuleHandle>(0x1);
  EXPECT_EQ(TVMModLoadFromFile(POLYFFI_CORRUPT_LIB_PATH, "", &m), -1);
  std::string err = LastError();
  EXPECT_FALSE(ErrorKind(err).empty()) << err;
  // dlopen's own words for a file that is not ELF.
  EXPECT_NE(err.find("ELF"), std::string::npos) << err;
  EXPECT_EQ(m, reinterpret_cast<TVMModuleHandle>(0x1));
}
#endif

// ---- Workspace ----------------------------------------------------------------------------------

TEST(Workspace, AllocWriteFree) {
  for (uint64_t n : {uint64_t{1}, uint64_t{64}, uint64_t{1000}, uint64_t{1} << 20}) {
    void* p = TVMBackendAllocWorkspace(kDLCPU, 0, n, kDLFloat, 32);
    ASSERT_NE(p, nullptr) << n << ": " << LastError();
    std::memset(p, 0xAB, n);
    EXPECT_EQ(static_cast<uint8_t*>(p)[n - 1], 0xAB);
    EXPECT_EQ(TVMBackendFreeWorkspace(kDLCPU, 0, p), 0) << LastError();
  }
}

TEST(Workspace, FreeNullIsNoOp) {
  // docs/spec/abi.md section 4, ownership: a NULL handle passed to any *Free is allowed and does
  // nothing.
  EXPECT_EQ(TVMBackendFreeWorkspace(kDLCPU, 0, nullptr), 0) << LastError();
}

TEST(Workspace, NestedAllocationsAreDistinct) {
  void* a = TVMBackendAllocWorkspace(kDLCPU, 0, 256, kDLFloat, 32);
  void* b = TVMBackendAllocWorkspace(kDLCPU, 0, 256, kDLFloat, 32);
  void* c = TVMBackendAllocWorkspace(kDLCPU, 0, 256, kDLFloat, 32);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  std::memset(a, 1, 256);
  std::memset(b, 2, 256);
  std::memset(c, 3, 256);
  EXPECT_EQ(static_cast<uint8_t*>(a)[255], 1);
  EXPECT_EQ(static_cast<uint8_t*>(b)[255], 2);
  EXPECT_EQ(TVMBackendFreeWorkspace(kDLCPU, 0, c), 0);
  EXPECT_EQ(TVMBackendFreeWorkspace(kDLCPU, 0, b), 0);
  EXPECT_EQ(TVMBackendFreeWorkspace(kDLCPU, 0, a), 0);
}

TEST(Workspace, ManyThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < 200; ++i) {
        uint64_t n = 16 + static_cast<uint64_t>((t * 131 + i * 17) % 4096);
        auto* p = static_cast<uint8_t*>(TVMBackendAllocWorkspace(kDLCPU, 0, n, kDLInt, 8));
        if (p == nullptr) {
          failures++;
          continue;
        }
        std::memset(p, t, n);
        std::this_thread::yield();
        for (uint64_t k = 0; k < n; k += 97) {
          if (p[k] != static_cast<uint8_t>(t)) failures++;  // another thread wrote into ours
        }
        if (TVMBackendFreeWorkspace(kDLCPU, 0, p) != 0) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---- Parallel launch ----------------------------------------------------------------------------

struct LaunchRecord {
  std::mutex mu;
  std::vector<int> task_ids;
  std::set<int> num_tasks;
  std::set<std::thread::id> threads;
};

int RecordTask(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  auto* rec = static_cast<LaunchRecord*>(cdata);
  std::lock_guard<std::mutex> lock(rec->mu);
  rec->task_ids.push_back(task_id);
  rec->num_tasks.insert(penv->num_task);
  rec->threads.insert(std::this_thread::get_id());
  return 0;
}

void ExpectEachTaskOnce(LaunchRecord& rec) {
  ASSERT_EQ(rec.num_tasks.size(), 1u) << "every task sees the same num_task";
  int n = *rec.num_tasks.begin();
  ASSERT_GE(n, 1);
  std::vector<int> ids = rec.task_ids;
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(static_cast<int>(ids.size()), n);
  for (int i = 0; i < n; ++i) EXPECT_EQ(ids[i], i);
}

TEST(ParallelLaunch, ZeroTasksMeansOnePerPoolThread) {
  LaunchRecord rec;
  ASSERT_EQ(TVMBackendParallelLaunch(RecordTask, &rec, 0), 0) << LastError();
  ExpectEachTaskOnce(rec);
}

TEST(ParallelLaunch, NTasksRunsEachTaskIdOnce) {
  for (int n : {1, 2, 3, 8}) {
    SCOPED_TRACE(n);
    LaunchRecord rec;
    ASSERT_EQ(TVMBackendParallelLaunch(RecordTask, &rec, n), 0) << LastError();
    ExpectEachTaskOnce(rec);
    // The runtime may use fewer tasks than asked (TVM caps at the pool size), never more.
    EXPECT_LE(*rec.num_tasks.begin(), n);
  }
}

TEST(ParallelLaunch, TasksSplitTheWorkCompletely) {
  // The classic codegen pattern: each task takes the slice [id*n/num_task, (id+1)*n/num_task).
  constexpr int kN = 10000;
  struct Work {
    std::vector<std::atomic<int>> hits = std::vector<std::atomic<int>>(kN);
  } work;
  auto body = [](int task_id, TVMParallelGroupEnv* penv, void* cdata) -> int {
    auto* w = static_cast<Work*>(cdata);
    int64_t begin = static_cast<int64_t>(task_id) * kN / penv->num_task;
    int64_t end = static_cast<int64_t>(task_id + 1) * kN / penv->num_task;
    for (int64_t i = begin; i < end; ++i) w->hits[i]++;
    return 0;
  };
  ASSERT_EQ(TVMBackendParallelLaunch(body, &work, 0), 0) << LastError();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(work.hits[i].load(), 1) << i;
}

TEST(ParallelLaunch, ErrorInOneTaskBecomesTheLaunchersError) {
  auto body = [](int task_id, TVMParallelGroupEnv* penv, void*) -> int {
    if (task_id == penv->num_task - 1) {
      TVMAPISetLastError("ValueError: task failed on purpose");
      return -1;
    }
    return 0;
  };
  TVMAPISetLastError("");
  EXPECT_TRUE(FailsWith(TVMBackendParallelLaunch(body, nullptr, 0), "ValueError",
                        "task failed on purpose"));
  // The pool is still usable afterwards.
  LaunchRecord rec;
  ASSERT_EQ(TVMBackendParallelLaunch(RecordTask, &rec, 0), 0) << LastError();
  ExpectEachTaskOnce(rec);
}

TEST(ParallelLaunch, BadInputIsValueError) {
  EXPECT_TRUE(FailsWith(TVMBackendParallelLaunch(nullptr, nullptr, 0), "ValueError"));
  LaunchRecord rec;
  EXPECT_TRUE(FailsWith(TVMBackendParallelLaunch(RecordTask, &rec, -1), "ValueError"));
  EXPECT_TRUE(rec.task_ids.empty());
}

TEST(ParallelLaunch, ConcurrentLaunchesFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&failures] {
      for (int i = 0; i < 20; ++i) {
        LaunchRecord rec;
        if (TVMBackendParallelLaunch(RecordTask, &rec, 0) != 0) {
          failures++;
          continue;
        }
        int n = *rec.num_tasks.begin();
        if (static_cast<int>(rec.task_ids.size()) != n) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ParallelBarrier, EveryTaskWaitsForAll) {
  struct Phases {
    std::atomic<int> arrived{0};
    std::atomic<int> saw_all{0};
    std::atomic<int> barrier_rc{0};
  } phases;
  auto body = [](int task_id, TVMParallelGroupEnv* penv, void* cdata) -> int {
    auto* p = static_cast<Phases*>(cdata);
    if (task_id == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a straggler
    p->arrived++;
    if (TVMBackendParallelBarrier(task_id, penv) != 0) p->barrier_rc++;
    if (p->arrived.load() == penv->num_task) p->saw_all++;
    return 0;
  };
  LaunchRecord rec;
  ASSERT_EQ(TVMBackendParallelLaunch(RecordTask, &rec, 0), 0);
  int n = *rec.num_tasks.begin();
  ASSERT_EQ(TVMBackendParallelLaunch(body, &phases, 0), 0) << LastError();
  EXPECT_EQ(phases.barrier_rc.load(), 0);
  EXPECT_EQ(phases.saw_all.load(), n) << "no task passed the barrier before all arrived";
}

// ---- RunOnce ------------------------------------------------------------------------------------

TEST(RunOnce, RunsOnceUnderEightThreads) {
  struct Once {
    void* handle = nullptr;
    std::atomic<int> runs{0};
    std::atomic<bool> done{false};
    std::atomic<int> saw_not_done{0};
    std::atomic<int> errors{0};
  } once;
  auto init = [](void* cdata) -> int {
    auto* o = static_cast<Once*>(cdata);
    o->runs++;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive meanwhile
    o->done = true;
    return 0;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      if (TVMBackendRunOnce(&once.handle, init, &once, 0) != 0) once.errors++;
      // Thread-safe "once": when the call returns, the initialisation has finished.
      if (!once.done) once.saw_not_done++;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(once.runs.load(), 1);
  EXPECT_EQ(once.errors.load(), 0);
  EXPECT_EQ(once.saw_not_done.load(), 0);
  EXPECT_NE(once.handle, nullptr) << "the slot records that the work was done";
  EXPECT_EQ(TVMBackendRunOnce(&once.handle, init, &once, 0), 0);
  EXPECT_EQ(once.runs.load(), 1);
}

TEST(RunOnce, SeparateHandlesRunSeparately) {
  std::atomic<int> runs{0};
  auto init = [](void* cdata) -> int {
    static_cast<std::atomic<int>*>(cdata)->fetch_add(1);
    return 0;
  };
  void* h1 = nullptr;
  void* h2 = nullptr;
  EXPECT_EQ(TVMBackendRunOnce(&h1, init, &runs, 0), 0);
  EXPECT_EQ(TVMBackendRunOnce(&h2, init, &runs, 0), 0);
  EXPECT_EQ(TVMBackendRunOnce(&h1, init, &runs, 0), 0);
  EXPECT_EQ(runs.load(), 2);
}

}  // namespace
}  // namespace abitests
