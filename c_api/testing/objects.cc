// testing.* fixtures for objects and containers: use counts, leak accounting, Array and Map.
#include <string>

#include "fixture_util.h"

namespace polyffi_testing {
namespace {

using polyffi::Error;

// Asks the core on the very handle and code received, so the count is the one seen inside a call.
TESTING_GLOBAL("testing.object_use_count", [](PackedArgs args, RetValue* rv) {
  static TVMFunctionHandle use_count = CoreGlobal("runtime.ObjectUseCount");
  CheckArity("testing.object_use_count", args, 1);
  if (!IsObjectCode(args.codes[0])) {
    throw Error("TypeError", std::string("testing.object_use_count: argument 0 expected Object "
                                         "but got ") +
                                 polyffi::TypeCodeName(args.codes[0]));
  }
  CallRaw(use_count, args.values, args.codes, 1).SetTo(rv);
});

// Zero-argument fixtures are packed: polyffi.hpp's typed layer warns on an empty parameter list.
TESTING_GLOBAL("testing.live_objects", [](PackedArgs args, RetValue* rv) {
  CheckArity("testing.live_objects", args, 0);
  rv->Set(LiveObjects());
});

TESTING_GLOBAL("testing.make_array", [](PackedArgs args, RetValue* rv) {
  static TVMFunctionHandle make = CoreGlobal("runtime.Array");
  CallRaw(make, args.values, args.codes, args.size).SetTo(rv);
});

TESTING_GLOBAL("testing.make_map", [](PackedArgs args, RetValue* rv) {
  static TVMFunctionHandle make = CoreGlobal("runtime.Map");
  if (args.size % 2 != 0) {
    throw Error("ValueError", "testing.make_map expected key/value pairs but got " +
                                  std::to_string(args.size) + " arguments");
  }
  CallRaw(make, args.values, args.codes, args.size).SetTo(rv);
});

// Reads an Array from C++ the way any library outside the core must: through the registry.
TESTING_GLOBAL("testing.array_sum_ints",
               Typed(
                   [](polyffi::ObjectRef arr) {
                     static TVMFunctionHandle size_fn = CoreGlobal("runtime.ArraySize");
                     static TVMFunctionHandle get_fn = CoreGlobal("runtime.ArrayGetItem");
                     TVMValue args[2];
                     int codes[2] = {kTVMObjectHandle, kTVMArgInt};
                     args[0].v_handle = arr.get();
                     OwnedValue size = CallRaw(size_fn, args, codes, 1);
                     if (size.code() != kTVMArgInt) {
                       throw Error("TypeError", std::string("runtime.ArraySize returned ") +
                                                    polyffi::TypeCodeName(size.code()));
                     }
                     int64_t total = 0;
                     for (int64_t i = 0; i < size.value().v_int64; ++i) {
                       args[0].v_handle = arr.get();
                       args[1].v_int64 = i;
                       codes[0] = kTVMObjectHandle;
                       codes[1] = kTVMArgInt;
                       OwnedValue item = CallRaw(get_fn, args, codes, 2);
                       int c = item.code();
                       if (c != kTVMArgInt && c != kDLUInt && c != kTVMArgBool) {
                         throw Error("TypeError", "testing.array_sum_ints: item " +
                                                      std::to_string(i) + " expected int but got " +
                                                      polyffi::TypeCodeName(c));
                       }
                       total = CheckedAdd(total, item.value().v_int64, "testing.array_sum_ints");
                     }
                     return total;
                   },
                   "testing.array_sum_ints"));

}  // namespace
}  // namespace polyffi_testing
