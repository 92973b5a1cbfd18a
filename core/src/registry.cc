// The global function registry.
#include "polyffi/registry.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "polyffi/error.h"

namespace polyffi {
namespace {

struct RegistryState {
  mutable std::shared_mutex mu;
  std::unordered_map<std::string, ObjectPtr<FunctionObj>> funcs;
};

RegistryState* State() {
  // Leaked on purpose: host finalizers must never run from static destructors at exit.
  static RegistryState* state = new RegistryState();
  return state;
}

}  // namespace

Registry* Registry::Global() {
  static Registry registry;
  return &registry;
}

void Registry::Register(const std::string& name, ObjectPtr<FunctionObj> f, bool override) {
  if (!f) Throw("ValueError", "cannot register a NULL function as '", name, "'");
  RegistryState* s = State();
  ObjectPtr<FunctionObj> old;  // released outside the lock: its finalizer may call back in
  {
    std::unique_lock lock(s->mu);
    auto it = s->funcs.find(name);
    if (it != s->funcs.end()) {
      if (!override) Throw("ValueError", "Global function ", name, " is already registered");
      old = std::move(it->second);
      it->second = std::move(f);
    } else {
      s->funcs.emplace(name, std::move(f));
    }
  }
}

ObjectPtr<FunctionObj> Registry::Get(const std::string& name) const {
  RegistryState* s = State();
  std::shared_lock lock(s->mu);
  auto it = s->funcs.find(name);
  return it == s->funcs.end() ? ObjectPtr<FunctionObj>() : it->second;
}

bool Registry::Remove(const std::string& name) {
  RegistryState* s = State();
  ObjectPtr<FunctionObj> old;
  {
    std::unique_lock lock(s->mu);
    auto it = s->funcs.find(name);
    if (it == s->funcs.end()) return false;
    old = std::move(it->second);
    s->funcs.erase(it);
  }
  return true;
}

std::vector<std::string> Registry::ListNames() const {
  RegistryState* s = State();
  std::shared_lock lock(s->mu);
  std::vector<std::string> names;
  names.reserve(s->funcs.size());
  for (const auto& kv : s->funcs) names.push_back(kv.first);
  return names;
}

}  // namespace polyffi
