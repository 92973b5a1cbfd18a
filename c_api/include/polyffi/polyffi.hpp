// polyffi C++ convenience layer: header-only, built on the C ABI alone.
//
// This is how C++ outside libpolyffi (fixtures, plugins, model kernels, C++ users) talks to the
// runtime: RAII handles, typed functions made from ordinary lambdas with checked argument
// conversion, and a registration macro. It links nothing but the TVM* C API, so there is one
// registry and one type table per process however many libraries include it.
#ifndef POLYFFI_POLYFFI_HPP_
#define POLYFFI_POLYFFI_HPP_

#include <polyffi/c_direct_api.h>
#include <polyffi/c_runtime_api.h>
#include <polyffi/dtype_string.h>
#include <polyffi/type_code_name.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace polyffi {
// An inline namespace of its own: the same names (polyffi::Error, polyffi::RetValue) stay usable,
// but the symbols never collide with the core's internal classes of those names, which matters
// where this header is compiled into libpolyffi itself (the graph executor).
inline namespace cxx {

// ---- Errors ------------------------------------------------------------------------------------

/*! \brief An error with a kind ("ValueError", ...) and a message; crosses the ABI as text. */
class Error : public std::runtime_error {
 public:
  Error(std::string kind, const std::string& message)
      : std::runtime_error(message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }
  std::string message() const { return what(); }
  /*! \brief "Kind: message", the form TVMAPISetLastError takes. */
  std::string full() const { return kind_ + ": " + what(); }

  /*! \brief Parse TVMGetLastError()'s first line into kind and message. */
  static Error FromLastError() {
    std::string text = TVMGetLastError();
    std::string first = text.substr(0, text.find('\n'));
    size_t colon = first.find(": ");
    if (colon != std::string::npos && colon > 0) {
      bool ok = true;
      for (size_t i = 0; i < colon; ++i) {
        char c = first[i];
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.');
      }
      if (ok) return Error(first.substr(0, colon), text.substr(colon + 2));
    }
    return Error("TVMError", text);
  }

 private:
  std::string kind_;
};

/*!
 * \brief A call returned -2: the host language already has an error pending. A C++ body that
 *  lets it propagate makes its own caller see -2 as well.
 */
struct HostErrorPending {};

/*! \brief Throw for a failed call's status rc: HostErrorPending for -2, else the last error. */
[[noreturn, gnu::noinline, gnu::cold]] inline void ThrowCallError(int rc) {
  if (rc == -2) throw HostErrorPending();
  throw Error::FromLastError();
}

/*! \brief Throw from the last error when rc != 0 (HostErrorPending for -2). */
inline void CheckCall(int rc) {
  if (__builtin_expect(rc != 0, 0)) ThrowCallError(rc);
}

/*! \brief Name of a type code as used in error messages. */
inline const char* TypeCodeName(int code) { return PolyffiTypeCodeName(code); }

// ---- Handles -----------------------------------------------------------------------------------

/*! \brief An owned reference to any object handle (function, module, object, container). */
class ObjectRef {
 public:
  ObjectRef() = default;
  /*! \brief Adopt an owned handle. */
  static ObjectRef Adopt(void* handle) { return ObjectRef(handle); }
  /*! \brief Retain a borrowed handle. */
  static ObjectRef Borrow(void* handle) {
    TVMObjectRetain(handle);
    return ObjectRef(handle);
  }
  ObjectRef(const ObjectRef& o) : handle_(o.handle_) { TVMObjectRetain(handle_); }
  ObjectRef(ObjectRef&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  ObjectRef& operator=(ObjectRef o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  ~ObjectRef() {
    if (handle_) TVMObjectFree(handle_);  // most values carry no object: skip the call
  }
  void* get() const { return handle_; }
  /*! \brief Give up ownership. */
  void* release() { return std::exchange(handle_, nullptr); }
  explicit operator bool() const { return handle_ != nullptr; }
  uint32_t type_index() const {
    unsigned t = 0;
    CheckCall(TVMObjectGetTypeIndex(handle_, &t));
    return t;
  }
  std::string type_key() const {
    char* key = nullptr;
    CheckCall(TVMObjectTypeIndex2Key(type_index(), &key));
    return key;
  }

 protected:
  explicit ObjectRef(void* h) : handle_(h) {}
  void* handle_ = nullptr;
};

class Function;

namespace detail {

/*!
 * \brief Whether a result code is one a classic call hands back as it is and owns nothing:
 *  int, float, opaque handle, None, device, DLTensor view, bool. Everything else (kDLUInt and
 *  kTVMDataType from a direct callee, strings, objects, refused codes) takes the slow path.
 */
constexpr bool IsReadyPlainCode(int code) {
  constexpr uint32_t kReady = 1u << kTVMArgInt | 1u << kTVMArgFloat | 1u << kTVMOpaqueHandle |
                              1u << kTVMNullptr | 1u << kDLDevice | 1u << kTVMDLTensorHandle |
                              1u << kTVMArgBool;
  return static_cast<unsigned>(code) < 32 && ((kReady >> code) & 1u) != 0;
}

/*!
 * \brief Make what a direct callee wrote into the slot what TVMFuncCall returns for it: kDLUInt
 *  reads as int, a dtype becomes its string (in the thread's return storage, as a classic call
 *  gives it); an rvalue reference or an unknown code is refused with TypeError (the slot left
 *  None: such a slot owns nothing). Other codes are left as they are.
 */
[[gnu::noinline, gnu::cold]] inline void NormalizeDirectResult(TVMValue* v, int* code) {
  int c = *code;
  if (c == kDLUInt) {
    *code = kTVMArgInt;
  } else if (c == kTVMDataType) {
    DLDataType t = v->v_type;
    char buf[48];
    if (PolyffiDataTypeToString(t, buf, sizeof(buf)) != 0) {
      v->v_handle = nullptr;
      *code = kTVMNullptr;
      throw Error("ValueError", "dtype (code " + std::to_string(t.code) + ", bits " +
                                    std::to_string(t.bits) + ", lanes " + std::to_string(t.lanes) +
                                    ") has no string form that would read back as itself");
    }
    v->v_handle = nullptr;
    *code = kTVMNullptr;
    CheckCall(TVMDirectReturnString(buf, std::strlen(buf), 0, v, code));
  } else if (c == kTVMObjectRValueRefArg || c < 0 || c > kTVMArgBool) {
    v->v_handle = nullptr;
    *code = kTVMNullptr;
    throw Error("TypeError", c == kTVMObjectRValueRefArg
                                 ? std::string("callback returned an unsupported value: an "
                                               "rvalue reference argument")
                                 : "callback returned an unsupported value: unknown type code " +
                                       std::to_string(c));
  }
}

}  // namespace detail

/*!
 * \brief An owned value returned by a call: numbers, strings (copied out of thread-local
 *  storage at once), and object references.
 *
 *  A plain value (int, float, None, ...) is a TVMValue and a type code and nothing else: making,
 *  reading and destroying one costs a few instructions and no call. A string or an object lives
 *  in a union that is constructed only for those codes.
 */
class Any {
 public:
  Any() noexcept { value_.v_handle = nullptr; }
  Any(const Any& o) : value_(o.value_), code_(kTVMNullptr) {
    if (IsStrCode(o.code_)) {
      new (&str_) std::string(o.str_);
    } else if (IsObjectCode(o.code_)) {
      new (&obj_) ObjectRef(o.obj_);
    }
    code_ = o.code_;
  }
  Any(Any&& o) noexcept { TakeFrom(o); }
  Any& operator=(const Any& o) {
    if (this != &o) *this = Any(o);
    return *this;
  }
  Any& operator=(Any&& o) noexcept {
    if (this != &o) {
      Reset();
      TakeFrom(o);
    }
    return *this;
  }
  ~Any() { Reset(); }

  /*! \brief Take a value that TVMFuncCall (or a direct callee) just returned. */
  static Any FromReturn(TVMValue v, int code) {
    Any a;
    a.FillFromReturn(v, code);
    return a;
  }
  static bool IsObjectCode(int code) {
    return code == kTVMObjectHandle || code == kTVMModuleHandle || code == kTVMPackedFuncHandle ||
           code == kTVMNDArrayHandle;
  }
  /*! \brief The object handle of an object-coded value (an NDArray's DLTensor* is its handle). */
  static void* ObjectHandleOf(TVMValue v, int code) {
    return code == kTVMNDArrayHandle ? NDArrayObjectOf(v.v_handle) : v.v_handle;
  }
  /*! \brief polyffi NDArray handles point at the DLTensor inside the object; see ndarray docs. */
  static void* NDArrayObjectOf(void* dltensor);

  int type_code() const { return code_; }
  bool is_none() const { return code_ == kTVMNullptr; }
  int64_t as_int() const {
    if (!CodeIn(code_, Bit(kTVMArgInt) | Bit(kDLUInt) | Bit(kTVMArgBool))) Mismatch("int");
    return value_.v_int64;
  }
  bool as_bool() const {
    if (!CodeIn(code_, Bit(kTVMArgInt) | Bit(kTVMArgBool))) Mismatch("bool");
    return value_.v_int64 != 0;
  }
  double as_float() const {
    if (code_ == kTVMArgFloat) return value_.v_float64;
    if (CodeIn(code_, Bit(kTVMArgInt) | Bit(kTVMArgBool))) {
      return static_cast<double>(value_.v_int64);
    }
    Mismatch("float");
  }
  const std::string& as_str() const {
    if (!IsStrCode(code_)) Mismatch("str");
    return str_;
  }
  const ObjectRef& as_object() const {
    if (!IsObjectCode(code_)) Mismatch("Object");
    return obj_;
  }
  /*! \brief The plain value (a null handle for strings and objects). */
  TVMValue raw() const { return value_; }

 private:
  friend class Function;
  /*! \brief A plain value that needs nothing more (detail::IsReadyPlainCode). */
  Any(TVMValue v, int code) noexcept : value_(v), code_(code) {}
  [[gnu::noinline]] static Any FromOther(TVMValue v, int code) {
    Any a;
    a.FillOther(v, code);
    return a;
  }
  static constexpr uint32_t Bit(int code) { return 1u << code; }
  /*! \brief Codes 8-13 (objects, strings, bytes, NDArrays) own something; all else is plain. */
  static constexpr bool OwnsStorage(int code) {
    return static_cast<unsigned>(code - kTVMObjectHandle) <= kTVMNDArrayHandle - kTVMObjectHandle;
  }
  static constexpr bool CodeIn(int code, uint32_t mask) {
    return static_cast<unsigned>(code) < 32 && ((mask >> code) & 1u) != 0;
  }
  static bool IsStrCode(int code) { return code == kTVMStr || code == kTVMBytes; }

  /*!
   * \brief Fill an empty Any (code None) from a call's return, as TVMFuncCall or a direct
   *  callee wrote it; plain values take one branch.
   */
  void FillFromReturn(TVMValue v, int code) {
    if (__builtin_expect(detail::IsReadyPlainCode(code), 1)) {
      value_ = v;
      code_ = code;
      return;
    }
    FillOther(v, code);
  }
  [[gnu::noinline]] void FillOther(TVMValue v, int code) {
    if (!OwnsStorage(code)) {
      detail::NormalizeDirectResult(&v, &code);  // uint, dtype; throws for refused codes
      if (!OwnsStorage(code)) {
        value_ = v;
        code_ = code;
        return;
      }
    }
    if (code == kTVMStr) {
      new (&str_) std::string(v.v_str);
    } else if (code == kTVMBytes) {
      auto* b = static_cast<TVMByteArray*>(v.v_handle);
      new (&str_) std::string(b->data, b->size);
    } else if (code == kTVMNDArrayHandle) {
      void* obj = nullptr;
      try {
        obj = NDArrayObjectOf(v.v_handle);
      } catch (...) {
        TVMArrayFree(static_cast<TVMArrayHandle>(v.v_handle));  // the reference is ours
        throw;
      }
      new (&obj_) ObjectRef(ObjectRef::Adopt(obj));
    } else {
      new (&obj_) ObjectRef(ObjectRef::Adopt(v.v_handle));
    }
    code_ = code;
  }
  /*! \brief Move o's value into this empty Any; o is left None. */
  void TakeFrom(Any& o) noexcept {
    value_ = o.value_;
    code_ = o.code_;
    if (IsStrCode(code_)) {
      new (&str_) std::string(std::move(o.str_));
    } else if (IsObjectCode(code_)) {
      new (&obj_) ObjectRef(std::move(o.obj_));
    }
    o.Reset();
  }
  void Reset() noexcept {
    if (__builtin_expect(OwnsStorage(code_), 0)) {
      if (IsStrCode(code_)) {
        str_.~basic_string();
      } else {
        obj_.~ObjectRef();
      }
    }
    code_ = kTVMNullptr;
    value_.v_handle = nullptr;
  }
  [[noreturn]] void Mismatch(const char* want) const {
    throw Error("TypeError", std::string("expected ") + want + " but got " + TypeCodeName(code_));
  }

  TVMValue value_;
  int code_ = kTVMNullptr;
  union {
    std::string str_;  // active for kTVMStr, kTVMBytes
    ObjectRef obj_;    // active for object codes
  };
};

// ---- Argument packing --------------------------------------------------------------------------

namespace detail {

inline void Pack(TVMValue* v, int* c, int64_t x) { v->v_int64 = x, *c = kTVMArgInt; }
inline void Pack(TVMValue* v, int* c, int x) { v->v_int64 = x, *c = kTVMArgInt; }
inline void Pack(TVMValue* v, int* c, bool x) { v->v_int64 = x, *c = kTVMArgBool; }
inline void Pack(TVMValue* v, int* c, double x) { v->v_float64 = x, *c = kTVMArgFloat; }
inline void Pack(TVMValue* v, int* c, const char* x) { v->v_str = x, *c = kTVMStr; }
inline void Pack(TVMValue* v, int* c, const std::string& x) { v->v_str = x.c_str(), *c = kTVMStr; }
inline void Pack(TVMValue* v, int* c, std::nullptr_t) { v->v_handle = nullptr, *c = kTVMNullptr; }
inline void Pack(TVMValue* v, int* c, DLDevice x) { v->v_device = x, *c = kDLDevice; }
inline void Pack(TVMValue* v, int* c, DLDataType x) { v->v_type = x, *c = kTVMDataType; }
inline void Pack(TVMValue* v, int* c, DLTensor* x) { v->v_handle = x, *c = kTVMDLTensorHandle; }
inline void Pack(TVMValue* v, int* c, TVMByteArray* x) { v->v_handle = x, *c = kTVMBytes; }
inline void Pack(TVMValue* v, int* c, const ObjectRef& x) {
  v->v_handle = x.get(), *c = kTVMObjectHandle;
}
inline void Pack(TVMValue* v, int* c, const Function& f);

/*! \brief A call's arguments packed as C arrays; data() / codes() are NULL for no arguments. */
template <typename... Args>
struct PackedCall {
  static constexpr size_t N = sizeof...(Args);
  explicit PackedCall(Args&&... args) {
    size_t i = 0;
    (void)i;
    ((Pack(&values[i], &type_codes[i], std::forward<Args>(args)), ++i), ...);
  }
  TVMValue* data() { return N > 0 ? values : nullptr; }
  int* codes() { return N > 0 ? type_codes : nullptr; }
  int size() const { return static_cast<int>(N); }
  TVMValue values[N > 0 ? N : 1];
  int type_codes[N > 0 ? N : 1];
};

}  // namespace detail

class AnyView;

/*!
 * \brief An owned function handle; calling it packs C++ values into TVMValues.
 *
 *  A Function asks the runtime once, when it takes its reference, for the handle's direct entry
 *  (TVMFuncGetDirect) and calls that entry inline: one indirect call, no exported entry point
 *  and no validation of a handle it already holds. An empty Function (or a handle the runtime
 *  has no direct entry for) goes through TVMFuncCall, which reports the error.
 */
class Function : public ObjectRef {
 public:
  Function() = default;
  Function(const Function&) = default;
  Function& operator=(const Function&) = default;
  /*! \brief A moved-from Function is empty: its calls go to TVMFuncCall's typed error. */
  Function(Function&& o) noexcept
      : ObjectRef(std::move(o)),
        direct_(std::exchange(o.direct_, &CallChecked)),
        resource_(std::exchange(o.resource_, nullptr)) {}
  Function& operator=(Function&& o) noexcept {
    if (this != &o) {
      ObjectRef::operator=(std::move(o));
      direct_ = std::exchange(o.direct_, &CallChecked);
      resource_ = std::exchange(o.resource_, nullptr);
    }
    return *this;
  }
  static Function Adopt(TVMFunctionHandle h) { return Function(h); }
  static Function Borrow(TVMFunctionHandle h) {
    TVMObjectRetain(h);
    return Function(h);
  }
  /*! \brief The global function NAME, or an empty Function when missing. */
  static Function GetGlobal(const char* name) {
    TVMFunctionHandle h = nullptr;
    CheckCall(TVMFuncGetGlobal(name, &h));
    return Function(h);
  }
  /*! \brief The global function NAME; throws ValueError when missing. */
  static Function GetGlobalRequired(const char* name) {
    Function f = GetGlobal(name);
    if (!f) throw Error("ValueError", std::string("Cannot find global function ") + name);
    return f;
  }
  template <typename... Args>
  Any operator()(Args&&... args) const {
    detail::PackedCall<Args...> p(std::forward<Args>(args)...);
    return CallPacked(p.data(), p.codes(), p.size());
  }
  /*!
   * \brief Call and return a view: strings and bytes are NOT copied but borrowed from the
   *  runtime's per-thread return storage. See AnyView for the lifetime rule.
   */
  template <typename... Args>
  AnyView CallView(Args&&... args) const;

  Any CallPacked(TVMValue* values, int* codes, int n) const {
    TVMValue rv;
    int rc = kTVMNullptr;
    CallUnnormalized(values, codes, n, &rv, &rc);
    // Built in the caller's object (a prvalue): a plain result is two stores, nothing else.
    if (__builtin_expect(detail::IsReadyPlainCode(rc), 1)) return Any(rv, rc);
    return Any::FromOther(rv, rc);
  }
  /*!
   * \brief The raw call: on success *rv / *rc hold the result as TVMFuncCall returns it (an
   *  object code carries one reference for the caller); throws on failure.
   */
  void CallRaw(TVMValue* values, int* codes, int n, TVMValue* rv, int* rc) const {
    CallUnnormalized(values, codes, n, rv, rc);
    // An int (the usual result) first: one compare, which a caller's own test of the code
    // then shares.
    if (__builtin_expect(*rc != kTVMArgInt && !detail::IsReadyPlainCode(*rc), 0)) {
      detail::NormalizeDirectResult(rv, rc);
    }
  }

 private:
  explicit Function(void* h) : ObjectRef(h) {
    // Not a function (or the runtime refuses): keep the checked TVMFuncCall path, which turns
    // the handle's problem into a typed error at call time.
    if (h != nullptr && TVMFuncGetDirect(h, &direct_, &resource_) != 0) {
      direct_ = &CallChecked;
      resource_ = h;
    }
  }
  /*! \brief The entry of an empty Function or a handle without a pair: TVMFuncCall, checked. */
  static int CallChecked(void* handle, const TVMValue* values, const int* codes, int n,
                         TVMValue* rv, int* rc) {
    return TVMFuncCall(handle, const_cast<TVMValue*>(values), const_cast<int*>(codes), n, rv, rc);
  }
  /*!
   * \brief The call, with the result as the callee wrote it: a direct callee's kDLUInt or
   *  kTVMDataType is not yet made what TVMFuncCall returns (Any and AnyView do that on their
   *  slow path, CallRaw right after).
   */
  void CallUnnormalized(TVMValue* values, int* codes, int n, TVMValue* rv, int* rc) const {
    rv->v_handle = nullptr;
    *rc = kTVMNullptr;
    CheckCall(direct_(resource_, values, codes, n, rv, rc));  // never NULL: see CallChecked
  }
  // Valid while this Function holds its reference; copied with it, taken by a move.
  TVMDirectCFunc direct_ = &CallChecked;
  void* resource_ = nullptr;
};

/*!
 * \brief A call's result that borrows strings instead of copying them (Function::CallView).
 *
 *  Lifetime rule: the characters behind as_str_view() live in the calling thread's return
 *  storage and stay valid until that thread's next call into the runtime (any TVM* function,
 *  including another call through polyffi.hpp). Copy them (std::string(view.as_str_view()))
 *  before making another call if you need them longer. Plain values and objects have no such
 *  limit: an object result is an owned reference, exactly as in Any.
 */
class AnyView {
 public:
  AnyView(const AnyView&) = delete;
  AnyView& operator=(const AnyView&) = delete;
  AnyView(AnyView&& o) noexcept : value_(o.value_), code_(o.code_), obj_(std::move(o.obj_)) {}
  int type_code() const { return code_; }
  bool is_none() const { return code_ == kTVMNullptr; }
  int64_t as_int() const {
    if (code_ != kTVMArgInt && code_ != kDLUInt && code_ != kTVMArgBool) Mismatch("int");
    return value_.v_int64;
  }
  double as_float() const {
    if (code_ == kTVMArgFloat) return value_.v_float64;
    if (code_ == kTVMArgInt || code_ == kTVMArgBool) return static_cast<double>(value_.v_int64);
    Mismatch("float");
  }
  /*! \brief A string or bytes result, borrowed: valid until this thread's next runtime call. */
  std::string_view as_str_view() const {
    if (code_ == kTVMStr) return std::string_view(value_.v_str);
    if (code_ == kTVMBytes) {
      auto* b = static_cast<const TVMByteArray*>(value_.v_handle);
      return std::string_view(b->data, b->size);
    }
    Mismatch("str");
  }
  const ObjectRef& as_object() const {
    if (!Any::IsObjectCode(code_)) Mismatch("Object");
    return obj_;
  }
  /*! \brief The raw value (for strings: the borrowed pointer). */
  TVMValue raw() const { return value_; }

 private:
  friend class Function;
  /*! \brief From a call's result as the callee wrote it (Function::CallUnnormalized). */
  AnyView(TVMValue v, int code) : value_(v), code_(code) {
    if (__builtin_expect(!detail::IsReadyPlainCode(code), 0)) FillOther();
  }
  [[gnu::noinline]] void FillOther() {
    // A direct callee's uint or dtype: as TVMFuncCall returns it (the dtype's string borrowed
    // from the return storage, as any string result here).
    if (!Any::IsObjectCode(code_) && code_ != kTVMStr && code_ != kTVMBytes) {
      detail::NormalizeDirectResult(&value_, &code_);
    }
    if (Any::IsObjectCode(code_)) {
      // Take the reference in the same form as Any (an NDArray by its object handle).
      Any owned = Any::FromReturn(value_, code_);
      obj_ = owned.as_object();
    }
  }
  [[noreturn]] void Mismatch(const char* want) const {
    throw Error("TypeError", std::string("expected ") + want + " but got " + TypeCodeName(code_));
  }
  TVMValue value_;
  int code_;
  ObjectRef obj_;
};

template <typename... Args>
AnyView Function::CallView(Args&&... args) const {
  detail::PackedCall<Args...> p(std::forward<Args>(args)...);
  TVMValue rv;
  int rc;
  CallUnnormalized(p.data(), p.codes(), p.size(), &rv, &rc);
  return AnyView(rv, rc);
}

inline void detail::Pack(TVMValue* v, int* c, const Function& f) {
  v->v_handle = f.get(), *c = kTVMPackedFuncHandle;
}

inline void* Any::NDArrayObjectOf(void* dltensor) {
  // The runtime exposes the mapping through a registered global so this layer needs no layout
  // knowledge; looked up once. There is no fallback: the DLTensor* is not an object handle,
  // and retaining or freeing it as one would write into the tensor.
  static TVMFunctionHandle f = [] {
    TVMFunctionHandle h = nullptr;
    TVMFuncGetGlobal("runtime.NDArrayObjectHandle", &h);
    return h;
  }();
  if (dltensor == nullptr) return nullptr;
  if (f == nullptr) {
    throw Error("RuntimeError", "runtime.NDArrayObjectHandle is not registered");
  }
  TVMValue arg, rv;
  int code = kTVMNDArrayHandle, rc = kTVMNullptr;
  arg.v_handle = dltensor;
  CheckCall(TVMFuncCall(f, &arg, &code, 1, &rv, &rc));
  if (rc != kTVMOpaqueHandle || rv.v_handle == nullptr) {
    throw Error("RuntimeError", "runtime.NDArrayObjectHandle returned no object handle");
  }
  return rv.v_handle;
}

// ---- Typed arguments ---------------------------------------------------------------------------

/*! \brief Bytes as a distinct C++ type, so a typed function can ask for kTVMBytes. */
struct Bytes {
  std::string data;
};

/*! \brief A borrowed DLTensor view (kTVMDLTensorHandle or an NDArray). */
struct TensorView {
  DLTensor* tensor;
};

/*! \brief A borrowed argument of a packed call. */
class ArgValue {
 public:
  ArgValue(TVMValue v, int code) : value_(v), code_(code) {}
  int type_code() const { return code_; }
  TVMValue raw() const { return value_; }
  template <typename T>
  T as() const;

 private:
  TVMValue value_;
  int code_;
};

/*! \brief Conversion of one argument; specialised per supported C++ type. */
template <typename T, typename = void>
struct ArgTraits;

namespace detail {

/*! \brief Bytes of a runtime.String object, through the registered accessor (looked up once). */
inline std::string StringObjectBytes(void* handle) {
  static TVMFunctionHandle f = [] {
    TVMFunctionHandle h = nullptr;
    TVMFuncGetGlobal("runtime.StringBytes", &h);
    return h;
  }();
  TVMValue arg, rv;
  int code = kTVMObjectHandle, rc = kTVMNullptr;
  arg.v_handle = handle;
  CheckCall(TVMFuncCall(f, &arg, &code, 1, &rv, &rc));
  auto* b = static_cast<TVMByteArray*>(rv.v_handle);
  return std::string(b->data, b->size);
}

inline bool IsStringObject(void* handle) {
  static unsigned string_index = [] {
    unsigned t = ~0u;
    TVMObjectTypeKey2Index("runtime.String", &t);
    return t;
  }();
  unsigned t = 0;
  return handle != nullptr && TVMObjectGetTypeIndex(handle, &t) == 0 && t == string_index;
}

}  // namespace detail

template <typename T>
struct ArgTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static const char* Name() { return "int"; }
  static bool Check(int c) { return c == kTVMArgInt || c == kDLUInt || c == kTVMArgBool; }
  static T Get(TVMValue v, int) { return static_cast<T>(v.v_int64); }
};
template <>
struct ArgTraits<bool> {
  static const char* Name() { return "bool"; }
  static bool Check(int c) { return c == kTVMArgBool || c == kTVMArgInt; }
  static bool Get(TVMValue v, int) { return v.v_int64 != 0; }
};
template <typename T>
struct ArgTraits<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static const char* Name() { return "float"; }
  static bool Check(int c) { return c == kTVMArgFloat || c == kTVMArgInt || c == kTVMArgBool; }
  static T Get(TVMValue v, int c) {
    return static_cast<T>(c == kTVMArgFloat ? v.v_float64 : static_cast<double>(v.v_int64));
  }
};
template <>
struct ArgTraits<std::string> {
  static const char* Name() { return "str"; }
  static bool Check(int c) { return c == kTVMStr || c == kTVMBytes || c == kTVMObjectHandle; }
  static bool CheckValue(TVMValue v, int c) {
    return c != kTVMObjectHandle || detail::IsStringObject(v.v_handle);
  }
  static std::string Get(TVMValue v, int c) {
    if (c == kTVMStr) return v.v_str;
    if (c == kTVMBytes) {
      auto* b = static_cast<TVMByteArray*>(v.v_handle);
      return std::string(b->data, b->size);
    }
    return detail::StringObjectBytes(v.v_handle);
  }
};
template <>
struct ArgTraits<Bytes> {
  static const char* Name() { return "bytes"; }
  static bool Check(int c) { return c == kTVMBytes; }
  static Bytes Get(TVMValue v, int) {
    auto* b = static_cast<TVMByteArray*>(v.v_handle);
    return Bytes{std::string(b->data, b->size)};
  }
};
template <>
struct ArgTraits<DLDevice> {
  static const char* Name() { return "Device"; }
  static bool Check(int c) { return c == kDLDevice; }
  static DLDevice Get(TVMValue v, int) { return v.v_device; }
};
template <>
struct ArgTraits<DLDataType> {
  static const char* Name() { return "dtype"; }
  static bool Check(int c) { return c == kTVMDataType; }
  static DLDataType Get(TVMValue v, int) { return v.v_type; }
};
template <>
struct ArgTraits<TensorView> {
  static const char* Name() { return "NDArray"; }
  static bool Check(int c) { return c == kTVMDLTensorHandle || c == kTVMNDArrayHandle; }
  static TensorView Get(TVMValue v, int) { return TensorView{static_cast<DLTensor*>(v.v_handle)}; }
};
template <>
struct ArgTraits<Function> {
  static const char* Name() { return "Function"; }
  static bool Check(int c) { return c == kTVMPackedFuncHandle; }
  static Function Get(TVMValue v, int) { return Function::Borrow(v.v_handle); }
};
template <>
struct ArgTraits<ObjectRef> {
  static const char* Name() { return "Object"; }
  static bool Check(int c) {
    return c == kTVMObjectHandle || c == kTVMModuleHandle || c == kTVMPackedFuncHandle ||
           c == kTVMNDArrayHandle;
  }
  static ObjectRef Get(TVMValue v, int c) { return ObjectRef::Borrow(Any::ObjectHandleOf(v, c)); }
};
template <>
struct ArgTraits<ArgValue> {
  static const char* Name() { return "Any"; }
  static bool Check(int) { return true; }
  static ArgValue Get(TVMValue v, int c) { return ArgValue(v, c); }
};

namespace detail {
template <typename T, typename = void>
struct HasCheckValue : std::false_type {};
template <typename T>
struct HasCheckValue<T, std::void_t<decltype(T::CheckValue(TVMValue{}, 0))>> : std::true_type {};

template <typename T>
bool ArgMatches(TVMValue v, int c) {
  using Tr = ArgTraits<T>;
  if (!Tr::Check(c)) return false;
  if constexpr (HasCheckValue<Tr>::value) return Tr::CheckValue(v, c);
  return true;
}
}  // namespace detail

template <typename T>
T ArgValue::as() const {
  using U = std::decay_t<T>;
  if (!detail::ArgMatches<U>(value_, code_)) {
    throw Error("TypeError", std::string("expected ") + ArgTraits<U>::Name() + " but got " +
                                 TypeCodeName(code_));
  }
  return ArgTraits<U>::Get(value_, code_);
}

// ---- Return values -----------------------------------------------------------------------------

/*!
 * \brief The return slot of a packed call.
 *
 *  Either a classic TVMRetValueHandle (results go through TVMCFuncSetReturn) or, inside a
 *  function made by this header, the caller's own slot of the direct protocol
 *  (polyffi/c_direct_api.h): plain values are stored there directly, strings and bytes are
 *  copied into the thread's return storage (TVMDirectReturnString), objects are retained (or
 *  moved out of an rvalue-ref argument) so the slot holds one reference for the caller. Setting
 *  again replaces, and releases, what was there. The semantics are TVMCFuncSetReturn's.
 *
 *  One rule is particular to the direct slot: a string result lives in the thread's return
 *  storage, so set it after the body's last call into the runtime (a later call that itself
 *  returns a string reuses that storage).
 */
class RetValue {
 public:
  explicit RetValue(TVMRetValueHandle h) : handle_(h) {}
  /*! \brief The caller's slot of a direct call; it must hold None (as the caller pre-sets it). */
  RetValue(TVMValue* slot, int* slot_code) : slot_(slot), slot_code_(slot_code) {}
  void SetRaw(TVMValue v, int code) {
    if (slot_ == nullptr) {
      CheckCall(TVMCFuncSetReturn(handle_, &v, &code, 1));
    } else if (__builtin_expect(IsPlain(code) && !slot_owns_, 1)) {
      *slot_ = v;  // the usual case: a plain value into a slot that owns nothing
      *slot_code_ = code;
    } else {
      SetDirectSlow(v, code);
    }
  }
  /*! \brief Release whatever the direct slot owns and leave it None (failure paths). */
  void ClearDirect() noexcept {
    int code = *slot_code_;
    void* h = slot_->v_handle;
    slot_->v_handle = nullptr;
    *slot_code_ = kTVMNullptr;
    slot_owns_ = false;
    if (code == kTVMNDArrayHandle) {
      TVMArrayFree(static_cast<TVMArrayHandle>(h));
    } else if (Any::IsObjectCode(code)) {
      TVMObjectFree(h);
    }
  }
  void Set(std::nullptr_t) { SetRaw(TVMValue{}, kTVMNullptr); }
  void Set(bool x) { Raw(x ? 1 : 0, kTVMArgBool); }
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  void Set(T x) {
    Raw(static_cast<int64_t>(x), kTVMArgInt);
  }
  void Set(double x) {
    TVMValue v;
    v.v_float64 = x;
    SetRaw(v, kTVMArgFloat);
  }
  void Set(float x) { Set(static_cast<double>(x)); }
  void Set(const char* s) {
    TVMValue v;
    v.v_str = s;
    SetRaw(v, kTVMStr);
  }
  /*! \brief Strings with an embedded NUL travel as a runtime.String object
   *  (docs/spec/abi.md section 6, objects and containers). */
  void Set(const std::string& s) {
    if (s.find('\0') == std::string::npos) return Set(s.c_str());
    static Function make = Function::GetGlobalRequired("runtime.String");
    TVMByteArray b{s.data(), s.size()};
    Any obj = make(&b);
    SetRaw(ObjectValue(obj), kTVMObjectHandle);
  }
  void Set(const Bytes& b) {
    TVMByteArray arr{b.data.data(), b.data.size()};
    TVMValue v;
    v.v_handle = &arr;
    SetRaw(v, kTVMBytes);
  }
  void Set(DLDevice d) {
    TVMValue v;
    v.v_device = d;
    SetRaw(v, kDLDevice);
  }
  void Set(DLDataType t) {
    TVMValue v;
    v.v_type = t;
    SetRaw(v, kTVMDataType);
  }
  void Set(const Function& f) {
    TVMValue v;
    v.v_handle = f.get();
    SetRaw(v, f ? kTVMPackedFuncHandle : kTVMNullptr);
  }
  void Set(const ObjectRef& o) {
    TVMValue v;
    v.v_handle = o.get();
    SetRaw(v, o ? kTVMObjectHandle : kTVMNullptr);
  }
  void Set(const Any& a) {
    if (a.type_code() == kTVMStr || a.type_code() == kTVMBytes) {
      if (a.type_code() == kTVMStr) return Set(a.as_str());
      return Set(Bytes{a.as_str()});
    }
    if (Any::IsObjectCode(a.type_code())) {
      TVMValue v;
      v.v_handle = a.as_object().get();
      return SetRaw(v, a.type_code() == kTVMNDArrayHandle ? kTVMObjectHandle : a.type_code());
    }
    SetRaw(a.raw(), a.type_code());
  }
  void Set(ArgValue a) { SetRaw(a.raw(), a.type_code()); }

 private:
  /*! \brief Codes a slot holds by value, owning nothing: numbers, handles, None, views. */
  static constexpr bool IsPlain(int code) {
    return static_cast<unsigned>(code) <= kTVMDLTensorHandle || code == kTVMArgBool;
  }
  [[gnu::noinline]] void SetDirectSlow(TVMValue v, int code) {
    // The usual non-plain result, a string into a slot that holds no reference: one copy into
    // the thread's return storage, out of line so this frame stays small.
    if (code == kTVMStr && !slot_owns_ && v.v_str != nullptr) return SetDirectStr(v.v_str);
    if (code < 0 || code > kTVMArgBool) {
      throw Error("TypeError", "callback returned an unsupported value: unknown type code " +
                                   std::to_string(code));
    }
    if (IsPlain(code)) {
      ClearDirect();
      *slot_ = v;
      *slot_code_ = code;
      return;
    }
    if (code == kTVMStr || code == kTVMBytes) {
      const char* data;
      size_t size;
      if (code == kTVMStr) {
        if (v.v_str == nullptr) throw Error("ValueError", "string value is NULL");
        data = v.v_str;
        size = std::strlen(v.v_str);
      } else {
        auto* b = static_cast<const TVMByteArray*>(v.v_handle);
        if (b == nullptr || (b->data == nullptr && b->size != 0)) {
          throw Error("ValueError", "bytes value is NULL");
        }
        data = b->data;
        size = b->size;
      }
      ClearDirect();
      CheckCall(TVMDirectReturnString(data, size, code == kTVMBytes ? 1 : 0, slot_, slot_code_));
      return;
    }
    // Objects, NDArrays and rvalue refs: take the caller's reference first (so replacing a
    // value by itself is safe), then release the old one.
    CheckCall(TVMCbArgToReturn(&v, &code));
    ClearDirect();
    *slot_ = v;
    *slot_code_ = code;
    slot_owns_ = Any::IsObjectCode(code);
  }
  [[gnu::noinline]] void SetDirectStr(const char* str) {
    CheckCall(TVMDirectReturnString(str, std::strlen(str), 0, slot_, slot_code_));
  }
  static TVMValue ObjectValue(const Any& a) {
    TVMValue v;
    v.v_handle = a.as_object().get();
    return v;
  }
  void Raw(int64_t x, int code) {
    TVMValue v;
    v.v_int64 = x;
    SetRaw(v, code);
  }
  TVMRetValueHandle handle_ = nullptr;
  TVMValue* slot_ = nullptr;
  int* slot_code_ = nullptr;
  // Whether the direct slot holds an object reference. The caller hands the slot over holding
  // None, so a body's first plain result is two stores and no load of the slot's code.
  bool slot_owns_ = false;
};

template <typename T>
struct RetName {
  static const char* Name() {
    if constexpr (std::is_void_v<T>) {
      return "None";
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, const char*>) {
      return "str";
    } else if constexpr (std::is_same_v<T, Any>) {
      return "Any";
    } else {
      return ArgTraits<std::decay_t<T>>::Name();
    }
  }
};

// ---- Packed and typed functions ----------------------------------------------------------------

/*! \brief The arguments of a packed call. */
class PackedArgs {
 public:
  PackedArgs(TVMValue* v, int* c, int n) : values(v), codes(c), size(n) {}
  ArgValue operator[](int i) const { return ArgValue(values[i], codes[i]); }
  TVMValue* values;
  int* codes;
  int size;
};

using PackedBody = std::function<void(PackedArgs, RetValue*)>;

namespace detail {

/*! \brief The one exception barrier of a C++ callback: error kind and message become text. */
template <typename F>
int GuardedCall(F&& body) {
  try {
    body();
    return 0;
  } catch (const HostErrorPending&) {
    return -2;
  } catch (const Error& e) {
    TVMAPISetLastError(e.full().c_str());
  } catch (const std::bad_alloc&) {
    TVMAPISetLastError("RuntimeError: out of memory");
  } catch (const std::exception& e) {
    // TVMThrowLastError's exception carries the last error's whole text: leave that error (and
    // any host exception attached to it) as it is.
    if (std::strcmp(e.what(), TVMGetLastError()) != 0) {
      TVMAPISetLastError((std::string("RuntimeError: ") + e.what()).c_str());
    }
  } catch (...) {
    TVMAPISetLastError("InternalError: unknown C++ exception");
  }
  return -1;
}

/*!
 * \brief The direct entry of a function made by this header: the body writes the caller's slot
 *  through a direct RetValue. On failure the slot is emptied, so no reference is left in it.
 */
template <typename Body>
int DirectTrampoline(void* resource, const TVMValue* args, const int* codes, int n,
                     TVMValue* ret_val, int* ret_code) {
  // The protocol hands over a valid slot: no test for the classic (NULL slot) form.
  if (ret_val == nullptr) __builtin_unreachable();
  RetValue rv(ret_val, ret_code);
  int status = GuardedCall([&] {
    // The argument arrays are the caller's (TVMFuncCall's are not const); PackedArgs exposes
    // them as the classic callback does.
    (*static_cast<Body*>(resource))(
        PackedArgs(const_cast<TVMValue*>(args), const_cast<int*>(codes), n), &rv);
  });
  if (__builtin_expect(status != 0, 0)) rv.ClearDirect();
  return status;
}

template <typename Body>
void Deleter(void* resource) {
  delete static_cast<Body*>(resource);
}

template <typename R, typename... Args>
std::string Signature(const std::string& name) {
  std::ostringstream os;
  os << name << "(";
  size_t i = 0;
  ((os << (i ? ", " : "") << i << ": " << ArgTraits<std::decay_t<Args>>::Name(), ++i), ...);
  os << ") -> " << RetName<R>::Name();
  return os.str();
}

/*!
 * \brief The errors of a typed call, out of line and cold: the hot path of every typed trampoline
 *  stays a short leaf with no stream or string on its frame.
 */
template <typename R, typename... Args>
[[noreturn, gnu::noinline, gnu::cold]] void ThrowArgCount(const std::string& name, int got) {
  constexpr int n = sizeof...(Args);
  std::ostringstream os;
  os << Signature<R, Args...>(name) << ": expected " << n << " argument" << (n == 1 ? "" : "s")
     << " but got " << got;
  throw Error("TypeError", os.str());
}
template <typename R, typename... Args>
[[noreturn, gnu::noinline, gnu::cold]] void ThrowArgType(const std::string& name, int i,
                                                         const char* want, int code) {
  std::ostringstream os;
  os << Signature<R, Args...>(name) << ": argument " << i << " expected " << want << " but got "
     << TypeCodeName(code);
  throw Error("TypeError", os.str());
}

template <typename R, typename... Args, typename F, size_t... I>
void InvokeTyped(const F& f, const std::string& name, PackedArgs args, RetValue* rv,
                 std::index_sequence<I...>) {
  constexpr int n = sizeof...(Args);
  if (__builtin_expect(args.size != n, 0)) ThrowArgCount<R, Args...>(name, args.size);
  [[maybe_unused]] auto check = [&](int i, bool ok, const char* want) {
    if (__builtin_expect(!ok, 0)) ThrowArgType<R, Args...>(name, i, want, args.codes[i]);
  };
  (check(static_cast<int>(I), ArgMatches<std::decay_t<Args>>(args.values[I], args.codes[I]),
         ArgTraits<std::decay_t<Args>>::Name()),
   ...);
  if constexpr (std::is_void_v<R>) {
    f(ArgTraits<std::decay_t<Args>>::Get(args.values[I], args.codes[I])...);
    rv->Set(nullptr);
  } else {
    rv->Set(f(ArgTraits<std::decay_t<Args>>::Get(args.values[I], args.codes[I])...));
  }
}

/*!
 * \brief A typed body with its name: callable as a packed body, and known to MakeFromBody, which
 *  gives it TypedDirectTrampoline instead of the generic one.
 */
template <typename F, typename R, typename... A>
struct TypedClosure {
  F f;
  std::string name;
  void operator()(PackedArgs args, RetValue* rv) const {
    InvokeTyped<R, A...>(f, name, args, rv, std::index_sequence_for<A...>{});
  }
};
template <typename T>
struct IsTypedClosure : std::false_type {};
template <typename F, typename R, typename... A>
struct IsTypedClosure<TypedClosure<F, R, A...>> : std::true_type {};

/*!
 * \brief The hot path's test of one argument: an integer parameter takes the usual kTVMArgInt in
 *  one compare; anything else it may also take (uint, bool) goes the generic way.
 */
template <typename T>
inline bool ArgFastMatch(TVMValue v, int c) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return c == kTVMArgInt;
  } else {
    return ArgMatches<T>(v, c);
  }
}

