// The direct call protocol (c_direct_api.h) through the C headers alone: results written into
// the caller's slot, strings through the thread's return storage, object references handed over,
// callee errors with their kind, the finalizer on every path, bad handles, the runtime's own
// path (registry, async pool) adapting a direct callee, and TVMFuncGetDirect on both kinds.
#include <gtest/gtest.h>
#include <polyffi/c_async_api.h>
#include <polyffi/c_backend_api.h>
#include <polyffi/c_direct_api.h>
#include <polyffi/c_runtime_api.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "c_api_test_util.h"

namespace abitests {
namespace {

// ---- Direct callees ---------------------------------------------------------------------------

int DirectNop(void*, const TVMValue*, const int*, int, TVMValue*, int*) { return 0; }

int DirectAdd(void*, const TVMValue* args, const int* codes, int n, TVMValue* ret, int* code) {
  int64_t sum;
  if (!SumInts(args, codes, n, &sum)) return -1;
  ret->v_int64 = sum;
  *code = kTVMArgInt;
  return 0;
}

/*! \brief Returns its first argument: numbers as they are, strings and bytes copied. */
int ClassicEchoFirst(TVMValue* args, int* codes, int, TVMRetValueHandle ret, void*);

int DirectEcho(void*, const TVMValue* args, const int* codes, int n, TVMValue* ret, int* code) {
  if (n < 1) return 0;
  if (codes[0] == kTVMStr) {
    return TVMDirectReturnString(args[0].v_str, std::strlen(args[0].v_str), 0, ret, code);
  }
  if (codes[0] == kTVMBytes) {
    auto* b = static_cast<const TVMByteArray*>(args[0].v_handle);
    return TVMDirectReturnString(b->data, b->size, 1, ret, code);
  }
  *ret = args[0];
  *code = codes[0];
  return 0;
}

/*! \brief Returns a new reference to its first argument (an object handle). */
int DirectRetain(void*, const TVMValue* args, const int* codes, int, TVMValue* ret, int* code) {
  if (TVMObjectRetain(args[0].v_handle) != 0) return -1;
  *ret = args[0];
  *code = codes[0];
  return 0;
}

/*! \brief Writes whatever the resource says: a (value, code) pair. */
struct Fixed {
  TVMValue value;
  int code;
};
int DirectFixed(void* resource, const TVMValue*, const int*, int, TVMValue* ret, int* code) {
  auto* f = static_cast<Fixed*>(resource);
  *ret = f->value;
  *code = f->code;
  return 0;
}

int DirectFailValue(void*, const TVMValue*, const int*, int, TVMValue*, int*) {
  TVMAPISetLastError("ValueError: direct callee refused 42");
  return -1;
}

int DirectFailRaised(void*, const TVMValue*, const int*, int, TVMValue*, int*) {
  TVMFFIErrorSetRaisedFromCStr("IndexError", "index 9 out of range");
  return -1;
}

int DirectEnvError(void*, const TVMValue*, const int*, int, TVMValue*, int*) { return -2; }

void CountFinalizer(void* resource) { static_cast<std::atomic<int>*>(resource)->fetch_add(1); }

TVMFunctionHandle MakeDirect(TVMDirectCFunc fn, void* resource = nullptr,
                             TVMPackedCFuncFinalizer fin = nullptr) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMFuncCreateDirect(fn, resource, fin, &f), 0) << LastError();
  EXPECT_NE(f, nullptr);
  return f;
}

/*! \brief A function handle freed at scope exit. */
struct Owned {
  TVMFunctionHandle h;
  ~Owned() { TVMFuncFree(h); }
  operator TVMFunctionHandle() const { return h; }  // NOLINT: reads like a handle
};

// ---- Plain results ----------------------------------------------------------------------------

TEST(DirectCall, NopReturnsNone) {
  Owned f{MakeDirect(DirectNop)};
  Ret r = Call(f);
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMNullptr);
  EXPECT_EQ(r.value.v_handle, nullptr);
}

