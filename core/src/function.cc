// Calls into C callbacks (TVMFuncCreateFromCFunc).
#include "polyffi/function.h"

#include "polyffi/error.h"

namespace polyffi {

void CFunction::Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv) {
  InvokeInline(self, values, codes, n, rv);
}

void CFunction::ThrowCallbackError(int ret) {
  // -2 travels on; the message a signal check set (or a nested -2 carried) travels with it.
  if (ret == -2) throw EnvErrorAlreadySet{LastErrorIsEnvError() ? GetLastError() : std::string()};
  // The callback reported its error with TVMAPISetLastError on this thread.
  throw Error::Parse(GetLastError());
}

}  // namespace polyffi
