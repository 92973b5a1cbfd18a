// C-level tests of the functions, registry, error and object parts of the C ABI
// (c_runtime_api.h), called the way a binding calls them: through the C header only.
// Ownership is checked with use counts (runtime.ObjectUseCount) before and after each step.
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.h"

namespace abitests {
namespace {

// ---- TVMFuncCreateFromCFunc / TVMFuncFree: finalizer exactly once ---------------------------

struct FinalizeCounter {
  std::atomic<int> count{0};
};

void CountFinalizer(void* resource) { static_cast<FinalizeCounter*>(resource)->count++; }

int NopCallback(TVMValue*, int*, int, TVMRetValueHandle, void*) { return 0; }

TEST(FuncCreate, FinalizerRunsOnceWhenLastReferenceIsFreed) {
  FinalizeCounter counter;
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(NopCallback, &counter, CountFinalizer, &f), 0) << LastError();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(counter.count, 0);
  ASSERT_EQ(TVMObjectRetain(f), 0);
  EXPECT_EQ(TVMFuncFree(f), 0);
  EXPECT_EQ(counter.count, 0) << "finalizer ran while a reference was still alive";
  EXPECT_EQ(TVMFuncFree(f), 0);
  EXPECT_EQ(counter.count, 1);
}

TEST(FuncCreate, NewFunctionHasUseCountOne) {
  TVMFunctionHandle f = MakeEcho();
  EXPECT_EQ(UseCount(f, kTVMPackedFuncHandle), 1);
  TVMFuncFree(f);
}

TEST(FuncCreate, NullFinalizerIsAllowed) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(NopCallback, nullptr, nullptr, &f), 0) << LastError();
  Ret r = Call(f);
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMNullptr);
  EXPECT_EQ(TVMFuncFree(f), 0);
}

TEST(FuncCreate, ResourceHandleReachesCallback) {
  int marker = 0;
  TVMFunctionHandle f = nullptr;
  auto cb = [](TVMValue*, int*, int, TVMRetValueHandle ret, void* res) -> int {
    return ReturnInt(ret, *static_cast<int*>(res));
  };
  marker = 1234;
  ASSERT_EQ(TVMFuncCreateFromCFunc(cb, &marker, nullptr, &f), 0) << LastError();
  Ret r = Call(f);
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.value.v_int64, 1234);
  TVMFuncFree(f);
}

TEST(FuncCreate, NullOutFailsAndStillFinalizesOnce) {
  // Documented: the finalizer also runs when creation fails, so the resource never leaks.
  FinalizeCounter counter;
  EXPECT_TRUE(FailsWith(TVMFuncCreateFromCFunc(NopCallback, &counter, CountFinalizer, nullptr),
                        "ValueError"));
  EXPECT_EQ(counter.count, 1);
}

TEST(FuncCreate, NullCallbackFailsAndStillFinalizesOnce) {
  FinalizeCounter counter;
  TVMFunctionHandle out = reinterpret_cast<TVMFunctionHandle>(0x1);
  EXPECT_TRUE(
      FailsWith(TVMFuncCreateFromCFunc(nullptr, &counter, CountFinalizer, &out), "ValueError"));
  EXPECT_EQ(counter.count, 1);
  EXPECT_EQ(out, reinterpret_cast<TVMFunctionHandle>(0x1)) << "out must be untouched on failure";
}

TEST(FuncFree, NullIsNoOp) { EXPECT_EQ(TVMFuncFree(nullptr), 0); }

// ---- TVMFuncCall -----------------------------------------------------------------------------

TEST(FuncCall, PassesArgumentsAndReturnsResult) {
  TVMFunctionHandle add =
      MakeFunction([](TVMValue* args, int* codes, int n, TVMRetValueHandle ret) {
        int64_t sum = 0;
        for (int i = 0; i < n; ++i) {
          if (codes[i] != kTVMArgInt) return -1;
          sum += args[i].v_int64;
        }
        return ReturnInt(ret, sum);
      });
  Ret r = Call(add, {Int(1), Int(2), Int(39)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMArgInt);
  EXPECT_EQ(r.value.v_int64, 42);
  TVMFuncFree(add);
}

TEST(FuncCall, ZeroArgumentsWithNullArrays) {
  TVMFunctionHandle f =
      MakeFunction([](TVMValue*, int*, int n, TVMRetValueHandle ret) { return ReturnInt(ret, n); });
  TVMValue ret;
  int code = -1;
  ASSERT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &ret, &code), 0) << LastError();
  EXPECT_EQ(code, kTVMArgInt);
  EXPECT_EQ(ret.v_int64, 0);
  TVMFuncFree(f);
}

TEST(FuncCall, NoReturnGivesNullptr) {
  TVMFunctionHandle f = MakeFunction([](TVMValue*, int*, int, TVMRetValueHandle) { return 0; });
  Ret r = Call(f, {Int(1)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMNullptr);
  TVMFuncFree(f);
}

TEST(FuncCall, CallbackSeesArgumentsUnchanged) {
  struct Seen {
    std::vector<int> codes;
    std::vector<TVMValue> values;
  } seen;
  TVMFunctionHandle f = MakeFunction([&seen](TVMValue* args, int* codes, int n, TVMRetValueHandle) {
    seen.codes.assign(codes, codes + n);
    seen.values.assign(args, args + n);
    return 0;
  });
  int dummy = 0;
  Ret r = Call(f, {Int(-5), Float(2.5), Handle(&dummy, kTVMOpaqueHandle), Bool(true),
                   Device(kDLCPU, 7), DType(kDLFloat, 32, 1)});
  ASSERT_EQ(r.rc, 0) << r.error;
  ASSERT_EQ(seen.codes.size(), 6u);
  EXPECT_EQ(seen.codes[0], kTVMArgInt);
  EXPECT_EQ(seen.values[0].v_int64, -5);
  EXPECT_EQ(seen.codes[1], kTVMArgFloat);
  EXPECT_EQ(seen.values[1].v_float64, 2.5);
  EXPECT_EQ(seen.codes[2], kTVMOpaqueHandle);
  EXPECT_EQ(seen.values[2].v_handle, &dummy);
  EXPECT_EQ(seen.codes[3], kTVMArgBool);
  EXPECT_EQ(seen.values[3].v_int64, 1);
  EXPECT_EQ(seen.codes[4], kDLDevice);
  EXPECT_EQ(seen.values[4].v_device.device_type, kDLCPU);
  EXPECT_EQ(seen.values[4].v_device.device_id, 7);
  EXPECT_EQ(seen.codes[5], kTVMDataType);
  EXPECT_EQ(seen.values[5].v_type.code, kDLFloat);
  EXPECT_EQ(seen.values[5].v_type.bits, 32);
  EXPECT_EQ(seen.values[5].v_type.lanes, 1);
  TVMFuncFree(f);
}

TEST(FuncCall, NullHandleIsValueError) {
  TVMValue ret;
  int code = 0;
  EXPECT_TRUE(FailsWith(TVMFuncCall(nullptr, nullptr, nullptr, 0, &ret, &code), "ValueError"));
}

TEST(FuncCall, NegativeNumArgsIsValueError) {
  TVMFunctionHandle f = MakeEcho();
  TVMValue args[1];
  int codes[1] = {kTVMArgInt};
  args[0].v_int64 = 1;
  TVMValue ret;
  int code = 0;
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, args, codes, -1, &ret, &code), "ValueError"));
  TVMFuncFree(f);
}

TEST(FuncCall, NullArgArraysWithPositiveCountIsValueError) {
  TVMFunctionHandle f = MakeEcho();
  TVMValue ret;
  int code = 0;
  int codes[1] = {kTVMArgInt};
  TVMValue args[1];
  args[0].v_int64 = 1;
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, nullptr, codes, 1, &ret, &code), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, args, nullptr, 1, &ret, &code), "ValueError"));
  TVMFuncFree(f);
}

TEST(FuncCall, NullOutPointersAreValueError) {
  TVMFunctionHandle f = MakeEcho();
  TVMValue args[1];
  int codes[1] = {kTVMArgInt};
  args[0].v_int64 = 1;
  TVMValue ret;
  int code = 0;
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, args, codes, 1, nullptr, &code), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, args, codes, 1, &ret, nullptr), "ValueError"));
  TVMFuncFree(f);
}

TEST(FuncCall, NonFunctionHandleIsErrorNotCrash) {
  void* array = MakeObject("runtime.Array", {Int(1)});
  ASSERT_NE(array, nullptr);
  TVMValue ret;
  ret.v_int64 = 77;
  int code = 77;
  EXPECT_TRUE(FailsWith(TVMFuncCall(array, nullptr, nullptr, 0, &ret, &code), "ValueError"));
  EXPECT_EQ(ret.v_int64, 77);
  EXPECT_EQ(code, 77);
  TVMObjectFree(array);
}

