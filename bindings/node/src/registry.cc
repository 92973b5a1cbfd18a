// Registry: global functions, callbacks made from JS functions, modules, objects' type keys.
#include "common.h"

namespace polyffi_node {

static std::string StringArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (i >= info.Length() || !info[i].IsString()) {
    Napi::TypeError::New(info.Env(), std::string("polyffi: ") + what + " must be a string")
        .ThrowAsJavaScriptException();
    return std::string();
  }
  return info[i].As<Napi::String>().Utf8Value();
}

static bool Pending(const Napi::CallbackInfo& info) { return info.Env().IsExceptionPending(); }

// The handle of a live wrapper of kind `code`, or nullptr after throwing.
static void* HandleArg(const Napi::CallbackInfo& info, size_t i, int code, const char* what) {
  Ref* ref = i < info.Length() ? RefOf(info.Env(), info[i]) : nullptr;
  if (ref == nullptr || ref->code != code) {
    Napi::TypeError::New(info.Env(), std::string("polyffi: expected a ") + what)
        .ThrowAsJavaScriptException();
    return nullptr;
  }
  if (ref->handle == nullptr) {
    ThrowFFIError(info.Env(), GetInstance(info.Env()), "ValueError",
                  std::string("polyffi: ") + what + " used after dispose()");
    return nullptr;
  }
  return ref->handle;
}

static Napi::Value GetGlobal(const Napi::CallbackInfo& info) {
  std::string name = StringArg(info, 0, "name");
  if (Pending(info)) return Napi::Value();
  Instance* inst = GetInstance(info.Env());
  TVMFunctionHandle f = nullptr;
  if (TVMFuncGetGlobal(name.c_str(), &f) != 0)
    return Napi::Value(info.Env(), ThrowLastError(info.Env(), inst));
  return Napi::Value(info.Env(), MakePackedFunc(inst, f));
}

// convert(fn, onFinalize?) -> PackedFunc; a PackedFunc comes back as it is.
static Napi::Value Convert(const Napi::CallbackInfo& info) {
  napi_env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    Napi::TypeError::New(env, "polyffi: convert() needs a function").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  if (RefOf(env, info[0]) != nullptr) return info[0];
  napi_value on_finalize = nullptr;
  if (info.Length() > 1 && info[1].IsFunction()) on_finalize = info[1];
  Instance* inst = GetInstance(env);
  TVMFunctionHandle f = CallbackFromJs(env, inst, info[0], on_finalize);
  if (f == nullptr) return Napi::Value();
  return Napi::Value(env, MakePackedFunc(inst, f));
}

// registerGlobal(name, PackedFunc, override)
static Napi::Value RegisterGlobal(const Napi::CallbackInfo& info) {
  std::string name = StringArg(info, 0, "name");
  if (Pending(info)) return Napi::Value();
  void* f = HandleArg(info, 1, kTVMPackedFuncHandle, "PackedFunc");
  if (f == nullptr) return Napi::Value();
  bool override_ = info.Length() > 2 && info[2].ToBoolean().Value();
  if (TVMFuncRegisterGlobal(name.c_str(), f, override_ ? 1 : 0) != 0) {
    ThrowLastError(info.Env(), GetInstance(info.Env()));
  }
  return Napi::Value();
}

static Napi::Value ListGlobalNames(const Napi::CallbackInfo& info) {
  int n = 0;
  const char** names = nullptr;
  if (TVMFuncListGlobalNames(&n, &names) != 0) {
    return Napi::Value(info.Env(), ThrowLastError(info.Env(), GetInstance(info.Env())));
  }
  Napi::Array out = Napi::Array::New(info.Env(), n);
  for (int i = 0; i < n; ++i)
    out.Set(static_cast<uint32_t>(i), Napi::String::New(info.Env(), names[i]));
  return out;
}

static Napi::Value RemoveGlobal(const Napi::CallbackInfo& info) {
  std::string name = StringArg(info, 0, "name");
  if (Pending(info)) return Napi::Value();
  if (TVMFuncRemoveGlobal(name.c_str()) != 0) ThrowLastError(info.Env(), GetInstance(info.Env()));
  return Napi::Value();
}

