// Calls into C callbacks (TVMFuncCreateFromCFunc).
#include "polyffi/function.h"

#include "polyffi/error.h"

namespace polyffi {

void CFunction::Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n,
                       RetValue* rv) {
  auto* me = static_cast<const CFunction*>(self);
  int ret = me->func_(values, codes, n, rv, me->resource_);
  if (ret == 0) return;
  if (ret == -2) throw EnvErrorAlreadySet();
  // The callback reported its error with TVMAPISetLastError on this thread.
  throw Error::Parse(GetLastError());
}

}  // namespace polyffi
