// The executor pool of the model runners (model_runner.h).
#include "model_runner.h"
#include "polyffi/error.h"

namespace polyffi {
namespace model_runner {

FunctionObj* Executor::Function(const std::string& name, const char* what) {
  auto it = functions.find(name);
  if (it != functions.end()) return it->second.get();
  ObjectPtr<FunctionObj> f = module->GetFunction(name, false);
  if (!f) Throw("AttributeError", what, " has no function '", name, "'");
  FunctionObj* raw = f.get();
  functions.emplace(name, std::move(f));
  return raw;
}

std::unique_ptr<Executor> ExecutorPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(free_mu_);
    if (!free_.empty()) {
      std::unique_ptr<Executor> e = std::move(free_.back());
      free_.pop_back();
      return e;
    }
  }
  auto e = std::make_unique<Executor>();
  {
    std::lock_guard<std::mutex> lock(make_mu_);
    e->module = make_();
  }
  std::lock_guard<std::mutex> lock(free_mu_);
  ++made_;
  return e;
}

void ExecutorPool::Release(std::unique_ptr<Executor> e) {
  if (!e) return;
  std::lock_guard<std::mutex> lock(free_mu_);
  free_.push_back(std::move(e));
}

size_t ExecutorPool::size() const {
  std::lock_guard<std::mutex> lock(free_mu_);
  return made_;
}

void CallWith(FunctionObj* f, std::vector<TVMValue>* values, std::vector<int>* codes,
              RetValue* rv) {
  f->Call(values->data(), codes->data(), static_cast<int>(values->size()), rv);
}

DLDevice CheckDevice(const char* fname, int64_t device_type, int64_t device_id) {
  if (device_type != kDLCPU) {
    Throw("ValueError", fname, ": device type ", device_type,
          " is not available (this runtime has CPU only)");
  }
  if (device_id != 0) Throw("ValueError", fname, ": CPU device id ", device_id, " does not exist");
  return DLDevice{kDLCPU, 0};
}

}  // namespace model_runner
}  // namespace polyffi
