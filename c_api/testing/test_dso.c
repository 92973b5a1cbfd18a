/*
 * A model library following the DSO convention (docs/spec/abi.md section 7, modules and compiled
 * models), written the way compiled code is: plain C, TVMBackendPackedCFunc entry points, and NOT
 * linked against libpolyffi. Every runtime service is reached through a function-pointer slot that
 * TVMModLoadFromFile fills.
 */
#include <polyffi/c_backend_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DSO_EXPORT __attribute__((visibility("default")))

/* ---- Symbols the loader reads or fills ---------------------------------------------------- */

DSO_EXPORT const char __tvm_main__[] = "scale_i64";
DSO_EXPORT void* __tvm_module_ctx = NULL;

DSO_EXPORT int (*__TVMFuncCall)(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes,
                                int num_args, TVMValue* ret_val, int* ret_type_code) = NULL;
DSO_EXPORT void (*__TVMAPISetLastError)(const char* msg) = NULL;
DSO_EXPORT int (*__TVMBackendGetFuncFromEnv)(void* mod_node, const char* func_name,
                                             TVMFunctionHandle* out) = NULL;
DSO_EXPORT void* (*__TVMBackendAllocWorkspace)(int device_type, int device_id, uint64_t nbytes,
                                               int dtype_code_hint, int dtype_bits_hint) = NULL;
DSO_EXPORT int (*__TVMBackendFreeWorkspace)(int device_type, int device_id, void* ptr) = NULL;
DSO_EXPORT int (*__TVMBackendParallelLaunch)(FTVMParallelLambda flambda, void* cdata,
                                             int num_task) = NULL;
DSO_EXPORT int (*__TVMBackendParallelBarrier)(int task_id, TVMParallelGroupEnv* penv) = NULL;

/* ---- Helpers ------------------------------------------------------------------------------ */

/* Report "Kind: message" and return -1; without the slot the message is lost, not the error. */
static int Fail(const char* msg) {
  if (__TVMAPISetLastError != NULL) __TVMAPISetLastError(msg);
  return -1;
}

static int CheckArgs(const char* name, int* type_codes, int num_args, const int* expected,
                     int num_expected) {
  char msg[256];
  int i;
  if (num_args != num_expected) {
    snprintf(msg, sizeof(msg), "TypeError: %s expected %d arguments but got %d", name, num_expected,
             num_args);
    return Fail(msg);
  }
  for (i = 0; i < num_args; ++i) {
    int code = type_codes[i];
    int ok = code == expected[i];
    /* An int parameter also takes uint and bool; a tensor parameter takes either tensor code. */
    if (expected[i] == kTVMArgInt) ok = ok || code == kDLUInt || code == kTVMArgBool;
    if (expected[i] == kTVMDLTensorHandle) ok = ok || code == kTVMNDArrayHandle;
    if (!ok) {
      snprintf(msg, sizeof(msg), "TypeError: %s: argument %d has type code %d, expected %d", name,
               i, code, expected[i]);
      return Fail(msg);
    }
  }
  return 0;
}

/* Elements of a contiguous CPU tensor, or -1 after reporting why it is unusable. */
static int64_t ContiguousNumel(const char* name, const DLTensor* t) {
  char msg[256];
  int64_t numel = 1, stride = 1;
  int i;
  if (t == NULL || (t->data == NULL && t->ndim > 0)) {
    snprintf(msg, sizeof(msg), "ValueError: %s: tensor without data", name);
    return Fail(msg);
  }
  if (t->device.device_type != kDLCPU) {
    snprintf(msg, sizeof(msg), "ValueError: %s: tensor is not on the CPU", name);
    return Fail(msg);
  }
  for (i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] < 0) {
      snprintf(msg, sizeof(msg), "ValueError: %s: negative shape", name);
      return Fail(msg);
    }
    if (t->strides != NULL && t->shape[i] != 1 && t->strides[i] != stride) {
      snprintf(msg, sizeof(msg), "ValueError: %s: tensor is not contiguous", name);
      return Fail(msg);
    }
    stride *= t->shape[i];
    numel *= t->shape[i];
  }
  return numel;
}

/* ---- Exported functions ------------------------------------------------------------------- */