/*!
 * \brief A typed call the hot path did not take (a count or code other than the usual ones): the
 *  generic trampoline checks the arguments in full and either calls the body or reports the
 *  mismatch (index, name, signature). Out of line so the hot path needs no frame for it.
 */
template <typename C>
[[gnu::noinline, gnu::cold]] int TypedSlowPath(void* resource, const TVMValue* args,
                                               const int* codes, int n, TVMValue* ret_val,
                                               int* ret_code) {
  return DirectTrampoline<C>(resource, args, codes, n, ret_val, ret_code);
}

template <typename F, typename R, typename... A, size_t... I>
int TypedDirectCall(void* resource, const TVMValue* args, const int* codes, int n,
                    TVMValue* ret_val, int* ret_code, std::index_sequence<I...>) {
  using C = TypedClosure<F, R, A...>;
  // Arity and every argument's code tested inline; the unusual cases go the generic way.
  if (__builtin_expect(n != static_cast<int>(sizeof...(A)) ||
                           !(true && ... && ArgFastMatch<std::decay_t<A>>(args[I], codes[I])),
                       0)) {
    return TypedSlowPath<C>(resource, args, codes, n, ret_val, ret_code);
  }
  if (ret_val == nullptr) __builtin_unreachable();
  const C& c = *static_cast<const C*>(resource);
  RetValue rv(ret_val, ret_code);
  int status = GuardedCall([&] {
    if constexpr (std::is_void_v<R>) {
      c.f(ArgTraits<std::decay_t<A>>::Get(args[I], codes[I])...);
      rv.Set(nullptr);
    } else {
      rv.Set(c.f(ArgTraits<std::decay_t<A>>::Get(args[I], codes[I])...));
    }
  });
  if (__builtin_expect(status != 0, 0)) rv.ClearDirect();
  return status;
}

