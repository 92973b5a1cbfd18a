// Value conversion: the owning return slot and checked argument access.
#include "polyffi/value.h"

#include <polyffi/dtype_string.h>
#include <polyffi/type_code_name.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "polyffi/container.h"
#include "polyffi/ndarray.h"

namespace polyffi {

const char* TypeCodeName(int code) { return PolyffiTypeCodeName(code); }

Object* ObjectOfArg(TVMValue v, int code) {
  switch (code) {
    case kTVMNDArrayHandle:
      return v.v_handle ? NDArrayObj::FromHandle(static_cast<DLTensor*>(v.v_handle)) : nullptr;
    case kTVMObjectRValueRefArg:
      return v.v_handle ? *static_cast<Object**>(v.v_handle) : nullptr;
    default:
      return static_cast<Object*>(v.v_handle);
  }
}

int ObjectTypeCode(const Object* obj) {
  switch (obj->type_index()) {
    case TypeIndex::kFunction:
      return kTVMPackedFuncHandle;
    case TypeIndex::kModule:
      return kTVMModuleHandle;
    case TypeIndex::kNDArray:
      return kTVMNDArrayHandle;
    default:
      return kTVMObjectHandle;
  }
}

DLDataType ParseDataType(const std::string& s) {
  DLDataType t;
  if (PolyffiDataTypeFromString(s.c_str(), &t) != 0) Throw("ValueError", "unknown dtype '", s, "'");
  return t;
}

std::string DataTypeString(DLDataType t) {
  char buf[32];
  // Only strings that parse back to t are handed out; the rest would not survive a round trip.
  if (PolyffiDataTypeToString(t, buf, sizeof(buf)) != 0) {
    Throw("ValueError", "dtype (code ", int(t.code), ", bits ", int(t.bits), ", lanes ",
          int(t.lanes), ") has no string form that would read back as itself");
  }
  return buf;
}

std::string DataTypeName(DLDataType t) {
  char buf[32];
  if (PolyffiDataTypeToString(t, buf, sizeof(buf)) == 0) return buf;
  return "dtype(" + std::to_string(t.code) + ", " + std::to_string(t.bits) + ", " +
         std::to_string(t.lanes) + ")";
}

// ---- RetValue ----

namespace {

/*!
 * \brief Per-thread state of string values: a pool of string buffers, so a string result costs
 *  no allocation once warm (buffers keep their capacity from one call to the next; one released
 *  on another thread joins that thread's pool), and the storage strings and bytes are returned
 *  to C callers in.
 */
struct ValueTls {
  static constexpr size_t kMaxPooled = 16;
  static constexpr size_t kMaxCapacity = 1 << 16;  // larger buffers go back to the allocator
  std::vector<std::string*> free;
  // The last str and bytes results handed to C: the value's own buffer changes hands (no copy,
  // no swap); the one it replaces goes back to the pool.
  std::string* ret_str = nullptr;
  std::string* ret_bytes_data = nullptr;
  TVMByteArray ret_bytes{nullptr, 0};
  /*!
   * \brief Where ReturnStringToC copies a string: one buffer per kind, written in place while
   *  the string and its NUL fit, so a warm copy is one memmove and no allocation. A string is
   *  written in place when its size is below fast_capacity, the buffer's size (0 while there is
   *  no buffer, or it is too big to keep and must be reallocated first).
   */
  struct CopyBuffer {
    char* data = nullptr;
    size_t fast_capacity = 0;
  };
  CopyBuffer str_copy, bytes_copy;
  ~ValueTls() {
    for (std::string* p : free) delete p;
    delete ret_str;
    delete ret_bytes_data;
    delete[] str_copy.data;
    delete[] bytes_copy.data;
  }
};

/*!
 * \brief The one thread-local the string path reads: a plain pointer, so every access is a single
 *  TLS lookup with no guard variable or wrapper call (a thread_local object with a constructor
 *  costs several per access). Null until first use; kDead after the thread's teardown freed it.
 */
__thread ValueTls* tls_values = nullptr;
ValueTls* const kDead = reinterpret_cast<ValueTls*>(uintptr_t{1});

/*! \brief Frees the thread's ValueTls at thread exit and marks it dead for later releases. */
struct ValueTlsReaper {
  bool armed = false;
  ~ValueTlsReaper() {
    if (tls_values != nullptr && tls_values != kDead) delete tls_values;
    tls_values = kDead;
  }
};

[[gnu::noinline]] ValueTls* CreateValueTls() {
  thread_local ValueTlsReaper reaper;  // constructed here, on first use in this thread
  reaper.armed = true;
  ValueTls* state = new ValueTls();
  tls_values = state;
  return state;
}

/*! \brief This thread's state, created on first use; nullptr once the thread is exiting. */
inline ValueTls* Values() {
  ValueTls* state = tls_values;
  if (__builtin_expect(state == nullptr, 0)) return CreateValueTls();
  return state == kDead ? nullptr : state;
}

std::string* AcquireString(const char* data, size_t size) {
  ValueTls* state = tls_values;  // a released buffer exists only where state was created
  std::string* p;
  if (state != nullptr && state != kDead && !state->free.empty()) {
    p = state->free.back();
    state->free.pop_back();
    p->assign(data, size);
  } else {
    p = new std::string(data, size);
  }
  return p;
}

/*! \brief Pool p in state (nullptr: the thread is exiting) or free it. */
void ReleaseStringTo(ValueTls* state, std::string* p) {
  if (state != nullptr && p->capacity() <= ValueTls::kMaxCapacity &&
      state->free.size() < ValueTls::kMaxPooled) {
    state->free.push_back(p);
  } else {
    delete p;
  }
}

void ReleaseString(std::string* p) { ReleaseStringTo(Values(), p); }

/*! \brief The thread's return storage; a thread past its teardown gets a fresh state. */
ValueTls& Store() {
  ValueTls* state = Values();
  if (__builtin_expect(state == nullptr, 0)) {
    // A string returned to C from a thread-exit destructor that runs after the reaper: the
    // pointer handed out must stay valid, so this state outlives the thread (at most once).
    state = new ValueTls();
    tls_values = state;
  }
  return *state;
}

}  // namespace

void RetValue::ClearOwned() {
  switch (code_) {
    case kTVMStr:
    case kTVMBytes:
      ReleaseString(static_cast<std::string*>(value_.v_handle));
      break;
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle:
      static_cast<Object*>(value_.v_handle)->DecRef();
      break;
    default:
      break;
  }
  code_ = kTVMNullptr;
  value_.v_handle = nullptr;
}

void RetValue::SetStr(const char* data, size_t size) {
  Clear();
  value_.v_handle = AcquireString(data, size);
  code_ = kTVMStr;
}

void RetValue::SetBytes(const char* data, size_t size) {
  Clear();
  value_.v_handle = AcquireString(data, size);
  code_ = kTVMBytes;
}

void RetValue::SetFromCSlow(TVMValue v, int code) {
  switch (code) {
    case kTVMArgInt:
    case kDLUInt:
    case kTVMArgBool:
    case kTVMArgFloat:
    case kTVMOpaqueHandle:
    case kTVMNullptr:
    case kTVMDataType:
    case kDLDevice:
    case kTVMDLTensorHandle:
      Clear();
      value_ = v;
      code_ = code == kDLUInt ? kTVMArgInt : code;
      if (code_ == kTVMNullptr) value_.v_handle = nullptr;
      return;
    case kTVMStr:
      if (v.v_str == nullptr) Throw("ValueError", "string value is NULL");
      return SetStr(v.v_str, std::strlen(v.v_str));
    case kTVMBytes: {
      auto* b = static_cast<TVMByteArray*>(v.v_handle);
      if (b == nullptr || (b->data == nullptr && b->size != 0)) {
        Throw("ValueError", "bytes value is NULL");
      }
      return SetBytes(b->data, b->size);
    }
    case kTVMObjectRValueRefArg: {
      auto** slot = static_cast<Object**>(v.v_handle);
      if (slot == nullptr || *slot == nullptr) return SetNull();
      Object* obj = *slot;
      *slot = nullptr;  // moved out: the reference is now ours
      return SetObject(ObjectPtr<Object>::Adopt(obj));
    }
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle: {
      Object* obj = ObjectOfArg(v, code);
      if (obj == nullptr) return SetNull();
      return SetObject(ObjectPtr<Object>::Borrow(obj));
    }
    default:
      Throw("TypeError", "unknown type code ", code);
  }
}

void RetValue::CopyFrom(const RetValue& other) {
  if (this == &other) return;
  switch (other.code_) {
    case kTVMStr:
      return SetStr(other.str());
    case kTVMBytes:
      return SetBytes(other.str().data(), other.str().size());
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle:
      return SetObject(ObjectPtr<Object>::Borrow(other.object()));
    default:
      Clear();
      value_ = other.value_;
      code_ = other.code_;
  }
}

TVMByteArray* ThreadLocalReturnBytes() { return &Store().ret_bytes; }

void RetValue::MoveToCSlow(TVMValue* v, int* code) {
  switch (code_) {
    case kTVMStr: {
      ValueTls& s = Store();
      std::string* p = static_cast<std::string*>(value_.v_handle);
      code_ = kTVMNullptr;  // the buffer now belongs to the thread's return storage
      v->v_str = p->c_str();
      *code = kTVMStr;
      if (std::string* prev = std::exchange(s.ret_str, p)) ReleaseStringTo(&s, prev);
      return;
    }
    case kTVMBytes: {
      ValueTls& s = Store();
      std::string* p = static_cast<std::string*>(value_.v_handle);
      code_ = kTVMNullptr;
      s.ret_bytes = TVMByteArray{p->data(), p->size()};
      v->v_handle = &s.ret_bytes;
      *code = kTVMBytes;
      if (std::string* prev = std::exchange(s.ret_bytes_data, p)) ReleaseStringTo(&s, prev);
      return;
    }
    case kTVMDataType:
      ReturnDataTypeToC(value_.v_type, v, code);
      code_ = kTVMNullptr;
      return;
    case kTVMNDArrayHandle:
      v->v_handle = static_cast<NDArrayObj*>(value_.v_handle)->handle();
      *code = kTVMNDArrayHandle;
      code_ = kTVMNullptr;
      return;
    default:
      *v = value_;
      *code = code_;
      code_ = kTVMNullptr;
      return;
  }
}

namespace {

/*! \brief Copy size bytes (and a NUL) into a new buffer for b; data may point into the old one,
 *  which is freed after the copy. A buffer over the pool's size limit serves this one result. */
[[gnu::noinline]] char* RegrowCopyBuffer(ValueTls::CopyBuffer* b, const char* data, size_t size) {
  size_t capacity = std::max<size_t>(size + 1, 64);
  char* fresh = new char[capacity];
  std::memcpy(fresh, data, size);
  fresh[size] = '\0';
  delete[] b->data;
  b->data = fresh;
  b->fast_capacity = capacity <= ValueTls::kMaxCapacity ? capacity : 0;
  return fresh;
}

}  // namespace

void ReturnStringToC(const char* data, size_t size, bool is_bytes, TVMValue* v, int* code) {
  ValueTls& s = Store();
  ValueTls::CopyBuffer& b = is_bytes ? s.bytes_copy : s.str_copy;
  char* dst;
  if (__builtin_expect(size < b.fast_capacity, 1)) {
    // memmove: data may be this very buffer (a string received from the previous call).
    dst = static_cast<char*>(std::memmove(b.data, data, size));
    dst[size] = '\0';
  } else {
    dst = RegrowCopyBuffer(&b, data, size);
  }
  // A string result handed over by MoveToC is no longer the current one: back to the pool.
  if (is_bytes) {
    s.ret_bytes = TVMByteArray{dst, size};
    v->v_handle = &s.ret_bytes;
    *code = kTVMBytes;
    if (std::string* prev = std::exchange(s.ret_bytes_data, nullptr)) ReleaseStringTo(&s, prev);
  } else {
    v->v_str = dst;
    *code = kTVMStr;
    if (std::string* prev = std::exchange(s.ret_str, nullptr)) ReleaseStringTo(&s, prev);
  }
}

void ReturnDataTypeToC(DLDataType t, TVMValue* v, int* code) {
  std::string text = DataTypeString(t);
  ReturnStringToC(text.data(), text.size(), false, v, code);
}

void RetValue::AsArg(TVMValue* v, int* code, TVMByteArray* bytes_scratch) const {
  switch (code_) {
    case kTVMStr:
      v->v_str = str().c_str();
      break;
    case kTVMBytes:
      *bytes_scratch = TVMByteArray{str().data(), str().size()};
      v->v_handle = bytes_scratch;
      break;
    case kTVMNDArrayHandle:
      v->v_handle = static_cast<NDArrayObj*>(value_.v_handle)->handle();
      break;
    default:
      *v = value_;
  }
  *code = code_;
}

// ---- Args ----

void Args::CheckArity(int n) const {
  if (size_ != n) {
    Throw("TypeError", fname_, ": expected ", n, n == 1 ? " argument" : " arguments", " but got ",
          size_);
  }
}

void Args::CheckMinArity(int n) const {
  if (size_ < n)
    Throw("TypeError", fname_, ": expected at least ", n, " arguments but got ", size_);
}

void Args::Mismatch(int i, const char* expected) const {
  const char* actual = TypeCodeName(codes_[i]);
  std::string key;
  if (codes_[i] == kTVMObjectHandle && values_[i].v_handle != nullptr) {
    key = TypeIndex2Key(static_cast<Object*>(values_[i].v_handle)->type_index());
    actual = key.c_str();
  }
  Throw("TypeError", fname_, ": argument ", i, " expected ", expected, " but got ", actual);
}

int64_t Args::Int(int i) const {
  int c = codes_[i];
  if (c != kTVMArgInt && c != kDLUInt && c != kTVMArgBool) Mismatch(i, "int");
  return values_[i].v_int64;
}

double Args::Float(int i) const {
  int c = codes_[i];
  if (c == kTVMArgFloat) return values_[i].v_float64;
  if (c == kTVMArgInt || c == kTVMArgBool) return static_cast<double>(values_[i].v_int64);
  Mismatch(i, "float");
}

bool Args::Bool(int i) const {
  int c = codes_[i];
  if (c != kTVMArgBool && c != kTVMArgInt) Mismatch(i, "bool");
  return values_[i].v_int64 != 0;
}

std::string Args::Str(int i) const {
  int c = codes_[i];
  if (c == kTVMStr && values_[i].v_str) return values_[i].v_str;
  if (c == kTVMBytes && values_[i].v_handle) {
    auto* b = static_cast<TVMByteArray*>(values_[i].v_handle);
    return std::string(b->data, b->size);
  }
  if (c == kTVMObjectHandle && values_[i].v_handle &&
      static_cast<Object*>(values_[i].v_handle)->type_index() == TypeIndex::kString) {
    return static_cast<StringObj*>(values_[i].v_handle)->data;
  }
  Mismatch(i, "str");
}

ObjectPtr<Object> Args::Obj(int i, uint32_t tindex) const {
  int c = codes_[i];
  Object* obj = IsObjectCode(c) ? ObjectOfArg(values_[i], c) : nullptr;
  if (obj == nullptr || !obj->IsInstance(tindex)) {
    Mismatch(i, TypeIndex2Key(tindex).c_str());
  }
  return ObjectPtr<Object>::Borrow(obj);
}

}  // namespace polyffi
