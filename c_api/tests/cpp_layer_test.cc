// The header-only C++ layer (polyffi.hpp) over the C ABI: what a call returns (polyffi::Any owns
// strings and objects, plain values are just a value and a code), copies and moves of it, and
// the typed trampoline's argument checks and error kinds. Functions are made here with
// MakeTyped, so nothing but libpolyffi is loaded.
//
// Functions made by the header are direct functions (polyffi/c_direct_api.h): their trampoline
// writes the caller's slot. Each kind of result is checked both through polyffi::Function (which
// calls the direct entry inline) and through plain TVMFuncCall.
#include <gtest/gtest.h>

#include <memory>
#include <polyffi/polyffi.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace {

using polyffi::Any;
using polyffi::Error;
using polyffi::Function;
using polyffi::MakeTyped;
using polyffi::PackedArgs;
using polyffi::RetValue;

constexpr const char* kLong = "0123456789abcdef";  // over libstdc++'s small-string buffer

template <typename F>
Error CatchError(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no polyffi::Error thrown";
  return Error("", "");
}

TEST(CppLayer, PlainResultsKeepValueAndCode) {
  Function add = MakeTyped([](int64_t a, int64_t b) { return a + b; }, "add");
  Any r = add(2, 40);
  EXPECT_EQ(r.type_code(), kTVMArgInt);
  EXPECT_EQ(r.as_int(), 42);
  EXPECT_DOUBLE_EQ(r.as_float(), 42.0);
  EXPECT_TRUE(r.as_bool());
  Function half = MakeTyped([](double x) { return x / 2; }, "half");
  EXPECT_DOUBLE_EQ(half(3.0).as_float(), 1.5);
  Function none = MakeTyped([] {}, "none");
  EXPECT_TRUE(none().is_none());
  EXPECT_TRUE(Any().is_none());
}

TEST(CppLayer, StringResultIsAnOwnedCopy) {
  Function twice = MakeTyped([](std::string s) { return s + s; }, "twice");
  Any r = twice(kLong);
  ASSERT_EQ(r.type_code(), kTVMStr);
  // The next call reuses the runtime's return slot; the first result must not change.
  Any other = twice("x");
  EXPECT_EQ(r.as_str(), std::string(kLong) + kLong);
  EXPECT_EQ(other.as_str(), "xx");
}

TEST(CppLayer, CopyMoveAndAssignAcrossKinds) {
  Function twice = MakeTyped([](std::string s) { return s + s; }, "twice");
  Function add = MakeTyped([](int64_t a, int64_t b) { return a + b; }, "add");
  Any s = twice(kLong);
  Any copy = s;
  Any moved = std::move(s);
  EXPECT_TRUE(s.is_none());  // NOLINT(bugprone-use-after-move): moved-from is None by contract
  EXPECT_EQ(copy.as_str(), moved.as_str());
  copy = add(1, 2);  // a string replaced by a plain value
  EXPECT_EQ(copy.as_int(), 3);
  copy = moved;  // and back
  EXPECT_EQ(copy.as_str(), std::string(kLong) + kLong);
  const Any& alias = copy;
  copy = alias;  // self-assignment keeps the value
  EXPECT_EQ(copy.as_str(), std::string(kLong) + kLong);
  copy = std::move(copy);  // NOLINT: self-move keeps it too
  EXPECT_EQ(copy.type_code(), kTVMStr);
}

TEST(CppLayer, ObjectResultsAreReferenceCounted) {
  auto token = std::make_shared<int>(7);
  Function make = MakeTyped(
      [token] { return MakeTyped([token](int64_t x) { return x * *token; }, "times"); }, "make");
  long before = token.use_count();
  {
    Any f = make();
    ASSERT_EQ(f.type_code(), kTVMPackedFuncHandle);
    EXPECT_EQ(token.use_count(), before + 1);  // the returned closure holds one copy
    Any copy = f;
    Any moved = std::move(f);
    EXPECT_EQ(token.use_count(), before + 1);  // copies share the object, not the closure
    Function g = Function::Borrow(copy.as_object().get());
    EXPECT_EQ(g(6).as_int(), 42);
    moved = Any();  // dropping one reference keeps the object alive
    EXPECT_EQ(g(2).as_int(), 14);
  }
  EXPECT_EQ(token.use_count(), before);  // every reference released
}

