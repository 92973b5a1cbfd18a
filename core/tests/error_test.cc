// The last-error state: the raised mark of tvm-ffi errors, its transfer between threads, and the
// one translation of an exception into the last error.
#include "polyffi/error.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <thread>

namespace polyffi {
namespace {

TEST(ErrorStateTest, RaisedErrorIsTheLastErrorWithAMark) {
  SetRaisedError("ValueError", "bad shape");
  EXPECT_EQ(GetLastError(), "ValueError: bad shape");
  EXPECT_EQ(TakeRaisedMark(), RaisedMark::kError);
  EXPECT_EQ(TakeRaisedMark(), RaisedMark::kNone);
  EXPECT_EQ(GetLastError(), "ValueError: bad shape");  // the text stays
  SetRaisedError(nullptr, "no kind");
  EXPECT_EQ(GetLastError(), "RuntimeError: no kind");
  SetRaisedError("", "empty kind");
  EXPECT_EQ(GetLastError(), "RuntimeError: empty kind");
}

TEST(ErrorStateTest, AnyOtherErrorClearsTheMark) {
  SetRaisedError("ValueError", "raised");
  SetLastError("TypeError: set later");
  EXPECT_EQ(TakeRaisedMark(), RaisedMark::kNone);
  SetRaisedError("ValueError", "raised");
  SetEnvError("KeyboardInterrupt: stop");
  EXPECT_EQ(TakeRaisedMark(), RaisedMark::kNone);
  EXPECT_TRUE(LastErrorIsEnvError());
}

TEST(ErrorStateTest, TheMarkMovesWithTheState) {
  SetRaisedError("IndexError", "from a worker");
  LastErrorState state = TakeLastErrorState();
  EXPECT_EQ(state.raised, RaisedMark::kError);
  EXPECT_EQ(TakeRaisedMark(), RaisedMark::kNone);  // moved out
  std::thread([&] {
    RestoreLastErrorState(std::move(state));
    EXPECT_EQ(GetLastError(), "IndexError: from a worker");
    EXPECT_EQ(TakeRaisedMark(), RaisedMark::kError);
  }).join();
}

int Translate(void (*thrower)()) {
  try {
    thrower();
  } catch (...) {
    return SetLastErrorFromCurrentException();
  }
  return 0;
}

TEST(ErrorStateTest, OneTranslationOfTheExceptionInFlight) {
  EXPECT_EQ(Translate([] { Throw("KeyError", "no such key"); }), -1);
  EXPECT_EQ(GetLastError(), "KeyError: no such key");
  EXPECT_EQ(Translate([] { throw std::bad_alloc(); }), -1);
  EXPECT_EQ(GetLastError(), "RuntimeError: out of memory");
  EXPECT_EQ(Translate([] { throw std::runtime_error("plain"); }), -1);
  EXPECT_EQ(GetLastError(), "RuntimeError: plain");
  EXPECT_EQ(Translate([] { throw 42; }), -1);
  EXPECT_EQ(GetLastError(), "InternalError: unknown exception");
  EXPECT_EQ(Translate([] { throw EnvErrorAlreadySet{"KeyboardInterrupt: stop"}; }), -2);
  EXPECT_EQ(GetLastError(), "KeyboardInterrupt: stop");
  EXPECT_TRUE(LastErrorIsEnvError());
  EXPECT_EQ(Translate([] { throw EnvErrorAlreadySet{}; }), -2);
  EXPECT_EQ(GetLastError(), "EnvErrorAlreadySet: the host language has a pending error");
}

}  // namespace
}  // namespace polyffi
