// The runtime-library globals one by one over the C ABI (the fixtures in tvm027_runtime_test
// run them inside compiled models): TVM 0.27's results on small inputs worked out by hand
// (numpy's for unique/nonzero), its error kinds, and polyffi's own checks where TVM has none.
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

std::string LastError() { return TVMGetLastError(); }

/*! \brief An owned value (NDArray, object) or a plain one. */
struct Val {
  TVMValue v{};
  int code = kTVMNullptr;
  Val() = default;
  Val(const Val&) = delete;
  Val(Val&& o) noexcept : v(o.v), code(o.code) { o.code = kTVMNullptr; }
  ~Val() {
    if (code == kTVMNDArrayHandle) TVMArrayFree(static_cast<TVMArrayHandle>(v.v_handle));
    if (code == kTVMObjectHandle) TVMObjectFree(v.v_handle);
  }
  DLTensor* t() const { return static_cast<DLTensor*>(v.v_handle); }
  template <typename T>
  std::vector<T> Data() const {
    size_t n = 1;
    for (int i = 0; i < t()->ndim; ++i) n *= static_cast<size_t>(t()->shape[i]);
    std::vector<T> out(n);
    std::memcpy(out.data(), static_cast<char*>(t()->data) + t()->byte_offset, n * sizeof(T));
    return out;
  }
  std::vector<int64_t> Shape() const { return {t()->shape, t()->shape + t()->ndim}; }
};

template <typename T>
Val Tensor(const std::vector<int64_t>& shape, const std::vector<T>& data, uint8_t code,
           uint8_t bits = sizeof(T) * 8) {
  Val r;
  TVMArrayHandle h;
  EXPECT_EQ(
      TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), code, bits, 1, kDLCPU, 0, &h), 0)
      << LastError();
  if (!data.empty()) std::memcpy(h->data, data.data(), data.size() * sizeof(T));
  r.v.v_handle = h;
  r.code = kTVMNDArrayHandle;
  return r;
}
Val F32(const std::vector<int64_t>& s, const std::vector<float>& d) {
  return Tensor<float>(s, d, kDLFloat);
}
Val I32(const std::vector<int64_t>& s, const std::vector<int32_t>& d) {
  return Tensor<int32_t>(s, d, kDLInt);
}
Val I64(const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  return Tensor<int64_t>(s, d, kDLInt);
}

/*! \brief One argument: a tensor (borrowed), an int, a float or a string. */
struct Arg {
  TVMValue v;
  int code;
  Arg(const Val& t) : v(t.v), code(t.code) {}              // NOLINT(runtime/explicit)
  Arg(int x) : code(kTVMArgInt) { v.v_int64 = x; }         // NOLINT(runtime/explicit)
  Arg(double x) : code(kTVMArgFloat) { v.v_float64 = x; }  // NOLINT(runtime/explicit)
  Arg(const char* s) : code(kTVMStr) { v.v_str = s; }      // NOLINT(runtime/explicit)
};

/*! \brief Call a global; rc != 0 leaves the error text in *error (else fails the test). */
Val CallG(const char* name, std::vector<Arg> args, std::string* error = nullptr) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMFuncGetGlobal(name, &f), 0);
  EXPECT_NE(f, nullptr) << name;
  std::vector<TVMValue> v;
  std::vector<int> c;
  for (const Arg& a : args) v.push_back(a.v), c.push_back(a.code);
  Val r;
  int rc = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &r.v, &r.code);
  if (error != nullptr) {
    *error = rc == 0 ? "" : LastError();
    EXPECT_NE(rc, 0) << name << " accepted a bad call";
  } else {
    EXPECT_EQ(rc, 0) << name << ": " << LastError();
  }
  return r;
}

void ExpectError(const char* name, std::vector<Arg> args, const std::string& kind,
                 const std::string& part) {
  std::string err;
  CallG(name, std::move(args), &err);
  EXPECT_EQ(err.rfind(kind + ": ", 0), 0u) << err;
  EXPECT_NE(err.find(part), std::string::npos) << err;
}