TEST(CppLayer, WrongKindOfResultIsATypeError) {
  Function add = MakeTyped([](int64_t a, int64_t b) { return a + b; }, "add");
  Function twice = MakeTyped([](std::string s) { return s + s; }, "twice");
  Error e = CatchError([&] { add(1, 2).as_str(); });
  EXPECT_EQ(e.kind(), "TypeError");
  EXPECT_EQ(e.message(), "expected str but got int");
  e = CatchError([&] { twice("a").as_int(); });
  EXPECT_EQ(e.kind(), "TypeError");
  EXPECT_EQ(e.message(), "expected int but got str");
  EXPECT_EQ(CatchError([&] { twice("a").as_object(); }).kind(), "TypeError");
}

TEST(CppLayer, TypedArgumentErrorsNameSignatureAndIndex) {
  Function add = MakeTyped([](int64_t a, int64_t b) { return a + b; }, "add");
  Error e = CatchError([&] { add(1); });
  EXPECT_EQ(e.kind(), "TypeError");
  EXPECT_NE(e.message().find("add(0: int, 1: int) -> int: expected 2 arguments but got 1"),
            std::string::npos)
      << e.message();
  e = CatchError([&] { add(1, "x"); });
  EXPECT_EQ(e.kind(), "TypeError");
  EXPECT_NE(e.message().find("argument 1 expected int but got str"), std::string::npos)
      << e.message();
}

// The typed entry tests the usual codes inline and sends the others (uint and bool for an int
// parameter) through the generic checks: both ways give the same results.
TEST(CppLayer, TypedIntParametersTakeIntUintAndBool) {
  Function add = MakeTyped([](int64_t a, int64_t b) { return a * 10 + b; }, "add");
  TVMValue args[2];
  int codes[2];
  TVMValue rv;
  int rc = -1;
  const int kinds[] = {kTVMArgInt, kDLUInt, kTVMArgBool};
  for (int ca : kinds) {
    for (int cb : kinds) {
      args[0].v_int64 = 1;
      args[1].v_int64 = ca == kTVMArgBool || cb == kTVMArgBool ? 1 : 7;
      codes[0] = ca;
      codes[1] = cb;
      rv.v_int64 = 0;
      ASSERT_EQ(TVMFuncCall(add.get(), args, codes, 2, &rv, &rc), 0) << TVMGetLastError();
      EXPECT_EQ(rc, kTVMArgInt);
      EXPECT_EQ(rv.v_int64, 10 + args[1].v_int64) << ca << " " << cb;
    }
  }
  // A float for an int parameter still fails on the generic path, with its index.
  codes[0] = kTVMArgInt;
  codes[1] = kTVMArgFloat;
  args[1].v_float64 = 2.5;
  rc = -1;
  EXPECT_EQ(TVMFuncCall(add.get(), args, codes, 2, &rv, &rc), -1);
  EXPECT_EQ(rc, kTVMNullptr);
  EXPECT_NE(std::string(TVMGetLastError()).find("argument 1 expected int but got float"),
            std::string::npos)
      << TVMGetLastError();
}

TEST(CppLayer, CalleeErrorKeepsItsKind) {
  Function fail = MakeTyped(
      [](int64_t x) -> int64_t { throw Error("ValueError", "bad x " + std::to_string(x)); },
      "fail");
  Error e = CatchError([&] { fail(3); });
  EXPECT_EQ(e.kind(), "ValueError");
  EXPECT_NE(e.message().find("bad x 3"), std::string::npos) << e.message();
  // The layer stays usable after an error.
  Function add = MakeTyped([](int64_t a, int64_t b) { return a + b; }, "add");
  EXPECT_EQ(add(1, 1).as_int(), 2);
}