TEST(DirectCall, IntResultLandsInTheCallersSlot) {
  Owned f{MakeDirect(DirectAdd)};
  Ret r = Call(f, {Int(1), Int(20), Int(300)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMArgInt);
  EXPECT_EQ(r.value.v_int64, 321);
}

// A call into a slot holding a stale float leaves None there: the slot is reset before the call.
void ExpectStaleSlotReset(TVMFunctionHandle f) {
  TVMValue v;
  v.v_int64 = 77;
  int code = kTVMArgFloat;
  ASSERT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &v, &code), 0) << LastError();
  EXPECT_EQ(code, kTVMNullptr);
  EXPECT_EQ(v.v_handle, nullptr);
}

TEST(DirectCall, StaleSlotIsResetBeforeTheCall) {
  Owned f{MakeDirect(DirectNop)};
  ExpectStaleSlotReset(f);
}

TEST(DirectCall, FloatBoolDeviceAndHandleComeBackUnchanged) {
  Owned f{MakeDirect(DirectEcho)};
  Ret fl = Call(f, {Float(2.5)});
  ASSERT_EQ(fl.rc, 0) << fl.error;
  EXPECT_EQ(fl.code, kTVMArgFloat);
  EXPECT_EQ(fl.value.v_float64, 2.5);
  Ret b = Call(f, {Bool(true)});
  ASSERT_EQ(b.rc, 0) << b.error;
  EXPECT_EQ(b.code, kTVMArgBool);
  EXPECT_EQ(b.value.v_int64, 1);
  Ret d = Call(f, {Device(kDLCPU, 3)});
  ASSERT_EQ(d.rc, 0) << d.error;
  EXPECT_EQ(d.code, kDLDevice);
  EXPECT_EQ(d.value.v_device.device_id, 3);
  int marker = 0;
  Ret h = Call(f, {Handle(&marker, kTVMOpaqueHandle)});
  ASSERT_EQ(h.rc, 0) << h.error;
  EXPECT_EQ(h.code, kTVMOpaqueHandle);
  EXPECT_EQ(h.value.v_handle, &marker);
}

TEST(DirectCall, UIntAndDataTypeReadAsAClassicCallReturnsThem) {
  Owned f{MakeDirect(DirectEcho)};
  Ret u = Call(f, {Int(7, kDLUInt)});
  ASSERT_EQ(u.rc, 0) << u.error;
  EXPECT_EQ(u.code, kTVMArgInt);
  EXPECT_EQ(u.value.v_int64, 7);
  Ret t = Call(f, {DType(kDLFloat, 32, 1)});
  ASSERT_EQ(t.rc, 0) << t.error;
  EXPECT_EQ(t.code, kTVMStr);
  EXPECT_EQ(t.str, "float32");
  // The same as a classic callee gives.
  TVMFunctionHandle classic = MakeEcho();
  Ret c = Call(classic, {DType(kDLFloat, 32, 1)});
  EXPECT_EQ(c.code, t.code);
  EXPECT_EQ(c.str, t.str);
  TVMFuncFree(classic);
}

// ---- Strings and bytes ------------------------------------------------------------------------

TEST(DirectCall, StringIsCopiedIntoReturnStorage) {
  Owned f{MakeDirect(DirectEcho)};
  std::string arg = "sixteen byte str";
  Ret r = Call(f, {Str(arg.c_str())});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMStr);
  EXPECT_EQ(r.str, arg);
}

