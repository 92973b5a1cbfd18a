// Helpers shared by the C ABI tests. Everything here goes through the C header alone: the
// tests must see libpolyffi exactly as a binding does, so no core class and no polyffi.hpp.
#ifndef POLYFFI_C_API_TESTS_C_API_TEST_UTIL_H_
#define POLYFFI_C_API_TESTS_C_API_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace abitests {

// ---- Errors ---------------------------------------------------------------------------------

inline std::string LastError() { return TVMGetLastError(); }

// The test callees' "add": sums int arguments into *sum; false with a TypeError set otherwise.
inline bool SumInts(const TVMValue* args, const int* codes, int n, int64_t* sum) {
  *sum = 0;
  for (int i = 0; i < n; ++i) {
    if (codes[i] != kTVMArgInt) {
      TVMAPISetLastError("TypeError: add takes ints");
      return false;
    }
    *sum += args[i].v_int64;
  }
  return true;
}

/*! \brief The "Kind" of "Kind: message" on the first line of an error text; "" if none. */
inline std::string ErrorKind(const std::string& text) {
  std::string first = text.substr(0, text.find('\n'));
  size_t colon = first.find(": ");
  if (colon == std::string::npos || colon == 0) return "";
  for (size_t i = 0; i < colon; ++i) {
    char c = first[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.';
    if (!ok) return "";
  }
  return first.substr(0, colon);
}

/*!
 * \brief rc is -1 and this thread's last error has the given kind and, if given, contains part.
 *  Asserts kinds and key parts only: the exact wording of messages is not part of the ABI.
 */
inline ::testing::AssertionResult FailsWith(int rc, const std::string& kind,
                                            const std::string& part = "") {
  std::string err = LastError();
  if (rc != -1) {
    return ::testing::AssertionFailure()
           << "expected rc -1, got " << rc << " (last error: '" << err << "')";
  }
  if (ErrorKind(err) != kind) {
    return ::testing::AssertionFailure()
           << "expected kind " << kind << ", got '" << ErrorKind(err) << "' in '" << err << "'";
  }
  if (!part.empty() && err.find(part) == std::string::npos) {
    return ::testing::AssertionFailure() << "expected '" << part << "' in '" << err << "'";
  }
  return ::testing::AssertionSuccess();
}

// ---- Values ---------------------------------------------------------------------------------

struct Arg {
  TVMValue value;
  int code;
};

inline Arg Int(int64_t x, int code = kTVMArgInt) {
  Arg a;
  a.value.v_int64 = x;
  a.code = code;
  return a;
}
inline Arg Bool(bool b) { return Int(b ? 1 : 0, kTVMArgBool); }
inline Arg Float(double x) {
  Arg a;
  a.value.v_float64 = x;
  a.code = kTVMArgFloat;
  return a;
}
inline Arg Str(const char* s) {
  Arg a;
  a.value.v_str = s;
  a.code = kTVMStr;
  return a;
}
inline Arg Bytes(const TVMByteArray* b) {
  Arg a;
  a.value.v_handle = const_cast<TVMByteArray*>(b);
  a.code = kTVMBytes;
  return a;
}
inline Arg Handle(void* h, int code) {
  Arg a;
  a.value.v_handle = h;
  a.code = code;
  return a;
}
inline Arg Obj(void* h) { return Handle(h, kTVMObjectHandle); }
inline Arg Func(void* h) { return Handle(h, kTVMPackedFuncHandle); }
inline Arg None() { return Handle(nullptr, kTVMNullptr); }
inline Arg DType(uint8_t code, uint8_t bits, uint16_t lanes) {
  Arg a;
  a.value.v_type.code = code;
  a.value.v_type.bits = bits;
  a.value.v_type.lanes = lanes;
  a.code = kTVMDataType;
  return a;
}
inline Arg Device(int type, int id) {
  Arg a;
  a.value.v_device.device_type = static_cast<DLDeviceType>(type);
  a.value.v_device.device_id = id;
  a.code = kDLDevice;
  return a;
}

/*! \brief Result of one TVMFuncCall. Strings are copied out of thread-local storage at once. */
struct Ret {
  int rc = -100;
  TVMValue value{};
  int code = -100;
  std::string str;    // kTVMStr / kTVMBytes contents, copied
  std::string error;  // TVMGetLastError() when rc != 0
};

inline Ret CallV(TVMFunctionHandle f, const std::vector<Arg>& args) {
  std::vector<TVMValue> values;
  std::vector<int> codes;
  for (const Arg& a : args) {
    values.push_back(a.value);
    codes.push_back(a.code);
  }
  Ret r;
  r.value.v_int64 = 0;
  r.rc =
      TVMFuncCall(f, values.data(), codes.data(), static_cast<int>(args.size()), &r.value, &r.code);
  if (r.rc != 0) {
    r.error = LastError();
  } else if (r.code == kTVMStr) {
    r.str = r.value.v_str;
  } else if (r.code == kTVMBytes) {
    auto* b = static_cast<TVMByteArray*>(r.value.v_handle);
    r.str.assign(b->data, b->size);
  }
  return r;
}
inline Ret Call(TVMFunctionHandle f, std::initializer_list<Arg> args = {}) {
  return CallV(f, std::vector<Arg>(args));
}

/*! \brief Whether a return type code carries an owned object reference. */
inline bool IsObjectCode(int code) {
  return code == kTVMObjectHandle || code == kTVMModuleHandle || code == kTVMPackedFuncHandle ||
         code == kTVMNDArrayHandle;
}

// ---- Functions --------------------------------------------------------------------------------

/*! \brief A callback as a std::function, so each test states its callback inline. */
using Body = std::function<int(TVMValue* args, int* codes, int num_args, TVMRetValueHandle ret)>;

struct LambdaResource {
  Body body;
  std::atomic<int>* finalized;
};

inline int LambdaTrampoline(TVMValue* args, int* codes, int num_args, TVMRetValueHandle ret,
                            void* resource) {
  return static_cast<LambdaResource*>(resource)->body(args, codes, num_args, ret);
}

inline void LambdaFinalizer(void* resource) {
  auto* r = static_cast<LambdaResource*>(resource);
  if (r->finalized != nullptr) r->finalized->fetch_add(1);
  delete r;
}

/*! \brief A new function (owned: TVMFuncFree) running body; finalized counts finalizer runs. */
inline TVMFunctionHandle MakeFunction(Body body, std::atomic<int>* finalized = nullptr) {
  auto* res = new LambdaResource{std::move(body), finalized};
  TVMFunctionHandle out = nullptr;
  int rc = TVMFuncCreateFromCFunc(LambdaTrampoline, res, LambdaFinalizer, &out);
  EXPECT_EQ(rc, 0) << LastError();
  EXPECT_NE(out, nullptr);
  return out;
}

/*! \brief Set an int return from inside a callback. */
inline int ReturnInt(TVMRetValueHandle ret, int64_t x, int code = kTVMArgInt) {
  TVMValue v;
  v.v_int64 = x;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

inline int ReturnStr(TVMRetValueHandle ret, const char* s) {
  TVMValue v;
  v.v_str = s;
  int code = kTVMStr;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

/*! \brief Echo: returns its first argument (copied / retained by TVMCFuncSetReturn). */
inline TVMFunctionHandle MakeEcho(std::atomic<int>* finalized = nullptr) {
  return MakeFunction(
      [](TVMValue* args, int* codes, int num_args, TVMRetValueHandle ret) {
        if (num_args < 1) return 0;
        return TVMCFuncSetReturn(ret, &args[0], &codes[0], 1);
      },
      finalized);
}

/*! \brief Fails with the given "Kind: message". */
inline TVMFunctionHandle MakeFailing(const std::string& message) {
  return MakeFunction([message](TVMValue*, int*, int, TVMRetValueHandle) {
    TVMAPISetLastError(message.c_str());
    return -1;
  });
}

/*! \brief An owned handle to a global function, released at scope exit. */
class Global {
 public:
  explicit Global(const char* name) : name_(name) {
    int rc = TVMFuncGetGlobal(name, &handle_);
    EXPECT_EQ(rc, 0) << LastError();
    EXPECT_NE(handle_, nullptr) << "global function " << name << " is not registered";
  }
  ~Global() { TVMFuncFree(handle_); }
  Global(const Global&) = delete;
  Global& operator=(const Global&) = delete;
  TVMFunctionHandle get() const { return handle_; }
  operator TVMFunctionHandle() const { return handle_; }  // NOLINT: reads like a handle
  bool ok() const { return handle_ != nullptr; }

 private:
  std::string name_;
  TVMFunctionHandle handle_ = nullptr;
};

// ---- Objects ----------------------------------------------------------------------------------

/*! \brief Reference count of obj through runtime.ObjectUseCount; -1 when the call fails. */
inline int64_t UseCount(void* obj, int code = kTVMObjectHandle) {
  static TVMFunctionHandle f = [] {
    TVMFunctionHandle h = nullptr;
    TVMFuncGetGlobal("runtime.ObjectUseCount", &h);
    return h;  // kept for the whole process, like a binding's cached lookups
  }();
  if (f == nullptr) {
    ADD_FAILURE() << "runtime.ObjectUseCount is not registered";
    return -1;
  }
  Ret r = Call(f, {Handle(obj, code)});
  if (r.rc != 0 || r.code != kTVMArgInt) {
    ADD_FAILURE() << "runtime.ObjectUseCount failed: rc " << r.rc << " code " << r.code << " "
                  << r.error;
    return -1;
  }
  return r.value.v_int64;
}

inline unsigned TypeIndexOfKey(const char* key) {
  unsigned index = 0xFFFFFFFFu;
  EXPECT_EQ(TVMObjectTypeKey2Index(key, &index), 0) << key << ": " << LastError();
  return index;
}

inline unsigned TypeIndexOf(void* obj) {
  unsigned index = 0xFFFFFFFFu;
  EXPECT_EQ(TVMObjectGetTypeIndex(obj, &index), 0) << LastError();
  return index;
}

/*! \brief Call a constructor global (runtime.Array, runtime.Map, ...) that returns an object. */
inline void* MakeObject(const char* ctor, const std::vector<Arg>& args) {
  Global f(ctor);
  if (!f.ok()) return nullptr;
  Ret r = CallV(f, args);
  EXPECT_EQ(r.rc, 0) << ctor << ": " << r.error;
  if (r.rc != 0) return nullptr;
  EXPECT_TRUE(IsObjectCode(r.code)) << ctor << " returned type code " << r.code;
  return r.value.v_handle;
}

}  // namespace abitests

#endif  // POLYFFI_C_API_TESTS_C_API_TEST_UTIL_H_
