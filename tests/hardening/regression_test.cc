// Regressions of defects found by fuzzing (tests/fuzz) and by issue 12's first pass. Each test
// fails (or, under ASan/UBSan, reports) on the code before its fix.
#include <polyffi/dtype_string.h>

#include <cmath>
#include <polyffi/polyffi.hpp>

#include "hardening_util.h"

namespace hardening {
namespace {

using abitests::Float;
using abitests::Handle;
using abitests::Int;
using abitests::Str;

// A kernel library: "copy" copies its first DLTensor argument into its second (equal bytes).
TVMModuleHandle CopyKernels() {
  TVMFunctionHandle copy =
      abitests::MakeFunction([](TVMValue* args, int* codes, int n, TVMRetValueHandle) {
        if (n != 2 || codes[0] != kTVMDLTensorHandle || codes[1] != kTVMDLTensorHandle) return -1;
        auto* a = static_cast<DLTensor*>(args[0].v_handle);
        auto* b = static_cast<DLTensor*>(args[1].v_handle);
        size_t bytes = (a->dtype.bits * a->dtype.lanes + 7) / 8;
        for (int i = 0; i < a->ndim; ++i) bytes *= static_cast<size_t>(a->shape[i]);
        std::memcpy(static_cast<char*>(b->data) + b->byte_offset,
                    static_cast<char*>(a->data) + a->byte_offset, bytes);
        return 0;
      });
  Global make("runtime.ModuleFromFunctions");
  Ret r = Call(make.get(), {Str("test.Copy"), Str("copy"), Handle(copy, kTVMPackedFuncHandle)});
  EXPECT_EQ(r.rc, 0) << r.error;
  TVMFuncFree(copy);
  return r.value.v_handle;
}

// ---- (a) graph JSON: numbers where integers belong -------------------------------------------

std::string CreateError(const std::string& graph) {
  TVMModuleHandle lib = CopyKernels();
  Executor ex;
  int rc = ex.Create(graph, lib);
  TVMModFree(lib);
  return rc == 0 ? "" : ex.error();
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(GraphJsonIntegers, FractionsExponentsAndOutOfRangeAreErrors) {
  const std::string g = OneOpGraph("copy", "[4]");
  ASSERT_EQ(CreateError(g), "");
  struct Case {
    std::string from, to, message;
  };
  for (const Case& c : std::vector<Case>{
           // The reproducer: a dimension of 1e23 was converted to int64 (UB).
           {"[[4], [4]]", "[[1e23], [4]]",
            "shape of entry 0 dimension 0 must be an integer, got 9.99"},
           {"[[4], [4]]", "[[4.5], [4]]", "must be an integer, got 4.5"},
           {"[[4], [4]]", "[[-1], [4]]", "shape of entry 0 dimension 0 is -1, out of range"},
           {"[[4], [4]]", "[[18446744073709551615], [4]]", "out of range [0, 9223372036854775807]"},
           {"[0, 1]]", "[0, 1e30]]", "storage_id entry 1 must be an integer"},
           {"[[0, 0, 0]]}]", "[[0.5, 0, 0]]}]", "node_id must be an integer, got 0.5"},
           {"[[0, 0, 0]]}]", "[[4294967296, 0, 0]]}]", "node_id is 4294967296, out of range"},
           {"\"arg_nodes\": [0]", "\"arg_nodes\": [1e10]", "arg_nodes entry 0 must be an integer"},
           {"\"arg_nodes\": [0]", "\"arg_nodes\": [-1]", "arg_nodes entry 0 is -1, out of range"},
           {"[0, 1, 2]", "[0, 1, 4294967298]", "node_row_ptr entry 2 is 4294967298, out of range"},
           {"\"num_outputs\": \"1\"", "\"num_outputs\": \"99999999999999999999\"",
            "attr num_outputs must be a non-negative integer (at most 18 digits)"},
           {"\"num_outputs\": \"1\"", "\"num_outputs\": 1e30",
            "attr num_outputs must be an integer"},
           {"\"heads\": [[1, 0, 0]]", "\"heads\": [[1, 2.0, 0]]", "heads index must be an integer"},
       }) {
    SCOPED_TRACE(c.to);
    std::string err = CreateError(Replace(g, c.from, c.to));
    EXPECT_EQ(abitests::ErrorKind(err), "ValueError") << err;
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
  }
}

TEST(GraphJsonIntegers, DuplicateAndMissingArgNodesAreErrors) {
  std::string g = OneOpGraph("copy", "[4]");
  std::string err = CreateError(Replace(g, "\"arg_nodes\": [0]", "\"arg_nodes\": [0, 0]"));
  EXPECT_NE(err.find("arg_nodes lists node 0 twice"), std::string::npos) << err;
  err = CreateError(Replace(g, "\"arg_nodes\": [0]", "\"arg_nodes\": []"));
  EXPECT_NE(err.find("null node 'x' is not listed in arg_nodes"), std::string::npos) << err;
}

// Storage for bool (TVM's uint1) was sized by bits: a [100] bool entry got 13 bytes of storage
// for a view of 100 bytes, and the first kernel writing it overflowed the heap.
TEST(GraphStorage, BoolTakesOneBytePerElement) {
  TVMModuleHandle lib = CopyKernels();
  Executor ex;
  ASSERT_EQ(ex.Create(OneOpGraph("copy", "[100]", "bool"), lib), 0) << ex.error();
  TVMModFree(lib);
  Array in({100}, DLDataType{kDLUInt, 1, 1});
  std::vector<uint8_t> ones(100, 1);
  in.SetBytes(ones.data(), ones.size());
  ASSERT_EQ(ex("set_input", {Str("x"), in.arg()}).rc, 0);
  Ret run = ex("run");
  ASSERT_EQ(run.rc, 0) << run.error;
  Ret out = ex("get_output", {Int(0)});
  ASSERT_EQ(out.rc, 0) << out.error;
  Array o(static_cast<TVMArrayHandle>(out.value.v_handle));
  std::vector<uint8_t> got(100, 0);
  ASSERT_EQ(TVMArrayCopyToBytes(o.get(), got.data(), got.size()), 0) << abitests::LastError();
  EXPECT_EQ(got, ones);

  // A params blob holds a bool param as one byte per element too.
  Executor ex2;
  TVMModuleHandle lib2 = CopyKernels();
  ASSERT_EQ(ex2.Create(OneOpGraph("copy", "[3]", "bool"), lib2), 0) << ex2.error();
  TVMModFree(lib2);
  Ret load = ex2.LoadParams(ParamsBlob({{"x", {kDLUInt, 1, 1}, {3}, std::string("\1\0\1", 3)}}));
  EXPECT_EQ(load.rc, 0) << load.error;
}

TEST(GraphDtypes, OnlyDtypesTheRuntimeAllocates) {
  for (const char* dtype : {"int4", "float8", "uint2", "handle", "bfloat32"}) {
    std::string err = CreateError(OneOpGraph("copy", "[4]", dtype));
    EXPECT_EQ(err, std::string("ValueError: graph JSON: unsupported dtype '") + dtype + "'");
  }
  for (const char* dtype :
       {"bool", "uint1", "int8", "uint64", "float16", "bfloat16", "float32x4"}) {
    EXPECT_EQ(CreateError(OneOpGraph("copy", "[4]", dtype)), "") << dtype;
  }
}

// ---- (b) polyffi.hpp: an NDArray where a typed function takes an Object ----------------------

struct TensorState {
  void* data;
  int ndim;
  int64_t shape0;
  uint64_t byte_offset;
  std::vector<float> values;
};
TensorState StateOf(const Array& a) {
  return {a.get()->data, a.get()->ndim, a.get()->shape[0], a.get()->byte_offset, a.Floats()};
}
void ExpectSame(const TensorState& x, const TensorState& y) {
  EXPECT_EQ(x.data, y.data);
  EXPECT_EQ(x.ndim, y.ndim);
  EXPECT_EQ(x.shape0, y.shape0);
  EXPECT_EQ(x.byte_offset, y.byte_offset);
  EXPECT_EQ(x.values, y.values);
}

TEST(PolyffiHpp, NDArrayToObjectParameterIsResolvedNotCorrupted) {
  LoadFixtures();
  Array nd({3});
  float v[3] = {1, 2, 3};
  nd.SetBytes(v, sizeof(v));
  TensorState before = StateOf(nd);
  int64_t count = abitests::UseCount(nd.get(), kTVMNDArrayHandle);
  Global sum("testing.array_sum_ints");  // typed over polyffi::ObjectRef
  for (int i = 0; i < 3; ++i) {
    // The fixture receives the NDArray's object and refuses it as "not an Array"; before the
    // fix it retained the DLTensor* as if it were an object, writing into the tensor.
    Ret r = Call(sum.get(), {nd.arg()});
    EXPECT_TRUE(FailsWith(r.rc, "TypeError")) << r.error;
  }
  ExpectSame(StateOf(nd), before);
  EXPECT_EQ(abitests::UseCount(nd.get(), kTVMNDArrayHandle), count);
}

TEST(PolyffiHpp, ReturnedNDArrayIsOwnedAsItsObject) {
  LoadFixtures();
  Array nd({3});
  float v[3] = {4, 5, 6};
  nd.SetBytes(v, sizeof(v));
  TensorState before = StateOf(nd);
  int64_t count = abitests::UseCount(nd.get(), kTVMNDArrayHandle);
  {
    polyffi::Function echo = polyffi::Function::GetGlobalRequired("testing.echo");
    TVMValue value;
    value.v_handle = nd.get();
    int code = kTVMNDArrayHandle;
    polyffi::Any a = echo.CallPacked(&value, &code, 1);  // Any::FromReturn of an NDArray
    EXPECT_EQ(a.type_code(), kTVMNDArrayHandle);
    EXPECT_EQ(abitests::UseCount(nd.get(), kTVMNDArrayHandle), count + 1);
    // Its object is the NDArray's own object handle.
    Global obj_of("runtime.NDArrayObjectHandle");
    Ret o = Call(obj_of.get(), {nd.arg()});
    ASSERT_EQ(o.rc, 0) << o.error;
    EXPECT_EQ(a.as_object().get(), o.value.v_handle);
  }
  EXPECT_EQ(abitests::UseCount(nd.get(), kTVMNDArrayHandle), count);
  ExpectSame(StateOf(nd), before);
}

// ---- (c) dtypes: what prints parses back --------------------------------------------------------

TEST(DtypeStrings, EveryPrintedDtypeParsesBackToItself) {
  int printed = 0;
  for (int code = 0; code < 256; ++code) {
    for (int bits = 0; bits < 256; ++bits) {
      for (int lanes : {0, 1, 2, 4, 255, 8192, 65535}) {
        DLDataType t{static_cast<uint8_t>(code), static_cast<uint8_t>(bits),
                     static_cast<uint16_t>(lanes)};
        char buf[32];
        if (PolyffiDataTypeToString(t, buf, sizeof(buf)) != 0) {
          DLDataType back;
          ASSERT_NE(PolyffiDataTypeFromString(buf, &back), 0) << buf;  // a description only
          continue;
        }
        ++printed;
        DLDataType back{};
        ASSERT_EQ(PolyffiDataTypeFromString(buf, &back), 0) << buf;
        bool classic_bool = code == kDLUInt && bits == 1;  // the one alias: uint1 -> "bool"
        DLDataType want = classic_bool ? DLDataType{kDLBool, 8, t.lanes} : t;
        ASSERT_TRUE(back.code == want.code && back.bits == want.bits && back.lanes == want.lanes)
            << buf << " from code " << code << " bits " << bits << " lanes " << lanes;
      }
    }
  }
  // int/uint/float/bfloat x 255 widths (uint1 among them, printed "bool") x 6 lane counts,
  // + kDLBool 8 bits and handle 64 bits x 6 lane counts.
  EXPECT_EQ(printed, 4 * 255 * 6 + 2 * 6);
}

TEST(DtypeStrings, UnprintableDtypeIsAClearError) {
  LoadFixtures();
  DLDataType t{45, 2, 8192};  // printed "custom45_2x8192" before, which nothing parsed
  char buf[32];
  EXPECT_EQ(PolyffiDataTypeToString(t, buf, sizeof(buf)), -1);
  EXPECT_STREQ(buf, "<dtype 45:2x8192>");
  Global to_string("runtime.DLDataType2String");
  Ret r = Call(to_string.get(), {abitests::DType(45, 2, 8192)});
  EXPECT_TRUE(
      FailsWith(r.rc, "ValueError", "dtype (code 45, bits 2, lanes 8192) has no string form"));
  Global echo("testing.echo");  // a dtype result crosses the ABI as its string
  r = Call(echo.get(), {abitests::DType(kDLOpaqueHandle, 32, 1)});
  EXPECT_TRUE(FailsWith(r.rc, "ValueError", "has no string form"));
  r = Call(echo.get(), {abitests::DType(kDLFloat, 32, 4)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.str, "float32x4");
}

// ---- NDArray sizes and DLPack import
// --------------------------------------------------------------

TEST(ArraySizes, OverflowingShapeIsAnError) {
  int64_t shape[2] = {int64_t{1} << 62, 4};
  TVMArrayHandle a = nullptr;
  EXPECT_TRUE(FailsWith(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &a), "ValueError",
                        "overflows"));
  int64_t neg[1] = {-3};
  EXPECT_TRUE(FailsWith(TVMArrayAlloc(neg, 1, kDLFloat, 32, 1, kDLCPU, 0, &a), "ValueError",
                        "negative dimension -3"));
  EXPECT_TRUE(FailsWith(TVMArrayAlloc(shape + 1, 1, kDLFloat, 32, 1, 1234567, 0, &a), "ValueError",
                        "device type 1234567"));
}

struct Producer {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  float data[8] = {};
  int deleted = 0;
  Producer(std::vector<int64_t> s) : shape(std::move(s)) {
    DLTensor& t = managed.dl_tensor;
    t.data = data;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = shape.data();
    t.strides = nullptr;
    t.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      static_cast<Producer*>(self->manager_ctx)->deleted++;
    };
  }
};

TEST(DLPackImport, InvalidTensorsAreRefusedAndStayWithTheirProducer) {
  struct Case {
    const char* what;
    std::vector<int64_t> shape;
    void (*mutate)(DLTensor&);
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"negative dim", {2, -1}, [](DLTensor&) {}, "negative dimension -1"},
           {"overflow", {int64_t{1} << 40, int64_t{1} << 40}, [](DLTensor&) {}, "overflows"},
           {"device",
            {2},
            [](DLTensor& t) { t.device.device_type = kDLCUDA; },
            "device type 2, but this runtime reads host memory only"},
           {"zero bits", {2}, [](DLTensor& t) { t.dtype.bits = 0; }, "invalid dtype"},
           {"zero lanes", {2}, [](DLTensor& t) { t.dtype.lanes = 0; }, "invalid dtype"},
           {"null data", {2}, [](DLTensor& t) { t.data = nullptr; }, "NULL data"},
           {"byte_offset",
            {2},
            [](DLTensor& t) { t.byte_offset = ~uint64_t{0} - 4; },
            "byte_offset"},
       }) {
    SCOPED_TRACE(c.what);
    Producer p(c.shape);
    c.mutate(p.managed.dl_tensor);
    TVMArrayHandle a = nullptr;
    EXPECT_TRUE(FailsWith(TVMArrayFromDLPack(&p.managed, &a), "ValueError", c.message));
    EXPECT_EQ(p.deleted, 0);
  }
  // An empty tensor may come without data.
  Producer empty({0, 3});
  empty.managed.dl_tensor.data = nullptr;
  TVMArrayHandle a = nullptr;
  ASSERT_EQ(TVMArrayFromDLPack(&empty.managed, &a), 0) << abitests::LastError();
  EXPECT_EQ(TVMArrayFree(a), 0);
  EXPECT_EQ(empty.deleted, 1);
}

