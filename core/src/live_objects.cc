// Live runtime objects: the counters every Object constructor and destructor update (object.h),
// and runtime.LiveObjectCount, which the soaks of every binding read to show that what they
// create is released (functions, callbacks, NDArrays, modules, containers).
//   runtime.LiveObjectCount() -> int: objects alive in the process, of every type.
//   runtime.LiveObjectCount(type_key: str) -> int: those of exactly that type (a type whose index
//     is kLiveObjectSlots - 1 or more shares its counter with the others that far up).
#include <atomic>
#include <cstdint>

#include "polyffi/object.h"
#include "polyffi/registry.h"

namespace polyffi {

std::atomic<int64_t> g_live_objects[kLiveObjectSlots] = {};

namespace {

int64_t LiveObjects() {
  int64_t total = 0;
  for (const auto& c : g_live_objects) total += c.load(std::memory_order_relaxed);
  return total;
}

}  // namespace

POLYFFI_CORE_GLOBAL("runtime.LiveObjectCount", [](const Args& args, RetValue* rv) {
  if (args.size() == 0) return rv->SetInt(LiveObjects());
  args.CheckArity(1);
  uint32_t index = TypeKey2Index(args.Str(0));
  rv->SetInt(g_live_objects[index < kLiveObjectSlots ? index : kLiveObjectSlots - 1].load(
      std::memory_order_relaxed));
});

}  // namespace polyffi
