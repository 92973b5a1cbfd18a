// The VM's debugging and host-function hooks (TVM 0.27 semantics and error kinds):
//   vm.builtin.invoke_debug_func(io_effect, name, line_info, args...)
//       calls the global `name` with (line_info, args...); returns io_effect (None)
//   vm.builtin.register_py_func(name, f) / get_py_func(name) / clear_py_func_registry()
//   vm.builtin.call_py_func((name, (args...)))   calls a function registered under name
// TVM keeps "Python functions" for relax's call_py_func in a table of their own; here any
// function (a binding's callback, a global) can be registered, the table is process-wide and
// guarded by a lock.
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../stored_args.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {
namespace {

struct PyFuncTable {
  std::mutex mu;
  std::unordered_map<std::string, ObjectPtr<FunctionObj>> funcs;
  static PyFuncTable* Global() {
    static auto* table = new PyFuncTable();  // leaked: callbacks may outlive static destruction
    return table;
  }
  ObjectPtr<FunctionObj> Get(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = funcs.find(name);
    if (it == funcs.end()) {
      Throw("InternalError", "Python function '", name, "' not found in registry");
    }
    return it->second;
  }
};

std::string StringItem(const RetValue& v, const char* what) {
  if (v.type_code() == kTVMStr) return v.str();
  Object* o = v.object();
  if (o != nullptr && o->type_index() == StringObj::kTypeIndex) {
    return static_cast<StringObj*>(o)->data;
  }
  Throw("TypeError", "vm.builtin.call_py_func: ", what, " must be a string, got ",
        TypeCodeName(v.type_code()));
}

}  // namespace

POLYFFI_CORE_GLOBAL("vm.builtin.register_py_func", [](const Args& args, RetValue*) {
  args.CheckArity(2);
  std::string name = args.Str(0);
  auto f = args.ObjAs<FunctionObj>(1);
  auto* table = PyFuncTable::Global();
  std::lock_guard<std::mutex> lock(table->mu);
  table->funcs[name] = std::move(f);
});

POLYFFI_CORE_GLOBAL("vm.builtin.get_py_func", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetObject(PyFuncTable::Global()->Get(args.Str(0)));
});

POLYFFI_CORE_GLOBAL("vm.builtin.clear_py_func_registry", [](const Args& args, RetValue*) {
  args.CheckArity(0);
  auto* table = PyFuncTable::Global();
  std::unordered_map<std::string, ObjectPtr<FunctionObj>> drop;
  {
    std::lock_guard<std::mutex> lock(table->mu);
    drop.swap(table->funcs);
  }  // the functions are released outside the lock (a finalizer may call back in)
});

POLYFFI_CORE_GLOBAL("vm.builtin.call_py_func", [](const Args& args, RetValue* rv) {
  if (args.size() != 1) {
    Throw("InternalError", "vm.builtin.call_py_func expects exactly 1 argument (tuple)");
  }
  auto tuple = args.ObjAs<ArrayObj>(0);
  if (tuple->items.size() != 2) {
    Throw("InternalError", "vm.builtin.call_py_func tuple should contain (func_name, args)");
  }
  std::string name = StringItem(tuple->items[0], "the function name");
  Object* a = tuple->items[1].object();
  if (a == nullptr || a->type_index() != ArrayObj::kTypeIndex) {
    Throw("TypeError", "vm.builtin.call_py_func: the arguments must be a tuple, got ",
          TypeCodeName(tuple->items[1].type_code()));
  }
  StoredArgs c_args(static_cast<ArrayObj*>(a)->items);
  ObjectPtr<FunctionObj> f = PyFuncTable::Global()->Get(name);
  f->Call(c_args.values.data(), c_args.codes.data(), c_args.size(), rv);
});

POLYFFI_CORE_GLOBAL("vm.builtin.invoke_debug_func", [](const Args& args, RetValue* rv) {
  args.CheckMinArity(3);
  if (args.code(0) != kTVMNullptr) {
    Throw("ValueError", "IOEffect is expected to be lowered to None.");
  }
  const std::string name = args.Str(1);
  ObjectPtr<FunctionObj> f = Registry::Global()->Get(name);
  if (!f) {
    Throw("ValueError", name, " is not found. Use the decorator `@tvm.register_global_func(\"",
          name, "\")` to register it.");
  }
  // (line_info, args...): the debug function sees everything after the name.
  std::vector<TVMValue> v(args.values() + 2, args.values() + args.size());
  std::vector<int> c(args.codes() + 2, args.codes() + args.size());
  RetValue ignored;
  f->Call(v.data(), c.data(), static_cast<int>(v.size()), &ignored);
  rv->SetNull();
});

}  // namespace relax_vm
}  // namespace polyffi