/*! \brief The direct entry of a typed body: TypedDirectCall for its argument list. */
template <typename F, typename R, typename... A>
int TypedDirectTrampoline(void* resource, const TVMValue* args, const int* codes, int n,
                          TVMValue* ret_val, int* ret_code) {
  return TypedDirectCall<F, R, A...>(resource, args, codes, n, ret_val, ret_code,
                                     std::index_sequence_for<A...>{});
}
template <typename C>
struct TypedEntry;
/*! \brief Whether RetValue::Set(R) writes only codes a classic call returns (never a dtype). */
template <typename R>
inline constexpr bool kClassicResult =
    std::is_void_v<R> || std::is_arithmetic_v<R> || std::is_same_v<R, std::string> ||
    std::is_same_v<R, const char*> || std::is_same_v<R, DLDevice>;
template <typename F, typename R, typename... A>
struct TypedEntry<TypedClosure<F, R, A...>> {
  static constexpr TVMDirectCFunc value = &TypedDirectTrampoline<F, R, A...>;
  static constexpr int flags = kClassicResult<std::decay_t<R>> ? TVM_DIRECT_CLASSIC_RESULTS : 0;
};

template <typename T>
struct FnTraits : FnTraits<decltype(&T::operator())> {};
template <typename C, typename R, typename... A>
struct FnTraits<R (C::*)(A...) const> {
  using Ret = R;
  /*! \brief The typed body as a concrete closure (no std::function on the call path). */
  template <typename F>
  static auto Closure(F f, std::string name) {
    return TypedClosure<F, R, A...>{std::move(f), std::move(name)};
  }
  template <typename F>
  static PackedBody Wrap(F f, std::string name) {
    return Closure(std::move(f), std::move(name));
  }
};
template <typename C, typename R, typename... A>
struct FnTraits<R (C::*)(A...)> : FnTraits<R (C::*)(A...) const> {};
template <typename R, typename... A>
struct FnTraits<R (*)(A...)> : FnTraits<R (std::function<R(A...)>::*)(A...) const> {};

}  // namespace detail