// ---- tvm.contrib.sort

TEST(ContribSort, StableAscendingAndDescending) {
  Val x = F32({5}, {3, 1, 2, 1, 3});
  Val out = F32({5}, {});
  CallG("tvm.contrib.sort.sort", {x, out, 0, 1});
  EXPECT_EQ(out.Data<float>(), (std::vector<float>{1, 1, 2, 3, 3}));
  Val idx = I32({5}, {});
  CallG("tvm.contrib.sort.argsort", {x, idx, -1, 1});
  EXPECT_EQ(idx.Data<int32_t>(), (std::vector<int32_t>{1, 3, 2, 0, 4}));
  CallG("tvm.contrib.sort.argsort", {x, idx, 0, 0});  // ties keep input order descending too
  EXPECT_EQ(idx.Data<int32_t>(), (std::vector<int32_t>{0, 4, 2, 1, 3}));
  Val fidx = F32({5}, {});  // float indices, as TVM allows
  CallG("tvm.contrib.sort.argsort", {x, fidx, 0, 1});
  EXPECT_EQ(fidx.Data<float>(), (std::vector<float>{1, 3, 2, 0, 4}));
}

TEST(ContribSort, AlongTheFirstAxisOfAMatrix) {
  Val x = I64({3, 2}, {5, -1, 2, 7, 5, 0});
  Val out = I64({3, 2}, {});
  CallG("tvm.contrib.sort.sort", {x, out, 0, 1});
  EXPECT_EQ(out.Data<int64_t>(), (std::vector<int64_t>{2, -1, 5, 0, 5, 7}));
  Val idx = I64({3, 2}, {});
  CallG("tvm.contrib.sort.argsort", {x, idx, 0, 0});
  EXPECT_EQ(idx.Data<int64_t>(), (std::vector<int64_t>{0, 1, 2, 2, 1, 0}));
}

TEST(ContribSort, Float16ComparesAsFloat) {
  // -2.0, 0.5, -0.0, 1.0 as IEEE half bits.
  Val x = Tensor<uint16_t>({4}, {0xc000, 0x3800, 0x8000, 0x3c00}, kDLFloat);
  Val idx = I32({4}, {});
  CallG("tvm.contrib.sort.argsort", {x, idx, 0, 1});
  EXPECT_EQ(idx.Data<int32_t>(), (std::vector<int32_t>{0, 2, 1, 3}));
}

TEST(ContribSort, TopkOrdersByValueThenIndex) {
  Val x = F32({2, 4}, {3, 9, 9, 1, 4, 4, 4, 8});
  Val values = F32({2, 2}, {}), indices = I64({2, 2}, {});
  CallG("tvm.contrib.sort.topk", {x, values, indices, 2, 1, "both", 0});
  EXPECT_EQ(values.Data<float>(), (std::vector<float>{9, 9, 8, 4}));
  EXPECT_EQ(indices.Data<int64_t>(), (std::vector<int64_t>{1, 2, 3, 0}));
  Val asc = I32({2, 2}, {});
  CallG("tvm.contrib.sort.topk", {x, asc, 2, -1, "indices", 1});
  EXPECT_EQ(asc.Data<int32_t>(), (std::vector<int32_t>{3, 0, 0, 1}));
  Val all = F32({2, 4}, {});  // k < 1: the whole axis
  CallG("tvm.contrib.sort.topk", {x, all, 0, 1, "values", 0});
  EXPECT_EQ(all.Data<float>(), (std::vector<float>{9, 9, 3, 1, 8, 4, 4, 4}));
  Val u8 = Tensor<uint8_t>({4}, {7, 200, 7, 3}, kDLUInt);
  Val u8i = Tensor<uint8_t>({2}, {}, kDLUInt);
  CallG("tvm.contrib.sort.topk", {u8, u8i, 2, 0, "indices", 0});
  EXPECT_EQ(u8i.Data<uint8_t>(), (std::vector<uint8_t>{1, 0}));
}