/*! \brief A result as plain TVMFuncCall returns it; object references are released after check. */
struct CResult {
  int rc;
  TVMValue value;
  int code;
};
CResult CallC(const Function& f, TVMValue* args, int* codes, int n) {
  CResult r{0, {}, -1};
  r.value.v_int64 = 0x5a5a;  // TVMFuncCall must pre-set the slot itself
  r.rc = TVMFuncCall(f.get(), args, codes, n, &r.value, &r.code);
  return r;
}

TEST(CppLayerDirect, MadeFunctionsAreDirect) {
  Function add = MakeTyped([](int64_t a, int64_t b) { return a + b; }, "add");
  TVMDirectCFunc fn = nullptr;
  void* resource = nullptr;
  ASSERT_EQ(TVMFuncGetDirect(add.get(), &fn, &resource), 0) << TVMGetLastError();
  ASSERT_NE(fn, nullptr);
  TVMValue args[2], rv;
  int codes[2] = {kTVMArgInt, kTVMArgInt}, rc = kTVMNullptr;
  args[0].v_int64 = 40;
  args[1].v_int64 = 2;
  rv.v_handle = nullptr;
  ASSERT_EQ(fn(resource, args, codes, 2, &rv, &rc), 0);
  EXPECT_EQ(rc, kTVMArgInt);
  EXPECT_EQ(rv.v_int64, 42);
}

TEST(CppLayerDirect, PlainResultsOfEveryKindThroughBothEntries) {
  Function i = MakeTyped([](int64_t x) { return x * 3; }, "i");
  Function b = MakeTyped([](int64_t x) { return x > 0; }, "b");
  Function d = MakeTyped([](double x) { return x / 4; }, "d");
  Function none = MakeTyped([](int64_t) {}, "none");
  Function dev = MakeTyped([](int64_t x) { return DLDevice{kDLCPU, static_cast<int>(x)}; }, "dev");
  Function dt = MakeTyped(
      [](int64_t x) {
        return DLDataType{kDLFloat, static_cast<uint8_t>(x), 1};
      },
      "dt");
  EXPECT_EQ(i(-5).as_int(), -15);
  EXPECT_EQ(b(2).type_code(), kTVMArgBool);
  EXPECT_TRUE(b(2).as_bool());
  EXPECT_FALSE(b(-2).as_bool());
  EXPECT_DOUBLE_EQ(d(3.0).as_float(), 0.75);
  EXPECT_TRUE(none(1).is_none());
  EXPECT_EQ(dev(3).type_code(), kDLDevice);
  EXPECT_EQ(dev(3).raw().v_device.device_id, 3);
  // A dtype result reads as TVMFuncCall returns it: its string.
  EXPECT_EQ(dt(16).type_code(), kTVMStr);
  EXPECT_EQ(dt(16).as_str(), "float16");

  TVMValue arg;
  int code = kTVMArgInt;
  arg.v_int64 = 7;
  CResult r = CallC(i, &arg, &code, 1);
  ASSERT_EQ(r.rc, 0) << TVMGetLastError();
  EXPECT_EQ(r.code, kTVMArgInt);
  EXPECT_EQ(r.value.v_int64, 21);
  r = CallC(none, &arg, &code, 1);
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(r.code, kTVMNullptr);
  EXPECT_EQ(r.value.v_handle, nullptr);
  r = CallC(dev, &arg, &code, 1);
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(r.code, kDLDevice);
  EXPECT_EQ(r.value.v_device.device_type, kDLCPU);
  EXPECT_EQ(r.value.v_device.device_id, 7);
}