TEST(DirectCall, BytesKeepEmbeddedNulAndLength) {
  Owned f{MakeDirect(DirectEcho)};
  const char data[] = {'a', '\0', 'b', '\0'};
  TVMByteArray b{data, sizeof(data)};
  Ret r = Call(f, {Bytes(&b)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMBytes);
  EXPECT_EQ(r.str, std::string(data, sizeof(data)));
}

TEST(DirectCall, StringFromTheCurrentReturnStorageEchoesIntact) {
  // The argument points into the storage the result replaces.
  Owned f{MakeDirect(DirectEcho)};
  TVMValue arg, ret;
  int code = kTVMStr, ret_code;
  arg.v_str = "a string long enough to live on the heap";
  ASSERT_EQ(TVMFuncCall(f, &arg, &code, 1, &ret, &ret_code), 0) << LastError();
  arg = ret;
  ASSERT_EQ(TVMFuncCall(f, &arg, &code, 1, &ret, &ret_code), 0) << LastError();
  ASSERT_EQ(ret_code, kTVMStr);
  EXPECT_STREQ(ret.v_str, "a string long enough to live on the heap");
}

TEST(DirectReturnString, OverlappingPartOfTheCurrentResultIsCopiedIntact) {
  TVMValue v;
  int code = kTVMNullptr;
  ASSERT_EQ(TVMDirectReturnString("0123456789abcdef", 16, 0, &v, &code), 0) << LastError();
  const char* first = v.v_str;
  // Its own tail, then its own head: source and destination overlap in the storage.
  ASSERT_EQ(TVMDirectReturnString(first + 6, 10, 0, &v, &code), 0) << LastError();
  EXPECT_STREQ(v.v_str, "6789abcdef");
  ASSERT_EQ(TVMDirectReturnString(v.v_str, 4, 0, &v, &code), 0) << LastError();
  EXPECT_EQ(code, kTVMStr);
  EXPECT_STREQ(v.v_str, "6789");
}

TEST(DirectReturnString, GrowsAndShrinksAcrossSizes) {
  // Below, at and over the storage's kept size (64 KiB), and back: every result reads back whole,
  // also when it is a part of the oversized result it replaces.
  std::string big(100 * 1024, 'x');
  big.back() = 'y';
  std::vector<std::string> inputs = {
      "a", std::string(63, 'b'), std::string(64, 'c'), std::string(5000, 'd'), big, "short again"};
  TVMValue v;
  int code = kTVMNullptr;
  for (const std::string& s : inputs) {
    ASSERT_EQ(TVMDirectReturnString(s.data(), s.size(), 0, &v, &code), 0) << LastError();
    ASSERT_EQ(code, kTVMStr);
    EXPECT_EQ(std::string(v.v_str), s);
  }
  ASSERT_EQ(TVMDirectReturnString(big.data(), big.size(), 0, &v, &code), 0) << LastError();
  ASSERT_EQ(TVMDirectReturnString(v.v_str + big.size() - 3, 3, 0, &v, &code), 0) << LastError();
  EXPECT_STREQ(v.v_str, "xxy");
}

TEST(DirectReturnString, StringAndBytesResultsAreKeptApart) {
  TVMValue s, b;
  int s_code = kTVMNullptr, b_code = kTVMNullptr;
  ASSERT_EQ(TVMDirectReturnString("the string", 10, 0, &s, &s_code), 0) << LastError();
  const char bytes[] = {'b', '\0', 'y'};
  ASSERT_EQ(TVMDirectReturnString(bytes, sizeof(bytes), 1, &b, &b_code), 0) << LastError();
  EXPECT_EQ(s_code, kTVMStr);
  EXPECT_STREQ(s.v_str, "the string");
  ASSERT_EQ(b_code, kTVMBytes);
  auto* arr = static_cast<TVMByteArray*>(b.v_handle);
  EXPECT_EQ(std::string(arr->data, arr->size), std::string(bytes, sizeof(bytes)));
}

TEST(DirectReturnString, ReplacesAClassicStringResult) {
  // A classic callee's string result (its buffer handed over to the return storage), then a
  // direct copy of it, then a classic one again: each reads back whole.
  TVMFunctionHandle classic = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ClassicEchoFirst, nullptr, nullptr, &classic), 0) << LastError();
  Owned owned{classic};
  std::string text = "a classic result long enough for the heap";
  TVMValue arg, ret;
  int arg_code = kTVMStr, ret_code;
  arg.v_str = text.c_str();
  ASSERT_EQ(TVMFuncCall(classic, &arg, &arg_code, 1, &ret, &ret_code), 0) << LastError();
  ASSERT_EQ(ret_code, kTVMStr);
  TVMValue v;
  int code = kTVMNullptr;
  ASSERT_EQ(TVMDirectReturnString(ret.v_str, std::strlen(ret.v_str), 0, &v, &code), 0)
      << LastError();
  EXPECT_EQ(std::string(v.v_str), text);
  arg = v;
  ASSERT_EQ(TVMFuncCall(classic, &arg, &arg_code, 1, &ret, &ret_code), 0) << LastError();
  ASSERT_EQ(ret_code, kTVMStr);
  EXPECT_EQ(std::string(ret.v_str), text);
}

