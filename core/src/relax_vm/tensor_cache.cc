// The process-wide tensor cache and the parameter lookups over it (TVM 0.27's
// vm.builtin.tensor_cache.* and vm.builtin.param_*_from_cache*): executables built with
// parameters from the cache fetch them by name at run time.
//   tensor_cache.load(dir, device_type, device_id)  every parameter of a tensor-cache directory
//                                                   (formats/tensor_cache_dir.h), CPU only
//   tensor_cache.update(name, tensor, [override])   store (a DLTensor* is copied)
//   tensor_cache.get(name) -> tensor or None;  tensor_cache.remove(name);  tensor_cache.clear()
//   param_array_from_cache(prefix, n) -> [prefix_0 .. prefix_{n-1}] (n = -1: until one is missing)
//   param_array_from_cache_by_name(names) / _unpacked(name...) -> the tensors of those names
//   param_module_from_cache(prefix, n) / _by_name(names) -> a "param_module": get_params()
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../contrib/contrib.h"
#include "formats/tensor_cache_dir.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/registry.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {
namespace {

class TensorCache {
 public:
  static TensorCache* Global() {
    static auto* cache = new TensorCache();  // leaked: tensors may outlive static destruction
    return cache;
  }
  void Update(const std::string& name, ObjectPtr<NDArrayObj> t, bool override) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!override && pool_.count(name) != 0) {
      Throw("InternalError", "Check failed: (pool->pool_.count(name) == 0) is false: Name ", name,
            " already exists in the cache");
    }
    pool_[name] = std::move(t);
  }
  ObjectPtr<NDArrayObj> Get(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pool_.find(name);
    return it == pool_.end() ? ObjectPtr<NDArrayObj>() : it->second;
  }
  void Remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    pool_.erase(name);
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    pool_.clear();
  }

 private:
  std::mutex mu_;
  std::map<std::string, ObjectPtr<NDArrayObj>> pool_;
};

/*! \brief The string in a value (a str argument or a String object), or false. */
bool StringOf(TVMValue v, int code, std::string* out) {
  if (code == kTVMStr && v.v_str != nullptr) {
    *out = v.v_str;
    return true;
  }
  Object* o = IsObjectCode(code) ? ObjectOfArg(v, code) : nullptr;
  if (o != nullptr && o->type_index() == StringObj::kTypeIndex) {
    *out = static_cast<StringObj*>(o)->data;
    return true;
  }
  return false;
}

ObjectPtr<ArrayObj> ParamsByPrefix(const std::string& prefix, int64_t n) {
  auto arr = MakeObject<ArrayObj>();
  for (int64_t i = 0; i < n || n == -1; ++i) {
    const std::string name = prefix + "_" + std::to_string(i);
    ObjectPtr<NDArrayObj> t = TensorCache::Global()->Get(name);
    if (!t) {
      if (n == -1) break;
      Throw("InternalError", "Cannot find ", name, " in cache");
    }
    arr->items.emplace_back();
    arr->items.back().SetObject(std::move(t));
  }
  return arr;
}

ObjectPtr<ArrayObj> ParamsByName(const std::vector<std::string>& names) {
  auto arr = MakeObject<ArrayObj>();
  for (const std::string& name : names) {
    ObjectPtr<NDArrayObj> t = TensorCache::Global()->Get(name);
    if (!t) Throw("ValueError", "Cannot find parameter in cache: ", name);
    arr->items.emplace_back();
    arr->items.back().SetObject(std::move(t));
  }
  return arr;
}

std::vector<std::string> NameArray(const Args& args, int i) {
  auto arr = args.ObjAs<ArrayObj>(i);
  std::vector<std::string> names;
  for (const RetValue& item : arr->items) {
    std::string s;
    if (item.type_code() == kTVMStr) {
      s = item.str();  // a RetValue holds its string as a std::string
    } else if (!IsObjectCode(item.type_code()) || !StringOf(item.value(), item.type_code(), &s)) {
      Throw("TypeError", args.fname(), ": the names must be strings, got ",
            TypeCodeName(item.type_code()));
    }
    names.push_back(std::move(s));
  }
  return names;
}

/*! \brief TVM's "param_module": one function, get_params, returning the array it was made with. */
class ParamModule final : public ModuleObj {
 public:
  explicit ParamModule(ObjectPtr<ArrayObj> params) : params_(std::move(params)) {}
  std::string type_key() const override { return "param_module"; }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override {
    if (name != "get_params") return nullptr;
    auto params = params_;
    return MakeFunction(
        [params](const Args& args, RetValue* rv) {
          args.CheckArity(0);
          rv->SetObject(ObjectPtr<ArrayObj>::Borrow(params.get()));
        },
        "param_module.get_params");
  }