TEST(CppLayerDirect, StringAndBytesResults) {
  Function twice = MakeTyped([](std::string s) { return s + s; }, "twice");
  Function rev = MakeTyped(
      [](polyffi::Bytes b) {
        std::string r(b.data.rbegin(), b.data.rend());
        return polyffi::Bytes{r};
      },
      "rev");
  Function with_nul = MakeTyped([](int64_t) { return std::string("a\0b", 3); }, "with_nul");
  EXPECT_EQ(twice(kLong).as_str(), std::string(kLong) + kLong);
  TVMByteArray in{"a\0bc", 4};
  Any r = rev(&in);
  EXPECT_EQ(r.type_code(), kTVMBytes);
  EXPECT_EQ(r.as_str(), std::string("cb\0a", 4));
  // A string with an embedded NUL travels as a runtime.String object (one reference).
  Any obj = with_nul(1);
  EXPECT_EQ(obj.type_code(), kTVMObjectHandle);
  EXPECT_EQ(obj.as_object().type_key(), "runtime.String");

  TVMValue arg;
  int code = kTVMStr;
  arg.v_str = "xy";
  CResult c = CallC(twice, &arg, &code, 1);
  ASSERT_EQ(c.rc, 0) << TVMGetLastError();
  ASSERT_EQ(c.code, kTVMStr);
  EXPECT_STREQ(c.value.v_str, "xyxy");
  arg.v_handle = &in;
  code = kTVMBytes;
  c = CallC(rev, &arg, &code, 1);
  ASSERT_EQ(c.rc, 0) << TVMGetLastError();
  ASSERT_EQ(c.code, kTVMBytes);
  auto* out = static_cast<TVMByteArray*>(c.value.v_handle);
  EXPECT_EQ(std::string(out->data, out->size), std::string("cb\0a", 4));
}

TEST(CppLayerDirect, ObjectResultsCarryOneReference) {
  auto token = std::make_shared<int>(5);
  Function make = MakeTyped(
      [token] { return MakeTyped([token](int64_t x) { return x + *token; }, "plus"); }, "make");
  long before = token.use_count();
  {
    CResult c = CallC(make, nullptr, nullptr, 0);
    ASSERT_EQ(c.rc, 0) << TVMGetLastError();
    ASSERT_EQ(c.code, kTVMPackedFuncHandle);
    EXPECT_EQ(token.use_count(), before + 1);
    Function g = Function::Adopt(c.value.v_handle);  // the caller's one reference
    EXPECT_EQ(g(1).as_int(), 6);
  }
  EXPECT_EQ(token.use_count(), before);
  // An ObjectRef result, passed through: the caller gets its own reference.
  Function id = MakeTyped([](polyffi::ObjectRef o) { return o; }, "id");
  Function inner = MakeTyped([token] { return *token; }, "inner");
  {
    Any r = id(static_cast<const polyffi::ObjectRef&>(inner));
    ASSERT_TRUE(Any::IsObjectCode(r.type_code()));
    EXPECT_EQ(r.as_object().get(), inner.get());
    EXPECT_EQ(token.use_count(), before + 1);  // inner's closure only: references, not copies
  }
  EXPECT_EQ(Function::Borrow(inner.get())().as_int(), 5);
}

TEST(CppLayerDirect, SettingAgainReleasesTheOldValue) {
  auto token = std::make_shared<int>(1);
  Function holder = MakeTyped([token] { return *token; }, "holder");
  long before = token.use_count();
  Function body = polyffi::MakePacked([holder](PackedArgs args, RetValue* rv) {
    rv->Set(holder);                                                       // an object first ...
    rv->Set(args.size == 0 ? std::string("replaced") : std::string("x"));  // ... then a string
  });
  for (int k = 0; k < 3; ++k) {
    Any r = body();
    EXPECT_EQ(r.as_str(), "replaced");
  }
  // An object replaced by a plain value, then by another object, then by a plain value again.
  Function plain_last = polyffi::MakePacked([holder](PackedArgs, RetValue* rv) {
    rv->Set(holder);
    rv->Set(int64_t{7});
    rv->Set(holder);
    rv->Set(int64_t{8});
  });
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(plain_last().as_int(), 8);
    TVMValue v;
    int code = -1;
    ASSERT_EQ(TVMFuncCall(plain_last.get(), nullptr, nullptr, 0, &v, &code), 0);
    EXPECT_EQ(code, kTVMArgInt);
    EXPECT_EQ(v.v_int64, 8);
  }
  body = Function();
  plain_last = Function();
  EXPECT_EQ(token.use_count(), before);
}