TEST(ContribSort, ArgsortNmsSortsOnlyTheValidPrefix) {
  Val x = F32({2, 4}, {1, 5, 3, 9, 4, 2, 8, 6});
  Val valid = I32({2}, {3, 0});
  Val out = I32({2, 4}, {});
  CallG("tvm.contrib.sort.argsort_nms", {x, valid, out, 1, 0});
  EXPECT_EQ(out.Data<int32_t>(), (std::vector<int32_t>{1, 2, 0, 3, 0, 1, 2, 3}));
}

TEST(ContribSort, TvmsErrorsAndPolyffisChecks) {
  Val x = F32({5}, {3, 1, 2, 1, 3});
  Val out = F32({5}, {}), idx = I32({5}, {});
  ExpectError("tvm.contrib.sort.sort", {x, out, 1, 1}, "InternalError", "Axis out of boundary");
  ExpectError("tvm.contrib.sort.sort", {x, idx, 0, 1}, "InternalError", "data_dtype == out_dtype");
  Val i8 = Tensor<int8_t>({5}, {}, kDLInt);
  ExpectError("tvm.contrib.sort.argsort", {x, i8, 0, 1}, "InternalError",
              "Unsupported output dtype: int8");
  ExpectError("tvm.contrib.sort.argsort", {i8, idx, 0, 1}, "InternalError",
              "Unsupported input dtype: int8");
  ExpectError("tvm.contrib.sort.topk", {x, out, 2, 0, "some", 1}, "InternalError",
              "Unsupported ret type: some");
  Val small = F32({4}, {});
  ExpectError("tvm.contrib.sort.sort", {x, small, 0, 1}, "ValueError", "has shape (4)");
  Val k2 = F32({2}, {});
  ExpectError("tvm.contrib.sort.topk", {x, k2, 3, 0, "values", 1}, "ValueError", "(3) is needed");
  ExpectError("tvm.contrib.sort.sort", {x, 1, 0, 1}, "TypeError", "");
  ExpectError("tvm.contrib.sort.sort", {x, out, 0}, "TypeError", "");
}

// ---- tvm.contrib.random

TEST(ContribRandom, SeededUniformAndNormalAreStateless) {
  Val a = F32({64}, {}), b = F32({64}, {}), c = F32({64}, {});
  CallG("tvm.contrib.random.uniform", {7, 11, -1.0, 1.0, a});
  CallG("tvm.contrib.random.uniform", {7, 11, -1.0, 1.0, b});
  CallG("tvm.contrib.random.uniform", {7, 12, -1.0, 1.0, c});
  EXPECT_EQ(a.Data<float>(), b.Data<float>());
  EXPECT_NE(a.Data<float>(), c.Data<float>());
  for (float v : a.Data<float>()) EXPECT_TRUE(v >= -1.0f && v < 1.0f) << v;
  Val n1 = F32({256}, {}), n2 = F32({256}, {});
  CallG("tvm.contrib.random.normal", {3, 5, 10.0, 0.5, n1});
  CallG("tvm.contrib.random.normal", {3, 5, 10.0, 0.5, n2});
  EXPECT_EQ(n1.Data<float>(), n2.Data<float>());
  double mean = 0;
  for (float v : n1.Data<float>()) mean += v / 256.0;
  EXPECT_NEAR(mean, 10.0, 0.2);
}

TEST(ContribRandom, UnseededDrawsStayInRange) {
  Val u = F32({100}, {});
  CallG("tvm.contrib.random.uniform", {2.0, 3.0, u});
  for (float v : u.Data<float>()) EXPECT_TRUE(v >= 2.0f && v < 3.0f) << v;
  Val r = Tensor<int8_t>({200}, {}, kDLInt);
  CallG("tvm.contrib.random.randint", {-300, 5, r});  // clamped to int8's range
  for (int8_t v : r.Data<int8_t>()) EXPECT_TRUE(v >= -128 && v < 5) << int(v);
  Val f = F32({50}, {});
  CallG("tvm.contrib.random.random_fill", {f});
  for (float v : f.Data<float>()) EXPECT_TRUE(v >= 1.0f && v < 10.0f) << v;
  Val h = Tensor<uint16_t>({50}, {}, kDLFloat, 16);
  CallG("tvm.contrib.random.random_fill_for_measure", {h});
  for (uint16_t v : h.Data<uint16_t>()) EXPECT_TRUE(v >= 0x3c00 && v <= 0x4900) << v;  // [1, 10]
}

