// runtime.RPCTimeEvaluator run locally: the evaluator behind TVM's Module.time_evaluator and
// GraphModule.benchmark, with TVM 0.18's protocol. It returns a function taking the timed
// function's arguments and returning `repeat` float64 seconds-per-call as bytes: one warm-up
// call, then per repeat the optional preprocessing function and `number` timed calls (number
// grows while a repeat is shorter than min_repeat_ms). Also cache_flush_cpu_non_first_arg, the
// preprocessing function TVM's tuning passes by name.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace {

struct TimerConfig {
  int64_t number, repeat, min_repeat_ms, limit_zero_time_iterations, cooldown_interval_ms,
      repeats_to_cooldown, cache_flush_bytes;
};

void CallWith(const FunctionObj& f, const Args& args) {
  RetValue discard;
  f.Call(const_cast<TVMValue*>(args.values()), const_cast<int*>(args.codes()), args.size(),
         &discard);
}

std::string Evaluate(const FunctionObj& f, const FunctionObj* preproc, TimerConfig c,
                     const Args& args) {
  using Clock = std::chrono::steady_clock;
  CallWith(f, args);  // warm-up: lazy initialisation is not timed
  std::vector<char> flush_a, flush_b;
  if (c.cache_flush_bytes > 0) {
    flush_a.assign(static_cast<size_t>(c.cache_flush_bytes), 1);
    flush_b.assign(static_cast<size_t>(c.cache_flush_bytes), 2);
  }
  std::string blob;
  int64_t number = c.number;
  for (int64_t i = 0; i < c.repeat; ++i) {
    if (preproc) CallWith(*preproc, args);
    double duration_ms = 0.0;
    int64_t zero_times = 0;
    do {
      if (duration_ms > 0.0) {
        // Too short: grow number towards min_repeat_ms (at least by the golden ratio).
        double per_call = duration_ms / static_cast<double>(number);
        number = static_cast<int64_t>(
            std::max(c.min_repeat_ms / per_call + 1, static_cast<double>(number) * 1.618));
      }
      if (!flush_a.empty()) std::memcpy(flush_a.data(), flush_b.data(), flush_a.size());
      auto start = Clock::now();
      for (int64_t j = 0; j < number; ++j) CallWith(f, args);
      auto nanos =
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
      if (nanos == 0) ++zero_times;
      duration_ms = static_cast<double>(nanos) / 1e6;
    } while (duration_ms < static_cast<double>(c.min_repeat_ms) &&
             zero_times < c.limit_zero_time_iterations);
    double seconds_per_call = duration_ms / 1e3 / static_cast<double>(number);
    blob.append(reinterpret_cast<const char*>(&seconds_per_call), sizeof(seconds_per_call));
    if (c.cooldown_interval_ms > 0 && i % c.repeats_to_cooldown == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(c.cooldown_interval_ms));
    }
  }
  return blob;
}

void FlushCache(const void* p, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
  const char* c = static_cast<const char*>(p);
  for (size_t off = 0; off < n; off += 64) __builtin_ia32_clflush(c + off);
  if (n) __builtin_ia32_clflush(c + n - 1);
#elif defined(__aarch64__)
  const char* c = static_cast<const char*>(p);
  for (size_t off = 0; off < n; off += 64) asm volatile("dc civac, %0" ::"r"(c + off) : "memory");
  asm volatile("dsb ish" ::: "memory");
#else
  (void)p, (void)n;
  Throw("RuntimeError", "cache_flush_cpu_non_first_arg: no cache flush on this architecture");
#endif
}

}  // namespace

// (module or None, name, dev_type, dev_id, number, repeat, min_repeat_ms,
//  limit_zero_time_iterations, cooldown_interval_ms, repeats_to_cooldown, cache_flush_bytes,
//  f_preproc name) -> function(args...) -> bytes of `repeat` doubles
POLYFFI_CORE_GLOBAL("runtime.RPCTimeEvaluator", [](const Args& args, RetValue* rv) {
  args.CheckArity(12);
  std::string name = args.Str(1);
  ObjectPtr<FunctionObj> f;
  if (args.code(0) == kTVMNullptr) {
    f = Registry::Global()->Get(name);
  } else {
    f = args.ObjAs<ModuleObj>(0)->GetFunction(name, true);
  }
  if (!f) Throw("InternalError", "Cannot find ", name, " in the module or the global registry");
  int64_t dev_type = args.Int(2);
  args.Int(3);
  if (dev_type != kDLCPU) {
    Throw("InternalError", "RPCTimeEvaluator: device type ", dev_type,
          " is not available (this runtime times CPU functions only, with no RPC)");
  }
  TimerConfig c{args.Int(4), args.Int(5), args.Int(6), args.Int(7),
                args.Int(8), args.Int(9), args.Int(10)};
  if (c.number < 1)
    Throw("ValueError", "RPCTimeEvaluator: number must be at least 1, got ", c.number);
  if (c.repeat < 0)
    Throw("ValueError", "RPCTimeEvaluator: repeat must not be negative, got ", c.repeat);
  if (c.repeats_to_cooldown < 1) c.repeats_to_cooldown = 1;
  if (c.limit_zero_time_iterations < 1) c.limit_zero_time_iterations = 1;
  if (c.cache_flush_bytes < 0) c.cache_flush_bytes = 0;
  std::string preproc_name = args.Str(11);
  ObjectPtr<FunctionObj> preproc;
  if (!preproc_name.empty()) {
    preproc = Registry::Global()->Get(preproc_name);
    if (!preproc) Throw("InternalError", "Cannot find ", preproc_name, " in the global registry");
  }
  rv->SetObject(MakeFunction(
      [f, preproc, c](const Args& call_args, RetValue* out) {
        out->SetBytes(Evaluate(*f, preproc.get(), c, call_args));
      },
      "runtime.RPCTimeEvaluator(" + name + ")"));
});

// Flushes the CPU cache lines of every array argument but the first (TVM's preprocessing hook
// for timing with cold caches; the first argument is the output or the function's own state).
POLYFFI_CORE_GLOBAL("cache_flush_cpu_non_first_arg", [](const Args& args, RetValue* rv) {
  for (int i = 1; i < args.size(); ++i) {
    int code = args.code(i);
    if ((code != kTVMNDArrayHandle && code != kTVMDLTensorHandle) || !args.value(i).v_handle)
      continue;
    const DLTensor& t = *static_cast<const DLTensor*>(args.value(i).v_handle);
    // No data (an empty tensor may have none): nothing to flush, and no offset from NULL.
    if (t.data == nullptr || DeviceTypeOf(t.device) != kDLCPU || !IsCompact(t)) continue;
    const size_t n = CompactBytes(t);
    if (n == 0) continue;
    uintptr_t first;
    if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(t.data), t.byte_offset, &first)) {
      Throw("ValueError", "cache_flush_cpu_non_first_arg: argument ", i, "'s byte_offset ",
            t.byte_offset, " wraps its data pointer");
    }
    FlushCache(reinterpret_cast<const void*>(first), n);
  }
  rv->SetNull();
});

}  // namespace polyffi
