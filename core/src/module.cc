// Module lookup, imports, backend function wrapping, table modules and the module globals.
#include "polyffi/module.h"

#include <polyffi/c_backend_api.h>

#include "polyffi/error.h"
#include "polyffi/registry.h"

namespace polyffi {

ObjectPtr<FunctionObj> ModuleObj::GetFunction(const std::string& name, bool query_imports) {
  ObjectPtr<FunctionObj> f = GetOwnFunction(name);
  if (f || !query_imports) return f;
  for (const auto& dep : imports()) {
    f = dep->GetFunction(name, true);
    if (f) return f;
  }
  return f;
}

void ModuleObj::Import(ObjectPtr<ModuleObj> dep) {
  if (dep.get() == this) Throw("ValueError", "a module cannot import itself");
  std::lock_guard<std::mutex> lock(mu_);
  imports_.push_back(std::move(dep));
}

std::vector<ObjectPtr<ModuleObj>> ModuleObj::imports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return imports_;
}

void ModuleObj::ClearImports() {
  std::vector<ObjectPtr<ModuleObj>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(imports_);
  }
  // Released outside the lock: an import's destructor may run arbitrary finalizers.
}

FunctionObj* ModuleObj::GetFuncFromEnv(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = env_cache_.find(name);
    if (it != env_cache_.end()) return it->second.get();
  }
  ObjectPtr<FunctionObj> f = GetFunction(name, true);
  if (!f) f = Registry::Global()->Get(name);
  if (!f)
    Throw("AttributeError", "cannot find function '", name, "' in the module or the registry");
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = env_cache_[name];
  if (!slot) slot = std::move(f);
  return slot.get();
}

FunctionObj* ModuleObj::GetFuncFromImports(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = import_cache_.find(name);
    if (it != import_cache_.end()) return it->second.get();
  }
  ObjectPtr<FunctionObj> f;
  for (const auto& dep : imports()) {
    f = dep->GetFunction(name, true);
    if (f) break;
  }
  if (!f) f = Registry::Global()->Get(name);
  if (!f) {
    Throw("AttributeError", "cannot find function '", name,
          "' in the module's imports or the registry");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = import_cache_[name];
  if (!slot) slot = std::move(f);
  return slot.get();
}

namespace {

/*! \brief A function exported by a compiled library (TVMBackendPackedCFunc). */
class BackendFunction final : public FunctionObj {
 public:
  BackendFunction(TVMBackendPackedCFunc f, ObjectPtr<ModuleObj> owner)
      : FunctionObj(Invoke, CallIntoSlot), f_(f), owner_(std::move(owner)) {}

 private:
  /*!
   * \brief The C entry (TVMFuncCall, so every graph executor and VM kernel call): the kernel
   *  writes the caller's slot itself, as a TVMBackendPackedCFunc does; only a result other than
   *  None or a plain value goes through a RetValue, as in Invoke.
   */
  static int CallIntoSlot(const FunctionObj* self, TVMValue* values, int* codes, int n,
                          TVMValue* ret_val, int* ret_type_code) {
    auto* me = static_cast<const BackendFunction*>(self);
    ret_val->v_handle = nullptr;
    *ret_type_code = kTVMNullptr;
    int rc = me->f_(values, codes, n, ret_val, ret_type_code, nullptr);
    if (__builtin_expect(rc != 0, 0)) return CalleeFailedToC(rc);
    if (__builtin_expect(*ret_type_code == kTVMNullptr, 1)) {
      ret_val->v_handle = nullptr;  // kernels return nothing
      return 0;
    }
    if (IsReadyCCode(*ret_type_code)) return 0;
    return BackendResultToC(ret_val, ret_type_code);
  }
  static void Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv) {
    auto* me = static_cast<const BackendFunction*>(self);
    TVMValue ret_value;
    ret_value.v_handle = nullptr;
    int ret_code = kTVMNullptr;
    int rc = me->f_(values, codes, n, &ret_value, &ret_code, nullptr);
    // -2 travels on; the message a signal check set (or a nested -2 carried) travels with it.
    if (rc == -2) throw EnvErrorAlreadySet{LastErrorIsEnvError() ? GetLastError() : std::string()};
    if (rc != 0) throw Error::Parse(GetLastError());
    if (IsObjectCode(ret_code) && ret_code != kTVMObjectRValueRefArg) {
      // Classic convention: an object result is transferred to the caller.
      Object* obj = ObjectOfArg(ret_value, ret_code);
      if (obj) rv->SetObject(ObjectPtr<Object>::Adopt(obj));
    } else {
      rv->SetFromC(ret_value, ret_code);
    }
  }
  TVMBackendPackedCFunc f_;
  ObjectPtr<ModuleObj> owner_;  // keeps the library (and its ctx) alive
};

