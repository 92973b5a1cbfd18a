// The header-only C++ layer (polyffi.hpp) over the C ABI: what a call returns (polyffi::Any owns
// strings and objects, plain values are just a value and a code), copies and moves of it, and
// the typed trampoline's argument checks and error kinds. Functions are made here with
// MakeTyped, so nothing but libpolyffi is loaded.
#include <gtest/gtest.h>

#include <memory>
#include <polyffi/polyffi.hpp>
#include <string>
#include <utility>

namespace {

using polyffi::Any;
using polyffi::Error;
using polyffi::Function;
using polyffi::MakeTyped;

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

}  // namespace