TEST(DirectReturnString, RejectsNullPointers) {
  TVMValue v;
  int code = kTVMNullptr;
  EXPECT_TRUE(FailsWith(TVMDirectReturnString(nullptr, 3, 0, &v, &code), "ValueError"));
  EXPECT_EQ(code, kTVMNullptr);
  EXPECT_TRUE(FailsWith(TVMDirectReturnString("x", 1, 0, nullptr, &code), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMDirectReturnString("x", 1, 0, &v, nullptr), "ValueError"));
  ASSERT_EQ(TVMDirectReturnString(nullptr, 0, 1, &v, &code), 0) << LastError();
  EXPECT_EQ(code, kTVMBytes);
  EXPECT_EQ(static_cast<TVMByteArray*>(v.v_handle)->size, 0u);
}

// ---- Objects ----------------------------------------------------------------------------------

TEST(DirectCall, ReturnedObjectReferenceBelongsToTheCaller) {
  Owned f{MakeDirect(DirectRetain)};
  void* arr = MakeObject("runtime.Array", {Int(1), Int(2)});
  ASSERT_NE(arr, nullptr);
  ASSERT_EQ(UseCount(arr), 1);
  Ret r = Call(f, {Obj(arr)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.code, kTVMObjectHandle);
  EXPECT_EQ(r.value.v_handle, arr);
  EXPECT_EQ(UseCount(arr), 2);
  TVMObjectFree(r.value.v_handle);
  EXPECT_EQ(UseCount(arr), 1);
  TVMObjectFree(arr);
}

TEST(DirectCall, ReturnedFunctionIsCallable) {
  Owned f{MakeDirect(DirectRetain)};
  Owned add{MakeDirect(DirectAdd)};
  Ret r = Call(f, {Func(add)});
  ASSERT_EQ(r.rc, 0) << r.error;
  ASSERT_EQ(r.code, kTVMPackedFuncHandle);
  EXPECT_EQ(UseCount(add, kTVMPackedFuncHandle), 2);
  Ret sum = Call(r.value.v_handle, {Int(4), Int(5)});
  EXPECT_EQ(sum.value.v_int64, 9);
  TVMFuncFree(r.value.v_handle);
  EXPECT_EQ(UseCount(add, kTVMPackedFuncHandle), 1);
}

// ---- DLTensor views -----------------------------------------------------------------------------

/*! \brief DirectEcho's classic twin: hands its first argument to TVMCFuncSetReturn. */
int ClassicEchoFirst(TVMValue* args, int* codes, int, TVMRetValueHandle ret, void*) {
  return TVMCFuncSetReturn(ret, &args[0], &codes[0], 1);
}

TEST(DirectCall, DLTensorViewResultGoesOnAsFromAClassicCallee) {
  // A callee handing back the view it was given (a binding maps it back to the caller's own
  // array): the classic path keeps the view as a plain value, and so does the direct one.
  float data[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  DLTensor view{};
  view.data = data;
  view.ndim = 1;
  view.shape = shape;
  view.dtype = DLDataType{kDLFloat, 32, 1};
  TVMFunctionHandle classic_h = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ClassicEchoFirst, nullptr, nullptr, &classic_h), 0);
  Owned classic{classic_h};
  Owned direct{MakeDirect(DirectEcho)};
  for (TVMFunctionHandle f : {static_cast<TVMFunctionHandle>(classic), direct.h}) {
    TVMValue arg;
    arg.v_handle = &view;
    int arg_code = kTVMDLTensorHandle;
    TVMValue v;
    int code = -100;
    ASSERT_EQ(TVMFuncCall(f, &arg, &arg_code, 1, &v, &code), 0) << LastError();
    EXPECT_EQ(code, kTVMDLTensorHandle);
    EXPECT_EQ(v.v_handle, &view);
    // Through the pair as well: the slot holds what the callee wrote.
    TVMDirectCFunc fn = nullptr;
    void* resource = nullptr;
    ASSERT_EQ(TVMFuncGetDirect(f, &fn, &resource), 0);
    v.v_handle = nullptr;
    code = kTVMNullptr;
    ASSERT_EQ(fn(resource, &arg, &arg_code, 1, &v, &code), 0) << LastError();
    EXPECT_EQ(code, kTVMDLTensorHandle);
    EXPECT_EQ(v.v_handle, &view);
  }
}

