// testing.* fixtures for values: echo, arithmetic, strings, bytes, devices, dtypes, errors.
#include <polyffi/dtype_string.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fixture_util.h"

namespace polyffi_testing {
namespace {

using polyffi::Error;

// The cheapest possible call: benchmarks measure the call path against it, so it is a bare
// direct C function that leaves the caller's slot as the caller pre-set it, None
// (polyffi/c_direct_api.h).
int Nop(void*, const TVMValue*, const int*, int, TVMValue*, int*) { return 0; }
TESTING_GLOBAL("testing.nop", Nop);

// Returns its argument exactly as received: TVMCFuncSetReturn copies strings, retains objects and
// moves out of an rvalue-ref slot, so every type code round-trips with identity.
TESTING_GLOBAL("testing.echo", [](PackedArgs args, RetValue* rv) {
  CheckArity("testing.echo", args, 1);
  rv->SetRaw(args.values[0], args.codes[0]);
});

TESTING_GLOBAL("testing.add",
               Typed([](int64_t a, int64_t b) { return CheckedAdd(a, b, "testing.add"); },
                     "testing.add"));

TESTING_GLOBAL(
    "testing.add3",
    Typed([](int64_t a, int64_t b,
             int64_t c) { return CheckedAdd(CheckedAdd(a, b, "testing.add3"), c, "testing.add3"); },
          "testing.add3"));

TESTING_GLOBAL("testing.sum", [](PackedArgs args, RetValue* rv) {
  int64_t total = 0;
  for (int i = 0; i < args.size; ++i) {
    int c = args.codes[i];
    if (c != kTVMArgInt && c != kDLUInt && c != kTVMArgBool) {
      throw Error("TypeError", "testing.sum: argument " + std::to_string(i) +
                                   " expected int but got " + polyffi::TypeCodeName(c));
    }
    total = CheckedAdd(total, args.values[i].v_int64, "testing.sum");
  }
  rv->Set(total);
});

TESTING_GLOBAL("testing.concat", [](PackedArgs args, RetValue* rv) {
  std::string out;
  for (int i = 0; i < args.size; ++i) {
    try {
      out += args[i].as<std::string>();
    } catch (const Error& e) {
      throw Error(e.kind(), "testing.concat: argument " + std::to_string(i) + " " + e.message());
    }
  }
  // Set(std::string) sends a result with an embedded NUL as a runtime.String object.
  rv->Set(out);
});

TESTING_GLOBAL("testing.bytes_reverse", Typed(
                                            [](polyffi::Bytes b) {
                                              std::reverse(b.data.begin(), b.data.end());
                                              return b;
                                            },
                                            "testing.bytes_reverse"));

TESTING_GLOBAL("testing.return_type", [](PackedArgs args, RetValue* rv) {
  CheckArity("testing.return_type", args, 1);
  rv->Set(polyffi::TypeCodeName(args.codes[0]));
});

bool IsErrorKind(const std::string& kind) {
  if (kind.empty()) return false;
  return std::all_of(kind.begin(), kind.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
  });
}

TESTING_GLOBAL("testing.raise_error",
               Typed(
                   [](std::string kind, std::string msg) {
                     if (!IsErrorKind(kind)) {
                       throw Error("ValueError", "testing.raise_error: invalid error kind '" +
                                                     kind + "' (expected [A-Za-z0-9_.]+)");
                     }
                     throw Error(kind, msg);
                   },
                   "testing.raise_error"));

int32_t ToInt32(int64_t x, const char* what) {
  if (x < INT32_MIN || x > INT32_MAX) {
    throw Error("ValueError", std::string("testing.device: ") + what + " " + std::to_string(x) +
                                  " does not fit in int32");
  }
  return static_cast<int32_t>(x);
}

// testing.device(device_type, device_id), or testing.device(dev) returning dev itself.
TESTING_GLOBAL("testing.device", [](PackedArgs args, RetValue* rv) {
  if (args.size == 1) {
    rv->Set(args[0].as<DLDevice>());
    return;
  }
  if (args.size != 2) {
    throw Error("TypeError",
                "testing.device expected 2 arguments (device_type: int, device_id: int) or 1 "
                "(dev: Device) but got " +
                    std::to_string(args.size));
  }
  for (int i = 0; i < 2; ++i) {
    if (args.codes[i] != kTVMArgInt && args.codes[i] != kDLUInt) {
      throw Error("TypeError", "testing.device: argument " + std::to_string(i) +
                                   " expected int but got " + polyffi::TypeCodeName(args.codes[i]));
    }
  }
  DLDevice dev;
  int32_t device_type = ToInt32(args.values[0].v_int64, "device_type");
  std::memcpy(&dev.device_type, &device_type, sizeof(device_type));  // any int32, as on the wire
  dev.device_id = ToInt32(args.values[1].v_int64, "device_id");
  rv->Set(dev);
});

/*!
 * \brief The storage dtypes int8..int64, uint8..uint64, float16..float64 (optionally "xLANES"),
 *  bool and handle, parsed the shared way (polyffi/dtype_string.h) so they read back the same.
 */
DLDataType ParseDType(const std::string& text) {
  DLDataType t;
  bool ok = PolyffiDataTypeFromString(text.c_str(), &t) == 0;
  if (ok && (t.code == kDLInt || t.code == kDLUInt)) {
    ok = t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
  } else if (ok && t.code == kDLFloat) {
    ok = t.bits == 16 || t.bits == 32 || t.bits == 64;
  } else if (ok) {
    ok = (t.code == kDLBool || t.code == kDLOpaqueHandle) && t.lanes == 1;
  }
  if (!ok) throw Error("ValueError", "testing.dtype: unknown dtype '" + text + "'");
  return t;
}

TESTING_GLOBAL("testing.dtype",
               Typed([](std::string s) { return ParseDType(s); }, "testing.dtype"));

// An unsigned result: the argument's bits with type code kDLUInt, which a direct callee may write
// (TVMFuncCall turns it into an int; callers of the direct entry see it as written).
TESTING_GLOBAL("testing.uint", [](PackedArgs args, RetValue* rv) {
  CheckArity("testing.uint", args, 1);
  if (args.codes[0] != kTVMArgInt) {
    throw Error("TypeError", std::string("testing.uint: argument 0 expected int but got ") +
                                 polyffi::TypeCodeName(args.codes[0]));
  }
  rv->SetRaw(args.values[0], kDLUInt);
});

}  // namespace
}  // namespace polyffi_testing
