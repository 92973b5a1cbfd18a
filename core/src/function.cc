// Calls into C callbacks: classic (TVMFuncCreateFromCFunc) and direct (TVMFuncCreateDirect).
#include "polyffi/function.h"

#include <cstring>

#include "polyffi/error.h"
#include "polyffi/ndarray.h"

namespace polyffi {

void CFunction::Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv) {
  InvokeInline(self, values, codes, n, rv);
}

int CFunction::CallCallback(const FunctionObj* self, TVMValue* values, int* codes, int n,
                            TVMValue* ret_val, int* ret_type_code) {
  auto* me = static_cast<const CFunction*>(self);
  try {
    RetValue rv;
    int ret = me->func_(values, codes, n, &rv, me->resource_);
    if (__builtin_expect(ret != 0, 0)) return CalleeFailedToC(ret);
    rv.MoveToC(ret_val, ret_type_code);
    return 0;
  } catch (...) {
    return SetLastErrorFromCurrentException();
  }
}

void ThrowCalleeError(int ret) {
  // -2 travels on; the message a signal check set (or a nested -2 carried) travels with it.
  if (ret == -2) throw EnvErrorAlreadySet{LastErrorIsEnvError() ? GetLastError() : std::string()};
  // The callback reported its error with TVMAPISetLastError on this thread.
  throw Error::Parse(GetLastError());
}

int FunctionObj::CallThroughRetValue(const FunctionObj* self, TVMValue* values, int* codes, int n,
                                     TVMValue* ret_val, int* ret_type_code) {
  try {
    RetValue rv;
    self->invoke_(self, values, codes, n, &rv);
    rv.MoveToC(ret_val, ret_type_code);
    return 0;
  } catch (...) {
    return SetLastErrorFromCurrentException();
  }
}

int CalleeFailedToC(int ret) {
  try {
    ThrowCalleeError(ret);
  } catch (...) {
    return SetLastErrorFromCurrentException();
  }
}

int BackendResultToC(TVMValue* ret_val, int* ret_type_code) {
  try {
    TVMValue v = *ret_val;
    int code = *ret_type_code;
    ret_val->v_handle = nullptr;
    *ret_type_code = kTVMNullptr;
    RetValue rv;
    if (IsObjectCode(code) && code != kTVMObjectRValueRefArg) {
      // Classic convention: an object result is transferred to the caller.
      Object* obj = ObjectOfArg(v, code);
      if (obj) rv.SetObject(ObjectPtr<Object>::Adopt(obj));
    } else {
      rv.SetFromC(v, code);
    }
    rv.MoveToC(ret_val, ret_type_code);
    return 0;
  } catch (...) {
    return SetLastErrorFromCurrentException();
  }
}

namespace {

/*! \brief A direct callee's non-zero status, as a classic callee's: the same error, -2 kept. */
[[gnu::noinline, gnu::cold]] int DirectCallFailed(int ret) { return CalleeFailedToC(ret); }

/*! \brief Make a direct callee's unusual result code what a classic call returns, or refuse it. */
[[gnu::noinline, gnu::cold]] int FixDirectResult(TVMValue* ret_val, int* ret_type_code) {
  try {
    int code = *ret_type_code;
    if (code == kDLUInt) {
      *ret_type_code = kTVMArgInt;
      return 0;
    }
    if (code == kTVMDataType) {
      DLDataType t = ret_val->v_type;
      *ret_type_code = kTVMNullptr;
      ret_val->v_handle = nullptr;
      ReturnDataTypeToC(t, ret_val, ret_type_code);
      return 0;
    }
    *ret_type_code = kTVMNullptr;
    ret_val->v_handle = nullptr;
    RetValue rv;
    AdoptDirectResult(TVMValue{}, code, &rv);  // throws: code is not a result
    Throw("InternalError", "direct result check disagrees with AdoptDirectResult");
  } catch (...) {
    return SetLastErrorFromCurrentException();
  }
}

}  // namespace

int DirectFunction::CallIntoSlot(const FunctionObj* self, TVMValue* values, int* codes, int n,
                                 TVMValue* ret_val, int* ret_type_code) {
  auto* me = static_cast<const DirectFunction*>(self);
  ret_val->v_handle = nullptr;
  *ret_type_code = kTVMNullptr;
  int ret = me->func_(me->resource_, values, codes, n, ret_val, ret_type_code);
  if (__builtin_expect(ret != 0, 0)) return DirectCallFailed(ret);
  if (__builtin_expect(DirectResultNeedsFixing(*ret_type_code), 0)) {
    return FixDirectResult(ret_val, ret_type_code);
  }
  return 0;
}

void DirectFunction::Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n,
                            RetValue* rv) {
  auto* me = static_cast<const DirectFunction*>(self);
  TVMValue v;
  v.v_handle = nullptr;
  int code = kTVMNullptr;
  int ret = me->func_(me->resource_, values, codes, n, &v, &code);
  if (__builtin_expect(ret != 0, 0)) ThrowCalleeError(ret);
  if (__builtin_expect(RetValue::IsPlainCode(code), 1)) {
    rv->SetFromC(v, code);
    return;
  }
  AdoptDirectResult(v, code, rv);
}

void AdoptDirectResult(TVMValue v, int code, RetValue* rv) {
  switch (code) {
    case kTVMStr:
      if (v.v_str == nullptr) Throw("TypeError", "callback returned a NULL string");
      return rv->SetStr(v.v_str, std::strlen(v.v_str));
    case kTVMBytes: {
      auto* b = static_cast<const TVMByteArray*>(v.v_handle);
      if (b == nullptr || (b->data == nullptr && b->size != 0)) {
        Throw("TypeError", "callback returned NULL bytes");
      }
      return rv->SetBytes(b->data, b->size);
    }
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle: {
      // The callee's one reference becomes rv's.
      Object* obj = ObjectOfArg(v, code);
      if (obj == nullptr) return rv->SetNull();
      return rv->SetObject(ObjectPtr<Object>::Adopt(obj));
    }
    case kTVMObjectRValueRefArg:
      Throw("TypeError", "callback returned an unsupported value: an rvalue reference argument");
    default:
      if (RetValue::IsPlainCode(code)) return rv->SetFromC(v, code);
      Throw("TypeError", "callback returned an unsupported value: unknown type code ", code);
  }
}

}  // namespace polyffi
