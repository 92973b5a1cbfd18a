// The TVM-compatible runtime.* globals at the core level: ShapeTuple, ADT, arrays and views,
// parameter blobs (including every truncation of a valid blob), the time evaluator, devices.
// The same globals are driven by TVM 0.18's own Python in tests/tvm_compat.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "polyffi/container.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace {

struct Arg {
  TVMValue v;
  int code;
};
Arg I(int64_t x) {
  Arg a{};
  a.v.v_int64 = x, a.code = kTVMArgInt;
  return a;
}
Arg S(const char* s) {
  Arg a{};
  a.v.v_str = s, a.code = kTVMStr;
  return a;
}
Arg O(Object* o) {
  Arg a{};
  a.v.v_handle = o, a.code = kTVMObjectHandle;
  return a;
}
Arg A(NDArrayObj* arr) {
  Arg a{};
  a.v.v_handle = arr->handle(), a.code = kTVMNDArrayHandle;
  return a;
}
Arg Dev() {
  Arg a{};
  a.v.v_device = DLDevice{kDLCPU, 0}, a.code = kDLDevice;
  return a;
}
Arg Type(DLDataType t) {
  Arg a{};
  a.v.v_type = t, a.code = kTVMDataType;
  return a;
}
Arg Null() {
  Arg a{};
  a.v.v_handle = nullptr, a.code = kTVMNullptr;
  return a;
}
Arg Bytes(TVMByteArray* b) {
  Arg a{};
  a.v.v_handle = b, a.code = kTVMBytes;
  return a;
}

RetValue Call(const char* name, std::vector<Arg> args) {
  auto f = Registry::Global()->Get(name);
  EXPECT_TRUE(f) << name;
  std::vector<TVMValue> values;
  std::vector<int> codes;
  for (const Arg& a : args) values.push_back(a.v), codes.push_back(a.code);
  RetValue rv;
  f->Call(values.data(), codes.data(), static_cast<int>(args.size()), &rv);
  return rv;
}

std::string KindOf(const char* name, std::vector<Arg> args) {
  try {
    Call(name, std::move(args));
  } catch (const Error& e) {
    return e.kind();
  }
  return "no error";
}

NDArrayObj* AsArray(const RetValue& v) { return static_cast<NDArrayObj*>(v.object()); }

TEST(ShapeTupleTest, BuildAndRead) {
  RetValue st = Call("runtime.ShapeTuple", {I(2), I(-1), I(int64_t{1} << 40)});
  ASSERT_EQ(st.object()->type_index(), TypeIndex::kShapeTuple);
  EXPECT_EQ(TypeKey2Index("runtime.ShapeTuple"), 6u);
  EXPECT_EQ(Call("runtime.GetShapeTupleSize", {O(st.object())}).value().v_int64, 3);
  EXPECT_EQ(Call("runtime.GetShapeTupleElem", {O(st.object()), I(2)}).value().v_int64,
            int64_t{1} << 40);
  EXPECT_EQ(KindOf("runtime.GetShapeTupleElem", {O(st.object()), I(3)}), "InternalError");
  EXPECT_EQ(KindOf("runtime.GetShapeTupleElem", {O(st.object()), I(-1)}), "InternalError");
  EXPECT_EQ(KindOf("runtime.ShapeTuple", {S("x")}), "TypeError");
}

TEST(ADTTest, TupleAndTaggedValues) {
  RetValue inner = Call("runtime.Array", {I(7)});
  RetValue t = Call("runtime.Tuple", {O(inner.object()), I(5)});
  ASSERT_EQ(t.object()->type_index(), TypeIndex::kADT);
  EXPECT_EQ(TypeKey2Index("runtime.ADT"), 11u);
  EXPECT_EQ(Call("runtime.GetADTTag", {O(t.object())}).value().v_int64, 0);
  EXPECT_EQ(Call("runtime.GetADTSize", {O(t.object())}).value().v_int64, 2);
  EXPECT_EQ(Call("runtime.GetADTFields", {O(t.object()), I(0)}).object(), inner.object());
  EXPECT_EQ(KindOf("runtime.GetADTFields", {O(t.object()), I(2)}), "InternalError");
  RetValue adt = Call("runtime.ADT", {I(3)});
  EXPECT_EQ(Call("runtime.GetADTTag", {O(adt.object())}).value().v_int64, 3);
  EXPECT_EQ(Call("runtime.GetADTSize", {O(adt.object())}).value().v_int64, 0);
}

TEST(StringTest, FFIStringAndHash) {
  RetValue s = Call("runtime.String", {S("abc")});
  EXPECT_EQ(Call("runtime.GetFFIString", {O(s.object())}).str(), "abc");
  EXPECT_EQ(Call("runtime.ObjectPtrHash", {O(s.object())}).value().v_int64,
            static_cast<int64_t>(reinterpret_cast<intptr_t>(s.object())));
}