/*!
 * \brief Make a function from any callable body(PackedArgs, RetValue*); the trampoline is
 *  instantiated for its concrete type, so calls reach it without type erasure.
 */
template <typename Body>
Function MakeFromBody(Body body) {
  auto* resource = new Body(std::move(body));
  TVMFunctionHandle h = nullptr;
  // A direct function: the caller's slot is written in place (no TVMCFuncSetReturn, no
  // staging). On failure the runtime runs the finalizer itself, so the resource never leaks.
  // A typed body gets its own entry: arguments tested and loaded inline, the result written
  // straight into the slot.
  // A typed body whose result type gives only classic codes says so: TVMFuncCall then checks
  // nothing after the call.
  TVMDirectCFunc entry;
  int flags = 0;
  if constexpr (detail::IsTypedClosure<Body>::value) {
    entry = detail::TypedEntry<Body>::value;
    flags = detail::TypedEntry<Body>::flags;
  } else {
    entry = detail::DirectTrampoline<Body>;
  }
  CheckCall(TVMFuncCreateDirectEx(entry, resource, detail::Deleter<Body>, flags, &h));
  return Function::Adopt(h);
}

/*! \brief Make a function from a packed body: body(PackedArgs, RetValue*). */
inline Function MakePacked(PackedBody body) { return MakeFromBody(std::move(body)); }

