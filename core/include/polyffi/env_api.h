// The host environment's C API (TVMBackendRegisterEnvCAPI): reference counting of host objects,
// the host's global lock, and its signal check, as TVM's Python frontend registers them
// (Py_IncRef, Py_DecRef, PyGILState_Ensure, PyGILState_Release, PyErr_CheckSignals).
//
// Deliberately free of the core's classes: the graph executor, which is written against the
// public C ABI and polyffi.hpp, includes it for the signal check of its run loop.
#ifndef POLYFFI_CORE_ENV_API_H_
#define POLYFFI_CORE_ENV_API_H_

#include <atomic>
#include <chrono>
#include <memory>

namespace polyffi {

/*!
 * \brief Register one host hook by TVM's name for it. ptr NULL unregisters it.
 * \return false when the name is not one of the five known ones.
 */
bool RegisterEnvCAPI(const char* name, void* ptr) noexcept;

/*!
 * \brief Hold obj through the host's Py_IncRef / Py_DecRef hooks (each called with the host's
 *  lock taken through the GIL hooks, on whatever thread it happens). Without both reference
 *  hooks the object is held borrowed: the host must keep it alive itself. NULL gives NULL.
 */
std::shared_ptr<void> RetainHostObject(void* obj);

namespace env {

/*! \brief Whether a signal-check hook is registered (one relaxed atomic load). */
bool SignalCheckRegistered() noexcept;

/*!
 * \brief Call the host's signal check (with its lock held). When it reports an error (nonzero:
 *  the host now has an exception pending, such as KeyboardInterrupt), set the last error to
 *  "KeyboardInterrupt: ..." and return -2, the C API's code for "the host has an error pending";
 *  otherwise return 0. Without a registered hook, returns 0.
 */
int CheckSignals() noexcept;

/*!
 * \brief A long loop's signal check: Tick() calls the host's check once the loop has run for an
 *  interval, and then once per interval (reading the clock only while a hook is registered), so
 *  a short loop never calls into the host and a loop of short steps pays one atomic load per
 *  step without a hook. Returns what CheckSignals() returns.
 */
class PeriodicSignalCheck {
 public:
  static constexpr std::chrono::milliseconds kInterval{10};
  PeriodicSignalCheck() = default;
  int Tick() noexcept {
    if (!SignalCheckRegistered()) return 0;
    auto now = std::chrono::steady_clock::now();
    if (!started_) {
      started_ = true;
      last_ = now;
      return 0;
    }
    if (now - last_ < kInterval) return 0;
    last_ = now;
    return CheckSignals();
  }

 private:
  bool started_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace env
}  // namespace polyffi
#endif  // POLYFFI_CORE_ENV_API_H_