/* out = in + 1 over float32 tensors of equal shape. */
DSO_EXPORT int add_one_f32(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                           int* out_ret_tcode, void* resource_handle) {
  static const int kExpected[2] = {kTVMDLTensorHandle, kTVMDLTensorHandle};
  const DLTensor* in;
  DLTensor* out;
  int64_t n, i;
  int d;
  (void)out_ret_value;
  (void)resource_handle;
  if (CheckArgs("add_one_f32", type_codes, num_args, kExpected, 2) != 0) return -1;
  in = (const DLTensor*)args[0].v_handle;
  out = (DLTensor*)args[1].v_handle;
  if ((n = ContiguousNumel("add_one_f32", in)) < 0) return -1;
  if (ContiguousNumel("add_one_f32", out) < 0) return -1;
  if (in->ndim != out->ndim) return Fail("ValueError: add_one_f32: ndim of in and out differ");
  for (d = 0; d < in->ndim; ++d) {
    if (in->shape[d] != out->shape[d]) {
      return Fail("ValueError: add_one_f32: shapes of in and out differ");
    }
  }
  if (in->dtype.code != kDLFloat || in->dtype.bits != 32 || in->dtype.lanes != 1 ||
      out->dtype.code != kDLFloat || out->dtype.bits != 32 || out->dtype.lanes != 1) {
    return Fail("ValueError: add_one_f32: expected float32 tensors");
  }
  {
    const float* src = (const float*)((const char*)in->data + in->byte_offset);
    float* dst = (float*)((char*)out->data + out->byte_offset);
    for (i = 0; i < n; ++i) dst[i] = src[i] + 1.0f;
  }
  *out_ret_tcode = kTVMNullptr;
  return 0;
}

