// testing.* fixtures that call host functions back: apply, call_n, closures, errors, threads.
//
// Each passes the callee's status on (polyffi::CheckCall): an error raised by a host callback
// keeps its kind and text, and -2 (a host error already pending) stays -2.
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixture_util.h"

namespace polyffi_testing {
namespace {

using polyffi::Error;
using polyffi::Function;

void CheckFunctionArg(const char* name, const PackedArgs& args) {
  if (args.size < 1) {
    throw Error("TypeError", std::string(name) + " expected at least 1 argument but got 0");
  }
  if (args.codes[0] != kTVMPackedFuncHandle) {
    throw Error("TypeError", std::string(name) + ": argument 0 expected Function but got " +
                                 polyffi::TypeCodeName(args.codes[0]));
  }
}

// f(...args): the argument slice is forwarded untouched, so codes, objects and rvalue refs
// arrive exactly as the caller packed them.
TESTING_GLOBAL("testing.apply", [](PackedArgs args, RetValue* rv) {
  CheckFunctionArg("testing.apply", args);
  CallRaw(args.values[0].v_handle, args.values + 1, args.codes + 1, args.size - 1).SetTo(rv);
});

// Benchmarked: one call per iteration through polyffi::Function's direct entry (the peer of
// tvm-ffi's C++ Function call), no allocation and no conversion layer in the loop.
TESTING_GLOBAL("testing.call_n",
               Typed(
                   [](Function f, int64_t n) {
                     if (n < 0) {
                       throw Error("ValueError",
                                   "testing.call_n: n must be >= 0 but got " + std::to_string(n));
                     }
                     int64_t total = 0;
                     TVMValue arg, ret;
                     int code, ret_code;
                     for (int64_t i = 0; i < n; ++i) {
                       arg.v_int64 = i;
                       code = kTVMArgInt;  // reset: a callee may rewrite its borrowed slots
                       f.CallRaw(&arg, &code, 1, &ret, &ret_code);
                       if (ret_code != kTVMArgInt && ret_code != kDLUInt &&
                           ret_code != kTVMArgBool) {
                         OwnedValue discard(ret, ret_code);
                         throw Error("TypeError",
                                     "testing.call_n: f(" + std::to_string(i) + ") returned " +
                                         polyffi::TypeCodeName(ret_code) + ", expected int");
                       }
                       total = CheckedAdd(total, ret.v_int64, "testing.call_n");
                     }
                     return total;
                   },
                   "testing.call_n"));

TESTING_GLOBAL("testing.wrap_callback",
               Typed(
                   [](Function f) {
                     // The closure's copy of f keeps it alive as long as the wrapper lives.
                     return polyffi::MakeFromBody(
                         [f, token = LiveToken()](PackedArgs args, RetValue* rv) {
                           CallRaw(f.get(), args.values, args.codes, args.size).SetTo(rv);
                         });
                   },
                   "testing.wrap_callback"));

TESTING_GLOBAL("testing.return_closure", Typed(
                                             [](int64_t y) {
                                               return polyffi::MakeFromBody(Typed(
                                                   [y, token = LiveToken()](int64_t x) {
                                                     return CheckedAdd(
                                                         x, y, "testing.return_closure.<closure>");
                                                   },
                                                   "testing.return_closure.<closure>"));
                                             },
                                             "testing.return_closure"));

TESTING_GLOBAL("testing.call_and_catch", Typed(
                                             [](Function f) {
                                               TVMValue ret;
                                               int ret_code = kTVMNullptr;
                                               int status = TVMFuncCall(f.get(), nullptr, nullptr,
                                                                        0, &ret, &ret_code);
                                               if (status == 0) {
                                                 OwnedValue discard(ret, ret_code);
                                                 return std::string();
                                               }
                                               // A pending host error cannot be swallowed here: the
                                               // host must see it.
                                               if (status == -2) throw polyffi::HostErrorPending();
                                               std::string text = TVMGetLastError();
                                               return text.substr(0, text.find('\n'));
                                             },
                                             "testing.call_and_catch"));

// f(...args) on a new native thread. The last error is per thread, so a failure is captured on
// that thread and set again on the calling one with the same text.
TESTING_GLOBAL("testing.call_on_thread", [](PackedArgs args, RetValue* rv) {
  CheckFunctionArg("testing.call_on_thread", args);
  OwnedValue result;
  bool failed = false;
  std::string error;
  std::thread worker([&] {
    try {
      TVMValue ret;
      int ret_code = kTVMNullptr;
      if (TVMFuncCall(args.values[0].v_handle, args.values + 1, args.codes + 1, args.size - 1, &ret,
                      &ret_code) == 0) {
        result = OwnedValue(ret, ret_code);  // copies thread-local strings on this thread
      } else {
        failed = true;
        error = TVMGetLastError();
      }
    } catch (const std::exception& e) {
      failed = true;
      error = std::string("RuntimeError: ") + e.what();
    }
  });
  worker.join();
  if (failed) {
    TVMAPISetLastError(error.c_str());
    throw Error::FromLastError();
  }
  result.SetTo(rv);
});

std::mutex g_release_mutex;
// Leaked on purpose: destroying joinable threads at exit would call std::terminate.
std::vector<std::thread>* g_release_threads = new std::vector<std::thread>();

TESTING_GLOBAL("testing.release_on_thread",
               Typed(
                   [](polyffi::ObjectRef obj) {
                     static TVMFunctionHandle use_count = CoreGlobal("runtime.ObjectUseCount");
                     std::lock_guard<std::mutex> lock(g_release_mutex);
                     g_release_threads->emplace_back([obj = std::move(obj)]() mutable {
                       auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                       while (std::chrono::steady_clock::now() < deadline) {
                         TVMValue arg, ret;
                         int code = kTVMObjectHandle, ret_code = kTVMNullptr;
                         arg.v_handle = obj.get();
                         if (TVMFuncCall(use_count, &arg, &code, 1, &ret, &ret_code) != 0) break;
                         if (ret_code != kTVMArgInt) {
                           OwnedValue discard(ret, ret_code);
                           break;
                         }
                         if (ret.v_int64 <= 1) break;  // only our reference is left
                         std::this_thread::sleep_for(std::chrono::milliseconds(1));
                       }
                       // Drop the last reference here, so the finalizer runs on this native thread.
                       polyffi::ObjectRef drop = std::move(obj);
                     });
                   },
                   "testing.release_on_thread"));

TESTING_GLOBAL("testing.join_release_threads", [](PackedArgs args, RetValue* rv) {
  CheckArity("testing.join_release_threads", args, 0);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(g_release_mutex);
    threads.swap(*g_release_threads);
  }
  for (std::thread& t : threads) t.join();
  rv->Set(static_cast<int64_t>(threads.size()));
});

TESTING_GLOBAL("testing.sleep_ms",
               Typed(
                   [](int64_t ms) {
                     if (ms < 0) {
                       throw Error("ValueError", "testing.sleep_ms: ms must be >= 0 but got " +
                                                     std::to_string(ms));
                     }
                     std::this_thread::sleep_for(std::chrono::milliseconds(ms));
                   },
                   "testing.sleep_ms"));

}  // namespace
}  // namespace polyffi_testing