TEST(ArrayTest, AllocWithScopeTakesTvmBool) {
  RetValue shape = Call("runtime.ShapeTuple", {I(3)});
  RetValue arr =
      Call("runtime.TVMArrayAllocWithScope", {O(shape.object()), S("bool"), Dev(), Null()});
  DLDataType t = AsArray(arr)->tensor.dtype;
  EXPECT_EQ(t.code, kDLUInt);
  EXPECT_EQ(t.bits, 1);
  EXPECT_EQ(t.lanes, 1);
  RetValue f = Call("runtime.TVMArrayAllocWithScope",
                    {O(shape.object()), Type(DLDataType{kDLFloat, 32, 1}), Dev(), S("global")});
  EXPECT_EQ(AsArray(f)->tensor.shape[0], 3);
  EXPECT_EQ(KindOf("runtime.TVMArrayAllocWithScope",
                   {O(shape.object()), S("float32"), Dev(), S("shared")}),
            "TVMError");
  Arg gpu = Dev();
  gpu.v.v_device.device_type = kDLCUDA;
  EXPECT_EQ(
      KindOf("runtime.TVMArrayAllocWithScope", {O(shape.object()), S("float32"), gpu, Null()}),
      "InternalError");
}

TEST(ArrayTest, ViewSharesMemoryAndKeepsBaseAlive) {
  RetValue shape12 = Call("runtime.ShapeTuple", {I(12)});
  RetValue base =
      Call("runtime.TVMArrayAllocWithScope", {O(shape12.object()), S("int32"), Dev(), Null()});
  auto* data = static_cast<int32_t*>(AsArray(base)->tensor.data);
  for (int i = 0; i < 12; ++i) data[i] = i;
  RetValue shape2 = Call("runtime.ShapeTuple", {I(2)});
  RetValue view =
      Call("runtime.TVMArrayCreateView", {A(AsArray(base)), O(shape2.object()), S("int32"), I(32)});
  const DLTensor& v = AsArray(view)->tensor;
  EXPECT_EQ(v.data, AsArray(base)->tensor.data);
  EXPECT_EQ(v.byte_offset, 32u);
  base.Clear();  // the view holds the allocation
  const int32_t* p =
      reinterpret_cast<const int32_t*>(static_cast<const char*>(v.data) + v.byte_offset);
  EXPECT_EQ(p[0], 8);
  EXPECT_EQ(p[1], 9);
  RetValue again =
      Call("runtime.TVMArrayCreateView", {A(AsArray(view)), O(shape2.object()), S("int32"), I(0)});
  EXPECT_EQ(AsArray(again)->tensor.byte_offset, 32u);
  EXPECT_EQ(KindOf("runtime.TVMArrayCreateView",
                   {A(AsArray(view)), O(shape12.object()), S("int32"), I(0)}),
            "ValueError");
  EXPECT_EQ(KindOf("runtime.TVMArrayCreateView",
                   {A(AsArray(view)), O(shape2.object()), S("int32"), I(4)}),
            "ValueError");
  EXPECT_EQ(KindOf("runtime.TVMArrayCreateView",
                   {A(AsArray(view)), O(shape2.object()), S("int32"), I(-8)}),
            "ValueError");
}

std::string SaveOne(const char* name, NDArrayObj* arr) {
  RetValue map = Call("runtime.Map", {S(name), A(arr)});
  return Call("runtime.SaveParams", {O(map.object())}).str();
}

