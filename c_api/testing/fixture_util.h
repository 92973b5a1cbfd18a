// Helpers shared by the testing fixtures (libpolyffi_testing.so) and the test plugin.
//
// Everything here goes through the C ABI and polyffi.hpp only. Fixtures that call back into host
// code pass the callee's status on: polyffi::CheckCall rethrows a -1 as the same kind and
// message, and a -2 as polyffi::HostErrorPending, which the header's trampoline returns as -2.
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

/*! \brief The typed layer's argument checking and messages, as a concrete closure. */
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
      RegisterOrReport(name, polyffi::MakeFromBody(std::move(body)));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "polyffi_testing: cannot register %s: %s\n", name, e.what());
    }
  }
  /*! \brief A bare direct C function, for fixtures whose own cost must be nil (benchmark
   *  floors). It must return classic results (TVM_DIRECT_CLASSIC_RESULTS). */
  Registrar(const char* name, TVMDirectCFunc fn) noexcept;
};

#define POLYFFI_TESTING_CONCAT_(a, b) a##b
#define POLYFFI_TESTING_CONCAT(a, b) POLYFFI_TESTING_CONCAT_(a, b)
/*! \brief TESTING_GLOBAL("testing.x", body): register a closure body(PackedArgs, RetValue*). */
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

/*! \brief Call f on a raw argument slice; returns the owned result or throws (CheckCall). */
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