TEST(FuncCall, OutParametersUntouchedOnFailure) {
  TVMFunctionHandle f = MakeFailing("ValueError: nope");
  TVMValue ret;
  ret.v_int64 = 0x5A5A;
  int code = 0x77;
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, nullptr, nullptr, 0, &ret, &code), "ValueError", "nope"));
  EXPECT_EQ(ret.v_int64, 0x5A5A);
  EXPECT_EQ(code, 0x77);
  TVMFuncFree(f);
}

TEST(FuncCall, UnknownArgumentTypeCodeIsTypeError) {
  // Through a C callback that echoes its argument back: the unknown code must be rejected
  // somewhere on the way (call or return), with the documented message.
  TVMFunctionHandle echo = MakeEcho();
  for (int bad : {99, 200, -1}) {
    SCOPED_TRACE(bad);
    Ret r = Call(echo, {Int(0, bad)});
    EXPECT_TRUE(FailsWith(r.rc, "TypeError", "unknown type code " + std::to_string(bad)));
  }
  TVMFuncFree(echo);
}

TEST(FuncCall, UnknownArgumentTypeCodeToCoreFunctionIsTypeError) {
  Global array_ctor("runtime.Array");
  Ret r = Call(array_ctor, {Int(1), Int(5, 99)});
  EXPECT_TRUE(FailsWith(r.rc, "TypeError", "unknown type code 99"));
}

TEST(FuncCall, NullStringAndBytesPayloadsAreValueError) {
  TVMFunctionHandle echo = MakeEcho();
  TVMByteArray no_data{nullptr, 5};
  EXPECT_TRUE(FailsWith(Call(echo, {Str(nullptr)}).rc, "ValueError"));
  EXPECT_TRUE(FailsWith(Call(echo, {Handle(nullptr, kTVMBytes)}).rc, "ValueError"));
  EXPECT_TRUE(FailsWith(Call(echo, {Bytes(&no_data)}).rc, "ValueError"));
  // Zero bytes need no data pointer.
  TVMByteArray empty{nullptr, 0};
  Ret r = Call(echo, {Bytes(&empty)});
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMBytes);
  EXPECT_EQ(r.str, "");
  TVMFuncFree(echo);
}

TEST(FuncCall, NullObjectHandleTravelsAsNone) {
  // Classic TVM: a NULL object reference is None.
  TVMFunctionHandle echo = MakeEcho();
  for (int code : {static_cast<int>(kTVMObjectHandle), static_cast<int>(kTVMPackedFuncHandle),
                   static_cast<int>(kTVMModuleHandle), static_cast<int>(kTVMNDArrayHandle)}) {
    SCOPED_TRACE(code);
    Ret r = Call(echo, {Handle(nullptr, code)});
    EXPECT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.code, kTVMNullptr);
  }
  TVMFuncFree(echo);
}

TEST(FuncCall, ExtensionCodesAreUnknown) {
  // kTVMExtBegin and above name no type polyffi knows.
  TVMFunctionHandle echo = MakeEcho();
  for (int code : {static_cast<int>(kTVMExtBegin), static_cast<int>(kTVMExtReserveEnd),
                   static_cast<int>(kTVMExtEnd)}) {
    EXPECT_TRUE(FailsWith(Call(echo, {Int(1, code)}).rc, "TypeError",
                          "unknown type code " + std::to_string(code)));
  }
  TVMFuncFree(echo);
}

TEST(FuncCall, CallbackMinusTwoPropagates) {
  TVMFunctionHandle f = MakeFunction([](TVMValue*, int*, int, TVMRetValueHandle) { return -2; });
  Ret r = Call(f);
  EXPECT_EQ(r.rc, -2);
  EXPECT_NE(r.error.find("EnvErrorAlreadySet"), std::string::npos) << r.error;
  TVMFuncFree(f);
}

TEST(FuncCall, MinusTwoPropagatesThroughNestedCallback) {
  TVMFunctionHandle inner =
      MakeFunction([](TVMValue*, int*, int, TVMRetValueHandle) { return -2; });
  TVMFunctionHandle outer = MakeFunction([inner](TVMValue*, int*, int, TVMRetValueHandle) {
    TVMValue ret;
    int code;
    return TVMFuncCall(inner, nullptr, nullptr, 0, &ret, &code);
  });
  EXPECT_EQ(Call(outer).rc, -2);
  TVMFuncFree(outer);
  TVMFuncFree(inner);
}

TEST(FuncCall, CallbackErrorKeepsItsKind) {
  for (const char* kind : {"ValueError", "TypeError", "IndexError", "KeyError", "AttributeError",
                           "NotImplementedError", "AssertionError", "RuntimeError", "InternalError",
                           "my.pkg.CustomError"}) {
    SCOPED_TRACE(kind);
    std::string msg = std::string(kind) + ": callback says no";
    TVMFunctionHandle f = MakeFailing(msg);
    Ret r = Call(f);
    EXPECT_TRUE(FailsWith(r.rc, kind, "callback says no"));
    TVMFuncFree(f);
  }
}

TEST(FuncCall, ErrorKeepsKindThroughNestedCallbacks) {
  TVMFunctionHandle inner = MakeFailing("KeyError: inner key missing");
  TVMFunctionHandle outer = MakeFunction([inner](TVMValue*, int*, int, TVMRetValueHandle) {
    TVMValue ret;
    int code;
    return TVMFuncCall(inner, nullptr, nullptr, 0, &ret, &code);
  });
  EXPECT_TRUE(FailsWith(Call(outer).rc, "KeyError", "inner key missing"));
  TVMFuncFree(outer);
  TVMFuncFree(inner);
}

TEST(FuncCall, CallbackMayCallBackIntoTheRuntime) {
  // Re-entrancy: a callback that looks up and calls another function while being called.
  TVMFunctionHandle echo = MakeEcho();
  ASSERT_EQ(TVMFuncRegisterGlobal("abitests.reentrant_echo", echo, 1), 0) << LastError();
  TVMFunctionHandle outer =
      MakeFunction([](TVMValue* args, int* codes, int, TVMRetValueHandle ret) {
        TVMFunctionHandle e = nullptr;
        if (TVMFuncGetGlobal("abitests.reentrant_echo", &e) != 0 || e == nullptr) return -1;
        TVMValue v;
        int c;
        int rc = TVMFuncCall(e, args, codes, 1, &v, &c);
        TVMFuncFree(e);
        if (rc != 0) return rc;
        return TVMCFuncSetReturn(ret, &v, &c, 1);
      });
  Ret r = Call(outer, {Str("nested")});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMStr);
  EXPECT_EQ(r.str, "nested");
  TVMFuncFree(outer);
  TVMFuncFree(echo);
  TVMFuncRemoveGlobal("abitests.reentrant_echo");
}

TEST(FuncCall, NoCxxExceptionEscapesOnAnyErrorPath) {
  // Every failure below is a C++ exception inside the core; each must come out as -1.
  EXPECT_NO_THROW({
    Global array_get("runtime.ArrayGetItem");
    void* array = MakeObject("runtime.Array", {Int(1)});
    EXPECT_EQ(Call(array_get, {Obj(array), Int(10)}).rc, -1);
    EXPECT_EQ(Call(array_get, {Str("not an array"), Int(0)}).rc, -1);
    EXPECT_EQ(Call(array_get, {}).rc, -1);
    Global map_get("runtime.MapGetItem");
    void* map = MakeObject("runtime.Map", {Str("k"), Int(1)});
    EXPECT_EQ(Call(map_get, {Obj(map), Str("absent")}).rc, -1);
    unsigned idx;
    EXPECT_EQ(TVMObjectTypeKey2Index("abitests.no.such.type", &idx), -1);
    char* key;
    EXPECT_EQ(TVMObjectTypeIndex2Key(0x7FFFFFF0u, &key), -1);
    TVMObjectFree(array);
    TVMObjectFree(map);
  });
}

// ---- TVMCFuncSetReturn, one type code at a time ---------------------------------------------

class SetReturn : public ::testing::Test {
 protected:
  void SetUp() override { echo_ = MakeEcho(); }
  void TearDown() override { TVMFuncFree(echo_); }
  TVMFunctionHandle echo_ = nullptr;
};

TEST_F(SetReturn, Int) {
  for (int64_t x : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()}) {
    Ret r = Call(echo_, {Int(x)});
    ASSERT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.code, kTVMArgInt);
    EXPECT_EQ(r.value.v_int64, x);
  }
}

TEST_F(SetReturn, UIntIsAcceptedAsInt) {
  Ret r = Call(echo_, {Int(7, kDLUInt)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_TRUE(r.code == kTVMArgInt || r.code == kDLUInt) << r.code;
  EXPECT_EQ(r.value.v_int64, 7);
}

TEST_F(SetReturn, Float) {
  for (double x : {0.0, 1.5, -2.25, 1e308, std::numeric_limits<double>::infinity()}) {
    Ret r = Call(echo_, {Float(x)});
    ASSERT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.code, kTVMArgFloat);
    EXPECT_EQ(r.value.v_float64, x);
  }
  Ret nan = Call(echo_, {Float(std::nan(""))});
  ASSERT_EQ(nan.rc, 0) << nan.error;
  EXPECT_TRUE(std::isnan(nan.value.v_float64));
  Ret neg_zero = Call(echo_, {Float(-0.0)});
  ASSERT_EQ(neg_zero.rc, 0) << neg_zero.error;
  EXPECT_TRUE(std::signbit(neg_zero.value.v_float64));
}

TEST_F(SetReturn, BoolStaysBool) {
  for (bool b : {true, false}) {
    Ret r = Call(echo_, {Bool(b)});
    ASSERT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.code, kTVMArgBool);
    EXPECT_EQ(r.value.v_int64, b ? 1 : 0);
  }
}