// ---- Libraries
// ------------------------------------------------------------------------------------

TEST(Libraries, NoPackedFunctionsFromALibraryWithoutTvmSymbols) {
  TVMModuleHandle m = LoadLib(LibPath("libpolyffi_test_not_tvm.so"));
  ASSERT_NE(m, nullptr);
  for (const char* name : {"not_tvm_add", "fused_add", "__tvm_main__"}) {
    TVMFunctionHandle f = reinterpret_cast<TVMFunctionHandle>(1);
    EXPECT_EQ(TVMModGetFunction(m, name, 0, &f), 0) << abitests::LastError();
    EXPECT_EQ(f, nullptr) << name;  // before: a wrapper that called int(int) as packed
  }
  TVMModFree(m);
  // A TVM-style library still has its functions.
  TVMModuleHandle dso = LoadLib(LibPath("libpolyffi_test_dso.so"));
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMModGetFunction(dso, "scale_i64", 0, &f), 0);
  EXPECT_NE(f, nullptr);
  TVMFuncFree(f);
  TVMModFree(dso);
}

// ---- relax VM builtins: a huge dimension count ------------------------------------------------

// Issue 25's finding: make_shape (and match_shape) computed 2 + 2 * ndim for the error text,
// a signed overflow for ndim = 6557241057451442176 (UBSan: undefined behaviour).
TEST(RelaxBuiltins, HugeDimensionCountIsATypeErrorWithoutOverflow) {
  const int64_t huge = 6557241057451442176;
  Global make_shape("vm.builtin.make_shape");
  Ret r = Call(make_shape.get(), {Handle(nullptr, kTVMNullptr), Int(huge)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(r.error,
            "TypeError: vm.builtin.make_shape: 6557241057451442176 dimensions need 2 + 2 * "
            "6557241057451442176 arguments but got 2");
  Ret neg = Call(make_shape.get(), {Handle(nullptr, kTVMNullptr), Int(INT64_MIN)});
  EXPECT_EQ(neg.rc, -1);
  EXPECT_EQ(neg.error.rfind("TypeError: vm.builtin.make_shape: -9223372036854775808 dimensions", 0),
            0u)
      << neg.error;
  // match_shape(value, heap, ndim, ...): the same check with 3 + 2 * ndim.
  int64_t dim = 2;
  TVMArrayHandle t = nullptr;
  ASSERT_EQ(TVMArrayAlloc(&dim, 1, kDLFloat, 32, 1, kDLCPU, 0, &t), 0);
  Global match_shape("vm.builtin.match_shape");
  Ret m = Call(match_shape.get(),
               {Handle(t, kTVMNDArrayHandle), Handle(nullptr, kTVMNullptr), Int(huge)});
  EXPECT_EQ(m.rc, -1);
  EXPECT_EQ(m.error,
            "TypeError: vm.builtin.match_shape: 6557241057451442176 dimensions need 3 + 2 "
            "* 6557241057451442176 arguments but got 3");
  TVMArrayFree(t);
}

// ---- graph executor factory: a device type outside the enum
// --------------------------------------

// Found by fuzz_globals: factory.default(dev) read dev.device_type through the DLDeviceType
// enum, undefined behaviour for a foreign value (UBSan -fsanitize=enum); it is read as int32
// bits now and refused by the executor like any unknown device.
TEST(GraphFactory, DeviceTypeOutsideTheEnumIsAnError) {
  TVMModuleHandle lib = nullptr;
  ASSERT_EQ(TVMModLoadFromFile(POLYFFI_LIB_DIR "/libpolyffi_test_factory.so", "", &lib), 0)
      << TVMGetLastError();
  TVMFunctionHandle make = nullptr;
  ASSERT_EQ(TVMModGetFunction(lib, "default", 0, &make), 0);
  ASSERT_NE(make, nullptr);
  TVMValue dev;
  const int32_t bits = static_cast<int32_t>(2909364069u);  // the fuzzer's value
  std::memcpy(&dev.v_device.device_type, &bits, sizeof(bits));
  dev.v_device.device_id = 0;
  Ret r = Call(make, {abitests::Arg{dev, kDLDevice}});
  EXPECT_EQ(r.rc, -1);
  EXPECT_NE(r.error.find("-1385603227"), std::string::npos) << r.error;
  TVMFuncFree(make);
  TVMModFree(lib);
}

// Found by fuzz_globals: cache_flush_cpu_non_first_arg computed data + byte_offset for an empty
// tensor without data (UBSan: applying non-zero offset to null pointer).
TEST(CacheFlush, EmptyTensorWithoutDataIsSkipped) {
  int64_t shape[1] = {0};
  DLTensor empty{nullptr, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 64};
  float data[16] = {};
  int64_t n = 16;
  DLTensor full{data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
  Global flush("cache_flush_cpu_non_first_arg");
  Ret r = Call(flush.get(),
               {Int(0), Handle(&empty, kTVMDLTensorHandle), Handle(&full, kTVMDLTensorHandle)});
  EXPECT_EQ(r.rc, 0) << r.error;
}

// Found by fuzz_globals (long run): a caller's DLTensor with a negative ndim counted as one
// element (CheckedBytes looped over no dims), so cache_flush_cpu_non_first_arg read at
// data + byte_offset (here 2^63: SEGV). A negative ndim is a ValueError wherever sizes are taken.
TEST(CacheFlush, NegativeNdimIsAValueError) {
  float data[4] = {};
  int64_t shape[1] = {4};
  DLTensor bad{data, {kDLCPU, 0}, -1, {kDLFloat, 32, 1}, shape, nullptr, 1ULL << 63};
  Global flush("cache_flush_cpu_non_first_arg");
  Ret r = Call(flush.get(), {Int(0), Handle(&bad, kTVMDLTensorHandle)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(r.error, "ValueError: negative ndim -1");
}

// Found by fuzz_globals (long run): a tensor of zero bytes (a 0-bit dtype) with a byte offset of
// 2^64 - 1 still had data + byte_offset computed (UBSan: pointer overflow); zero bytes are
// skipped, and an offset that wraps the pointer is a ValueError.
TEST(CacheFlush, WrappingByteOffsetIsRefused) {
  float data[4] = {};
  int64_t shape[1] = {4};
  DLTensor zero_bits{data, {kDLCPU, 0}, 1, {kDLFloat, 0, 1}, shape, nullptr, UINT64_MAX};
  DLTensor wraps{data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, UINT64_MAX};
  Global flush("cache_flush_cpu_non_first_arg");
  Ret ok = Call(flush.get(), {Int(0), Handle(&zero_bits, kTVMDLTensorHandle)});
  EXPECT_EQ(ok.rc, 0) << ok.error;
  Ret r = Call(flush.get(), {Int(0), Handle(&wraps, kTVMDLTensorHandle)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_NE(r.error.find("ValueError: cache_flush_cpu_non_first_arg: argument 1's byte_offset "
                         "18446744073709551615 wraps its data pointer"),
            std::string::npos)
      << r.error;
}

// ---- relax VM: a borrowed tensor without data ---------------------------------------------------

// Found by fuzz_globals (long run): the VM's set_input copied a caller's DLTensor of 4 floats
// whose data was NULL (UBSan: null pointer passed to memcpy). Now a ValueError.
TEST(RelaxSetInput, TensorWithElementsButNoDataIsAValueError) {
  TVMModuleHandle exe = nullptr;
  ASSERT_EQ(TVMModLoadFromFile(POLYFFI_LIB_DIR "/libpolyffi_test_relax.so", "", &exe), 0)
      << TVMGetLastError();
  TVMFunctionHandle load = nullptr, init = nullptr, set_input = nullptr;
  ASSERT_EQ(TVMModGetFunction(exe, "vm_load_executable", 0, &load), 0);
  Ret vm = Call(load);
  ASSERT_EQ(vm.rc, 0) << vm.error;
  ASSERT_EQ(TVMModGetFunction(vm.value.v_handle, "vm_initialization", 0, &init), 0);
  Ret r = Call(init, {Int(kDLCPU), Int(0), Int(2)});
  ASSERT_EQ(r.rc, 0) << r.error;
  ASSERT_EQ(TVMModGetFunction(vm.value.v_handle, "set_input", 0, &set_input), 0);
  int64_t shape[2] = {1, 4};
  DLTensor no_data{nullptr, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  Ret s = Call(set_input, {Str("forward"), Handle(&no_data, kTVMDLTensorHandle),
                           Handle(&no_data, kTVMDLTensorHandle)});
  EXPECT_EQ(s.rc, -1);
  EXPECT_EQ(s.error.rfind("ValueError: set_input: a tensor of 16 bytes has no data (NULL)", 0), 0u)
      << s.error;
  for (TVMFunctionHandle f : {load, init, set_input}) TVMFuncFree(f);
  TVMModFree(vm.value.v_handle);
  TVMModFree(exe);
}

// ---- relax.run.print: a caller's malformed tensor --------------------------------------------

// Found by fuzz_globals after the runtime library's printing builtins joined the registry: a
// DLTensor with a negative ndim was rendered dimension by dimension past the end of its shape
// (ASan: heap-buffer-overflow in TensorText). Its size is now checked first: a ValueError.
TEST(RelaxPrint, NegativeNdimIsAValueError) {
  float data[4] = {};
  int64_t shape[1] = {4};
  DLTensor bad{data, {kDLCPU, 0}, -2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  Global print("relax.run.print");
  Ret r = Call(print.get(), {Str(""), Handle(&bad, kTVMDLTensorHandle)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(r.error, "ValueError: negative ndim -2");
}

// The same builtin with a dtype of several lanes, or elements without data, prints "<tensor>"
// instead of reading what the tensor does not hold.
TEST(RelaxPrint, UnreadableTensorsPrintAsPlaceholders) {
  int64_t shape[1] = {4};
  DLTensor lanes{nullptr, {kDLCPU, 0}, 1, {kDLFloat, 32, 4}, shape, nullptr, 0};
  Global print("relax.run.assert_op");
  Ret r = Call(print.get(), {Int(0), Str(""), Handle(&lanes, kTVMDLTensorHandle)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_NE(r.error.find("<tensor>"), std::string::npos) << r.error;
}

// Found by fuzz_globals: a tensor of shape [2^40, 0] has no elements, but rendering it walked
// 2^40 empty rows (libFuzzer timeout). A tensor without elements prints as "[]".
TEST(RelaxPrint, EmptyTensorWithHugeDimensionPrintsAtOnce) {
  int64_t shape[2] = {int64_t{1} << 40, 0};
  DLTensor empty{nullptr, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  Global assert_op("relax.run.assert_op");
  Ret r = Call(assert_op.get(), {Int(0), Str(""), Handle(&empty, kTVMDLTensorHandle)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_NE(r.error.find("[]"), std::string::npos) << r.error;
}

// Found by fuzz_globals: an empty tensor of shape [0, 7, 2^63 - 1] has a byte size of 0, but
// relax.run.unique multiplied its other dimensions (UBSan: signed overflow). The runtime
// library's tensor check refuses dimensions whose product does not fit.
TEST(RuntimeLibrary, EmptyTensorWithOverflowingDimensionsIsAValueError) {
  int64_t shape[3] = {0, 7, INT64_MAX};
  DLTensor empty{nullptr, {kDLCPU, 0}, 3, {kDLInt, 32, 1}, shape, nullptr, 0};
  Global unique("relax.run.unique");
  Ret r = Call(unique.get(),
               {Handle(&empty, kTVMDLTensorHandle), Int(1), Int(0), Int(0), Int(0), Int(1)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(r.error, "ValueError: relax.run.unique: the input's dimensions are too large");
}

// Found by fuzz_globals: an empty tensor without data but with a byte_offset of 1 had its first
// element's address computed (UBSan: non-zero offset applied to a null pointer).
TEST(RuntimeLibrary, EmptyTensorWithoutDataAndAnOffsetIsEmpty) {
  int64_t shape[1] = {0};
  DLTensor empty{nullptr, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape, nullptr, 1};
  Global unique("relax.run.unique");
  Ret r = Call(unique.get(), {Handle(&empty, kTVMDLTensorHandle), Int(1), Int(0), Int(0), Int(0)});
  ASSERT_EQ(r.rc, 0) << r.error;
  ASSERT_EQ(r.code, kTVMNDArrayHandle);
  auto* out = static_cast<DLTensor*>(r.value.v_handle);
  EXPECT_EQ(out->ndim, 1);
  EXPECT_EQ(out->shape[0], 0);
  EXPECT_EQ(TVMArrayFree(out), 0);
}

// Found by fuzz_globals (long run): vm.builtin.read_if_cond read the first element of a condition
// tensor with elements but NULL data, at NULL + byte_offset (UBSan: offset applied to a null
// pointer, then a read from it).
TEST(RelaxBuiltins, ConditionTensorWithoutDataIsAValueError) {
  int64_t shape[1] = {1};
  DLTensor cond{nullptr, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape, nullptr, 4};
  Global read_if_cond("vm.builtin.read_if_cond");
  Ret r = Call(read_if_cond.get(), {Handle(&cond, kTVMDLTensorHandle)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(r.error,
            "ValueError: vm.builtin.read_if_cond: the condition tensor has no data (NULL)");
  int32_t one = 1;
  DLTensor ok{&one, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape, nullptr, 0};
  r = Call(read_if_cond.get(), {Handle(&ok, kTVMDLTensorHandle)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_NE(r.value.v_int64, 0);
}

// Found by fuzz_globals (long run): the sampling builtins read float elements in place, and a
// byte_offset of 1 made that a misaligned load (UBSan). A misaligned tensor is a ValueError.
TEST(Sampling, MisalignedDistributionIsAValueError) {
  alignas(4) float probs[3] = {0.25f, 0.5f, 0.25f};
  int64_t shape[1] = {2};
  DLTensor bad{probs, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 1};
  Global sample("vm.builtin.sample_top_p_from_prob");
  Ret r = Call(sample.get(), {Handle(&bad, kTVMDLTensorHandle), Float(0.9), Float(0.5)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(r.error,
            "ValueError: vm.builtin.sample_top_p_from_prob: the prob's data is not aligned to its "
            "4-byte elements");
  DLTensor ok{probs, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 4};
  r = Call(sample.get(), {Handle(&ok, kTVMDLTensorHandle), Float(0.9), Float(0.5)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_GE(r.value.v_int64, 0);
  EXPECT_LT(r.value.v_int64, 2);
}

// Found by fuzz_globals (long run): testing.nd_sum added a byte_offset of nearly 2^64 to the data
// pointer of an empty tensor (UBSan: pointer overflow). A wrapping offset is a ValueError.
TEST(TestingLibrary, WrappingByteOffsetIsAValueError) {
  LoadFixtures();
  float data[2] = {1.5f, 2.5f};
  int64_t shape[1] = {0};
  DLTensor wraps{data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, UINT64_MAX - 3};
  Global sum("testing.nd_sum");
  Ret r = Call(sum.get(), {Handle(&wraps, kTVMDLTensorHandle)});
  EXPECT_EQ(r.rc, -1);
  EXPECT_NE(r.error.find("ValueError: testing.nd_sum: byte_offset 18446744073709551612 wraps the "
                         "data pointer"),
            std::string::npos)
      << r.error;
  shape[0] = 1;
  DLTensor ok{data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 4};
  r = Call(sum.get(), {Handle(&ok, kTVMDLTensorHandle)});
  ASSERT_EQ(r.rc, 0) << r.error;
  EXPECT_EQ(r.value.v_float64, 2.5);
}

}  // namespace
}  // namespace hardening
