// Calls into C callbacks: classic (TVMFuncCreateFromCFunc) and direct (TVMFuncCreateDirect).
#include "polyffi/function.h"

#include <cstring>

#include "polyffi/error.h"
#include "polyffi/ndarray.h"

namespace polyffi {

void CFunction::Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv) {
  InvokeInline(self, values, codes, n, rv);
}

void ThrowCalleeError(int ret) {
  // -2 travels on; the message a signal check set (or a nested -2 carried) travels with it.
  if (ret == -2) throw EnvErrorAlreadySet{LastErrorIsEnvError() ? GetLastError() : std::string()};
  // The callback reported its error with TVMAPISetLastError on this thread.
  throw Error::Parse(GetLastError());
}

void DirectFunction::Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n,
                            RetValue* rv) {
  auto* me = static_cast<const DirectFunction*>(self);
  TVMValue v;
  v.v_handle = nullptr;
  int code = kTVMNullptr;
  int ret = me->func_(me->resource_, values, codes, n, &v, &code);
  if (__builtin_expect(ret != 0, 0)) ThrowCalleeError(ret);
  if (__builtin_expect(RetValue::IsPlainCode(code) && code != kTVMDLTensorHandle, 1)) {
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
    case kTVMDLTensorHandle:
      Throw("TypeError",
            "callback returned an unsupported value: a DLTensor view (return an NDArray)");
    case kTVMObjectRValueRefArg:
      Throw("TypeError", "callback returned an unsupported value: an rvalue reference argument");
    default:
      if (RetValue::IsPlainCode(code)) return rv->SetFromC(v, code);
      Throw("TypeError", "callback returned an unsupported value: unknown type code ", code);
  }
}

}  // namespace polyffi