TEST(ParamsTest, RoundTripAndFormat) {
  auto arr = NDArrayObj::Empty({2, 2}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  float vals[4] = {1.5f, -2.f, 0.f, 3.25f};
  std::memcpy(arr->tensor.data, vals, sizeof(vals));
  std::string blob = SaveOne("w", arr.get());
  // header 16 + names 8+8+1 + count 8 + array header 16+8+4+4 + shape 16 + size 8 + data 16
  ASSERT_EQ(blob.size(), 16u + 17 + 8 + 32 + 16 + 8 + 16);
  uint64_t magic;
  std::memcpy(&magic, blob.data(), 8);
  EXPECT_EQ(magic, 0xF7E58D4F05049CB7ULL);
  TVMByteArray bytes{blob.data(), blob.size()};
  RetValue loaded = Call("runtime.LoadParams", {Bytes(&bytes)});
  auto* m = static_cast<MapObj*>(loaded.object());
  ASSERT_EQ(m->items.size(), 1u);
  EXPECT_EQ(m->items[0].first.str(), "w");
  auto* back = static_cast<NDArrayObj*>(m->items[0].second.object());
  EXPECT_EQ(std::memcmp(back->tensor.data, vals, sizeof(vals)), 0);
  EXPECT_EQ(SaveOne("w", back), blob);
}

TEST(ParamsTest, EveryTruncationAndCorruptionFailsCleanly) {
  // A corrupt blob is a ValueError, as in every format the core reads (formats/).
  auto arr = NDArrayObj::Empty({3}, DLDataType{kDLInt, 64, 1}, DLDevice{kDLCPU, 0});
  std::memset(arr->tensor.data, 7, 24);
  std::string blob = SaveOne("param", arr.get());
  for (size_t n = 0; n < blob.size(); ++n) {
    std::string cut = blob.substr(0, n);
    TVMByteArray bytes{cut.data(), cut.size()};
    EXPECT_EQ(KindOf("runtime.LoadParams", {Bytes(&bytes)}), "ValueError") << n;
  }
  // Corrupt the shape to claim 2^40 elements: refused before any allocation.
  std::string huge = blob;
  size_t shape_at = 16 + 8 + 8 + 5 + 8 + 16 + 8 + 4 + 4;
  int64_t big = int64_t{1} << 40;
  std::memcpy(&huge[shape_at], &big, 8);
  TVMByteArray hb{huge.data(), huge.size()};
  EXPECT_EQ(KindOf("runtime.LoadParams", {Bytes(&hb)}), "ValueError");
  // A bad array magic, and a non-CPU device.
  std::string bad = blob;
  bad[16 + 8 + 8 + 5 + 8] ^= 1;
  TVMByteArray bb{bad.data(), bad.size()};
  EXPECT_EQ(KindOf("runtime.LoadParams", {Bytes(&bb)}), "ValueError");
  std::string dev = blob;
  dev[16 + 8 + 8 + 5 + 8 + 16] = 2;
  TVMByteArray db{dev.data(), dev.size()};
  EXPECT_EQ(KindOf("runtime.LoadParams", {Bytes(&db)}), "ValueError");
  EXPECT_EQ(KindOf("runtime.LoadParamsFromFile", {S("/nonexistent/params.bin")}), "TVMError");
}

TEST(TimeEvaluatorTest, CallsAndBlob) {
  static std::atomic<int> calls{0};
  calls = 0;
  Registry::Global()->Register("core_test.count",
                               MakeFunction([](const Args&, RetValue*) { ++calls; }), true);
  RetValue feval =
      Call("runtime.RPCTimeEvaluator", {Null(), S("core_test.count"), I(1), I(0), I(3), I(4), I(0),
                                        I(100), I(0), I(1), I(1024), S("")});
  ASSERT_EQ(feval.type_code(), kTVMPackedFuncHandle);
  RetValue blob;
  static_cast<FunctionObj*>(feval.object())->Call(nullptr, nullptr, 0, &blob);
  ASSERT_EQ(blob.type_code(), kTVMBytes);
  EXPECT_EQ(blob.str().size(), 4 * sizeof(double));
  EXPECT_EQ(calls.load(), 1 + 3 * 4);
  EXPECT_EQ(KindOf("runtime.RPCTimeEvaluator", {Null(), S("core_test.no_such"), I(1), I(0), I(1),
                                                I(1), I(0), I(100), I(0), I(1), I(0), S("")}),
            "InternalError");
  EXPECT_EQ(KindOf("runtime.RPCTimeEvaluator", {Null(), S("core_test.count"), I(2), I(0), I(1),
                                                I(1), I(0), I(100), I(0), I(1), I(0), S("")}),
            "InternalError");
  EXPECT_EQ(KindOf("runtime.RPCTimeEvaluator", {Null(), S("core_test.count"), I(1), I(0), I(0),
                                                I(1), I(0), I(100), I(0), I(1), I(0), S("")}),
            "ValueError");
  Registry::Global()->Remove("core_test.count");
}

TEST(DeviceTest, AttributesAndRuntimes) {
  EXPECT_EQ(Call("runtime.GetDeviceAttr", {I(1), I(0), I(0)}).value().v_int64, 1);
  EXPECT_EQ(Call("runtime.GetDeviceAttr", {I(1), I(0), I(5)}).type_code(), kTVMNullptr);
  EXPECT_EQ(Call("runtime.GetDeviceAttr", {I(2), I(0), I(0)}).value().v_int64, 0);
  EXPECT_EQ(KindOf("runtime.GetDeviceAttr", {I(2), I(0), I(1)}), "InternalError");
  EXPECT_EQ(KindOf("runtime.GetDeviceAttr", {I(0), I(0), I(0)}), "TVMError");
  EXPECT_TRUE(Call("runtime.RuntimeEnabled", {S("cpu")}).value().v_int64);
  EXPECT_FALSE(Call("runtime.RuntimeEnabled", {S("cuda")}).value().v_int64);
  EXPECT_FALSE(Call("runtime.RuntimeEnabled", {S("llvm -mcpu=x")}).value().v_int64);
  EXPECT_EQ(KindOf("runtime.RuntimeEnabled", {S("bogus")}), "TVMError");
  EXPECT_GE(Call("runtime.NumThreads", {}).value().v_int64, 1);
}

}  // namespace
}  // namespace polyffi