// ---- Refused results --------------------------------------------------------------------------

TEST(DirectCall, RValueRefAndUnknownCodesAreRefused) {
  Fixed fixed{};
  fixed.value.v_handle = nullptr;
  fixed.code = kTVMObjectRValueRefArg;
  Owned f{MakeDirect(DirectFixed, &fixed)};
  Ret r = Call(f);
  EXPECT_TRUE(FailsWith(r.rc, "TypeError", "unsupported value"));
  fixed.code = 99;
  r = Call(f);
  EXPECT_TRUE(FailsWith(r.rc, "TypeError", "unknown type code 99"));
  fixed.code = -3;
  r = Call(f);
  EXPECT_TRUE(FailsWith(r.rc, "TypeError", "unknown type code -3"));
}

// ---- Errors from the callee -------------------------------------------------------------------

TEST(DirectCall, CalleeErrorKeepsItsKindAndText) {
  Owned f{MakeDirect(DirectFailValue)};
  Ret r = Call(f);
  EXPECT_TRUE(FailsWith(r.rc, "ValueError", "direct callee refused 42"));
}

TEST(DirectCall, RaisedErrorKeepsItsKind) {
  Owned f{MakeDirect(DirectFailRaised)};
  Ret r = Call(f);
  EXPECT_TRUE(FailsWith(r.rc, "IndexError", "index 9 out of range"));
}

TEST(DirectCall, MinusTwoPropagatesAsMinusTwo) {
  Owned f{MakeDirect(DirectEnvError)};
  TVMValue v;
  int code;
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &v, &code), -2);
}

// ---- Callees with classic results (TVM_DIRECT_CLASSIC_RESULTS) ----------------------------------

TVMFunctionHandle MakeClassicResults(TVMDirectCFunc fn) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMFuncCreateDirectEx(fn, nullptr, nullptr, TVM_DIRECT_CLASSIC_RESULTS, &f), 0)
      << LastError();
  return f;
}

TEST(DirectClassicResults, ResultsStatusAndErrorsAreThoseOfTheCheckedEntry) {
  // The unchecked entry hands on what the callee wrote; for a callee that keeps its promise that
  // is exactly what the checked entry gives.
  for (TVMDirectCFunc fn : {DirectNop, DirectAdd, DirectEcho, DirectFailValue, DirectFailRaised}) {
    Owned checked{MakeDirect(fn)};
    Owned classic{MakeClassicResults(fn)};
    std::vector<Arg> args = {Int(1), Int(20), Int(300)};
    if (fn == DirectEcho) args = {Str("sixteen bytes!!!")};
    Ret a = CallV(checked, args);
    Ret b = CallV(classic, args);
    EXPECT_EQ(a.rc, b.rc);
    EXPECT_EQ(a.code, b.code);
    EXPECT_EQ(a.error, b.error);
    if (a.code == kTVMArgInt) {
      EXPECT_EQ(a.value.v_int64, b.value.v_int64);
    }
    EXPECT_EQ(a.str, b.str);
  }
  Owned env{MakeClassicResults(DirectEnvError)};
  TVMValue v;
  int code;
  EXPECT_EQ(TVMFuncCall(env, nullptr, nullptr, 0, &v, &code), -2);
}

TEST(DirectClassicResults, StaleSlotIsResetAndThePairIsTheCallees) {
  Owned f{MakeClassicResults(DirectNop)};
  ExpectStaleSlotReset(f);
  TVMValue v;
  TVMDirectCFunc fn = nullptr;
  void* resource = &v;
  ASSERT_EQ(TVMFuncGetDirect(f, &fn, &resource), 0) << LastError();
  EXPECT_EQ(fn, &DirectNop);
  EXPECT_EQ(resource, nullptr);
}