/*! \brief A module made of named functions (runtime.ModuleFromFunctions). */
class TableModule final : public ModuleObj {
 public:
  explicit TableModule(std::string key) : key_(std::move(key)) {}
  std::string type_key() const override { return key_; }
  std::unordered_map<std::string, ObjectPtr<FunctionObj>> funcs;

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override {
    auto it = funcs.find(name);
    return it == funcs.end() ? ObjectPtr<FunctionObj>() : it->second;
  }

 private:
  std::string key_;
};

}  // namespace

ObjectPtr<FunctionObj> WrapBackendFunction(void* faddr, ObjectPtr<ModuleObj> owner) {
  return MakeObject<BackendFunction>(reinterpret_cast<TVMBackendPackedCFunc>(faddr),
                                     std::move(owner));
}

POLYFFI_CORE_GLOBAL("runtime.ModuleFromFunctions", [](const Args& args, RetValue* rv) {
  args.CheckMinArity(1);
  if (args.size() % 2 != 1) {
    Throw("ValueError", args.fname(), ": expected a type key then name/function pairs");
  }
  auto mod = MakeObject<TableModule>(args.Str(0));
  for (int i = 1; i < args.size(); i += 2) {
    mod->funcs[args.Str(i)] = args.ObjAs<FunctionObj>(i + 1);
  }
  rv->SetObject(std::move(mod));
});

POLYFFI_CORE_GLOBAL("runtime.ModuleLoadFromFile", [](const Args& args, RetValue* rv) {
  if (args.size() != 1) args.CheckArity(2);
  rv->SetObject(LoadModuleFromFile(args.Str(0), args.size() > 1 ? args.Str(1) : ""));
});

POLYFFI_CORE_GLOBAL("runtime.ModuleGetTypeKey", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetStr(args.ObjAs<ModuleObj>(0)->type_key());
});

POLYFFI_CORE_GLOBAL("runtime.ModuleImportsSize", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetInt(static_cast<int64_t>(args.ObjAs<ModuleObj>(0)->imports().size()));
});

POLYFFI_CORE_GLOBAL("runtime.ModuleGetImport", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  auto imports = args.ObjAs<ModuleObj>(0)->imports();
  int64_t i = args.Int(1);
  int64_t n = static_cast<int64_t>(imports.size());
  if (i < 0 || i >= n) Throw("IndexError", "module import index ", i, " out of range [0, ", n, ")");
  rv->SetObject(imports[i]);
});

POLYFFI_CORE_GLOBAL("runtime.ModuleGetFunction", [](const Args& args, RetValue* rv) {
  if (args.size() != 2) args.CheckArity(3);
  auto f = args.ObjAs<ModuleObj>(0)->GetFunction(args.Str(1), args.size() > 2 && args.Bool(2));
  if (f) rv->SetObject(std::move(f));
});

POLYFFI_CORE_GLOBAL("runtime.SystemLib", [](const Args& args, RetValue* rv) {
  if (args.size() > 1) args.CheckArity(1);  // an optional prefix is accepted and unused
  rv->SetObject(SystemLib());
});

}  // namespace polyffi