TEST(ContribRandom, TvmsErrors) {
  Val u = F32({4}, {});
  ExpectError("tvm.contrib.random.uniform", {1.0, 1.0, u}, "InternalError",
              "high must be bigger than low");
  ExpectError("tvm.contrib.random.uniform", {1.0, u}, "InternalError",
              "expects either 3 or 5 arguments, but got 2");
  ExpectError("tvm.contrib.random.normal", {0.0, -1.0, u}, "InternalError",
              "standard deviation must be positive");
  Val i = I64({4}, {});
  ExpectError("tvm.contrib.random.normal", {0.0, 1.0, i}, "InternalError", "float32 is needed");
  ExpectError("tvm.contrib.random.randint", {0, 10, i}, "InternalError", "unknown data type");
  ExpectError("tvm.contrib.random.randint", {3, 3, u}, "InternalError", "high must be bigger");
}

// ---- relax.run.unique / nonzero (numpy's results)

Val Item(const Val& tuple, int i) {
  TVMFunctionHandle f;
  TVMFuncGetGlobal("runtime.ArrayGetItem", &f);
  TVMValue v[2];
  v[0] = tuple.v;
  v[1].v_int64 = i;
  int c[2] = {kTVMObjectHandle, kTVMArgInt};
  Val r;
  EXPECT_EQ(TVMFuncCall(f, v, c, 2, &r.v, &r.code), 0) << LastError();
  return r;
}

TEST(RelaxRunUnique, SortedWithEveryOutputAndNaNs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Val x = F32({5}, {0.0f, nan, -0.0f, 1.0f, nan});
  Val r = CallG("relax.run.unique", {x, 1, 1, 1, 1});
  ASSERT_EQ(r.code, kTVMObjectHandle);
  Val values = Item(r, 0), index = Item(r, 1), inverse = Item(r, 2), counts = Item(r, 3);
  auto v = values.Data<float>();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_FALSE(std::signbit(v[0]));  // the first occurrence (+0.0)
  EXPECT_EQ(v[1], 1.0f);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(index.Data<int64_t>(), (std::vector<int64_t>{0, 3, 1}));
  EXPECT_EQ(inverse.Data<int64_t>(), (std::vector<int64_t>{0, 2, 0, 1, 2}));
  EXPECT_EQ(counts.Data<int64_t>(), (std::vector<int64_t>{2, 1, 2}));
}

TEST(RelaxRunUnique, UnsortedKeepsFirstOccurrenceOrder) {
  Val x = I32({7}, {4, 2, 4, 9, 2, 2, 0});
  Val plain = CallG("relax.run.unique", {x, 0, 0, 0, 0});
  ASSERT_EQ(plain.code, kTVMNDArrayHandle);
  EXPECT_EQ(plain.Data<int32_t>(), (std::vector<int32_t>{4, 2, 9, 0}));
  Val r = CallG("relax.run.unique", {x, 0, 0, 1, 1});
  EXPECT_EQ(Item(r, 1).Data<int64_t>(), (std::vector<int64_t>{0, 1, 0, 2, 1, 1, 3}));
  EXPECT_EQ(Item(r, 2).Data<int64_t>(), (std::vector<int64_t>{2, 3, 1, 1}));
}

