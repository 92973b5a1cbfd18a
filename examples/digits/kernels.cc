// Kernels of the digits MLP, exported the way a TVM-compiled model library exports them.
//
// Each op is a TVMBackendPackedCFunc taking DLTensor handles (inputs..., output). The library
// does not link libpolyffi: errors go through the __TVMAPISetLastError slot that
// TVMModLoadFromFile fills when it loads us (docs/spec/abi.md section 7, modules and compiled
// models). The math is plain float32 with the same operation order as train.py's numpy inference
// (dot product, then bias, then the activation), so predictions match it sample for sample.
#include <polyffi/c_backend_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#define DIGITS_EXPORT extern "C" __attribute__((visibility("default")))

// Slots the loader fills; a model library must not require libpolyffi at link time.
extern "C" {
__attribute__((visibility("default"))) void* __tvm_module_ctx = nullptr;
__attribute__((visibility("default"))) void (*__TVMAPISetLastError)(const char*) = nullptr;
}

namespace {

int Fail(const char* fmt, const char* op, long long a = 0, long long b = 0, long long c = 0) {
  char msg[256];
  char body[200];
  std::snprintf(body, sizeof(body), fmt, a, b, c);
  std::snprintf(msg, sizeof(msg), "ValueError: %s: %s", op, body);
  if (__TVMAPISetLastError != nullptr) __TVMAPISetLastError(msg);
  return -1;
}

// Checks that args[i] is a contiguous float32 CPU tensor of rank ndim.
int CheckTensor(const char* op, TVMValue* args, int* codes, int i, int ndim, DLTensor** out) {
  if (codes[i] != kTVMDLTensorHandle && codes[i] != kTVMNDArrayHandle) {
    return Fail("argument %lld must be a tensor, got type code %lld", op, i, codes[i]);
  }
  DLTensor* t = static_cast<DLTensor*>(args[i].v_handle);
  if (t == nullptr || t->data == nullptr) return Fail("argument %lld is a null tensor", op, i);
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    return Fail("argument %lld must be float32 (dtype code %lld, bits %lld)", op, i, t->dtype.code,
                t->dtype.bits);
  }
  if (t->device.device_type != kDLCPU) {
    return Fail("argument %lld must be on CPU, got device type %lld", op, i, t->device.device_type);
  }
  if (t->ndim != ndim)
    return Fail("argument %lld must have rank %lld, got %lld", op, i, ndim, t->ndim);
  if (t->strides != nullptr) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
      if (t->shape[d] != 1 && t->strides[d] != expect) {
        return Fail("argument %lld must be contiguous", op, i);
      }
      expect *= t->shape[d];
    }
  }
  *out = t;
  return 0;
}

inline float* Data(DLTensor* t) {
  return reinterpret_cast<float*>(static_cast<char*>(t->data) + t->byte_offset);
}

enum class Activation { kRelu, kSoftmax };

// out[n, units] = act(data[n, in] . weight[units, in]^T + bias[units]) (TVM's nn.dense layout).
int DenseBias(const char* op, Activation act, TVMValue* args, int* codes, int num_args) {
  if (num_args != 4)
    return Fail("expected 4 arguments (data, weight, bias, out), got %lld", op, num_args);
  DLTensor *x, *w, *b, *y;
  if (CheckTensor(op, args, codes, 0, 2, &x) || CheckTensor(op, args, codes, 1, 2, &w) ||
      CheckTensor(op, args, codes, 2, 1, &b) || CheckTensor(op, args, codes, 3, 2, &y)) {
    return -1;
  }
  const int64_t n = x->shape[0], in = x->shape[1], units = w->shape[0];
  if (w->shape[1] != in) {
    return Fail("weight has %lld input features but data has %lld", op, w->shape[1], in);
  }
  if (b->shape[0] != units)
    return Fail("bias has %lld entries, expected %lld", op, b->shape[0], units);
  if (y->shape[0] != n || y->shape[1] != units) {
    return Fail("output must be [%lld, %lld], got second dim %lld", op, n, units, y->shape[1]);
  }
  const float* xd = Data(x);
  const float* wd = Data(w);
  const float* bd = Data(b);
  float* yd = Data(y);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = xd + i * in;
    float* out = yd + i * units;
    for (int64_t j = 0; j < units; ++j) {
      const float* wrow = wd + j * in;
      float acc = 0.0f;
      for (int64_t k = 0; k < in; ++k) acc += row[k] * wrow[k];
      out[j] = acc + bd[j];
    }
    if (act == Activation::kRelu) {
      for (int64_t j = 0; j < units; ++j) out[j] = out[j] > 0.0f ? out[j] : 0.0f;
    } else {
      // Shift by the row maximum before exp, as numpy's reference does, so exp never overflows.
      float mx = out[0];
      for (int64_t j = 1; j < units; ++j) mx = out[j] > mx ? out[j] : mx;
      float sum = 0.0f;
      for (int64_t j = 0; j < units; ++j) {
        out[j] = std::exp(out[j] - mx);
        sum += out[j];
      }
      for (int64_t j = 0; j < units; ++j) out[j] /= sum;
    }
  }
  return 0;
}

}  // namespace

DIGITS_EXPORT int fused_dense_bias_relu(TVMValue* args, int* type_codes, int num_args,
                                        TVMValue* out_ret_value, int* out_ret_tcode, void*) {
  (void)out_ret_value;
  if (out_ret_tcode != nullptr) *out_ret_tcode = kTVMNullptr;
  return DenseBias("fused_dense_bias_relu", Activation::kRelu, args, type_codes, num_args);
}

DIGITS_EXPORT int fused_dense_bias_softmax(TVMValue* args, int* type_codes, int num_args,
                                           TVMValue* out_ret_value, int* out_ret_tcode, void*) {
  (void)out_ret_value;
  if (out_ret_tcode != nullptr) *out_ret_tcode = kTVMNullptr;
  return DenseBias("fused_dense_bias_softmax", Activation::kSoftmax, args, type_codes, num_args);
}
