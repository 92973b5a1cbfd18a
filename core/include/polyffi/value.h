// TVMValue + type code on both sides of a call: borrowed arguments (Args) and the owning
// return slot (RetValue).
#ifndef POLYFFI_CORE_VALUE_H_
#define POLYFFI_CORE_VALUE_H_

#include <polyffi/c_runtime_api.h>
#include <polyffi/dlpack_compat.h>

#include <string>

#include "polyffi/error.h"
#include "polyffi/object.h"

namespace polyffi {

/*! \brief Name of a type code for messages ("int", "float", "str", ...). */
const char* TypeCodeName(int code);
/*! \brief Whether the code carries an object reference (object, module, function, ndarray). */
inline bool IsObjectCode(int code) {
  return code == kTVMObjectHandle || code == kTVMModuleHandle || code == kTVMPackedFuncHandle ||
         code == kTVMNDArrayHandle || code == kTVMObjectRValueRefArg;
}
/*! \brief The Object* behind an argument of an object code (NDArray handles are DLTensor*). */
Object* ObjectOfArg(TVMValue v, int code);
/*! \brief The type code an object travels with (module, function, ndarray or plain object). */
int ObjectTypeCode(const Object* obj);

/*! \brief Parse "float32", "int8x4", "bool", "handle" into a DLDataType; ValueError if bad. */
DLDataType ParseDataType(const std::string& s);
std::string DataTypeString(DLDataType t);  // ValueError when t has no string form
// For error texts: DataTypeString(t), or "dtype(code, bits, lanes)" when t has no string form.
std::string DataTypeName(DLDataType t);

/*!
 * \brief The return slot of a call; it owns what it holds. Internally object codes hold an
 *  Object* (also for NDArrays), strings and bytes hold a std::string*.
 */
class RetValue {
 public:
  RetValue() { value_.v_handle = nullptr; }
  RetValue(RetValue&& o) noexcept : value_(o.value_), code_(o.code_) { o.code_ = kTVMNullptr; }
  RetValue& operator=(RetValue&& o) noexcept {
    if (this != &o) {
      Clear();
      value_ = o.value_, code_ = o.code_;
      o.code_ = kTVMNullptr;
    }
    return *this;
  }
  RetValue(const RetValue&) = delete;
  RetValue& operator=(const RetValue&) = delete;
  ~RetValue() {
    if (Owns(code_)) ClearOwned();
  }

  /*! \brief Codes copied by value: numbers, bool, None, handles, devices, dtypes, views. */
  static bool IsPlainCode(int code) {
    return (code >= 0 && code < kTVMObjectHandle) || code == kTVMArgBool;
  }
  int type_code() const { return code_; }
  TVMValue value() const { return value_; }
  Object* object() const {
    return IsObjectCode(code_) ? static_cast<Object*>(value_.v_handle) : nullptr;
  }
  const std::string& str() const { return *static_cast<std::string*>(value_.v_handle); }