TEST(CppLayerDirect, ErrorsReachTheCallerWithTheirKindAndLeaveNoReference) {
  auto token = std::make_shared<int>(1);
  Function holder = MakeTyped([token] { return *token; }, "holder");
  long before = token.use_count();
  Function fails_after_set = polyffi::MakePacked([holder](PackedArgs, RetValue* rv) {
    rv->Set(holder);                            // a reference in the caller's slot ...
    throw Error("IndexError", "late failure");  // ... must be released on the way out
  });
  Error e = CatchError([&] { fails_after_set(); });
  EXPECT_EQ(e.kind(), "IndexError");
  EXPECT_NE(e.message().find("late failure"), std::string::npos) << e.message();
  CResult c = CallC(fails_after_set, nullptr, nullptr, 0);
  EXPECT_EQ(c.rc, -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("IndexError: late failure"), std::string::npos)
      << TVMGetLastError();
  // Had a failure left holder's reference in the slot, its closure (and the token copy in it)
  // would outlive every Function that refers to it.
  EXPECT_EQ(token.use_count(), before);
  fails_after_set = Function();
  holder = Function();
  EXPECT_EQ(token.use_count(), before - 1);

  Function std_error = MakeTyped([](int64_t) -> int64_t { throw std::out_of_range("oops"); }, "s");
  e = CatchError([&] { std_error(1); });
  EXPECT_EQ(e.kind(), "RuntimeError");
  EXPECT_EQ(e.message(), "oops");
  Function pending = MakeTyped([]() -> int64_t { throw polyffi::HostErrorPending(); }, "p");
  EXPECT_EQ(CallC(pending, nullptr, nullptr, 0).rc, -2);
  EXPECT_THROW(pending(), polyffi::HostErrorPending);
}

TEST(CppLayerDirect, BadResultsAreTypedErrors) {
  Function unknown = polyffi::MakePacked([](PackedArgs, RetValue* rv) {
    TVMValue v;
    v.v_int64 = 1;
    rv->SetRaw(v, 99);
  });
  Error e = CatchError([&] { unknown(); });
  EXPECT_EQ(e.kind(), "TypeError");
  EXPECT_NE(e.message().find("unknown type code 99"), std::string::npos) << e.message();
  Function null_str = polyffi::MakePacked([](PackedArgs, RetValue* rv) {
    TVMValue v;
    v.v_str = nullptr;
    rv->SetRaw(v, kTVMStr);
  });
  EXPECT_EQ(CatchError([&] { null_str(); }).kind(), "ValueError");
}

TEST(CppLayerDirect, FinalizerRunsOnceWhenTheLastReferenceGoes) {
  auto token = std::make_shared<int>(0);
  long before = token.use_count();
  {
    Function f = MakeTyped([token](int64_t x) { return x; }, "f");
    EXPECT_EQ(token.use_count(), before + 1);
    Function copy = f;
    f = Function();
    EXPECT_EQ(copy(9).as_int(), 9);  // the cached direct entry stays valid with the copy
    EXPECT_EQ(token.use_count(), before + 1);
  }
  EXPECT_EQ(token.use_count(), before);
}

TEST(CppLayerDirect, MovedFromFunctionIsEmptyNotADanglingEntry) {
  auto token = std::make_shared<int>(0);
  Function f = MakeTyped([token](int64_t x) { return x + 1; }, "f");
  Function g = std::move(f);
  EXPECT_EQ(g(1).as_int(), 2);
  g = Function();  // the last reference: the closure (and its entry) is gone
  EXPECT_EQ(token.use_count(), 1);
  // f gave its reference and its cached entry away: calling it is TVMFuncCall's typed error,
  // never a call into the freed closure.
  EXPECT_FALSE(f);
  EXPECT_EQ(CatchError([&] { f(1); }).kind(), "ValueError");  // NOLINT(bugprone-use-after-move)
  Function h = MakeTyped([token](int64_t x) { return x * 2; }, "h");
  Function k;
  k = std::move(h);
  EXPECT_EQ(k(4).as_int(), 8);
  EXPECT_EQ(CatchError([&] { h.CallView(1); }).kind(), "ValueError");  // NOLINT
}

