// Model runners: one loaded model served by many threads at once (docs/model-runner.md).
//
// A runner is a module made by a global (`polyffi.runner.vm`, `polyffi.runner.graph`) over a
// loaded model. It owns a pool of executors (relax VMs or graph executors) that share the
// model's weights; `run` leases one for the length of a call, so concurrent calls never share
// per-call state and never wait on each other, except for the few instructions that pop and push
// the pool's free list (and, on a graph runner, copy the pointer to its current weights, which
// load_params swaps). Executors are made on demand, so the pool grows to the largest number of
// calls that were ever in flight at once.
#ifndef POLYFFI_CORE_MODEL_RUNNER_MODEL_RUNNER_H_
#define POLYFFI_CORE_MODEL_RUNNER_MODEL_RUNNER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polyffi/function.h"
#include "polyffi/module.h"
#include "polyffi/value.h"

namespace polyffi {
namespace model_runner {

/*! \brief One executor of a pool, with its functions looked up once. */
struct Executor {
  ObjectPtr<ModuleObj> module;
  std::unordered_map<std::string, ObjectPtr<FunctionObj>> functions;
  /*! \brief The executor's function name (AttributeError naming what when it has none). */
  FunctionObj* Function(const std::string& name, const char* what);
};

/*!
 * \brief Executors made on demand and reused: Acquire pops a free one (or makes one outside the
 *  free-list lock), Release pushes it back. Making executors is serialised by its own lock (it
 *  may read the model's shared weights, which must not be read by two makers at once).
 */
class ExecutorPool {
 public:
  using Maker = std::function<ObjectPtr<ModuleObj>()>;
  explicit ExecutorPool(Maker make) : make_(std::move(make)) {}
  std::unique_ptr<Executor> Acquire();
  void Release(std::unique_ptr<Executor> e);
  /*! \brief How many executors were made (in use or free). */
  size_t size() const;

 private:
  Maker make_;
  mutable std::mutex free_mu_;
  std::mutex make_mu_;
  std::vector<std::unique_ptr<Executor>> free_;
  size_t made_ = 0;
};

/*! \brief An executor leased from a pool for one call; returned when the lease ends. */
class Lease {
 public:
  explicit Lease(ExecutorPool* pool) : pool_(pool), e_(pool->Acquire()) {}
  ~Lease() { pool_->Release(std::move(e_)); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Executor* operator->() const { return e_.get(); }

 private:
  ExecutorPool* pool_;
  std::unique_ptr<Executor> e_;
};

/*! \brief Call f with these C arguments; the result in rv. */
void CallWith(FunctionObj* f, std::vector<TVMValue>* values, std::vector<int>* codes, RetValue* rv);

/*!
 * \brief A relax VM over a library, the first half of what TVM's relax.VirtualMachine(lib, dev)
 *  does: load is the library's vm_load_executable, called with no arguments. Null when it returns
 *  anything but a module (the caller says whose library it was).
 */
ObjectPtr<ModuleObj> LoadVMExecutable(FunctionObj* load);

/*!
 * \brief The second half: vm_initialization(init...) on vm, init being (device type, device id,
 *  allocator kind) per device. False, and nothing called, when the VM has no vm_initialization.
 */
bool InitializeVM(ModuleObj* vm, const std::vector<int64_t>& init);

/*! \brief A function named fname that takes no arguments and returns what get writes. */
template <typename Get>
ObjectPtr<FunctionObj> Accessor(Get get, std::string fname) {
  return MakeFunction(
      [get](const Args& args, RetValue* rv) {
        args.CheckArity(0);
        get(rv);
      },
      std::move(fname));
}

/*!
 * \brief The `signature` of a graph model as JSON (signature.cc): each input's and output's name,
 *  dtype and shape, read from the executor's own storage.
 */
std::string GraphSignature(ModuleObj* executor, const std::vector<std::string>& inputs,
                           int64_t num_outputs);
/*!
 * \brief The `signature` of VM function fn as JSON (signature.cc): each parameter's name, and the
 *  dtype and shape (-1 for a symbolic dimension) its compiled checks require, or null.
 */
std::string VMSignature(ModuleObj* vm, const std::string& fn,
                        const std::vector<std::string>& param_names);

/*! \brief The CPU device a runner is made for (ValueError for any other). */
DLDevice CheckDevice(const char* fname, int64_t device_type, int64_t device_id);

}  // namespace model_runner
}  // namespace polyffi
#endif  // POLYFFI_CORE_MODEL_RUNNER_MODEL_RUNNER_H_