  void Clear() {
    if (Owns(code_)) ClearOwned();
    code_ = kTVMNullptr;
    value_.v_handle = nullptr;
  }
  void SetNull() { Clear(); }
  void SetInt(int64_t x) { SetPOD(kTVMArgInt).v_int64 = x; }
  void SetBool(bool x) { SetPOD(kTVMArgBool).v_int64 = x ? 1 : 0; }
  void SetFloat(double x) { SetPOD(kTVMArgFloat).v_float64 = x; }
  void SetDevice(DLDevice d) { SetPOD(kDLDevice).v_device = d; }
  void SetDataType(DLDataType t) { SetPOD(kTVMDataType).v_type = t; }
  void SetHandle(void* p) { SetPOD(p ? kTVMOpaqueHandle : kTVMNullptr).v_handle = p; }
  void SetStr(const char* data, size_t size);
  void SetStr(const std::string& s) { SetStr(s.data(), s.size()); }
  void SetBytes(const char* data, size_t size);
  void SetBytes(const std::string& s) { SetBytes(s.data(), s.size()); }
  /*! \brief Hold an object (reference adopted from ptr). */
  template <typename T>
  void SetObject(ObjectPtr<T> ptr) {
    Clear();
    if (!ptr) return;
    code_ = ObjectTypeCode(ptr.get());
    value_.v_handle = static_cast<Object*>(ptr.release());
  }
  /*!
   * \brief Copy a borrowed C value in (the rules of TVMCFuncSetReturn): strings and bytes
   *  copied, objects retained, a kTVMObjectRValueRefArg slot moved out; unknown codes throw.
   */
  void SetFromC(TVMValue v, int code) {
    // Numbers and other plain values stay inline: this is on every call's return path.
    if (IsPlainCode(code)) {
      if (Owns(code_)) ClearOwned();
      code_ = code == kDLUInt ? kTVMArgInt : code;
      value_ = v;
      if (code == kTVMNullptr) value_.v_handle = nullptr;
      return;
    }
    SetFromCSlow(v, code);
  }
  /*! \brief Whether this slot holds something owned (a string, bytes or an object). */
  bool owns_value() const { return Owns(code_); }
  /*!
   * \brief SetFromC for a plain code into a slot that owns nothing: the return setters' fast
   *  path, a leaf with no call. Requires IsPlainCode(code) && !owns_value().
   */
  void SetPlainUnowned(TVMValue v, int code) {
    value_.v_int64 = code == kTVMNullptr ? 0 : v.v_int64;
    code_ = code == kDLUInt ? kTVMArgInt : code;
  }
  /*! \brief Deep copy of another value (objects retained). */
  void CopyFrom(const RetValue& other);
  /*!
   * \brief Hand the value to a C caller: objects transfer (NDArrays as DLTensor*); strings,
   *  bytes and data types go to thread-local storage. Leaves this value empty.
   */
  void MoveToC(TVMValue* v, int* code) {
    // One bit test on every call's return path; stored codes are always in [0, 16).
    constexpr unsigned kSlow =
        1u << kTVMStr | 1u << kTVMBytes | 1u << kTVMDataType | 1u << kTVMNDArrayHandle;
    if ((kSlow >> (static_cast<unsigned>(code_) & 31u)) & 1u) return MoveToCSlow(v, code);
    *v = value_;
    *code = code_;
    code_ = kTVMNullptr;  // an object reference, if any, now belongs to the caller
  }
  /*! \brief A borrowed C view of this value (valid while this value lives and is unchanged). */
  void AsArg(TVMValue* v, int* code, TVMByteArray* bytes_scratch) const;

 private:
  /*! \brief Whether a stored code owns heap memory or a reference (objects, str, bytes). */
  static bool Owns(int code) { return code >= kTVMObjectHandle && code <= kTVMNDArrayHandle; }
  void ClearOwned();
  void SetFromCSlow(TVMValue v, int code);
  void MoveToCSlow(TVMValue* v, int* code);
  TVMValue& SetPOD(int code) {
    if (Owns(code_)) ClearOwned();
    code_ = code;
    return value_;
  }
  TVMValue value_;
  int code_ = kTVMNullptr;
};

/*!
 * \brief Put a copy of data in this thread's return storage and write it into a C slot as kTVMStr
 *  (NUL-terminated) or kTVMBytes (a TVMByteArray in the storage), as MoveToC does for a string
 *  result. data may point into the current return storage.
 */
void ReturnStringToC(const char* data, size_t size, bool is_bytes, TVMValue* v, int* code);
/*! \brief A kTVMDataType written into a C slot as its string (the C ABI returns dtypes so). */
void ReturnDataTypeToC(DLDataType t, TVMValue* v, int* code);

/*! \brief Borrowed arguments of a call, with checked accessors naming the function. */
class Args {
 public:
  Args(const TVMValue* values, const int* codes, int size, const char* fname)
      : values_(values), codes_(codes), size_(size), fname_(fname) {}
  int size() const { return size_; }
  int code(int i) const { return codes_[i]; }
  TVMValue value(int i) const { return values_[i]; }
  const TVMValue* values() const { return values_; }
  const int* codes() const { return codes_; }
  const char* fname() const { return fname_; }

  void CheckArity(int n) const;
  void CheckMinArity(int n) const;
  int64_t Int(int i) const;
  double Float(int i) const;
  bool Bool(int i) const;
  std::string Str(int i) const;
  /*! \brief The object at i (retained); TypeError unless its type is (derived from) tindex. */
  ObjectPtr<Object> Obj(int i, uint32_t tindex = TypeIndex::kObject) const;
  template <typename T>
  ObjectPtr<T> ObjAs(int i) const {
    ObjectPtr<Object> o = Obj(i, T::kTypeIndex);
    return ObjectPtr<T>::Adopt(static_cast<T*>(o.release()));
  }
  [[noreturn]] void Mismatch(int i, const char* expected) const;

 private:
  const TVMValue* values_;
  const int* codes_;
  int size_;
  const char* fname_;
};

}  // namespace polyffi
#endif  // POLYFFI_CORE_VALUE_H_