int ClassicTwice(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: ClassicTwice wants one int");
    return -1;
  }
  TVMValue v;
  int code = kTVMArgInt;
  v.v_int64 = args[0].v_int64 * 2;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

TEST(CppLayerDirect, ClassicCallbacksAndBadHandles) {
  TVMFunctionHandle h = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ClassicTwice, nullptr, nullptr, &h), 0);
  Function classic = Function::Adopt(h);
  EXPECT_EQ(classic(21).as_int(), 42);
  EXPECT_EQ(CatchError([&] { classic("x"); }).kind(), "TypeError");
  // A Function on something that is not a function reports a typed error at call time.
  Function empty;
  EXPECT_FALSE(CatchError([&] { empty(); }).kind().empty());
}

int ClassicEchoFirst(TVMValue* args, int* codes, int, TVMRetValueHandle ret, void*) {
  return TVMCFuncSetReturn(ret, &args[0], &codes[0], 1);
}

TEST(CppLayerDirect, ViewResultGoesOnAsFromAClassicCallee) {
  // A body handing back the DLTensor view it was given: a classic callee's view reaches the
  // caller as the same view (bindings map it back to the caller's array); so does this one's.
  float data[2] = {1, 2};
  int64_t shape[1] = {2};
  DLTensor view{};
  view.data = data;
  view.ndim = 1;
  view.shape = shape;
  view.dtype = DLDataType{kDLFloat, 32, 1};
  Function direct = polyffi::MakePacked([](PackedArgs args, RetValue* rv) { rv->Set(args[0]); });
  TVMFunctionHandle h = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ClassicEchoFirst, nullptr, nullptr, &h), 0);
  Function classic = Function::Adopt(h);
  for (const Function* f : {&classic, &direct}) {
    Any a = (*f)(&view);
    EXPECT_EQ(a.type_code(), kTVMDLTensorHandle);
    EXPECT_EQ(a.raw().v_handle, &view);
    polyffi::AnyView v = f->CallView(&view);
    EXPECT_EQ(v.type_code(), kTVMDLTensorHandle);
    EXPECT_EQ(v.raw().v_handle, &view);
    TVMValue arg;
    int code = kTVMDLTensorHandle;
    arg.v_handle = &view;
    CResult c = CallC(*f, &arg, &code, 1);
    ASSERT_EQ(c.rc, 0) << TVMGetLastError();
    EXPECT_EQ(c.code, kTVMDLTensorHandle);
    EXPECT_EQ(c.value.v_handle, &view);
  }
}

/*! \brief A raw direct callee writing whatever (value, code) its resource holds. */
struct Written {
  TVMValue value;
  int code;
};
int WriteFixed(void* resource, const TVMValue*, const int*, int, TVMValue* ret, int* code) {
  *ret = static_cast<Written*>(resource)->value;
  *code = static_cast<Written*>(resource)->code;
  return 0;
}