TEST(RelaxRunUnique, RowsAlongAnAxis) {
  Val x = I32({4, 2}, {1, 2, 0, 5, 1, 2, 0, 1});
  Val r = CallG("relax.run.unique", {x, 1, 1, 0, 0, -2});
  Val values = Item(r, 0);
  EXPECT_EQ(values.Shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values.Data<int32_t>(), (std::vector<int32_t>{0, 1, 0, 5, 1, 2}));
  EXPECT_EQ(Item(r, 1).Data<int64_t>(), (std::vector<int64_t>{3, 1, 0}));
  ExpectError("relax.run.unique", {x, 1, 0, 0, 0, 2}, "IndexError", "out of bounds");
}

// Empty rows are all equal: one group, like numpy (values (1, 0), index [0], inverse of zeros,
// counts [5]); an axis as long as no memory can hold is a typed error, not an allocation of the
// axis length (fuzz_globals long run).
TEST(RelaxRunUnique, EmptyItemsAlongAnAxis) {
  Val x = I32({5, 0}, {});
  Val r = CallG("relax.run.unique", {x, 1, 1, 1, 1, 0});
  EXPECT_EQ(Item(r, 0).Shape(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Item(r, 1).Data<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(Item(r, 2).Data<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(Item(r, 3).Data<int64_t>(), (std::vector<int64_t>{5}));
  // 2^60 empty rows: their count needs no memory; their inverse (2^63 bytes) is refused before
  // anything is allocated.
  Val huge = I32({int64_t{1} << 60, 0}, {});
  Val counts = CallG("relax.run.unique", {huge, 1, 0, 0, 1, 0});
  EXPECT_EQ(Item(counts, 1).Data<int64_t>(), (std::vector<int64_t>{int64_t{1} << 60}));
  ExpectError("relax.run.unique", {huge, 1, 0, 1, 0, 0}, "ValueError", "");
}

TEST(RelaxRunNonzero, CoordinatesPerDimension) {
  Val x = F32({2, 3}, {0, 1.5f, 0, -0.0f, 0, 2});
  Val r = CallG("relax.run.nonzero", {x});
  EXPECT_EQ(r.Shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r.Data<int64_t>(), (std::vector<int64_t>{0, 1, 1, 2}));
  Val scalar = I32({}, {7});
  Val s = CallG("relax.run.nonzero", {scalar});
  EXPECT_EQ(s.Shape(), (std::vector<int64_t>{1, 1}));
  Val none = I32({3}, {0, 0, 0});
  EXPECT_EQ(CallG("relax.run.nonzero", {none}).Shape(), (std::vector<int64_t>{1, 0}));
}

// ---- shapes from data, zero offsets, devices

TEST(VmBuiltins, TensorToShapeAndBack) {
  Val t = I32({3}, {4, -1, 7});
  Val s = CallG("vm.builtin.tensor_to_shape", {t});
  ASSERT_EQ(s.code, kTVMObjectHandle);
  Val back = CallG("relax.run.shape_to_tensor", {Arg(s)});
  EXPECT_EQ(back.Data<int64_t>(), (std::vector<int64_t>{4, -1, 7}));
  Val m = I32({1, 2}, {1, 2});
  ExpectError("vm.builtin.tensor_to_shape", {m}, "InternalError", "arr->ndim == 1");
  Val f = F32({2}, {1, 2});
  ExpectError("vm.builtin.tensor_to_shape", {f}, "InternalError", "kDLInt");
  Val i8 = Tensor<int8_t>({2}, {1, 2}, kDLInt);
  ExpectError("vm.builtin.tensor_to_shape", {i8}, "InternalError", "Unknown scalar int type: int8");
}

TEST(VmBuiltins, EnsureZeroOffsetAndToDevice) {
  Val t = F32({4}, {1, 2, 3, 4});
  Val same = CallG("vm.builtin.ensure_zero_offset", {t});
  EXPECT_EQ(same.t()->data, t.t()->data);
  Val copy = CallG("vm.builtin.to_device", {t, 1, 0});
  EXPECT_NE(copy.t()->data, t.t()->data);
  EXPECT_EQ(copy.Data<float>(), (std::vector<float>{1, 2, 3, 4}));
  ExpectError("vm.builtin.to_device", {t, 2, 0}, "ValueError", "CPU");
  ExpectError("vm.builtin.to_device", {t, 1, 0, "shared"}, "ValueError", "memory scope");
  ExpectError("vm.builtin.ensure_zero_offset", {1}, "TypeError", "");
}

TEST(VmBuiltins, CheckStringInfo) {
  CallG("vm.builtin.check_string_info", {"text", "ctx"});
  ExpectError("vm.builtin.check_string_info", {1, "ErrorContext(x)"}, "TypeError",
              "ErrorContext(x) expect a String");
}

// ---- tensor cache and parameters from it

Val MakeArray(std::vector<Arg> items) { return CallG("runtime.Array", std::move(items)); }

TEST(TensorCache, UpdateGetRemoveAndParams) {
  CallG("vm.builtin.tensor_cache.clear", {});
  Val a = F32({2}, {1, 2}), b = F32({1}, {5});
  CallG("vm.builtin.tensor_cache.update", {"p_0", a});
  CallG("vm.builtin.tensor_cache.update", {"p_1", b, 0});
  ExpectError("vm.builtin.tensor_cache.update", {"p_1", a}, "InternalError",
              "Name p_1 already exists in the cache");
  CallG("vm.builtin.tensor_cache.update", {"p_1", b, 1});  // override
  Val got = CallG("vm.builtin.tensor_cache.get", {"p_0"});
  ASSERT_EQ(got.code, kTVMNDArrayHandle);
  EXPECT_EQ(got.t()->data, a.t()->data);  // the same tensor, not a copy
  EXPECT_EQ(CallG("vm.builtin.tensor_cache.get", {"nope"}).code, kTVMNullptr);

  Val arr = CallG("vm.builtin.param_array_from_cache", {"p", 2});
  EXPECT_EQ(Item(arr, 1).Data<float>(), (std::vector<float>{5}));
  Val all = CallG("vm.builtin.param_array_from_cache", {"p", -1});  // until one is missing
  Val n = CallG("runtime.ArraySize", {Arg(all)});
  EXPECT_EQ(n.v.v_int64, 2);
  ExpectError("vm.builtin.param_array_from_cache", {"p", 3}, "InternalError",
              "Cannot find p_2 in cache");
  Val names = MakeArray({"p_1", "p_0"});
  Val by_name = CallG("vm.builtin.param_array_from_cache_by_name", {Arg(names)});
  EXPECT_EQ(Item(by_name, 0).Data<float>(), (std::vector<float>{5}));
  Val unpacked = CallG("vm.builtin.param_array_from_cache_by_name_unpacked", {"p_0"});
  EXPECT_EQ(Item(unpacked, 0).Data<float>(), (std::vector<float>{1, 2}));
  ExpectError("vm.builtin.param_array_from_cache_by_name_unpacked", {"p_0", 3}, "ValueError",
              "Expect string as input, but get int at 1");
  Val missing = MakeArray({"p_0", "q"});
  ExpectError("vm.builtin.param_array_from_cache_by_name", {Arg(missing)}, "ValueError",
              "Cannot find parameter in cache: q");

  Val mod = CallG("vm.builtin.param_module_from_cache", {"p", 2});
  ASSERT_EQ(mod.code, kTVMModuleHandle);
  TVMFunctionHandle get = nullptr;
  ASSERT_EQ(TVMModGetFunction(mod.v.v_handle, "get_params", 0, &get), 0);
  ASSERT_NE(get, nullptr);
  Val params;
  ASSERT_EQ(TVMFuncCall(get, nullptr, nullptr, 0, &params.v, &params.code), 0) << LastError();
  EXPECT_EQ(Item(params, 0).Data<float>(), (std::vector<float>{1, 2}));
  TVMFuncFree(get);
  TVMModFree(mod.v.v_handle);
  mod.code = kTVMNullptr;

  CallG("vm.builtin.tensor_cache.remove", {"p_0"});
  EXPECT_EQ(CallG("vm.builtin.tensor_cache.get", {"p_0"}).code, kTVMNullptr);
  CallG("vm.builtin.tensor_cache.clear", {});
  EXPECT_EQ(CallG("vm.builtin.tensor_cache.get", {"p_1"}).code, kTVMNullptr);
}

// ---- host functions and debug hooks

int g_calls = 0;
std::string g_line;
int Recorder(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  ++g_calls;
  if (n >= 1 && codes[0] == kTVMStr) g_line = args[0].v_str;
  TVMValue v;
  v.v_int64 = n;
  int c = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &v, &c, 1);
}

TEST(VmBuiltins, PyFuncRegistryAndDebugFunctions) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(Recorder, nullptr, nullptr, &f), 0);
  TVMValue fv;
  fv.v_handle = f;
  Arg farg(1);
  farg.v = fv;
  farg.code = kTVMPackedFuncHandle;
  CallG("vm.builtin.register_py_func", {"rec", farg});
  Val call_args = MakeArray({7, 8});
  Val call = MakeArray({"rec", Arg(call_args)});
  Val r = CallG("vm.builtin.call_py_func", {Arg(call)});
  EXPECT_EQ(r.v.v_int64, 2);  // the function saw the two arguments
  Val unknown = MakeArray({"nope", Arg(call_args)});
  ExpectError("vm.builtin.call_py_func", {Arg(unknown)}, "InternalError",
              "Python function 'nope' not found in registry");
  CallG("vm.builtin.clear_py_func_registry", {});
  ExpectError("vm.builtin.get_py_func", {"rec"}, "InternalError", "not found in registry");

  ASSERT_EQ(TVMFuncRegisterGlobal("rtlib_test.debug", f, 1), 0);
  g_calls = 0;
  Arg none(0);
  none.code = kTVMNullptr;
  Val d = CallG("vm.builtin.invoke_debug_func", {none, "rtlib_test.debug", "line 3", 1, 2.5});
  EXPECT_EQ(d.code, kTVMNullptr);
  EXPECT_EQ(g_calls, 1);
  EXPECT_EQ(g_line, "line 3");
  ExpectError("vm.builtin.invoke_debug_func", {none, "rtlib_test.missing", "x"}, "ValueError",
              "rtlib_test.missing is not found");
  TVMFuncFree(f);
}

