// The extern "C" shell of the async calls (c_async_api.h); the pool is core/src/async/.
#include <polyffi/c_async_api.h>

#include "api_guard.h"
#include "polyffi/async.h"

using namespace polyffi;  // NOLINT(build/namespaces)

int TVMAsyncSubmit(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                   TVMAsyncCallback done, void* resource_handle, TVMAsyncCallHandle* out) {
  API_BEGIN();
  async::Call* call =
      async::Submit(func, arg_values, type_codes, num_args, done, resource_handle, out != nullptr);
  if (out) *out = call;
  API_END();
}

int TVMAsyncCancel(TVMAsyncCallHandle call, int* out_state) {
  API_BEGIN();
  int state = async::Cancel(async::CallOf(call));
  if (out_state) *out_state = state;
  API_END();
}

int TVMAsyncFree(TVMAsyncCallHandle call) {
  API_BEGIN();
  if (call) async::Release(async::CallOf(call));
  API_END();
}

int TVMAsyncCancelRequested(int* out) {
  API_BEGIN();
  if (out == nullptr) Throw("ValueError", "TVMAsyncCancelRequested: out is NULL");
  *out = async::CancelRequested() ? 1 : 0;
  API_END();
}

int TVMAsyncConfigure(int num_workers, int queue_limit) {
  API_BEGIN();
  async::Configure(num_workers, queue_limit);
  API_END();
}

int TVMAsyncGetConfig(int* num_workers, int* queue_limit, int* queued) {
  API_BEGIN();
  async::GetConfig(num_workers, queue_limit, queued);
  API_END();
}
