// Fuzz target: the dtype string parser and printer (dtype_string.h, shared by the core, the
// graph executor, the fixtures and the bindings) and the C ABI paths over them:
// runtime.String2DLDataType, runtime.DLDataType2String, testing.dtype and a dtype's trip
// through testing.echo (dtypes come back as strings).
//
// Properties: whatever prints reads back as the same dtype (uint1 prints "bool" and reads
// back as kDLBool, the one documented alias); whatever parses prints; the C ABI agrees with
// the header, and fails with a "Kind: message" error where the header refuses.
//
// (The core has no device string parser: devices cross the ABI as DLDevice values, which
// fuzz_args sends through testing.device and testing.echo. Device names are parsed only by
// the Python binding.)
#include <polyffi/dtype_string.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_common.h"

namespace {

bool Same(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

// What a printed dtype must read back as.
DLDataType Canonical(DLDataType t) {
  if (t.code == kDLUInt && t.bits == 1) return DLDataType{kDLBool, 8, t.lanes};
  return t;
}

// Calls f(arg) and returns rc; on success the returned string (dtypes return as strings).
int CallOne(TVMFunctionHandle f, TVMValue v, int code, std::string* out) {
  TVMValue rv;
  int rc = kTVMNullptr;
  int r = TVMFuncCall(f, &v, &code, 1, &rv, &rc);
  if (r != 0) {
    fuzz::CheckFailure(r);
    return r;
  }
  FUZZ_CHECK(rc == kTVMStr);
  *out = rv.v_str;
  return 0;
}

void CheckPrinted(DLDataType t) {
  static TVMFunctionHandle to_string = fuzz::Global("runtime.DLDataType2String");
  static TVMFunctionHandle echo = fuzz::Global("testing.echo");
  char buf[32];
  std::memset(buf, 'x', sizeof(buf));
  int ok = PolyffiDataTypeToString(t, buf, sizeof(buf));
  FUZZ_CHECK(std::memchr(buf, '\0', sizeof(buf)) != nullptr);  // always a C string
  TVMValue v;
  v.v_type = t;
  std::string via_abi, via_echo;
  int r1 = CallOne(to_string, v, kTVMDataType, &via_abi);
  int r2 = CallOne(echo, v, kTVMDataType, &via_echo);
  if (ok != 0) {
    FUZZ_CHECK(r1 != 0 && r2 != 0);  // no string form: the ABI refuses too
    DLDataType back;
    FUZZ_CHECK(PolyffiDataTypeFromString(buf, &back) != 0);  // the description is no dtype
    return;
  }
  FUZZ_CHECK(r1 == 0 && r2 == 0 && via_abi == buf && via_echo == buf);
  DLDataType back;
  FUZZ_CHECK(PolyffiDataTypeFromString(buf, &back) == 0);
  FUZZ_CHECK(Same(back, Canonical(t)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TVMFunctionHandle from_string = fuzz::Global("runtime.String2DLDataType");
  static TVMFunctionHandle testing_dtype = fuzz::Global("testing.dtype");
  // The first four bytes, as a DLDataType, through the printer.
  if (size >= 4) {
    DLDataType t;
    t.code = data[0];
    t.bits = data[1];
    t.lanes = static_cast<uint16_t>(data[2] | (data[3] << 8));
    CheckPrinted(t);
  }
  // The whole input, as a string, through the parser (which stops at an embedded NUL, as
  // every C caller would).
  std::string s(reinterpret_cast<const char*>(data), size);
  DLDataType t;
  int parsed = PolyffiDataTypeFromString(s.c_str(), &t);
  TVMValue v;
  v.v_str = s.c_str();
  std::string via_abi, via_fixture;
  int r1 = CallOne(from_string, v, kTVMStr, &via_abi);
  int r2 = CallOne(testing_dtype, v, kTVMStr, &via_fixture);
  FUZZ_CHECK((r1 == 0) == (parsed == 0));
  FUZZ_CHECK(r2 != 0 || parsed == 0);  // the fixture accepts a subset (storage dtypes)
  if (parsed == 0) {
    CheckPrinted(t);
    char buf[32];
    FUZZ_CHECK(PolyffiDataTypeToString(t, buf, sizeof(buf)) == 0);
    FUZZ_CHECK(via_abi == buf && (r2 != 0 || via_fixture == buf));
  }
  return 0;
}