/* x * k; the entry function (__tvm_main__). */
DSO_EXPORT int scale_i64(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                         int* out_ret_tcode, void* resource_handle) {
  static const int kExpected[2] = {kTVMArgInt, kTVMArgInt};
  int64_t r;
  (void)resource_handle;
  if (CheckArgs("scale_i64", type_codes, num_args, kExpected, 2) != 0) return -1;
  if (__builtin_mul_overflow(args[0].v_int64, args[1].v_int64, &r)) {
    return Fail("ValueError: scale_i64: integer overflow");
  }
  out_ret_value->v_int64 = r;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

/* A result of the kind its argument names, written as compiled code writes one: 0 uint 7,
 * 1 the dtype float32x4, 2 a string in the library's own memory, 3 an opaque handle, 4 None with
 * a stale value. The runtime must hand each on as it does a classic callee's. */
DSO_EXPORT int result_of_kind(TVMValue* args, int* type_codes, int num_args,
                              TVMValue* out_ret_value, int* out_ret_tcode, void* resource_handle) {
  static const int kExpected[1] = {kTVMArgInt};
  static const char kText[] = "from the kernel";
  (void)resource_handle;
  if (CheckArgs("result_of_kind", type_codes, num_args, kExpected, 1) != 0) return -1;
  switch (args[0].v_int64) {
    case 0:
      out_ret_value->v_int64 = 7;
      *out_ret_tcode = kDLUInt;
      return 0;
    case 1:
      out_ret_value->v_type.code = kDLFloat;
      out_ret_value->v_type.bits = 32;
      out_ret_value->v_type.lanes = 4;
      *out_ret_tcode = kTVMDataType;
      return 0;
    case 2:
      out_ret_value->v_str = kText;
      *out_ret_tcode = kTVMStr;
      return 0;
    case 3:
      out_ret_value->v_handle = (void*)kText;
      *out_ret_tcode = kTVMOpaqueHandle;
      return 0;
    case 4:
      out_ret_value->v_handle = (void*)kText;
      *out_ret_tcode = kTVMNullptr;
      return 0;
    default:
      return Fail("ValueError: result_of_kind: unknown kind");
  }
}

/* Allocates n bytes of workspace, writes byte i = i % 256, reads them back and returns the sum. */
DSO_EXPORT int use_workspace(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                             int* out_ret_tcode, void* resource_handle) {
  static const int kExpected[1] = {kTVMArgInt};
  int64_t n, i, sum = 0;
  unsigned char* buf;
  (void)resource_handle;
  if (CheckArgs("use_workspace", type_codes, num_args, kExpected, 1) != 0) return -1;
  n = args[0].v_int64;
  if (n < 0 || n > ((int64_t)1 << 32)) {
    return Fail("ValueError: use_workspace: n must be in [0, 2^32]");
  }
  if (__TVMBackendAllocWorkspace == NULL || __TVMBackendFreeWorkspace == NULL) {
    return Fail("RuntimeError: use_workspace: workspace slots were not filled by the loader");
  }
  if (n > 0) {
    buf = (unsigned char*)__TVMBackendAllocWorkspace(kDLCPU, 0, (uint64_t)n, kDLUInt, 8);
    if (buf == NULL) return -1; /* the runtime already set the error */
    for (i = 0; i < n; ++i) buf[i] = (unsigned char)(i & 0xff);
    for (i = 0; i < n; ++i) sum += buf[i];
    if (__TVMBackendFreeWorkspace(kDLCPU, 0, buf) != 0) return -1;
  }
  out_ret_value->v_int64 = sum;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

/* Looks NAME up from compiled code (module first, then the registry) and returns NAME(x). */
DSO_EXPORT int call_global(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                           int* out_ret_tcode, void* resource_handle) {
  static const int kExpected[2] = {kTVMStr, kTVMArgInt};
  TVMFunctionHandle f = NULL;
  TVMValue arg, ret;
  int code = kTVMArgInt, ret_code = kTVMNullptr, rc;
  char msg[512];
  (void)resource_handle;
  if (CheckArgs("call_global", type_codes, num_args, kExpected, 2) != 0) return -1;
  if (__TVMBackendGetFuncFromEnv == NULL || __TVMFuncCall == NULL) {
    return Fail("RuntimeError: call_global: function slots were not filled by the loader");
  }
  /* f is borrowed: the module caches it for its own lifetime. */
  if (__TVMBackendGetFuncFromEnv(__tvm_module_ctx, args[0].v_str, &f) != 0) return -1;
  if (f == NULL) {
    snprintf(msg, sizeof(msg), "ValueError: call_global: cannot find function %.400s",
             args[0].v_str);
    return Fail(msg);
  }
  arg.v_int64 = args[1].v_int64;
  rc = __TVMFuncCall(f, &arg, &code, 1, &ret, &ret_code);
  if (rc != 0) return rc; /* -1 or -2 pass through with the callee's error */
  if (ret_code != kTVMArgInt) {
    /* Compiled code has no slot to release objects, so only int results are allowed. */
    snprintf(msg, sizeof(msg), "TypeError: call_global: %.400s returned type code %d, expected int",
             args[0].v_str, ret_code);
    return Fail(msg);
  }
  out_ret_value->v_int64 = ret.v_int64;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

/* Always fails, to check that a DSO's error reaches the caller with its kind. */
DSO_EXPORT int always_fails(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                            int* out_ret_tcode, void* resource_handle) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  return Fail("RuntimeError: dso failure");
}

/* Most tasks parallel_sum supports: one slot each, on the caller's stack. */
#define kMaxTasks 256

typedef struct {
  int64_t n;
  int64_t total;
  int64_t partial[kMaxTasks];
} SumJob;

/* Task i sums its slice into its own slot; after the barrier, task 0 adds the slots up. */
static int SumTask(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  SumJob* job = (SumJob*)cdata;
  int64_t num = penv->num_task, begin, end, i, s = 0;
  if (num <= 0 || num > kMaxTasks) {
    return Fail("RuntimeError: parallel_sum: unsupported number of tasks");
  }
  begin = job->n * task_id / num;
  end = job->n * (task_id + 1) / num;
  for (i = begin; i < end; ++i) s += i;
  job->partial[task_id] = s;
  if (__TVMBackendParallelBarrier(task_id, penv) != 0) return -1;
  if (task_id == 0) {
    job->total = 0;
    for (i = 0; i < num; ++i) job->total += job->partial[i];
  }
  return 0;
}

/* Sum of 0..n-1 computed across the runtime's thread pool (one task per pool thread). */
DSO_EXPORT int parallel_sum(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                            int* out_ret_tcode, void* resource_handle) {
  static const int kExpected[1] = {kTVMArgInt};
  SumJob job;
  (void)resource_handle;
  if (CheckArgs("parallel_sum", type_codes, num_args, kExpected, 1) != 0) return -1;
  /* Bounded so that n * task_id and the total stay inside int64. */
  if (args[0].v_int64 < 0 || args[0].v_int64 > ((int64_t)1 << 31)) {
    return Fail("ValueError: parallel_sum: n must be in [0, 2^31]");
  }
  if (__TVMBackendParallelLaunch == NULL || __TVMBackendParallelBarrier == NULL) {
    return Fail("RuntimeError: parallel_sum: parallel slots were not filled by the loader");
  }
  memset(&job, 0, sizeof(job));
  job.n = args[0].v_int64;
  if (__TVMBackendParallelLaunch(SumTask, &job, 0) != 0) return -1;
  out_ret_value->v_int64 = job.total;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}
