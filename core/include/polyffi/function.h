// The function object: a type-erased callable behind every kTVMPackedFuncHandle.
#ifndef POLYFFI_CORE_FUNCTION_H_
#define POLYFFI_CORE_FUNCTION_H_

#include <polyffi/c_runtime_api.h>

#include <string>
#include <utility>

#include "polyffi/object.h"
#include "polyffi/value.h"

namespace polyffi {

/*!
 * \brief A packed function. Calls go through one plain function pointer (no virtual dispatch,
 *  no std::function): the subclass stores the callable and its static Invoke.
 */
class FunctionObj : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kFunction;
  using FInvoke = void (*)(const FunctionObj* self, TVMValue* values, int* codes, int n,
                           RetValue* rv);
  void Call(TVMValue* values, int* codes, int n, RetValue* rv) const {
    invoke_(this, values, codes, n, rv);
  }
  FInvoke invoker() const { return invoke_; }

 protected:
  explicit FunctionObj(FInvoke invoke) : Object(kTypeIndex), invoke_(invoke) {}

 private:
  FInvoke invoke_;
};

/*! \brief A function whose body is a C++ callable: body(const Args&, RetValue*). */
template <typename F>
class LambdaFunction final : public FunctionObj {
 public:
  LambdaFunction(F body, std::string name)
      : FunctionObj(Invoke), body_(std::move(body)), name_(std::move(name)) {}

 private:
  static void Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv) {
    auto* me = static_cast<const LambdaFunction*>(self);
    me->body_(Args(values, codes, n, me->name_.c_str()), rv);
  }
  F body_;
  std::string name_;
};

template <typename F>
ObjectPtr<FunctionObj> MakeFunction(F body, std::string name = "<anonymous>") {
  return MakeObject<LambdaFunction<F>>(std::move(body), std::move(name));
}

/*! \brief A function backed by a C callback (TVMFuncCreateFromCFunc). */
class CFunction final : public FunctionObj {
 public:
  CFunction(TVMPackedCFunc func, void* resource, TVMPackedCFuncFinalizer fin)
      : FunctionObj(Invoke), func_(func), resource_(resource), fin_(fin) {}
  ~CFunction() override {
    if (fin_) fin_(resource_);
  }
  static void Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv);
  /*! \brief Invoke, inlinable where the caller already knows the function is a CFunction. */
  static void InvokeInline(const FunctionObj* self, TVMValue* values, int* codes, int n,
                           RetValue* rv) {
    auto* me = static_cast<const CFunction*>(self);
    int ret = me->func_(values, codes, n, rv, me->resource_);
    if (__builtin_expect(ret != 0, 0)) ThrowCallbackError(ret);
  }

 private:
  /*! \brief -2 propagates as EnvErrorAlreadySet; otherwise the callback's last error. */
  [[noreturn]] static void ThrowCallbackError(int ret);
  TVMPackedCFunc func_;
  void* resource_;
  TVMPackedCFuncFinalizer fin_;
};

}  // namespace polyffi
#endif  // POLYFFI_CORE_FUNCTION_H_