TEST_F(SetReturn, OpaqueHandleIsTheSamePointer) {
  int target = 0;
  Ret r = Call(echo_, {Handle(&target, kTVMOpaqueHandle)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMOpaqueHandle);
  EXPECT_EQ(r.value.v_handle, &target);
}

TEST_F(SetReturn, Nullptr) {
  Ret r = Call(echo_, {None()});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMNullptr);
}

TEST_F(SetReturn, DataTypeComesBackAsString) {
  struct Case {
    uint8_t code, bits;
    uint16_t lanes;
    const char* text;
  };
  for (const Case& c :
       {Case{kDLFloat, 32, 1, "float32"}, Case{kDLInt, 8, 4, "int8x4"},
        Case{6 /* kDLBool, DLPack >= 0.8 */, 8, 1, "bool"}, Case{kDLInt, 64, 1, "int64"},
        Case{kDLUInt, 16, 1, "uint16"}, Case{kDLFloat, 16, 1, "float16"}}) {
    SCOPED_TRACE(c.text);
    Ret r = Call(echo_, {DType(c.code, c.bits, c.lanes)});
    ASSERT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.code, kTVMStr);
    EXPECT_EQ(r.str, c.text);
  }
}

TEST_F(SetReturn, ClassicBoolDataTypeIsBool) {
  // Classic TVM (<= 0.19) spells bool as uint1 and prints it "bool"; code written for it
  // compares dtype strings against "bool".
  Ret r = Call(echo_, {DType(kDLUInt, 1, 1)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMStr);
  EXPECT_EQ(r.str, "bool");
}

TEST_F(SetReturn, Device) {
  Ret r = Call(echo_, {Device(kDLCPU, 3)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kDLDevice);
  EXPECT_EQ(r.value.v_device.device_type, kDLCPU);
  EXPECT_EQ(r.value.v_device.device_id, 3);
}

TEST_F(SetReturn, DLTensorViewIsTheSamePointerAndNotFreed) {
  float data[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  DLTensor view;
  std::memset(&view, 0, sizeof(view));
  view.data = data;
  view.device.device_type = kDLCPU;
  view.ndim = 1;
  view.dtype.code = kDLFloat;
  view.dtype.bits = 32;
  view.dtype.lanes = 1;
  view.shape = shape;
  Ret r = Call(echo_, {Handle(&view, kTVMDLTensorHandle)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMDLTensorHandle);
  EXPECT_EQ(r.value.v_handle, &view);
  EXPECT_EQ(view.data, data);  // the runtime never owns a view
}

TEST_F(SetReturn, StringIsCopied) {
  // The callback sets a string from a buffer and then overwrites the buffer: the caller must
  // still see the original text.
  char buffer[16];
  std::strcpy(buffer, "hello");
  TVMFunctionHandle f = MakeFunction([&buffer](TVMValue*, int*, int, TVMRetValueHandle ret) {
    int rc = ReturnStr(ret, buffer);
    std::memset(buffer, 'X', sizeof(buffer) - 1);
    buffer[sizeof(buffer) - 1] = '\0';
    return rc;
  });
  Ret r = Call(f);
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMStr);
  EXPECT_EQ(r.str, "hello");
  TVMFuncFree(f);
}

TEST_F(SetReturn, EmptyAndUtf8Strings) {
  for (const char* s : {"", "héllo wörld ✓", "line\nbreak"}) {
    Ret r = Call(echo_, {Str(s)});
    ASSERT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.code, kTVMStr);
    EXPECT_EQ(r.str, s);
  }
}

TEST_F(SetReturn, BytesAreCopiedWithEmbeddedNul) {
  char buffer[5] = {'a', '\0', 'b', '\0', 'c'};
  TVMFunctionHandle f = MakeFunction([&buffer](TVMValue*, int*, int, TVMRetValueHandle ret) {
    TVMByteArray bytes{buffer, sizeof(buffer)};
    TVMValue v;
    v.v_handle = &bytes;
    int code = kTVMBytes;
    int rc = TVMCFuncSetReturn(ret, &v, &code, 1);
    std::memset(buffer, 'X', sizeof(buffer));
    return rc;
  });
  Ret r = Call(f);
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMBytes);
  EXPECT_EQ(r.str, std::string("a\0b\0c", 5));
  TVMFuncFree(f);
}

TEST_F(SetReturn, EmptyBytes) {
  TVMByteArray empty{"", 0};
  Ret r = Call(echo_, {Bytes(&empty)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMBytes);
  EXPECT_EQ(r.str, "");
}

TEST_F(SetReturn, ObjectIsRetained) {
  void* array = MakeObject("runtime.Array", {Int(1), Int(2)});
  ASSERT_NE(array, nullptr);
  int64_t before = UseCount(array);
  Ret r = Call(echo_, {Obj(array)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMObjectHandle);
  EXPECT_EQ(r.value.v_handle, array);
  EXPECT_EQ(UseCount(array), before + 1) << "the caller owns one more reference";
  EXPECT_EQ(TVMObjectFree(r.value.v_handle), 0);
  EXPECT_EQ(UseCount(array), before);
  TVMObjectFree(array);
}

TEST_F(SetReturn, ObjectSetFromCallbackStateIsRetained) {
  // The callback returns an object it does not own a spare reference to: SetReturn must retain.
  void* array = MakeObject("runtime.Array", {});
  ASSERT_NE(array, nullptr);
  TVMFunctionHandle f = MakeFunction([array](TVMValue*, int*, int, TVMRetValueHandle ret) {
    TVMValue v;
    v.v_handle = array;
    int code = kTVMObjectHandle;
    return TVMCFuncSetReturn(ret, &v, &code, 1);
  });
  int64_t before = UseCount(array);
  for (int i = 0; i < 3; ++i) {
    Ret r = Call(f);
    ASSERT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.value.v_handle, array);
    EXPECT_EQ(UseCount(array), before + 1);
    TVMObjectFree(r.value.v_handle);
  }
  EXPECT_EQ(UseCount(array), before);
  TVMFuncFree(f);
  TVMObjectFree(array);
}

TEST_F(SetReturn, FunctionIsRetainedAndCallable) {
  TVMFunctionHandle inner =
      MakeFunction([](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnInt(ret, 99); });
  int64_t before = UseCount(inner, kTVMPackedFuncHandle);
  Ret r = Call(echo_, {Func(inner)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMPackedFuncHandle);
  ASSERT_NE(r.value.v_handle, nullptr);
  EXPECT_EQ(r.value.v_handle, inner);
  EXPECT_EQ(UseCount(inner, kTVMPackedFuncHandle), before + 1);
  Ret called = Call(r.value.v_handle);
  EXPECT_EQ(called.rc, 0) << called.error;
  EXPECT_EQ(called.value.v_int64, 99);
  EXPECT_EQ(TVMFuncFree(r.value.v_handle), 0);
  EXPECT_EQ(UseCount(inner, kTVMPackedFuncHandle), before);
  TVMFuncFree(inner);
}

TEST_F(SetReturn, ReturnedFunctionOutlivesItsCreator) {
  // A function returned from a callback must stay alive after every other reference is gone.
  std::atomic<int> finalized{0};
  TVMFunctionHandle inner = MakeFunction(
      [](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnInt(ret, 5); }, &finalized);
  Ret r = Call(echo_, {Func(inner)});
  ASSERT_EQ(r.rc, 0) << r.error;
  TVMFuncFree(inner);
  EXPECT_EQ(finalized, 0);
  Ret called = Call(r.value.v_handle);
  EXPECT_EQ(called.rc, 0) << called.error;
  EXPECT_EQ(called.value.v_int64, 5);
  TVMFuncFree(r.value.v_handle);
  EXPECT_EQ(finalized, 1);
}

TEST_F(SetReturn, RValueRefArgIsMovedOut) {
  void* array = MakeObject("runtime.Array", {Int(3)});
  ASSERT_NE(array, nullptr);
  int64_t before = UseCount(array);
  void* slot = array;  // our reference, handed over as an rvalue
  Ret r = Call(echo_, {Handle(&slot, kTVMObjectRValueRefArg)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMObjectHandle);
  EXPECT_EQ(r.value.v_handle, array);
  EXPECT_EQ(slot, nullptr) << "the reference must be moved out of the slot";
  EXPECT_EQ(UseCount(array), before) << "a move neither adds nor drops a reference";
  TVMObjectFree(r.value.v_handle);
}

TEST_F(SetReturn, UnknownTypeCodeIsTypeError) {
  struct Seen {
    int rc = 0;
    std::string error;
  } seen;
  TVMFunctionHandle f = MakeFunction([&seen](TVMValue*, int*, int, TVMRetValueHandle ret) {
    TVMValue v;
    v.v_int64 = 1;
    int code = 99;
    seen.rc = TVMCFuncSetReturn(ret, &v, &code, 1);
    seen.error = LastError();
    return seen.rc;
  });
  Ret r = Call(f);
  EXPECT_EQ(seen.rc, -1);
  EXPECT_EQ(ErrorKind(seen.error), "TypeError") << seen.error;
  EXPECT_NE(seen.error.find("unknown type code 99"), std::string::npos) << seen.error;
  EXPECT_TRUE(FailsWith(r.rc, "TypeError", "unknown type code 99"));
  TVMFuncFree(f);
}

TEST_F(SetReturn, BadArgumentsAreValueError) {
  struct Seen {
    int null_ret = 0, null_value = 0, null_code = 0, two = 0, zero = 0;
    std::string kinds;
  } seen;
  TVMFunctionHandle f = MakeFunction([&seen](TVMValue*, int*, int, TVMRetValueHandle ret) {
    TVMValue v;
    v.v_int64 = 1;
    int code = kTVMArgInt;
    seen.null_ret = TVMCFuncSetReturn(nullptr, &v, &code, 1);
    seen.kinds += ErrorKind(LastError()) + ",";
    seen.null_value = TVMCFuncSetReturn(ret, nullptr, &code, 1);
    seen.kinds += ErrorKind(LastError()) + ",";
    seen.null_code = TVMCFuncSetReturn(ret, &v, nullptr, 1);
    seen.kinds += ErrorKind(LastError()) + ",";
    seen.two = TVMCFuncSetReturn(ret, &v, &code, 2);
    seen.kinds += ErrorKind(LastError()) + ",";
    seen.zero = TVMCFuncSetReturn(ret, &v, &code, 0);
    seen.kinds += ErrorKind(LastError());
    return 0;
  });
  Ret r = Call(f);
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(seen.null_ret, -1);
  EXPECT_EQ(seen.null_value, -1);
  EXPECT_EQ(seen.null_code, -1);
  EXPECT_EQ(seen.two, -1);
  EXPECT_EQ(seen.zero, -1);
  EXPECT_EQ(seen.kinds, "ValueError,ValueError,ValueError,ValueError,ValueError");
  TVMFuncFree(f);
}

TEST_F(SetReturn, LastSetWins) {
  // Setting twice releases the first value (no leak) and returns the second.
  void* array = MakeObject("runtime.Array", {});
  ASSERT_NE(array, nullptr);
  int64_t before = UseCount(array);
  TVMFunctionHandle f = MakeFunction([array](TVMValue*, int*, int, TVMRetValueHandle ret) {
    TVMValue v;
    v.v_handle = array;
    int code = kTVMObjectHandle;
    if (TVMCFuncSetReturn(ret, &v, &code, 1) != 0) return -1;
    return ReturnInt(ret, 8);
  });
  Ret r = Call(f);
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMArgInt);
  EXPECT_EQ(r.value.v_int64, 8);
  EXPECT_EQ(UseCount(array), before);
  TVMFuncFree(f);
  TVMObjectFree(array);
}

// ---- TVMCbArgToReturn --------------------------------------------------------------------------

TEST(CbArgToReturn, ObjectArgumentIsRetained) {
  void* array = MakeObject("runtime.Array", {Int(1)});
  ASSERT_NE(array, nullptr);
  int64_t before = UseCount(array);
  void* kept = nullptr;
  TVMFunctionHandle f = MakeFunction([&kept](TVMValue* args, int* codes, int, TVMRetValueHandle) {
    TVMValue v = args[0];
    int code = codes[0];
    if (TVMCbArgToReturn(&v, &code) != 0) return -1;
    if (code != kTVMObjectHandle) return -1;
    kept = v.v_handle;  // now an owned reference
    return 0;
  });
  Ret r = Call(f, {Obj(array)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(kept, array);
  EXPECT_EQ(UseCount(array), before + 1) << "the callback keeps a reference past the call";
  TVMObjectFree(kept);
  EXPECT_EQ(UseCount(array), before);
  TVMFuncFree(f);
  TVMObjectFree(array);
}

TEST(CbArgToReturn, FunctionArgumentIsRetainedAndCallableLater) {
  std::atomic<int> finalized{0};
  TVMFunctionHandle inner = MakeFunction(
      [](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnInt(ret, 17); }, &finalized);
  void* kept = nullptr;
  TVMFunctionHandle f = MakeFunction([&kept](TVMValue* args, int* codes, int, TVMRetValueHandle) {
    TVMValue v = args[0];
    int code = codes[0];
    if (TVMCbArgToReturn(&v, &code) != 0) return -1;
    kept = v.v_handle;
    return code == kTVMPackedFuncHandle ? 0 : -1;
  });
  ASSERT_EQ(Call(f, {Func(inner)}).rc, 0) << LastError();
  TVMFuncFree(inner);
  EXPECT_EQ(finalized, 0) << "the kept reference keeps the function alive";
  Ret later = Call(kept);
  EXPECT_EQ(later.rc, 0) << later.error;
  EXPECT_EQ(later.value.v_int64, 17);
  TVMFuncFree(kept);
  EXPECT_EQ(finalized, 1);
  TVMFuncFree(f);
}

TEST(CbArgToReturn, RValueRefIsMovedOut) {
  void* array = MakeObject("runtime.Array", {});
  ASSERT_NE(array, nullptr);
  int64_t before = UseCount(array);
  void* slot = array;
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
  ASSERT_EQ(Call(f, {Handle(&slot, kTVMObjectRValueRefArg)}).rc, 0) << LastError();
  EXPECT_EQ(kept, array);
  EXPECT_EQ(kept_code, kTVMObjectHandle);
  EXPECT_EQ(slot, nullptr);
  EXPECT_EQ(UseCount(array), before);
  TVMObjectFree(kept);
  TVMFuncFree(f);
}

TEST(CbArgToReturn, NonObjectValuesAreLeftAsTheyAre) {
  std::vector<std::pair<int, TVMValue>> after;
  TVMFunctionHandle f =
      MakeFunction([&after](TVMValue* args, int* codes, int n, TVMRetValueHandle) {
        for (int i = 0; i < n; ++i) {
          TVMValue v = args[i];
          int code = codes[i];
          if (TVMCbArgToReturn(&v, &code) != 0) return -1;
          after.emplace_back(code, v);
        }
        return 0;
      });
  const char* text = "borrowed";
  TVMByteArray bytes{"xy", 2};
  Ret r = Call(f, {Int(4), Float(0.5), Str(text), Bytes(&bytes), Bool(false), None()});
  ASSERT_EQ(r.rc, 0) << r.error;
  ASSERT_EQ(after.size(), 6u);
  EXPECT_EQ(after[0].first, kTVMArgInt);
  EXPECT_EQ(after[0].second.v_int64, 4);
  EXPECT_EQ(after[1].first, kTVMArgFloat);
  EXPECT_EQ(after[1].second.v_float64, 0.5);
  EXPECT_EQ(after[2].first, kTVMStr);
  EXPECT_STREQ(after[2].second.v_str, text);
  EXPECT_EQ(after[3].first, kTVMBytes);
  EXPECT_EQ(after[4].first, kTVMArgBool);
  EXPECT_EQ(after[5].first, kTVMNullptr);
  TVMFuncFree(f);
}

TEST(CbArgToReturn, NullPointersAreValueError) {
  TVMValue v;
  v.v_int64 = 0;
  int code = kTVMArgInt;
  EXPECT_TRUE(FailsWith(TVMCbArgToReturn(nullptr, &code), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMCbArgToReturn(&v, nullptr), "ValueError"));
}

TEST(CbArgToReturn, UnknownTypeCodeIsTypeError) {
  TVMValue v;
  v.v_int64 = 0;
  int code = 99;
  EXPECT_TRUE(FailsWith(TVMCbArgToReturn(&v, &code), "TypeError", "unknown type code 99"));
  EXPECT_EQ(code, 99);
}

// ---- Returned strings: thread-local lifetime ---------------------------------------------------

TVMFunctionHandle MakeStringReturner(const std::string& text) {
  return MakeFunction(
      [text](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnStr(ret, text.c_str()); });
}

TEST(ReturnedString, ValidAfterOtherThreadsCall) {
  TVMFunctionHandle alpha = MakeStringReturner("alpha");
  TVMFunctionHandle beta = MakeStringReturner("beta-longer-than-alpha-to-force-a-realloc");
  TVMValue ret;
  int code = -1;
  ASSERT_EQ(TVMFuncCall(alpha, nullptr, nullptr, 0, &ret, &code), 0) << LastError();
  ASSERT_EQ(code, kTVMStr);
  const char* mine = ret.v_str;  // thread-local: valid until this thread's next call
  std::thread other([beta] {
    for (int i = 0; i < 50; ++i) {
      Ret r = Call(beta);
      EXPECT_EQ(r.str, "beta-longer-than-alpha-to-force-a-realloc");
    }
  });
  other.join();
  EXPECT_STREQ(mine, "alpha");
  TVMFuncFree(alpha);
  TVMFuncFree(beta);
}

TEST(ReturnedString, NextCallOnSameThreadGivesNewValue) {
  TVMFunctionHandle a = MakeStringReturner("first");
  TVMFunctionHandle b = MakeStringReturner("second");
  Ret ra = Call(a);
  Ret rb = Call(b);
  EXPECT_EQ(ra.str, "first");
  EXPECT_EQ(rb.str, "second");
  TVMFuncFree(a);
  TVMFuncFree(b);
}

TEST(ReturnedString, BytesValidAfterOtherThreadsCall) {
  TVMFunctionHandle echo = MakeEcho();
  TVMByteArray mine_in{"m\0ine", 5};
  TVMValue args[1];
  args[0].v_handle = &mine_in;
  int codes[1] = {kTVMBytes};
  TVMValue ret;
  int code = -1;
  ASSERT_EQ(TVMFuncCall(echo, args, codes, 1, &ret, &code), 0) << LastError();
  ASSERT_EQ(code, kTVMBytes);
  auto* mine = static_cast<TVMByteArray*>(ret.v_handle);
  std::thread other([echo] {
    TVMByteArray theirs{"theirs, much longer than mine", 29};
    for (int i = 0; i < 50; ++i) {
      Ret r = Call(echo, {Bytes(&theirs)});
      EXPECT_EQ(r.str, "theirs, much longer than mine");
    }
  });
  other.join();
  ASSERT_EQ(mine->size, 5u);
  EXPECT_EQ(std::string(mine->data, mine->size), std::string("m\0ine", 5));
  // The thread-local byte array is accepted by TVMByteArrayFree and left alone.
  EXPECT_EQ(TVMByteArrayFree(mine), 0);
  EXPECT_EQ(std::string(mine->data, mine->size), std::string("m\0ine", 5));
  TVMFuncFree(echo);
}

TEST(ReturnedString, DataTypeStringValidAfterOtherThreadsCall) {
  TVMFunctionHandle echo = MakeEcho();
  TVMValue args[1];
  args[0].v_type = DLDataType{kDLFloat, 64, 1};
  int codes[1] = {kTVMDataType};
  TVMValue ret;
  int code = -1;
  ASSERT_EQ(TVMFuncCall(echo, args, codes, 1, &ret, &code), 0) << LastError();
  ASSERT_EQ(code, kTVMStr);
  const char* mine = ret.v_str;
  std::thread other([echo] {
    for (int i = 0; i < 20; ++i) EXPECT_EQ(Call(echo, {DType(kDLInt, 8, 16)}).str, "int8x16");
  });
  other.join();
  EXPECT_STREQ(mine, "float64");
  TVMFuncFree(echo);
}

TEST(ByteArrayFree, NullIsNoOp) { EXPECT_EQ(TVMByteArrayFree(nullptr), 0); }

TEST(ByteArrayFree, ForeignPointerIsValueErrorAndUntouched) {
  TVMByteArray foreign{"abc", 3};
  EXPECT_TRUE(FailsWith(TVMByteArrayFree(&foreign), "ValueError"));
  EXPECT_EQ(foreign.size, 3u);
  EXPECT_STREQ(foreign.data, "abc");
}

// ---- Registry ---------------------------------------------------------------------------------

TEST(Registry, RegisterGetCallRemove) {
  const char* name = "abitests.registry.basic";
  TVMFunctionHandle f = MakeFunction([](TVMValue* args, int*, int, TVMRetValueHandle ret) {
    return ReturnInt(ret, args[0].v_int64 * 2);
  });
  ASSERT_EQ(TVMFuncRegisterGlobal(name, f, 0), 0) << LastError();
  TVMFunctionHandle got = nullptr;
  ASSERT_EQ(TVMFuncGetGlobal(name, &got), 0) << LastError();
  ASSERT_NE(got, nullptr);
  Ret r = Call(got, {Int(21)});
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.value.v_int64, 42);
  EXPECT_EQ(TVMFuncFree(got), 0);
  EXPECT_EQ(TVMFuncRemoveGlobal(name), 0) << LastError();
  TVMFunctionHandle missing = reinterpret_cast<TVMFunctionHandle>(0x1);
  EXPECT_EQ(TVMFuncGetGlobal(name, &missing), 0) << LastError();
  EXPECT_EQ(missing, nullptr) << "a missing global is not an error: *out is NULL";
  TVMFuncFree(f);
}

TEST(Registry, RegistryTakesItsOwnReference) {
  const char* name = "abitests.registry.own_ref";
  std::atomic<int> finalized{0};
  TVMFunctionHandle f = MakeEcho(&finalized);
  int64_t before = UseCount(f, kTVMPackedFuncHandle);
  ASSERT_EQ(TVMFuncRegisterGlobal(name, f, 0), 0) << LastError();
  EXPECT_EQ(UseCount(f, kTVMPackedFuncHandle), before + 1);
  TVMFuncFree(f);
  EXPECT_EQ(finalized, 0) << "the registry's reference keeps the function alive";
  Global got(name);
  Ret r = Call(got, {Int(3)});
  EXPECT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.value.v_int64, 3);
  ASSERT_EQ(TVMFuncRemoveGlobal(name), 0);
  EXPECT_EQ(finalized, 0) << "our looked-up handle still holds it";
}

TEST(Registry, RemovingDropsTheLastReference) {
  const char* name = "abitests.registry.remove_last";
  std::atomic<int> finalized{0};
  TVMFunctionHandle f = MakeEcho(&finalized);
  ASSERT_EQ(TVMFuncRegisterGlobal(name, f, 0), 0) << LastError();
  TVMFuncFree(f);
  EXPECT_EQ(finalized, 0);
  ASSERT_EQ(TVMFuncRemoveGlobal(name), 0) << LastError();
  EXPECT_EQ(finalized, 1);
}

TEST(Registry, DuplicateWithoutOverrideIsValueError) {
  const char* name = "abitests.registry.dup";
  TVMFunctionHandle f1 =
      MakeFunction([](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnInt(ret, 1); });
  TVMFunctionHandle f2 =
      MakeFunction([](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnInt(ret, 2); });
  ASSERT_EQ(TVMFuncRegisterGlobal(name, f1, 0), 0) << LastError();
  EXPECT_TRUE(FailsWith(TVMFuncRegisterGlobal(name, f2, 0), "ValueError", "already registered"));
  EXPECT_NE(LastError().find(name), std::string::npos) << "the message names the function";
  // The original is still the one registered.
  {
    Global got(name);
    EXPECT_EQ(Call(got).value.v_int64, 1);
  }
  TVMFuncRemoveGlobal(name);
  TVMFuncFree(f1);
  TVMFuncFree(f2);
}

TEST(Registry, OverrideReplacesAndReleasesTheOldFunction) {
  const char* name = "abitests.registry.override";
  std::atomic<int> old_finalized{0};
  TVMFunctionHandle old_f =
      MakeFunction([](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnInt(ret, 1); },
                   &old_finalized);
  TVMFunctionHandle new_f =
      MakeFunction([](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnInt(ret, 2); });
  ASSERT_EQ(TVMFuncRegisterGlobal(name, old_f, 0), 0) << LastError();
  TVMFuncFree(old_f);
  ASSERT_EQ(TVMFuncRegisterGlobal(name, new_f, 1), 0) << LastError();
  EXPECT_EQ(old_finalized, 1) << "the replaced function's last reference was the registry's";
  Global got(name);
  EXPECT_EQ(Call(got).value.v_int64, 2);
  TVMFuncRemoveGlobal(name);
  TVMFuncFree(new_f);
}

TEST(Registry, OverrideOnAFreshNameRegisters) {
  const char* name = "abitests.registry.override_fresh";
  TVMFunctionHandle f = MakeEcho();
  ASSERT_EQ(TVMFuncRegisterGlobal(name, f, 1), 0) << LastError();
  Global got(name);
  EXPECT_TRUE(got.ok());
  TVMFuncRemoveGlobal(name);
  TVMFuncFree(f);
}

TEST(Registry, RemoveAbsentIsZero) {
  EXPECT_EQ(TVMFuncRemoveGlobal("abitests.registry.never_registered"), 0) << LastError();
}

TEST(Registry, ListContainsRegisteredAndCoreNamesWithoutDuplicates) {
  const char* name = "abitests.registry.listed";
  TVMFunctionHandle f = MakeEcho();
  ASSERT_EQ(TVMFuncRegisterGlobal(name, f, 0), 0) << LastError();
  int size = -1;
  const char** names = nullptr;
  ASSERT_EQ(TVMFuncListGlobalNames(&size, &names), 0) << LastError();
  ASSERT_GT(size, 0);
  ASSERT_NE(names, nullptr);
  std::set<std::string> unique;
  for (int i = 0; i < size; ++i) {
    ASSERT_NE(names[i], nullptr);
    unique.insert(names[i]);
  }
  EXPECT_EQ(unique.size(), static_cast<size_t>(size)) << "duplicate names in the list";
  EXPECT_EQ(unique.count(name), 1u);
  for (const char* core :
       {"runtime.ObjectUseCount", "runtime.Array", "runtime.ArraySize", "runtime.ArrayGetItem",
        "runtime.Map", "runtime.MapSize", "runtime.MapGetItem", "runtime.MapCount",
        "runtime.MapItems", "runtime.String", "runtime.StringBytes",
        "runtime.NDArrayObjectHandle"}) {
    EXPECT_EQ(unique.count(core), 1u) << core << " is not registered";
  }
  TVMFuncRemoveGlobal(name);
  ASSERT_EQ(TVMFuncListGlobalNames(&size, &names), 0) << LastError();
  for (int i = 0; i < size; ++i) EXPECT_STRNE(names[i], name);
  TVMFuncFree(f);
}

TEST(Registry, ListIsThreadLocalAndValidUntilNextCall) {
  int size = -1;
  const char** names = nullptr;
  ASSERT_EQ(TVMFuncListGlobalNames(&size, &names), 0) << LastError();
  std::vector<std::string> copy(names, names + size);
  std::thread other([] {
    TVMFunctionHandle f = MakeEcho();
    for (int i = 0; i < 5; ++i) {
      std::string name = "abitests.registry.other_thread." + std::to_string(i);
      EXPECT_EQ(TVMFuncRegisterGlobal(name.c_str(), f, 0), 0) << LastError();
      int n = 0;
      const char** theirs = nullptr;
      EXPECT_EQ(TVMFuncListGlobalNames(&n, &theirs), 0) << LastError();
    }
    for (int i = 0; i < 5; ++i) {
      std::string name = "abitests.registry.other_thread." + std::to_string(i);
      TVMFuncRemoveGlobal(name.c_str());
    }
    TVMFuncFree(f);
  });
  other.join();
  // Another thread's calls must not have touched this thread's array or strings.
  for (int i = 0; i < size; ++i) EXPECT_EQ(copy[i], names[i]) << i;
}

TEST(Registry, BadInputIsValueError) {
  TVMFunctionHandle f = MakeEcho();
  TVMFunctionHandle out = reinterpret_cast<TVMFunctionHandle>(0x1);
  int size = 0;
  const char** names = nullptr;
  EXPECT_TRUE(FailsWith(TVMFuncRegisterGlobal(nullptr, f, 0), "ValueError"));
  EXPECT_TRUE(
      FailsWith(TVMFuncRegisterGlobal("abitests.registry.null_f", nullptr, 0), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncGetGlobal(nullptr, &out), "ValueError"));
  EXPECT_EQ(out, reinterpret_cast<TVMFunctionHandle>(0x1)) << "out must be untouched on failure";
  EXPECT_TRUE(FailsWith(TVMFuncGetGlobal("runtime.Array", nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncListGlobalNames(nullptr, &names), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncListGlobalNames(&size, nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncRemoveGlobal(nullptr), "ValueError"));
  TVMFuncFree(f);
}

TEST(Registry, RegisteringANonFunctionIsValueError) {
  void* array = MakeObject("runtime.Array", {});
  ASSERT_NE(array, nullptr);
  EXPECT_TRUE(
      FailsWith(TVMFuncRegisterGlobal("abitests.registry.not_a_function", array, 0), "ValueError"));
  TVMFunctionHandle out = nullptr;
  EXPECT_EQ(TVMFuncGetGlobal("abitests.registry.not_a_function", &out), 0);
  EXPECT_EQ(out, nullptr);
  TVMObjectFree(array);
}

// ---- Errors -------------------------------------------------------------------------------------

TEST(LastError, SetAndGetRoundTrip) {
  TVMAPISetLastError("ValueError: a message");
  EXPECT_EQ(LastError(), "ValueError: a message");
  TVMAPISetLastError("KeyError: second\n  traceback line");
  EXPECT_EQ(ErrorKind(LastError()), "KeyError");
  EXPECT_EQ(LastError(), "KeyError: second\n  traceback line");
}

TEST(LastError, NullSetsEmptyMessage) {
  TVMAPISetLastError("RuntimeError: something");
  TVMAPISetLastError(nullptr);
  ASSERT_NE(TVMGetLastError(), nullptr);
  EXPECT_STREQ(TVMGetLastError(), "");
}

TEST(LastError, NeverNullOnAFreshThread) {
  const char* seen = reinterpret_cast<const char*>(0x1);
  std::thread t([&seen] { seen = TVMGetLastError(); });
  t.join();
  EXPECT_NE(seen, nullptr);
}

TEST(LastError, IsPerThread) {
  TVMAPISetLastError("ValueError: main thread");
  std::string other_saw_before, other_saw_after;
  std::thread t([&] {
    other_saw_before = TVMGetLastError();
    TVMAPISetLastError("TypeError: other thread");
    other_saw_after = TVMGetLastError();
  });
  t.join();
  EXPECT_EQ(other_saw_before.find("main thread"), std::string::npos) << other_saw_before;
  EXPECT_EQ(other_saw_after, "TypeError: other thread");
  EXPECT_EQ(LastError(), "ValueError: main thread");
}

TEST(LastError, LongMessageIsKeptWhole) {
  std::string msg = "ValueError: " + std::string(1 << 20, 'x');
  TVMAPISetLastError(msg.c_str());
  EXPECT_EQ(std::strlen(TVMGetLastError()), msg.size());
}

TEST(LastError, MessageIsCopied) {
  std::string msg = "IndexError: copied";
  TVMAPISetLastError(msg.c_str());
  msg.assign(msg.size(), 'X');
  EXPECT_EQ(LastError(), "IndexError: copied");
}

TEST(LastError, CallbackErrorIsReadOnTheCallingThread) {
  // The callback runs on the caller's thread here; the caller reads the error it set.
  TVMFunctionHandle f = MakeFailing("AttributeError: no attribute 'x'");
  Ret r = Call(f);
  EXPECT_TRUE(FailsWith(r.rc, "AttributeError", "no attribute 'x'"));
  TVMFuncFree(f);
}

TEST(LastError, MessageWithoutKindStillReachesTheCaller) {
  TVMFunctionHandle f = MakeFailing("plain message without a kind");
  Ret r = Call(f);
  EXPECT_EQ(r.rc, -1);
  EXPECT_NE(r.error.find("plain message without a kind"), std::string::npos) << r.error;
  TVMFuncFree(f);
}

// ---- Objects ----------------------------------------------------------------------------------

TEST(Objects, TypeKeyIndexRoundTrip) {
  for (const char* key : {"runtime.PackedFunc", "Array", "Map", "runtime.String", "runtime.Module",
                          "runtime.NDArray"}) {
    SCOPED_TRACE(key);
    unsigned index = 0xFFFFFFFFu;
    ASSERT_EQ(TVMObjectTypeKey2Index(key, &index), 0) << LastError();
    char* back = nullptr;
    ASSERT_EQ(TVMObjectTypeIndex2Key(index, &back), 0) << LastError();
    ASSERT_NE(back, nullptr);
    EXPECT_STREQ(back, key);
  }
}

TEST(Objects, TypeIndicesAreDistinct) {
  std::set<unsigned> seen;
  for (const char* key : {"runtime.PackedFunc", "Array", "Map", "runtime.String", "runtime.Module",
                          "runtime.NDArray"}) {
    seen.insert(TypeIndexOfKey(key));
  }
  EXPECT_EQ(seen.size(), 6u);
}

TEST(Objects, TypeIndex2KeyStringIsThreadLocal) {
  unsigned array_index = TypeIndexOfKey("Array");
  unsigned map_index = TypeIndexOfKey("Map");
  char* mine = nullptr;
  ASSERT_EQ(TVMObjectTypeIndex2Key(array_index, &mine), 0);
  std::thread t([map_index] {
    for (int i = 0; i < 20; ++i) {
      char* theirs = nullptr;
      EXPECT_EQ(TVMObjectTypeIndex2Key(map_index, &theirs), 0);
      EXPECT_STREQ(theirs, "Map");
    }
  });
  t.join();
  EXPECT_STREQ(mine, "Array");
}

TEST(Objects, RootObjectTypeIsIndexZero) {
  // Classic TVM: "runtime.Object" is the root, type index 0.
  EXPECT_EQ(TypeIndexOfKey("runtime.Object"), 0u);
}

TEST(Objects, GetTypeIndexMatchesTypeKey) {
  TVMFunctionHandle f = MakeEcho();
  void* array = MakeObject("runtime.Array", {Int(1)});
  void* map = MakeObject("runtime.Map", {Str("a"), Int(1)});
  TVMByteArray bytes{"a\0b", 3};
  void* str = MakeObject("runtime.String", {Bytes(&bytes)});
  ASSERT_NE(array, nullptr);
  ASSERT_NE(map, nullptr);
  ASSERT_NE(str, nullptr);
  EXPECT_EQ(TypeIndexOf(f), TypeIndexOfKey("runtime.PackedFunc"));
  EXPECT_EQ(TypeIndexOf(array), TypeIndexOfKey("Array"));
  EXPECT_EQ(TypeIndexOf(map), TypeIndexOfKey("Map"));
  EXPECT_EQ(TypeIndexOf(str), TypeIndexOfKey("runtime.String"));
  TVMFuncFree(f);
  TVMObjectFree(array);
  TVMObjectFree(map);
  TVMObjectFree(str);
}

TEST(Objects, DerivedFrom) {
  unsigned array = TypeIndexOfKey("Array");
  unsigned map = TypeIndexOfKey("Map");
  unsigned func = TypeIndexOfKey("runtime.PackedFunc");
  unsigned root = TypeIndexOfKey("runtime.Object");
  int derived = -1;
  ASSERT_EQ(TVMObjectDerivedFrom(array, array, &derived), 0) << LastError();
  EXPECT_EQ(derived, 1);
  ASSERT_EQ(TVMObjectDerivedFrom(array, map, &derived), 0) << LastError();
  EXPECT_EQ(derived, 0);
  ASSERT_EQ(TVMObjectDerivedFrom(func, array, &derived), 0) << LastError();
  EXPECT_EQ(derived, 0);
  for (unsigned child : {array, map, func}) {
    derived = -1;
    ASSERT_EQ(TVMObjectDerivedFrom(child, root, &derived), 0) << LastError();
    EXPECT_EQ(derived, 1) << "every type derives from runtime.Object";
  }
  ASSERT_EQ(TVMObjectDerivedFrom(root, array, &derived), 0) << LastError();
  EXPECT_EQ(derived, 0);
}

TEST(Objects, RetainAndFreeChangeUseCount) {
  void* array = MakeObject("runtime.Array", {});
  ASSERT_NE(array, nullptr);
  EXPECT_EQ(UseCount(array), 1);
  ASSERT_EQ(TVMObjectRetain(array), 0);
  EXPECT_EQ(UseCount(array), 2);
  ASSERT_EQ(TVMObjectRetain(array), 0);
  EXPECT_EQ(UseCount(array), 3);
  ASSERT_EQ(TVMObjectFree(array), 0);
  ASSERT_EQ(TVMObjectFree(array), 0);
  EXPECT_EQ(UseCount(array), 1);
  TVMObjectFree(array);
}

TEST(Objects, FunctionHandleIsAnObjectForRetainAndFree) {
  std::atomic<int> finalized{0};
  TVMFunctionHandle f = MakeEcho(&finalized);
  ASSERT_EQ(TVMObjectRetain(f), 0);
  EXPECT_EQ(UseCount(f, kTVMPackedFuncHandle), 2);
  ASSERT_EQ(TVMObjectFree(f), 0);
  EXPECT_EQ(finalized, 0);
  ASSERT_EQ(TVMObjectFree(f), 0);
  EXPECT_EQ(finalized, 1);
}

TEST(Objects, NullIsNoOpForRetainAndFree) {
  EXPECT_EQ(TVMObjectRetain(nullptr), 0);
  EXPECT_EQ(TVMObjectFree(nullptr), 0);
}

TEST(Objects, BadInputIsAnError) {
  unsigned index = 0x1234;
  char* key = reinterpret_cast<char*>(0x1);
  int derived = 7;
  void* array = MakeObject("runtime.Array", {});
  EXPECT_TRUE(FailsWith(TVMObjectGetTypeIndex(nullptr, &index), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMObjectGetTypeIndex(array, nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMObjectTypeKey2Index(nullptr, &index), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMObjectTypeKey2Index("Array", nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMObjectTypeIndex2Key(0, nullptr), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMObjectDerivedFrom(0, 0, nullptr), "ValueError"));
  EXPECT_EQ(index, 0x1234u) << "out must be untouched on failure";
  EXPECT_EQ(key, reinterpret_cast<char*>(0x1));
  EXPECT_EQ(derived, 7);
  TVMObjectFree(array);
}

TEST(Objects, UnknownTypeKeyIsKeyError) {
  unsigned index = 0x1234;
  EXPECT_TRUE(FailsWith(TVMObjectTypeKey2Index("abitests.NoSuchType", &index), "KeyError",
                        "abitests.NoSuchType"));
  EXPECT_EQ(index, 0x1234u);
}

TEST(Objects, UnknownTypeIndexIsAnError) {
  char* key = reinterpret_cast<char*>(0x1);
  EXPECT_EQ(TVMObjectTypeIndex2Key(0x7FFFFFF0u, &key), -1);
  EXPECT_FALSE(ErrorKind(LastError()).empty()) << LastError();
  EXPECT_EQ(key, reinterpret_cast<char*>(0x1));
}

TEST(Objects, ObjectUseCountRejectsNonObjects) {
  Global use_count("runtime.ObjectUseCount");
  EXPECT_TRUE(FailsWith(Call(use_count, {Int(1)}).rc, "TypeError"));
}

TEST(Objects, CoreFunctionsRejectNullObjects) {
  // A NULL object handle (with an object type code) is bad input, never a crash.
  Global use_count("runtime.ObjectUseCount");
  Global size("runtime.ArraySize");
  Global map_size("runtime.MapSize");
  for (int code : {static_cast<int>(kTVMObjectHandle), static_cast<int>(kTVMPackedFuncHandle),
                   static_cast<int>(kTVMModuleHandle)}) {
    SCOPED_TRACE(code);
    EXPECT_EQ(Call(use_count, {Handle(nullptr, code)}).rc, -1);
    EXPECT_EQ(Call(size, {Handle(nullptr, code)}).rc, -1);
    EXPECT_EQ(Call(map_size, {Handle(nullptr, code)}).rc, -1);
  }
  void* slot = nullptr;
  EXPECT_EQ(Call(size, {Handle(&slot, kTVMObjectRValueRefArg)}).rc, -1);
}

// ---- Containers through the registered globals ---------------------------------------------

TEST(Containers, ArrayBuildSizeGetItem) {
  void* inner = MakeObject("runtime.Array", {});
  ASSERT_NE(inner, nullptr);
  int64_t inner_before = UseCount(inner);
  void* array =
      MakeObject("runtime.Array", {Int(1), Str("two"), Float(3.5), Bool(true), Obj(inner), None()});
  ASSERT_NE(array, nullptr);
  EXPECT_EQ(UseCount(inner), inner_before + 1) << "the array holds its own reference";
  Global size("runtime.ArraySize");
  Global get("runtime.ArrayGetItem");
  Ret n = Call(size, {Obj(array)});
  ASSERT_EQ(n.rc, 0) << n.error;
  EXPECT_EQ(n.code, kTVMArgInt);
  EXPECT_EQ(n.value.v_int64, 6);

  Ret item0 = Call(get, {Obj(array), Int(0)});
  ASSERT_EQ(item0.rc, 0) << item0.error;
  EXPECT_EQ(item0.code, kTVMArgInt);
  EXPECT_EQ(item0.value.v_int64, 1);
  Ret item1 = Call(get, {Obj(array), Int(1)});
  ASSERT_EQ(item1.rc, 0) << item1.error;
  EXPECT_EQ(item1.code, kTVMStr);
  EXPECT_EQ(item1.str, "two");
  Ret item2 = Call(get, {Obj(array), Int(2)});
  ASSERT_EQ(item2.rc, 0) << item2.error;
  EXPECT_EQ(item2.code, kTVMArgFloat);
  EXPECT_EQ(item2.value.v_float64, 3.5);
  Ret item3 = Call(get, {Obj(array), Int(3)});
  ASSERT_EQ(item3.rc, 0) << item3.error;
  EXPECT_EQ(item3.code, kTVMArgBool);
  EXPECT_EQ(item3.value.v_int64, 1);
  Ret item4 = Call(get, {Obj(array), Int(4)});
  ASSERT_EQ(item4.rc, 0) << item4.error;
  EXPECT_EQ(item4.code, kTVMObjectHandle);
  EXPECT_EQ(item4.value.v_handle, inner);
  EXPECT_EQ(UseCount(inner), inner_before + 2) << "a returned item is an owned reference";
  TVMObjectFree(item4.value.v_handle);
  Ret item5 = Call(get, {Obj(array), Int(5)});
  ASSERT_EQ(item5.rc, 0) << item5.error;
  EXPECT_EQ(item5.code, kTVMNullptr);

  TVMObjectFree(array);
  EXPECT_EQ(UseCount(inner), inner_before) << "freeing the array releases its items";
  TVMObjectFree(inner);
}

TEST(Containers, ArrayStringItemIsCopied) {
  std::string text = "mutable";
  void* array = MakeObject("runtime.Array", {Str(text.c_str())});
  ASSERT_NE(array, nullptr);
  text.assign(text.size(), 'X');
  Global get("runtime.ArrayGetItem");
  EXPECT_EQ(Call(get, {Obj(array), Int(0)}).str, "mutable");
  TVMObjectFree(array);
}

TEST(Containers, EmptyArray) {
  void* array = MakeObject("runtime.Array", {});
  ASSERT_NE(array, nullptr);
  Global size("runtime.ArraySize");
  EXPECT_EQ(Call(size, {Obj(array)}).value.v_int64, 0);
  Global get("runtime.ArrayGetItem");
  EXPECT_TRUE(FailsWith(Call(get, {Obj(array), Int(0)}).rc, "IndexError"));
  TVMObjectFree(array);
}

TEST(Containers, ArrayIndexOutOfRangeIsIndexError) {
  void* array = MakeObject("runtime.Array", {Int(10), Int(20)});
  ASSERT_NE(array, nullptr);
  Global get("runtime.ArrayGetItem");
  EXPECT_TRUE(FailsWith(Call(get, {Obj(array), Int(2)}).rc, "IndexError"));
  EXPECT_TRUE(FailsWith(Call(get, {Obj(array), Int(-1)}).rc, "IndexError"));
  EXPECT_TRUE(FailsWith(Call(get, {Obj(array), Int(std::numeric_limits<int64_t>::max())}).rc,
                        "IndexError"));
  TVMObjectFree(array);
}

TEST(Containers, ArrayFunctionsRejectWrongTypes) {
  void* map = MakeObject("runtime.Map", {});
  ASSERT_NE(map, nullptr);
  Global size("runtime.ArraySize");
  Global get("runtime.ArrayGetItem");
  EXPECT_TRUE(FailsWith(Call(size, {Obj(map)}).rc, "TypeError"));
  EXPECT_TRUE(FailsWith(Call(size, {Int(3)}).rc, "TypeError"));
  void* array = MakeObject("runtime.Array", {Int(1)});
  EXPECT_TRUE(FailsWith(Call(get, {Obj(array), Float(0.0)}).rc, "TypeError"));
  EXPECT_TRUE(FailsWith(Call(get, {Obj(array), Str("0")}).rc, "TypeError"));
  TVMObjectFree(array);
  TVMObjectFree(map);
}

TEST(Containers, MapBuildSizeGetCountItems) {
  void* value_obj = MakeObject("runtime.Array", {});
  ASSERT_NE(value_obj, nullptr);
  int64_t value_before = UseCount(value_obj);
  void* map =
      MakeObject("runtime.Map", {Str("a"), Int(1), Int(2), Str("b"), Str("obj"), Obj(value_obj)});
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(UseCount(value_obj), value_before + 1);
  Global size("runtime.MapSize");
  Global get("runtime.MapGetItem");
  Global count("runtime.MapCount");
  Global items("runtime.MapItems");

  EXPECT_EQ(Call(size, {Obj(map)}).value.v_int64, 3);
  Ret a = Call(get, {Obj(map), Str("a")});
  ASSERT_EQ(a.rc, 0) << a.error;
  EXPECT_EQ(a.code, kTVMArgInt);
  EXPECT_EQ(a.value.v_int64, 1);
  Ret two = Call(get, {Obj(map), Int(2)});
  ASSERT_EQ(two.rc, 0) << two.error;
  EXPECT_EQ(two.str, "b");
  Ret obj = Call(get, {Obj(map), Str("obj")});
  ASSERT_EQ(obj.rc, 0) << obj.error;
  EXPECT_EQ(obj.value.v_handle, value_obj);
  TVMObjectFree(obj.value.v_handle);

  EXPECT_EQ(Call(count, {Obj(map), Str("a")}).value.v_int64, 1);
  EXPECT_EQ(Call(count, {Obj(map), Str("zz")}).value.v_int64, 0);
  EXPECT_EQ(Call(count, {Obj(map), Int(3)}).value.v_int64, 0);

  // Items come back flat [k0, v0, k1, v1, ...] in insertion order.
  Ret flat = Call(items, {Obj(map)});
  ASSERT_EQ(flat.rc, 0) << flat.error;
  ASSERT_EQ(flat.code, kTVMObjectHandle);
  EXPECT_EQ(TypeIndexOf(flat.value.v_handle), TypeIndexOfKey("Array"));
  Global asize("runtime.ArraySize");
  Global aget("runtime.ArrayGetItem");
  ASSERT_EQ(Call(asize, {Obj(flat.value.v_handle)}).value.v_int64, 6);
  EXPECT_EQ(Call(aget, {Obj(flat.value.v_handle), Int(0)}).str, "a");
  EXPECT_EQ(Call(aget, {Obj(flat.value.v_handle), Int(1)}).value.v_int64, 1);
  EXPECT_EQ(Call(aget, {Obj(flat.value.v_handle), Int(2)}).value.v_int64, 2);
  EXPECT_EQ(Call(aget, {Obj(flat.value.v_handle), Int(3)}).str, "b");
  EXPECT_EQ(Call(aget, {Obj(flat.value.v_handle), Int(4)}).str, "obj");
  TVMObjectFree(flat.value.v_handle);

  TVMObjectFree(map);
  EXPECT_EQ(UseCount(value_obj), value_before);
  TVMObjectFree(value_obj);
}

TEST(Containers, MapMissingKeyIsKeyError) {
  void* map = MakeObject("runtime.Map", {Str("present"), Int(1)});
  ASSERT_NE(map, nullptr);
  Global get("runtime.MapGetItem");
  EXPECT_TRUE(FailsWith(Call(get, {Obj(map), Str("absent")}).rc, "KeyError"));
  EXPECT_TRUE(FailsWith(Call(get, {Obj(map), Int(1)}).rc, "KeyError"));
  TVMObjectFree(map);
}

TEST(Containers, MapObjectKeysAreByIdentity) {
  void* k1 = MakeObject("runtime.Array", {Int(1)});
  void* k2 = MakeObject("runtime.Array", {Int(1)});  // equal contents, another object
  void* map = MakeObject("runtime.Map", {Obj(k1), Str("one")});
  ASSERT_NE(map, nullptr);
  Global get("runtime.MapGetItem");
  Global count("runtime.MapCount");
  EXPECT_EQ(Call(get, {Obj(map), Obj(k1)}).str, "one");
  EXPECT_EQ(Call(count, {Obj(map), Obj(k2)}).value.v_int64, 0);
  TVMObjectFree(map);
  TVMObjectFree(k1);
  TVMObjectFree(k2);
}

TEST(Containers, MapWithOddArgumentCountIsAnError) {
  Global ctor("runtime.Map");
  Ret r = Call(ctor, {Str("a"), Int(1), Str("dangling")});
  EXPECT_EQ(r.rc, -1);
  EXPECT_FALSE(ErrorKind(r.error).empty()) << r.error;
}

TEST(Containers, StringObjectKeepsEmbeddedNul) {
  TVMByteArray bytes{"a\0b", 3};
  void* str = MakeObject("runtime.String", {Bytes(&bytes)});
  ASSERT_NE(str, nullptr);
  Global contents("runtime.StringBytes");
  Ret r = Call(contents, {Obj(str)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMBytes);
  EXPECT_EQ(r.str, std::string("a\0b", 3));
  TVMObjectFree(str);
}

TEST(Containers, StringObjectFromStr) {
  void* str = MakeObject("runtime.String", {Str("plain")});
  ASSERT_NE(str, nullptr);
  EXPECT_EQ(TypeIndexOf(str), TypeIndexOfKey("runtime.String"));
  Global contents("runtime.StringBytes");
  EXPECT_EQ(Call(contents, {Obj(str)}).str, "plain");
  TVMObjectFree(str);
}

// The core's dtype and type-code spellings for bindings that cannot include the headers (Rust).
TEST(Globals, DataTypeFromStringPacksCodeBitsLanes) {
  Global parse("polyffi.DataTypeFromString");
  Ret r = Call(parse, {Str("int8x4")});
  ASSERT_EQ(r.rc, 0) << r.error;
  ASSERT_EQ(r.code, kTVMArgInt);
  EXPECT_EQ(r.value.v_int64, int64_t{kDLInt} | 8 << 8 | 4 << 16);
  r = Call(parse, {Str("bool")});
  EXPECT_EQ(r.value.v_int64, int64_t{6 /* kDLBool */} | 8 << 8 | 1 << 16);
  EXPECT_TRUE(FailsWith(Call(parse, {Str("floaty")}).rc, "ValueError", "unknown dtype 'floaty'"));
  EXPECT_TRUE(FailsWith(Call(parse, {Int(3)}).rc, "TypeError"));
}

TEST(Globals, TypeCodeNameIsTheMessagesName) {
  Global name("polyffi.TypeCodeName");
  EXPECT_EQ(Call(name, {Int(kTVMArgFloat)}).str, "float");
  EXPECT_EQ(Call(name, {Int(kTVMNDArrayHandle)}).str, "NDArray");
  EXPECT_EQ(Call(name, {Int(99)}).str, "unknown type code");
}

}  // namespace
}  // namespace abitests
