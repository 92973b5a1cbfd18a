// The hand-written floors for bench/node: each call polyffi's benchmark makes, written once on
// node-addon-api ("na*") and once on raw Node-API ("raw*"), calling the plain C functions of
// libbench_node_c.so with the same signatures.
#include <napi.h>

#include <cstdint>
#include <cstring>

extern "C" {
void nb_nop(void);
int64_t nb_add3(int64_t a, int64_t b, int64_t c);
const char* nb_echo(const char* s);
int64_t nb_call_n(int64_t (*f)(int64_t), int64_t n);
}

namespace {

// ---- node-addon-api
// ------------------------------------------------------------------------------

Napi::Value NaNop(const Napi::CallbackInfo& info) {
  nb_nop();
  return info.Env().Undefined();
}

Napi::Value NaAdd3(const Napi::CallbackInfo& info) {
  int64_t r =
      nb_add3(info[0].As<Napi::Number>().Int64Value(), info[1].As<Napi::Number>().Int64Value(),
              info[2].As<Napi::Number>().Int64Value());
  return Napi::Number::New(info.Env(), static_cast<double>(r));
}

Napi::Value NaEcho(const Napi::CallbackInfo& info) {
  std::string s = info[0].As<Napi::String>().Utf8Value();
  return Napi::String::New(info.Env(), nb_echo(s.c_str()));
}

thread_local Napi::Env* g_na_env = nullptr;
thread_local Napi::Function* g_na_fn = nullptr;

int64_t NaTrampoline(int64_t i) {
  Napi::HandleScope scope(*g_na_env);
  Napi::Value r = g_na_fn->Call({Napi::Number::New(*g_na_env, static_cast<double>(i))});
  return r.As<Napi::Number>().Int64Value();
}

Napi::Value NaCallN(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Function fn = info[0].As<Napi::Function>();
  g_na_env = &env;
  g_na_fn = &fn;
  int64_t total = nb_call_n(NaTrampoline, info[1].As<Napi::Number>().Int64Value());
  return Napi::Number::New(env, static_cast<double>(total));
}

class NopWorker : public Napi::AsyncWorker {
 public:
  explicit NopWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(env) {}
  void Execute() override { nb_nop(); }
  void OnOK() override { deferred_.Resolve(Env().Undefined()); }
  Napi::Promise promise() { return deferred_.Promise(); }

 private:
  Napi::Promise::Deferred deferred_;
};

Napi::Value NaAsyncNop(const Napi::CallbackInfo& info) {
  auto* w = new NopWorker(info.Env());
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

// ---- raw Node-API
// ------------------------------------------------------------------------------------

napi_value RawNop(napi_env env, napi_callback_info info) {
  nb_nop();
  return nullptr;
}

napi_value RawAdd3(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int64_t a, b, c;
  napi_get_value_int64(env, argv[0], &a);
  napi_get_value_int64(env, argv[1], &b);
  napi_get_value_int64(env, argv[2], &c);
  napi_value out;
  napi_create_double(env, static_cast<double>(nb_add3(a, b, c)), &out);
  return out;
}

napi_value RawEcho(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg;
  napi_get_cb_info(env, info, &argc, &arg, nullptr, nullptr);
  char buf[256];
  size_t len;
  napi_get_value_string_utf8(env, arg, buf, sizeof(buf), &len);
  napi_value out;
  napi_create_string_utf8(env, nb_echo(buf), NAPI_AUTO_LENGTH, &out);
  return out;
}

thread_local napi_env g_raw_env = nullptr;
thread_local napi_value g_raw_fn = nullptr;

int64_t RawTrampoline(int64_t i) {
  napi_handle_scope scope;
  napi_open_handle_scope(g_raw_env, &scope);
  napi_value arg, undefined, r;
  napi_create_double(g_raw_env, static_cast<double>(i), &arg);
  napi_get_undefined(g_raw_env, &undefined);
  napi_call_function(g_raw_env, undefined, g_raw_fn, 1, &arg, &r);
  int64_t v = 0;
  napi_get_value_int64(g_raw_env, r, &v);
  napi_close_handle_scope(g_raw_env, scope);
  return v;
}

napi_value RawCallN(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int64_t n;
  napi_get_value_int64(env, argv[1], &n);
  g_raw_env = env;
  g_raw_fn = argv[0];
  napi_value out;
  napi_create_double(env, static_cast<double>(nb_call_n(RawTrampoline, n)), &out);
  return out;
}

struct RawAsync {
  napi_deferred deferred;
  napi_async_work work;
};

napi_value RawAsyncNop(napi_env env, napi_callback_info info) {
  auto* job = new RawAsync();
  napi_value promise, name;
  napi_create_promise(env, &job->deferred, &promise);
  napi_create_string_utf8(env, "rawAsyncNop", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(
      env, nullptr, name, [](napi_env, void*) { nb_nop(); },
      [](napi_env env, napi_status, void* data) {
        auto* job = static_cast<RawAsync*>(data);
        napi_value undefined;
        napi_get_undefined(env, &undefined);
        napi_resolve_deferred(env, job->deferred, undefined);
        napi_delete_async_work(env, job->work);
        delete job;
      },
      job, &job->work);
  napi_queue_async_work(env, job->work);
  return promise;
}

// The least a function lookup must do in JS: hand back a new callable.
napi_value RawMakeFunction(napi_env env, napi_callback_info info) {
  napi_value fn;
  napi_create_function(env, "f", NAPI_AUTO_LENGTH, RawNop, nullptr, &fn);
  return fn;
}

void SetRaw(Napi::Env env, Napi::Object exports, const char* name, napi_callback cb) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, nullptr, &fn);
  exports.Set(name, Napi::Value(env, fn));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("naNop", Napi::Function::New(env, NaNop));
  exports.Set("naAdd3", Napi::Function::New(env, NaAdd3));
  exports.Set("naEcho", Napi::Function::New(env, NaEcho));
  exports.Set("naCallN", Napi::Function::New(env, NaCallN));
  exports.Set("naAsyncNop", Napi::Function::New(env, NaAsyncNop));
  SetRaw(env, exports, "rawNop", RawNop);
  SetRaw(env, exports, "rawAdd3", RawAdd3);
  SetRaw(env, exports, "rawEcho", RawEcho);
  SetRaw(env, exports, "rawCallN", RawCallN);
  SetRaw(env, exports, "rawAsyncNop", RawAsyncNop);
  SetRaw(env, exports, "rawMakeFunction", RawMakeFunction);
  return exports;
}

}  // namespace

NODE_API_MODULE(bench_addon, Init)
