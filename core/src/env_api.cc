// Host hooks registered with TVMBackendRegisterEnvCAPI, and what the runtime does with them.
#include "polyffi/env_api.h"

#include <cstring>

#include "polyffi/error.h"

namespace polyffi {
namespace {

using FRef = void (*)(void*);
using FGILEnsure = int (*)();
using FGILRelease = void (*)(int);
using FCheckSignals = int (*)();

// Constant-initialised: usable from static initialisers and during exit.
std::atomic<FRef> g_inc_ref{nullptr};
std::atomic<FRef> g_dec_ref{nullptr};
std::atomic<FGILEnsure> g_gil_ensure{nullptr};
std::atomic<FGILRelease> g_gil_release{nullptr};
std::atomic<FCheckSignals> g_check_signals{nullptr};

/*! \brief The host's lock held for the scope (PyGILState_Ensure/Release); reentrant. */
class WithHostLock {
 public:
  WithHostLock() {
    FGILEnsure ensure = g_gil_ensure.load(std::memory_order_acquire);
    release_ = g_gil_release.load(std::memory_order_acquire);
    if (ensure != nullptr && release_ != nullptr) {
      state_ = ensure();
      held_ = true;
    }
  }
  ~WithHostLock() {
    if (held_) release_(state_);
  }
  WithHostLock(const WithHostLock&) = delete;
  WithHostLock& operator=(const WithHostLock&) = delete;

 private:
  FGILRelease release_ = nullptr;
  int state_ = 0;
  bool held_ = false;
};

}  // namespace

bool RegisterEnvCAPI(const char* name, void* ptr) noexcept {
  if (name == nullptr) return false;
  // Function pointers travel as void*, as in TVM's TVMBackendRegisterEnvCAPI.
  if (std::strcmp(name, "Py_IncRef") == 0) {
    g_inc_ref.store(reinterpret_cast<FRef>(ptr), std::memory_order_release);
  } else if (std::strcmp(name, "Py_DecRef") == 0) {
    g_dec_ref.store(reinterpret_cast<FRef>(ptr), std::memory_order_release);
  } else if (std::strcmp(name, "PyGILState_Ensure") == 0) {
    g_gil_ensure.store(reinterpret_cast<FGILEnsure>(ptr), std::memory_order_release);
  } else if (std::strcmp(name, "PyGILState_Release") == 0) {
    g_gil_release.store(reinterpret_cast<FGILRelease>(ptr), std::memory_order_release);
  } else if (std::strcmp(name, "PyErr_CheckSignals") == 0) {
    g_check_signals.store(reinterpret_cast<FCheckSignals>(ptr), std::memory_order_release);
  } else {
    return false;
  }
  return true;
}

std::shared_ptr<void> RetainHostObject(void* obj) {
  if (obj == nullptr) return nullptr;
  FRef inc = g_inc_ref.load(std::memory_order_acquire);
  FRef dec = g_dec_ref.load(std::memory_order_acquire);
  if (inc == nullptr || dec == nullptr) {
    return std::shared_ptr<void>(obj, [](void*) {});  // borrowed: nothing to release
  }
  {
    WithHostLock lock;
    inc(obj);
  }
  // Should the control block fail to allocate, shared_ptr runs the deleter: still balanced.
  return std::shared_ptr<void>(obj, [dec](void* p) {
    // A thread tearing down its thread-locals (the main thread's run after the host's
    // interpreter may already be finalised) must not call into the host: the object leaks.
    if (ThreadIsExiting()) return;
    WithHostLock lock;
    dec(p);
  });
}

namespace env {

bool SignalCheckRegistered() noexcept {
  return g_check_signals.load(std::memory_order_relaxed) != nullptr;
}

int CheckSignals() noexcept {
  FCheckSignals check = g_check_signals.load(std::memory_order_acquire);
  if (check == nullptr) return 0;
  int rc;
  {
    WithHostLock lock;
    rc = check();
  }
  if (rc == 0) return 0;
  try {
    SetEnvError(
        "KeyboardInterrupt: interrupted: the host's signal check (PyErr_CheckSignals) reported "
        "a pending error");
  } catch (...) {
    // Out of memory for the message: -2 still tells the host its own error is pending.
  }
  return -2;
}

}  // namespace env
}  // namespace polyffi