// ---- printing and assertions

TEST(RelaxRunPrint, FormatsValuesAsPythonWould) {
  Val t = F32({2, 2}, {1, 2.5f, -0.1f, 4});
  testing::internal::CaptureStdout();
  CallG("relax.run.print", {"x={0} n={1}", t, 7});
  ExpectError("relax.run.print", {"{} {1}", 1, 2}, "ValueError", "cannot switch");
  CallG("relax.run.print", {"", 2.5, "s"});
  Val v = I32({3}, {1, 2, 3});
  Val shape = CallG("vm.builtin.shape_of", {v});
  CallG("vm.builtin.debug_print", {"line 9", v});
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out,
            "x=[[1.0, 2.5], [-0.1, 4.0]] n=7\n2.5 s\n"
            "line 9: shape = (3,), dtype = int32, data =\n[1, 2, 3]\n");
  ExpectError("relax.run.print", {"{:>4}", 1}, "ValueError", "unsupported format field");
  ExpectError("relax.run.print", {"{} {}", 1}, "IndexError", "Replacement index 1");
}

TEST(RelaxRunAssert, RaisesAssertionErrorWithTheMessage) {
  CallG("relax.run.assert_op", {1, "never"});
  ExpectError("relax.run.assert_op", {0, ""}, "AssertionError", "Assertion Failed");
  ExpectError("relax.run.assert_op", {0, "", 3, "x"}, "AssertionError", "3, x");
  ExpectError("relax.run.assert_op", {0, "got {} want {}", 3, 4}, "AssertionError", "got 3 want 4");
  const uint8_t kBool = 6;  // DLPack's kDLBool
  Val yes = Tensor<uint8_t>({}, {1}, kBool, 8);
  Val no = Tensor<uint8_t>({}, {0}, kBool, 8);
  CallG("relax.run.assert_op", {yes, ""});
  ExpectError("relax.run.assert_op", {no, "bad"}, "AssertionError", "bad");
  Val notbool = I32({}, {1});
  ExpectError("relax.run.assert_op", {notbool, ""}, "ValueError", "must be a bool scalar");
  ExpectError("relax.run.assert_op", {1, 2}, "ValueError", "format string argument");
}

