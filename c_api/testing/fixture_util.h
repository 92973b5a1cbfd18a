// Helpers shared by the testing fixtures (libpolyffi_testing.so) and the test plugin.
//
// Everything here goes through the C ABI and polyffi.hpp only. What this adds over polyffi.hpp:
// fixtures that call back into host code must return the callee's own status (-1 with the
// callee's message untouched, or -2 when the host already has a pending error), which the
// header's exception barrier cannot express, so these fixtures use their own trampoline.
#ifndef POLYFFI_TESTING_FIXTURE_UTIL_H_
#define POLYFFI_TESTING_FIXTURE_UTIL_H_

#include <polyffi/c_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <polyffi/polyffi.hpp>
#include <string>
#include <utility>

namespace polyffi_testing {

using polyffi::PackedArgs;
using polyffi::RetValue;
using Body = polyffi::PackedBody;

/*!
 * \brief Thrown when a call failed and this thread's last error already says why: the fixture
 *  returns rc (-1 or -2) as is, so the kind, message and any pending host error pass through.
 */
struct AlreadySet {
  int rc;
};

/*! \brief Turn a nonzero status of a C API call into AlreadySet. */
inline void Check(int rc) {
  if (rc != 0) throw AlreadySet{rc};
}

/*! \brief The C trampoline of a fixture body of concrete type B (no type erasure per call). */
template <typename B>
int FixtureTrampoline(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* resource) {
  int passthrough = 0;
  int rc = polyffi::detail::GuardedCall([&] {
    try {
      RetValue rv(ret);
      (*static_cast<B*>(resource))(PackedArgs(args, codes, n), &rv);
    } catch (const AlreadySet& e) {
      passthrough = e.rc;
    }
  });
  return passthrough != 0 ? passthrough : rc;
}

template <typename B>
void FixtureDeleter(void* resource) {
  delete static_cast<B*>(resource);
}

/*! \brief Make a function whose body may throw AlreadySet (plus everything polyffi.hpp maps). */
template <typename B>
polyffi::Function MakeFixture(B body) {
  auto* resource = new B(std::move(body));
  TVMFunctionHandle h = nullptr;
  // On failure the runtime runs the finalizer itself, so the resource never leaks.
  polyffi::CheckCall(TVMFuncCreateFromCFunc(FixtureTrampoline<B>, resource, FixtureDeleter<B>, &h));
  return polyffi::Function::Adopt(h);
}

/*! \brief The typed layer's argument checking and messages, on a body that may throw AlreadySet. */
template <typename F>
auto Typed(F f, std::string name) {
  return polyffi::detail::FnTraits<std::decay_t<F>>::Closure(std::move(f), std::move(name));
}

/*! \brief Register f as NAME; failures are printed (static initialisers never throw). */
void RegisterOrReport(const char* name, const polyffi::Function& f) noexcept;

/*! \brief Registers NAME at load time; failures are printed (static initialisers never throw). */
class Registrar {
 public:
  template <typename B>
  Registrar(const char* name, B body) noexcept {
    try {
      RegisterOrReport(name, MakeFixture(std::move(body)));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "polyffi_testing: cannot register %s: %s\n", name, e.what());
    }
  }
  /*! \brief A bare C callback, for fixtures whose own cost must be nil (benchmark floors). */
  Registrar(const char* name, TVMPackedCFunc fn) noexcept;
};

#define POLYFFI_TESTING_CONCAT_(a, b) a##b
#define POLYFFI_TESTING_CONCAT(a, b) POLYFFI_TESTING_CONCAT_(a, b)
/*! \brief TESTING_GLOBAL("testing.x", body): register a fixture built with MakeFixture. */
#define TESTING_GLOBAL(name, body) \
  static ::polyffi_testing::Registrar POLYFFI_TESTING_CONCAT(testing_reg_, __COUNTER__)(name, body)

/*!
 * \brief A global function of the core, looked up on first use and never released: it lives as
 *  long as the process, and releasing it during static destruction could race the runtime's own
 *  teardown. Throws ValueError when the core lacks it.
 */
TVMFunctionHandle CoreGlobal(const char* name);

// ---- Values ------------------------------------------------------------------------------------

/*!
 * \brief An owned result of TVMFuncCall. Strings and bytes are copied out of thread-local storage
 *  at once (so the value can cross threads); object references are released on destruction.
 */
class OwnedValue {
 public:
  OwnedValue() { value_.v_handle = nullptr; }
  /*! \brief Take what TVMFuncCall just returned on this thread. */
  OwnedValue(TVMValue v, int code);
  OwnedValue(OwnedValue&& o) noexcept;
  OwnedValue& operator=(OwnedValue&& o) noexcept;
  OwnedValue(const OwnedValue&) = delete;
  OwnedValue& operator=(const OwnedValue&) = delete;
  ~OwnedValue() { Reset(); }

  int code() const { return code_; }
  TVMValue value() const { return value_; }
  /*! \brief Make it the return value of the running packed call (which copies or retains it). */
  void SetTo(RetValue* rv) const;

 private:
  void Reset();
  TVMValue value_;
  int code_ = kTVMNullptr;
  std::string bytes_;  // contents of a kTVMStr / kTVMBytes result
};

/*! \brief Call f on a raw argument slice; returns the owned result or throws AlreadySet. */
OwnedValue CallRaw(TVMFunctionHandle f, TVMValue* values, int* codes, int n);

/*! \brief TypeError "NAME expected N argument(s) but got M" unless args.size == n. */
void CheckArity(const char* name, const PackedArgs& args, int n);

/*! \brief Whether a type code carries a reference-counted object. */
inline bool IsObjectCode(int code) {
  return code == kTVMObjectHandle || code == kTVMModuleHandle || code == kTVMPackedFuncHandle ||
         code == kTVMNDArrayHandle || code == kTVMObjectRValueRefArg;
}

// ---- Checked integer arithmetic ----------------------------------------------------------------

/*! \brief a + b, or ValueError naming WHO: overflow must be an error, never undefined behaviour. */
inline int64_t CheckedAdd(int64_t a, int64_t b, const char* who) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    throw polyffi::Error("ValueError", std::string(who) + ": integer overflow");
  }
  return r;
}

inline int64_t CheckedMul(int64_t a, int64_t b, const char* who) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw polyffi::Error("ValueError", std::string(who) + ": integer overflow");
  }
  return r;
}

// ---- Leak accounting ---------------------------------------------------------------------------

/*! \brief Objects created by the fixtures and still alive (testing.live_objects). */
int64_t LiveObjects();

/*!
 * \brief Counts itself in LiveObjects while it exists. Captured by value in every closure the
 *  fixtures create, so the count drops exactly when the runtime destroys the closure's resource.
 */
class LiveToken {
 public:
  LiveToken();
  LiveToken(const LiveToken&);
  LiveToken& operator=(const LiveToken&) = default;
  ~LiveToken();
};

}  // namespace polyffi_testing

#endif  // POLYFFI_TESTING_FIXTURE_UTIL_H_