TEST(CppLayerDirect, RawDirectResultsReadAsTVMFuncCallGivesThem) {
  // The pair hands a direct callee's slot over as written; Any, AnyView and CallRaw make it what
  // TVMFuncCall returns: uint as int, a dtype as its string, refused codes as its errors.
  Written w{};
  TVMFunctionHandle h = nullptr;
  ASSERT_EQ(TVMFuncCreateDirect(WriteFixed, &w, nullptr, &h), 0) << TVMGetLastError();
  Function f = Function::Adopt(h);

  w.value.v_int64 = 7;
  w.code = kDLUInt;
  CResult c = CallC(f, nullptr, nullptr, 0);
  ASSERT_EQ(c.rc, 0) << TVMGetLastError();
  EXPECT_EQ(c.code, kTVMArgInt);
  Any a = f();
  EXPECT_EQ(a.type_code(), kTVMArgInt);
  EXPECT_EQ(a.as_int(), 7);
  EXPECT_EQ(f.CallView().type_code(), kTVMArgInt);
  EXPECT_EQ(f.CallView().as_int(), 7);
  TVMValue rv;
  int rc = -1;
  f.CallRaw(nullptr, nullptr, 0, &rv, &rc);
  EXPECT_EQ(rc, kTVMArgInt);
  EXPECT_EQ(rv.v_int64, 7);

  w.value.v_type = DLDataType{kDLFloat, 32, 4};
  w.code = kTVMDataType;
  c = CallC(f, nullptr, nullptr, 0);
  ASSERT_EQ(c.rc, 0) << TVMGetLastError();
  ASSERT_EQ(c.code, kTVMStr);
  EXPECT_STREQ(c.value.v_str, "float32x4");
  a = f();
  EXPECT_EQ(a.type_code(), kTVMStr);
  EXPECT_EQ(a.as_str(), "float32x4");
  {
    polyffi::AnyView v = f.CallView();
    EXPECT_EQ(v.type_code(), kTVMStr);
    EXPECT_EQ(v.as_str_view(), "float32x4");
  }
  f.CallRaw(nullptr, nullptr, 0, &rv, &rc);
  ASSERT_EQ(rc, kTVMStr);
  EXPECT_STREQ(rv.v_str, "float32x4");

  // Codes TVMFuncCall refuses, with the same kind and text through every C++ entry.
  auto expect_same_error = [&](const char* kind, const char* text) {
    CResult r = CallC(f, nullptr, nullptr, 0);
    EXPECT_EQ(r.rc, -1);
    std::string c_error = TVMGetLastError();
    EXPECT_EQ(c_error.rfind(std::string(kind) + ": " + text, 0), 0u) << c_error;
    Error e1 = CatchError([&] { f(); });
    Error e2 = CatchError([&] { f.CallView(); });
    Error e3 = CatchError([&] { f.CallRaw(nullptr, nullptr, 0, &rv, &rc); });
    for (const Error& e : {e1, e2, e3}) {
      EXPECT_EQ(e.kind(), kind);
      EXPECT_EQ(e.message().rfind(text, 0), 0u) << e.message();
    }
  };
  w.value.v_type = DLDataType{kDLFloat, 0, 1};
  w.code = kTVMDataType;
  expect_same_error("ValueError", "dtype (code 2, bits 0, lanes 1) has no string form");
  w.value.v_handle = nullptr;
  w.code = kTVMObjectRValueRefArg;
  expect_same_error("TypeError", "callback returned an unsupported value: an rvalue reference");
  w.code = 99;
  expect_same_error("TypeError", "callback returned an unsupported value: unknown type code 99");
  w.code = -3;
  expect_same_error("TypeError", "callback returned an unsupported value: unknown type code -3");
}

TEST(CppLayerDirect, ViewBorrowsStringsUntilTheNextCall) {
  Function twice = MakeTyped([](std::string s) { return s + s; }, "twice");
  Function add = MakeTyped([](int64_t a, int64_t b) { return a + b; }, "add");
  polyffi::AnyView v = twice.CallView(kLong);
  ASSERT_EQ(v.type_code(), kTVMStr);
  EXPECT_EQ(v.as_str_view(), std::string(kLong) + kLong);
  std::string kept(v.as_str_view());  // the copy outlives the next call
  EXPECT_EQ(add.CallView(2, 3).as_int(), 5);
  EXPECT_EQ(kept, std::string(kLong) + kLong);
  EXPECT_EQ(CatchError([&] { add.CallView(1, 1).as_str_view(); }).kind(), "TypeError");
  Function rev = MakeTyped([](polyffi::Bytes b) { return polyffi::Bytes{b.data + "!"}; }, "rev");
  TVMByteArray in{"a\0b", 3};
  EXPECT_EQ(rev.CallView(&in).as_str_view(), std::string_view("a\0b!", 4));
  auto token = std::make_shared<int>(2);
  Function make = MakeTyped([token] { return MakeTyped([token] { return *token; }, "t"); }, "m");
  long before = token.use_count();
  {
    polyffi::AnyView f = make.CallView();
    ASSERT_EQ(f.type_code(), kTVMPackedFuncHandle);
    EXPECT_EQ(Function::Borrow(f.as_object().get())().as_int(), 2);
  }
  EXPECT_EQ(token.use_count(), before);
}

}  // namespace
