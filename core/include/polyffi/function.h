// The function object: a type-erased callable behind every kTVMPackedFuncHandle.
#ifndef POLYFFI_CORE_FUNCTION_H_
#define POLYFFI_CORE_FUNCTION_H_

#include <polyffi/c_direct_api.h>
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
  /*!
   * \brief The C ABI's entry for this kind of function: what TVMFuncCall does once its arguments
   *  are checked (0, or -1 / -2 with the last error set; never throws). One indirect jump from
   *  TVMFuncCall, with TVMFuncCall's own parameter order, so no kind pays for another's test.
   */
  using FCall = int (*)(const FunctionObj* self, TVMValue* values, int* codes, int n,
                        TVMValue* ret_val, int* ret_type_code);
  void Call(TVMValue* values, int* codes, int n, RetValue* rv) const {
    invoke_(this, values, codes, n, rv);
  }
  int CallC(TVMValue* values, int* codes, int n, TVMValue* ret_val, int* ret_type_code) const {
    return c_call_(this, values, codes, n, ret_val, ret_type_code);
  }
  FInvoke invoker() const { return invoke_; }

 protected:
  explicit FunctionObj(FInvoke invoke, FCall c_call = &CallThroughRetValue)
      : Object(kTypeIndex), invoke_(invoke), c_call_(c_call) {}

 private:
  /*! \brief The classic entry: the callee fills a RetValue, which moves into the caller's slot. */
  static int CallThroughRetValue(const FunctionObj* self, TVMValue* values, int* codes, int n,
                                 TVMValue* ret_val, int* ret_type_code);
  FInvoke invoke_;
  FCall c_call_;
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

/*!
 * \brief The exception for a callee's non-zero status: -2 propagates as EnvErrorAlreadySet;
 *  otherwise the error the callee set on this thread, with its kind.
 */
[[noreturn]] void ThrowCalleeError(int ret);

/*! \brief ThrowCalleeError's error set as the last error: the C entry's -1 (or -2). */
[[gnu::noinline, gnu::cold]] int CalleeFailedToC(int ret);

/*!
 * \brief A compiled library's function (TVMBackendPackedCFunc) wrote (ret_val, ret_type_code)
 *  with a code other than a plain one a C caller takes as it is: make it what TVMFuncCall
 *  returns for a classic callee (an object's reference handed over, strings copied into the
 *  thread's return storage, an rvalue reference moved out, uint as int, a dtype as its string).
 *  0, or -1 with the error set and the slot left None.
 */
[[gnu::noinline, gnu::cold]] int BackendResultToC(TVMValue* ret_val, int* ret_type_code);

/*! \brief Plain codes a C caller receives as they are (a None's value is cleared separately). */
inline bool IsReadyCCode(int code) {
  constexpr unsigned kReady = 1u << kTVMArgInt | 1u << kTVMArgFloat | 1u << kTVMOpaqueHandle |
                              1u << kDLDevice | 1u << kTVMDLTensorHandle | 1u << kTVMArgBool;
  return static_cast<unsigned>(code) < 32 && ((kReady >> code) & 1u) != 0;
}

/*! \brief A function backed by a C callback (TVMFuncCreateFromCFunc). */
class CFunction final : public FunctionObj {
 public:
  CFunction(TVMPackedCFunc func, void* resource, TVMPackedCFuncFinalizer fin)
      : FunctionObj(Invoke, CallCallback), func_(func), resource_(resource), fin_(fin) {}
  ~CFunction() override {
    if (fin_) fin_(resource_);
  }
  static void Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv);
  /*! \brief Invoke, inlinable where the caller already knows the function is a CFunction. */
  static void InvokeInline(const FunctionObj* self, TVMValue* values, int* codes, int n,
                           RetValue* rv) {
    auto* me = static_cast<const CFunction*>(self);
    int ret = me->func_(values, codes, n, rv, me->resource_);
    if (__builtin_expect(ret != 0, 0)) ThrowCalleeError(ret);
  }

 private:
  /*! \brief The C entry: the callback fills a RetValue, which moves into the caller's slot
   *  (CallThroughRetValue without the second indirection through Invoke). */
  static int CallCallback(const FunctionObj* self, TVMValue* values, int* codes, int n,
                          TVMValue* ret_val, int* ret_type_code);
  TVMPackedCFunc func_;
  void* resource_;
  TVMPackedCFuncFinalizer fin_;
};

/*!
 * \brief A function backed by a direct C callee (TVMFuncCreateDirect), which writes its result
 *  into the caller's slot. TVMFuncCall hands it the caller's slot; Call (the runtime's own path)
 *  adapts through a temporary slot, so callers inside the core see a classic function.
 */
class DirectFunction final : public FunctionObj {
 public:
  /*! \param classic_results the callee writes only classic codes and statuses (the
   *  TVM_DIRECT_CLASSIC_RESULTS flag): its C entry then needs no check after the call. */
  DirectFunction(TVMDirectCFunc func, void* resource, TVMPackedCFuncFinalizer fin,
                 bool classic_results = false)
      : FunctionObj(Invoke, classic_results ? CallClassic : CallIntoSlot),
        func_(func),
        resource_(resource),
        fin_(fin) {}
  ~DirectFunction() override {
    if (fin_) fin_(resource_);
  }
  static void Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv);
  TVMDirectCFunc func() const { return func_; }
  void* resource() const { return resource_; }

 private:
  /*!
   * \brief The C entry: the callee writes the caller's slot; the result code is then made what
   *  a classic call returns (uint as int, a dtype as its string, views and unknown codes refused).
   */
  static int CallIntoSlot(const FunctionObj* self, TVMValue* values, int* codes, int n,
                          TVMValue* ret_val, int* ret_type_code);
  /*! \brief The C entry of a callee with classic results: resets the slot and tail-calls it. */
  static int CallClassic(const FunctionObj* self, TVMValue* values, int* codes, int n,
                         TVMValue* ret_val, int* ret_type_code) {
    auto* me = static_cast<const DirectFunction*>(self);
    ret_val->v_handle = nullptr;
    *ret_type_code = kTVMNullptr;
    return me->func_(me->resource_, values, codes, n, ret_val, ret_type_code);
  }
  TVMDirectCFunc func_;
  void* resource_;
  TVMPackedCFuncFinalizer fin_;
};

/*!
 * \brief Whether a code a direct callee wrote needs more than handing on as it is: kDLUInt
 *  (read as int), kTVMDataType (handed to C as its string), a refused code (an rvalue reference)
 *  or one out of range. A DLTensor view goes on as it is, as a classic callee's view does
 *  (TVMCFuncSetReturn keeps it as a plain value). One shift and test on the direct return path.
 */
inline bool DirectResultNeedsFixing(int code) {
  constexpr unsigned kFix = 1u << kDLUInt | 1u << kTVMDataType | 1u << kTVMObjectRValueRefArg;
  return static_cast<unsigned>(code) > kTVMArgBool || ((kFix >> code) & 1u);
}

/*!
 * \brief Take what a direct callee wrote into rv: plain values (a DLTensor view among them, as
 *  from a classic callee) copied, strings and bytes copied out of the thread's return storage,
 *  an object's reference adopted. A code that is not a result (rvalue reference, unknown)
 *  throws TypeError, owning nothing.
 */
void AdoptDirectResult(TVMValue v, int code, RetValue* rv);

}  // namespace polyffi
#endif  // POLYFFI_CORE_FUNCTION_H_