TEST(DirectClassicResults, UnknownFlagsAreAValueErrorAndFinalize) {
  std::atomic<int> finalized{0};
  TVMFunctionHandle out = nullptr;
  EXPECT_TRUE(FailsWith(TVMFuncCreateDirectEx(DirectNop, &finalized, CountFinalizer, 6, &out),
                        "ValueError", "unknown flags"));
  EXPECT_EQ(finalized, 1);
  EXPECT_EQ(out, nullptr);
}

// ---- Creation, finalizer, bad handles ---------------------------------------------------------

TEST(FuncCreateDirect, FinalizerRunsOnceWhenLastReferenceIsFreed) {
  std::atomic<int> finalized{0};
  TVMFunctionHandle f = MakeDirect(DirectNop, &finalized, CountFinalizer);
  ASSERT_EQ(TVMObjectRetain(f), 0);
  EXPECT_EQ(TVMFuncFree(f), 0);
  EXPECT_EQ(finalized, 0);
  EXPECT_EQ(TVMFuncFree(f), 0);
  EXPECT_EQ(finalized, 1);
}

TEST(FuncCreateDirect, FinalizerRunsWhenCreationFails) {
  std::atomic<int> finalized{0};
  TVMFunctionHandle out = nullptr;
  EXPECT_TRUE(FailsWith(TVMFuncCreateDirect(nullptr, &finalized, CountFinalizer, &out),
                        "ValueError", "func is NULL"));
  EXPECT_EQ(finalized, 1);
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(FailsWith(TVMFuncCreateDirect(DirectNop, &finalized, CountFinalizer, nullptr),
                        "ValueError", "out is NULL"));
  EXPECT_EQ(finalized, 2);
}

TEST(FuncCreateDirect, FinalizerRunsWhenTheCallFailsToo) {
  // A failing call does not finalize; the last free does, once.
  std::atomic<int> finalized{0};
  TVMFunctionHandle f = MakeDirect(DirectFailValue, &finalized, CountFinalizer);
  EXPECT_TRUE(FailsWith(Call(f).rc, "ValueError"));
  EXPECT_EQ(finalized, 0);
  TVMFuncFree(f);
  EXPECT_EQ(finalized, 1);
}

TEST(DirectCall, NullAndWrongHandlesAreTypedErrors) {
  TVMValue v;
  int code;
  EXPECT_TRUE(FailsWith(TVMFuncCall(nullptr, nullptr, nullptr, 0, &v, &code), "ValueError"));
  void* arr = MakeObject("runtime.Array", {});
  ASSERT_NE(arr, nullptr);
  EXPECT_TRUE(FailsWith(TVMFuncCall(arr, nullptr, nullptr, 0, &v, &code), "ValueError", "not a"));
  TVMObjectFree(arr);
  Owned f{MakeDirect(DirectAdd)};
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, nullptr, nullptr, 2, &v, &code), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, nullptr, nullptr, -1, &v, &code), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncCall(f, nullptr, nullptr, 0, nullptr, &code), "ValueError"));
}

TEST(DirectCall, FreeingNullIsANoOp) { EXPECT_EQ(TVMFuncFree(nullptr), 0); }

TEST(DirectCall, HandleFreedByItsCreatorLivesOnInTheRegistry) {
  // Using a handle after its last reference is gone is undefined, as for every handle; a
  // reference the registry took keeps it alive and callable, finalized once at removal.
  std::atomic<int> finalized{0};
  TVMFunctionHandle f = MakeDirect(DirectAdd, &finalized, CountFinalizer);
  ASSERT_EQ(TVMFuncRegisterGlobal("direct_test.kept", f, 0), 0) << LastError();
  TVMFuncFree(f);
  EXPECT_EQ(finalized, 0);
  {
    Global g("direct_test.kept");
    Ret r = Call(g, {Int(40), Int(2)});
    ASSERT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.value.v_int64, 42);
  }
  EXPECT_EQ(TVMFuncRemoveGlobal("direct_test.kept"), 0);
  EXPECT_EQ(finalized, 1);
}

// ---- The runtime's own path -------------------------------------------------------------------

TEST(DirectRuntimePath, RegistryHandsOutTheSameFunction) {
  Owned f{MakeDirect(DirectAdd)};
  ASSERT_EQ(TVMFuncRegisterGlobal("direct_test.add", f, 0), 0) << LastError();
  {
    Global g("direct_test.add");
    Ret r = Call(g, {Int(2), Int(3)});
    ASSERT_EQ(r.rc, 0) << r.error;
    EXPECT_EQ(r.value.v_int64, 5);
  }
  EXPECT_EQ(TVMFuncRemoveGlobal("direct_test.add"), 0);
}

