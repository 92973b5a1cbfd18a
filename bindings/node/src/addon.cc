// Entry point of polyffi.node. Context-aware: every environment (main thread, each worker)
// gets its own Instance; nothing JS-related is process-global.
#include "common.h"

namespace polyffi_node {

Instance* GetInstance(napi_env env) {
  void* data = nullptr;
  napi_get_instance_data(env, &data);
  return static_cast<Instance*>(data);
}

napi_value Get(napi_env env, napi_ref ref) {
  napi_value v = nullptr;
  napi_get_reference_value(env, ref, &v);
  return v;
}

static void DeleteInstance(napi_env env, void* data, void*) {
  // References belong to the environment being torn down; only the struct is ours to free.
  delete static_cast<Instance*>(data);
}

static napi_ref RefTo(Napi::Object from, const char* name) {
  Napi::Value v = from.Get(name);
  if (!v.IsObject() && !v.IsFunction()) {
    Napi::TypeError::New(from.Env(), std::string("polyffi: setup() is missing ") + name)
        .ThrowAsJavaScriptException();
    return nullptr;
  }
  napi_ref ref = nullptr;
  napi_create_reference(from.Env(), v, 1, &ref);
  return ref;
}

// setup({ funcProto, token, Module, NDArray, ObjectRef, objectClasses, FFIError, Device,
//         DataType, Float, Int, Shape }): the JS classes the native side creates and recognises.
static Napi::Value Setup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Instance* inst = GetInstance(env);
  if (info.Length() < 1 || !info[0].IsObject()) {
    Napi::TypeError::New(env, "polyffi: setup() needs an object").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  Napi::Object o = info[0].As<Napi::Object>();
  inst->func_proto = RefTo(o, "funcProto");
  inst->from_native = RefTo(o, "token");
  inst->cls_module = RefTo(o, "Module");
  inst->cls_ndarray = RefTo(o, "NDArray");
  inst->cls_object = RefTo(o, "ObjectRef");
  inst->object_classes = RefTo(o, "objectClasses");
  inst->ffi_error = RefTo(o, "FFIError");
  inst->device_cls = RefTo(o, "Device");
  inst->dtype_cls = RefTo(o, "DataType");
  inst->float_cls = RefTo(o, "Float");
  inst->int_cls = RefTo(o, "Int");
  inst->shape_cls = RefTo(o, "Shape");
  Napi::Object global = env.Global();
  inst->buffer_cls = RefTo(global, "Buffer");
  inst->map_cls = RefTo(global, "Map");
  inst->set_proto = RefTo(global.Get("Object").As<Napi::Object>(), "setPrototypeOf");
  return Napi::Value();
}

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* inst = new Instance();
  inst->env = env;
  napi_set_instance_data(env, inst, DeleteInstance, nullptr);
  SetupEnvState(env, inst);
  InitLibrary(env, exports);
  if (env.IsExceptionPending()) return exports;
  InitFunction(env, exports);
  InitRegistry(env, exports);
  InitNDArray(env, exports);
  exports.Set("setup", Napi::Function::New(env, Setup, "setup"));
  return exports;
}

}  // namespace polyffi_node

static Napi::Object InitPolyffi(Napi::Env env, Napi::Object exports) {
  return polyffi_node::Init(env, exports);
}

NODE_API_MODULE(polyffi, InitPolyffi)