/*!
 * \brief Make a function from an ordinary lambda or function pointer; argument types are checked
 *  and mismatches reported with index, name and signature.
 */
template <typename F>
Function MakeTyped(F f, std::string name = "<lambda>") {
  return MakeFromBody(detail::FnTraits<std::decay_t<F>>::Closure(std::move(f), std::move(name)));
}

/*! \brief Register f as the global NAME. */
inline void RegisterGlobal(const std::string& name, const Function& f, bool override = false) {
  CheckCall(TVMFuncRegisterGlobal(name.c_str(), f.get(), override ? 1 : 0));
}

/*! \brief Helper behind POLYFFI_REGISTER_GLOBAL. */
class Registerer {
 public:
  explicit Registerer(const char* name) : name_(name) {}
  template <typename F>
  Registerer& set_body_typed(F f) {
    Register(MakeTyped(std::move(f), name_));
    return *this;
  }
  Registerer& set_body_packed(PackedBody body) {
    Register(MakePacked(std::move(body)));
    return *this;
  }

 private:
  void Register(const Function& f) {
    // Static initialisers must not throw: a registration failure is reported once on stderr.
    int rc = TVMFuncRegisterGlobal(name_.c_str(), f.get(), 0);
    if (rc != 0)
      std::fprintf(stderr, "polyffi: cannot register %s: %s\n", name_.c_str(), TVMGetLastError());
  }
  std::string name_;
};

#define POLYFFI_STR_CONCAT_(a, b) a##b
#define POLYFFI_STR_CONCAT(a, b) POLYFFI_STR_CONCAT_(a, b)
/*!
 * \brief Register a global at load time:
 *   POLYFFI_REGISTER_GLOBAL("my.add").set_body_typed([](int64_t a, int64_t b) { return a + b; });
 */
#define POLYFFI_REGISTER_GLOBAL(name)                                                           \
  [[maybe_unused]] static ::polyffi::Registerer POLYFFI_STR_CONCAT(polyffi_reg_, __COUNTER__) = \
      ::polyffi::Registerer(name)

}  // namespace cxx
}  // namespace polyffi

#endif  // POLYFFI_POLYFFI_HPP_