/*! \brief One async completion, copied out on the worker thread. */
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int status = 99, code = -1;
  int64_t i = 0;
  std::string text;
  void* handle = nullptr;
  static void OnDone(int status, TVMValue* v, int code, void* self) {
    auto* o = static_cast<Outcome*>(self);
    std::lock_guard<std::mutex> lock(o->mu);
    o->status = status;
    o->code = code;
    if (status != kTVMAsyncReturned) {
      o->text = TVMGetLastError();
    } else if (code == kTVMStr) {
      o->text = v->v_str;
    } else if (code == kTVMBytes) {
      auto* b = static_cast<TVMByteArray*>(v->v_handle);
      o->text.assign(b->data, b->size);
    } else if (code == kTVMObjectHandle) {
      o->handle = v->v_handle;  // owned: the test frees it
    } else {
      o->i = v->v_int64;
    }
    o->done = true;
    o->cv.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }));
  }
};

Outcome& Submit(TVMFunctionHandle f, std::initializer_list<Arg> args, Outcome* o) {
  std::vector<TVMValue> values;
  std::vector<int> codes;
  for (const Arg& a : args) values.push_back(a.value), codes.push_back(a.code);
  EXPECT_EQ(TVMAsyncSubmit(f, values.data(), codes.data(), static_cast<int>(values.size()),
                           Outcome::OnDone, o, nullptr),
            0)
      << LastError();
  o->Wait();
  return *o;
}

TEST(DirectRuntimePath, AsyncPoolAdaptsIntsStringsAndObjects) {
  // The pool calls through the runtime's internal entry with its own return slot.
  Owned add{MakeDirect(DirectAdd)};
  Outcome a;
  Submit(add, {Int(10), Int(32)}, &a);
  EXPECT_EQ(a.status, kTVMAsyncReturned);
  EXPECT_EQ(a.code, kTVMArgInt);
  EXPECT_EQ(a.i, 42);

  Owned echo{MakeDirect(DirectEcho)};
  Outcome s;
  Submit(echo, {Str("through the pool, copied")}, &s);
  EXPECT_EQ(s.status, kTVMAsyncReturned);
  EXPECT_EQ(s.code, kTVMStr);
  EXPECT_EQ(s.text, "through the pool, copied");

  Owned retain{MakeDirect(DirectRetain)};
  void* arr = MakeObject("runtime.Array", {Int(1)});
  ASSERT_NE(arr, nullptr);
  Outcome o;
  Submit(retain, {Obj(arr)}, &o);
  EXPECT_EQ(o.status, kTVMAsyncReturned);
  EXPECT_EQ(o.handle, arr);
  EXPECT_EQ(UseCount(arr), 2);
  TVMObjectFree(o.handle);
  EXPECT_EQ(UseCount(arr), 1);
  TVMObjectFree(arr);
}

TEST(DirectRuntimePath, AsyncPoolReportsCalleeErrorsAndRefusals) {
  Owned fail{MakeDirect(DirectFailRaised)};
  Outcome e;
  Submit(fail, {}, &e);
  EXPECT_EQ(e.status, kTVMAsyncFailed);
  EXPECT_EQ(e.text.rfind("IndexError: index 9 out of range", 0), 0u) << e.text;

  Fixed fixed{};
  fixed.value.v_handle = nullptr;
  fixed.code = kTVMObjectRValueRefArg;
  Owned bad{MakeDirect(DirectFixed, &fixed)};
  Outcome r;
  Submit(bad, {}, &r);
  EXPECT_EQ(r.status, kTVMAsyncFailed);
  EXPECT_EQ(r.text.rfind("TypeError: callback returned an unsupported value", 0), 0u) << r.text;

  // A view is a plain result on the runtime's own path too, as a classic callee's view is.
  DLTensor view{};
  fixed.value.v_handle = &view;
  fixed.code = kTVMDLTensorHandle;
  Owned viewer{MakeDirect(DirectFixed, &fixed)};
  Outcome v;
  Submit(viewer, {}, &v);
  EXPECT_EQ(v.status, kTVMAsyncReturned) << v.text;
  EXPECT_EQ(v.code, kTVMDLTensorHandle);
  EXPECT_EQ(reinterpret_cast<void*>(v.i), static_cast<void*>(&view));
}