static Napi::Value LoadModule(const Napi::CallbackInfo& info) {
  std::string path = StringArg(info, 0, "path");
  if (Pending(info)) return Napi::Value();
  std::string fmt = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value()
                                                            : std::string();
  Instance* inst = GetInstance(info.Env());
  TVMModuleHandle m = nullptr;
  if (TVMModLoadFromFile(path.c_str(), fmt.c_str(), &m) != 0) {
    return Napi::Value(info.Env(), ThrowLastError(info.Env(), inst));
  }
  return Napi::Value(info.Env(), WrapHandle(inst, m, kTVMModuleHandle));
}

// modGetFunction(mod, name, queryImports) -> PackedFunc | null
static Napi::Value ModGetFunction(const Napi::CallbackInfo& info) {
  void* m = HandleArg(info, 0, kTVMModuleHandle, "Module");
  if (m == nullptr) return Napi::Value();
  std::string name = StringArg(info, 1, "name");
  if (Pending(info)) return Napi::Value();
  bool query = info.Length() > 2 && info[2].ToBoolean().Value();
  Instance* inst = GetInstance(info.Env());
  TVMFunctionHandle f = nullptr;
  if (TVMModGetFunction(m, name.c_str(), query ? 1 : 0, &f) != 0) {
    return Napi::Value(info.Env(), ThrowLastError(info.Env(), inst));
  }
  return Napi::Value(info.Env(), MakePackedFunc(inst, f));
}

static Napi::Value ModImport(const Napi::CallbackInfo& info) {
  void* m = HandleArg(info, 0, kTVMModuleHandle, "Module");
  if (m == nullptr) return Napi::Value();
  void* dep = HandleArg(info, 1, kTVMModuleHandle, "Module");
  if (dep == nullptr) return Napi::Value();
  if (TVMModImport(m, dep) != 0) ThrowLastError(info.Env(), GetInstance(info.Env()));
  return Napi::Value();
}

// typeKey(obj): the registered type key of any handle-carrying object.
static Napi::Value TypeKey(const Napi::CallbackInfo& info) {
  Ref* ref = info.Length() > 0 ? RefOf(info.Env(), info[0]) : nullptr;
  if (ref == nullptr || ref->code == kTVMNDArrayHandle || ref->code == kTVMDLTensorHandle) {
    Napi::TypeError::New(info.Env(), "polyffi: typeKey() needs an object handle")
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  if (ref->handle == nullptr) {
    return Napi::Value(info.Env(), ThrowFFIError(info.Env(), GetInstance(info.Env()), "ValueError",
                                                 "polyffi: object used after dispose()"));
  }
  unsigned tindex = 0;
  char* key = nullptr;
  if (TVMObjectGetTypeIndex(ref->handle, &tindex) != 0 ||
      TVMObjectTypeIndex2Key(tindex, &key) != 0) {
    return Napi::Value(info.Env(), ThrowLastError(info.Env(), GetInstance(info.Env())));
  }
  return Napi::String::New(info.Env(), key);
}

// setExactNumbers(on) -> previous: numbers come out as ffi.Int / ffi.Float boxes, so that code
// forwarding values (generic callbacks, the conformance runner) keeps int and float apart.
static Napi::Value SetExactNumbers(const Napi::CallbackInfo& info) {
  Instance* inst = GetInstance(info.Env());
  bool previous = inst->exact_numbers;
  inst->exact_numbers = info.Length() > 0 && info[0].ToBoolean().Value();
  return Napi::Boolean::New(info.Env(), previous);
}

void InitRegistry(Napi::Env env, Napi::Object exports) {
  exports.Set("getGlobal", Napi::Function::New(env, GetGlobal, "getGlobal"));
  exports.Set("convert", Napi::Function::New(env, Convert, "convert"));
  exports.Set("registerGlobal", Napi::Function::New(env, RegisterGlobal, "registerGlobal"));
  exports.Set("listGlobalNames", Napi::Function::New(env, ListGlobalNames, "listGlobalNames"));
  exports.Set("removeGlobal", Napi::Function::New(env, RemoveGlobal, "removeGlobal"));
  exports.Set("loadModule", Napi::Function::New(env, LoadModule, "loadModule"));
  exports.Set("modGetFunction", Napi::Function::New(env, ModGetFunction, "modGetFunction"));
  exports.Set("modImport", Napi::Function::New(env, ModImport, "modImport"));
  exports.Set("typeKey", Napi::Function::New(env, TypeKey, "typeKey"));
  exports.Set("setExactNumbers", Napi::Function::New(env, SetExactNumbers, "setExactNumbers"));
}

}  // namespace polyffi_node