 private:
  ObjectPtr<ArrayObj> params_;
};

}  // namespace

POLYFFI_CORE_GLOBAL("vm.builtin.tensor_cache.update", [](const Args& args, RetValue*) {
  if (args.size() != 2) args.CheckArity(3);
  const std::string name = args.Str(0);
  const bool override = args.size() == 3 && args.Bool(2);
  ObjectPtr<NDArrayObj> t;
  if (args.code(1) == kTVMNDArrayHandle && args.value(1).v_handle != nullptr) {
    t = ObjectPtr<NDArrayObj>::Borrow(
        NDArrayObj::FromHandle(static_cast<DLTensor*>(args.value(1).v_handle)));
  } else {
    // A borrowed DLTensor*: the cache keeps a compact copy.
    DLTensor* src = contrib::CpuTensor(args, 1, "tensor");
    t = NDArrayObj::Empty(std::vector<int64_t>(src->shape, src->shape + src->ndim), src->dtype,
                          DLDevice{kDLCPU, 0});
    size_t n = CompactBytes(*src);
    if (n != 0) std::memcpy(t->tensor.data, contrib::DataOf(src), n);
  }
  TensorCache::Global()->Update(name, std::move(t), override);
});

POLYFFI_CORE_GLOBAL("vm.builtin.tensor_cache.get", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  ObjectPtr<NDArrayObj> t = TensorCache::Global()->Get(args.Str(0));
  if (t) return rv->SetObject(std::move(t));
  rv->SetNull();
});

POLYFFI_CORE_GLOBAL("vm.builtin.tensor_cache.remove", [](const Args& args, RetValue*) {
  args.CheckArity(1);
  TensorCache::Global()->Remove(args.Str(0));
});

POLYFFI_CORE_GLOBAL("vm.builtin.tensor_cache.clear", [](const Args& args, RetValue*) {
  args.CheckArity(0);
  TensorCache::Global()->Clear();
});

POLYFFI_CORE_GLOBAL("vm.builtin.tensor_cache.load", [](const Args& args, RetValue*) {
  args.CheckArity(3);
  const std::string dir = args.Str(0);
  const int64_t device_type = args.Int(1), device_id = args.Int(2);
  if (device_type != kDLCPU || device_id != 0) {
    Throw("ValueError", "tensor_cache.load: only the CPU (device type 1, id 0) is supported, got ",
          device_type, ":", device_id);
  }
  // Everything is read and checked before the cache changes: a bad directory loads nothing.
  auto params = formats::LoadTensorCacheDir(dir);
  for (auto& p : params) TensorCache::Global()->Update(p.first, std::move(p.second), true);
});

POLYFFI_CORE_GLOBAL("vm.builtin.param_array_from_cache", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  rv->SetObject(ParamsByPrefix(args.Str(0), args.Int(1)));
});

POLYFFI_CORE_GLOBAL("vm.builtin.param_array_from_cache_by_name",
                    [](const Args& args, RetValue* rv) {
                      args.CheckArity(1);
                      rv->SetObject(ParamsByName(NameArray(args, 0)));
                    });

POLYFFI_CORE_GLOBAL("vm.builtin.param_array_from_cache_by_name_unpacked",
                    [](const Args& args, RetValue* rv) {
                      std::vector<std::string> names;
                      for (int i = 0; i < args.size(); ++i) {
                        std::string s;
                        if (!StringOf(args.value(i), args.code(i), &s)) {
                          Throw("ValueError", "Expect string as input, but get ",
                                TypeCodeName(args.code(i)), " at ", i);
                        }
                        names.push_back(std::move(s));
                      }
                      rv->SetObject(ParamsByName(names));
                    });

POLYFFI_CORE_GLOBAL("vm.builtin.param_module_from_cache", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  rv->SetObject(MakeObject<ParamModule>(ParamsByPrefix(args.Str(0), args.Int(1))));
});

POLYFFI_CORE_GLOBAL("vm.builtin.param_module_from_cache_by_name",
                    [](const Args& args, RetValue* rv) {
                      args.CheckArity(1);
                      rv->SetObject(MakeObject<ParamModule>(ParamsByName(NameArray(args, 0))));
                    });

}  // namespace relax_vm
}  // namespace polyffi