// ---- random calls: any shapes, dtypes, axes and outputs give a result or a typed error

TEST(RuntimeGlobals, RandomCallsGiveResultsOrTypedErrors) {
  uint64_t state = 20261125;
  auto next = [&state](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((state >> 33) % n);
  };
  const std::vector<std::pair<uint8_t, uint8_t>> dtypes = {
      {kDLFloat, 32}, {kDLFloat, 64}, {kDLFloat, 16}, {kDLInt, 32}, {kDLInt, 64},
      {kDLInt, 8},    {kDLUInt, 8},   {kDLInt, 16},   {6, 8}};
  auto random_tensor = [&]() {
    auto [code, bits] = dtypes[next(dtypes.size())];
    std::vector<int64_t> shape(static_cast<size_t>(next(4)));
    size_t n = 1;
    for (auto& d : shape) n *= static_cast<size_t>(d = next(5));
    std::vector<uint8_t> bytes(n * bits / 8);
    for (auto& b : bytes) b = static_cast<uint8_t>(next(256));
    Val t;
    TVMArrayHandle h;
    EXPECT_EQ(
        TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), code, bits, 1, kDLCPU, 0, &h),
        0);
    if (!bytes.empty()) std::memcpy(h->data, bytes.data(), bytes.size());
    t.v.v_handle = h;
    t.code = kTVMNDArrayHandle;
    return t;
  };
  const char* ret_types[] = {"both", "values", "indices", "neither"};
  const char* names[] = {"tvm.contrib.sort.sort",
                         "tvm.contrib.sort.argsort",
                         "tvm.contrib.sort.topk",
                         "tvm.contrib.sort.argsort_nms",
                         "relax.run.unique",
                         "relax.run.nonzero",
                         "vm.builtin.tensor_to_shape",
                         "vm.builtin.ensure_zero_offset",
                         "tvm.contrib.random.uniform",
                         "tvm.contrib.random.randint",
                         "tvm.contrib.random.random_fill",
                         "relax.run.assert_op"};
  int ok = 0, refused = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const char* name = names[next(12)];
    Val a = random_tensor(), b = random_tensor(), c = random_tensor();
    std::vector<Arg> args{a};
    const int extra = static_cast<int>(next(6));
    for (int i = 0; i < extra; ++i) {
      switch (next(5)) {
        case 0:
          args.emplace_back(b);
          break;
        case 1:
          args.emplace_back(c);
          break;
        case 2:
          args.emplace_back(static_cast<int>(next(9)) - 4);
          break;
        case 3:
          args.emplace_back(ret_types[next(4)]);
          break;
        default:
          args.emplace_back(static_cast<double>(next(7)) - 3.0);
      }
    }
    TVMFunctionHandle f = nullptr;
    ASSERT_EQ(TVMFuncGetGlobal(name, &f), 0);
    std::vector<TVMValue> v;
    std::vector<int> codes;
    for (const Arg& x : args) v.push_back(x.v), codes.push_back(x.code);
    Val r;
    if (TVMFuncCall(f, v.data(), codes.data(), static_cast<int>(v.size()), &r.v, &r.code) == 0) {
      ++ok;
      if (r.code == kTVMModuleHandle) TVMModFree(r.v.v_handle), r.code = kTVMNullptr;
    } else {
      ++refused;
      std::string err = LastError();
      // A typed error ("Kind: message"), never an unknown failure.
      EXPECT_NE(err.find("Error: "), std::string::npos) << name << ": " << err;
    }
  }
  EXPECT_GT(ok, 100);
  EXPECT_GT(refused, 100);
}

}  // namespace