// ---- TVMFuncGetDirect -------------------------------------------------------------------------

TEST(FuncGetDirect, DirectFunctionGivesItsOwnPair) {
  int resource = 0;
  Owned f{MakeDirect(DirectAdd, &resource)};
  TVMDirectCFunc fn = nullptr;
  void* res = nullptr;
  ASSERT_EQ(TVMFuncGetDirect(f, &fn, &res), 0) << LastError();
  EXPECT_EQ(fn, &DirectAdd);
  EXPECT_EQ(res, &resource);
}

TEST(FuncGetDirect, ClassicFunctionGetsAnAdapter) {
  TVMFunctionHandle classic = MakeFunction([](TVMValue* args, int*, int, TVMRetValueHandle ret) {
    return ReturnInt(ret, args[0].v_int64 * 3);
  });
  TVMDirectCFunc fn = nullptr;
  void* res = nullptr;
  ASSERT_EQ(TVMFuncGetDirect(classic, &fn, &res), 0) << LastError();
  ASSERT_NE(fn, nullptr);
  TVMValue arg, ret;
  arg.v_int64 = 14;
  int code = kTVMArgInt, ret_code = kTVMNullptr;
  ret.v_handle = nullptr;
  ASSERT_EQ(fn(res, &arg, &code, 1, &ret, &ret_code), 0) << LastError();
  EXPECT_EQ(ret_code, kTVMArgInt);
  EXPECT_EQ(ret.v_int64, 42);
  TVMFuncFree(classic);
}

TEST(FuncGetDirect, AdapterReturnsStringsAndErrorsAsTVMFuncCall) {
  TVMFunctionHandle echo = MakeEcho();
  TVMFunctionHandle failing = MakeFailing("KeyError: no such key 'k'");
  TVMDirectCFunc fn = nullptr;
  void* res = nullptr;
  ASSERT_EQ(TVMFuncGetDirect(echo, &fn, &res), 0) << LastError();
  TVMValue arg, ret;
  arg.v_str = "adapted string value";
  int code = kTVMStr, ret_code = kTVMNullptr;
  ret.v_handle = nullptr;
  ASSERT_EQ(fn(res, &arg, &code, 1, &ret, &ret_code), 0) << LastError();
  ASSERT_EQ(ret_code, kTVMStr);
  EXPECT_STREQ(ret.v_str, "adapted string value");

  ASSERT_EQ(TVMFuncGetDirect(failing, &fn, &res), 0) << LastError();
  ret_code = kTVMNullptr;
  ret.v_handle = nullptr;
  EXPECT_TRUE(FailsWith(fn(res, nullptr, nullptr, 0, &ret, &ret_code), "KeyError", "'k'"));
  TVMFuncFree(echo);
  TVMFuncFree(failing);
}

TEST(FuncGetDirect, BadHandleOrOutPointerIsAValueError) {
  TVMDirectCFunc fn = &DirectNop;
  void* res = &fn;
  EXPECT_TRUE(FailsWith(TVMFuncGetDirect(nullptr, &fn, &res), "ValueError"));
  EXPECT_EQ(fn, &DirectNop) << "out pointers unchanged on failure";
  EXPECT_EQ(res, &fn);
  void* arr = MakeObject("runtime.Array", {});
  ASSERT_NE(arr, nullptr);
  EXPECT_TRUE(FailsWith(TVMFuncGetDirect(arr, &fn, &res), "ValueError", "not a"));
  TVMObjectFree(arr);
  Owned f{MakeDirect(DirectNop)};
  EXPECT_TRUE(FailsWith(TVMFuncGetDirect(f, nullptr, &res), "ValueError"));
  EXPECT_TRUE(FailsWith(TVMFuncGetDirect(f, &fn, nullptr), "ValueError"));
}

}  // namespace
}  // namespace abitests
