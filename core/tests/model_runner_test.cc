// The model runners (polyffi.runner.vm, polyffi.runner.graph) over the C ABI alone, on models
// compiled by Apache TVM (tests/tvm_models): outputs equal TVM's recorded ones; misaligned and
// borrowed inputs are staged; errors are typed; and 8 threads running one loaded model at once
// get exactly the outputs one thread gets (this test runs in the TSan job too).
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fixture_util.h"

namespace {

using fixture::ArrayItem;
using fixture::ArraySize;
using fixture::Call;
using fixture::Global;
using fixture::LastError;
using fixture::ReadFile;
using fixture::Val;

const std::string kTvm018 = TVM018_DIR;
const std::string kRelax = std::string(TVM027_DIR) + "/relax";

/*! \brief A module's function, owned. */
struct Fn {
  TVMFunctionHandle h = nullptr;
  Fn(TVMModuleHandle m, const char* name) {
    if (TVMModGetFunction(m, name, 0, &h) != 0 || h == nullptr) {
      throw std::runtime_error(std::string("no function ") + name);
    }
  }
  Fn(const Fn&) = delete;
  ~Fn() { TVMFuncFree(h); }
};

Val Load(const std::string& path) {
  Val m;
  if (TVMModLoadFromFile(path.c_str(), "", &m.v.v_handle) != 0) {
    throw std::runtime_error(LastError());
  }
  m.code = kTVMModuleHandle;
  return m;
}

/*! \brief polyffi.runner.<kind>(module, 1, 0[, extra]). */
Val MakeRunner(const char* global, const Val& module, std::vector<TVMValue> extra_v = {},
               std::vector<int> extra_c = {}) {
  std::vector<TVMValue> v(3);
  std::vector<int> c{kTVMModuleHandle, kTVMArgInt, kTVMArgInt};
  v[0] = module.v;
  v[1].v_int64 = kDLCPU;
  v[2].v_int64 = 0;
  v.insert(v.end(), extra_v.begin(), extra_v.end());
  c.insert(c.end(), extra_c.begin(), extra_c.end());
  return Call(Global(global), v, c);
}

std::string Bytes(const DLTensor* t) {
  if (t == nullptr) return "<not a tensor>";
  size_t n = (t->dtype.bits * t->dtype.lanes + 7) / 8;
  for (int i = 0; i < t->ndim; ++i) n *= static_cast<size_t>(t->shape[i]);
  return std::string(static_cast<const char*>(t->data) + t->byte_offset, n);
}

/*! \brief Every tensor of a result (a tensor, or an Array of them) as bytes. */
std::vector<std::string> Outputs(const Val& r) {
  if (r.code == kTVMNDArrayHandle) return {Bytes(r.tensor())};
  std::vector<std::string> out;
  for (int64_t i = 0, n = ArraySize(r); i < n; ++i) out.push_back(Bytes(ArrayItem(r, i).tensor()));
  return out;
}

/*! \brief An owned, aligned NDArray. */
struct Array {
  TVMArrayHandle h = nullptr;
  Array(const std::vector<int64_t>& shape, int code, int bits) {
    if (TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), code, bits, 1, kDLCPU, 0, &h) !=
        0) {
      throw std::runtime_error(LastError());
    }
  }
  Array(const Array&) = delete;
  ~Array() { TVMArrayFree(h); }
};

/*! \brief One recorded run of a fixture (io.txt): named inputs and expected output bytes. */
struct Fixture {
  std::string library;
  std::vector<std::string> names;
  std::vector<std::unique_ptr<Array>> inputs;
  std::vector<std::string> outputs;

  Fixture(const std::string& dir, const std::string& io) {
    std::istringstream lines(ReadFile(dir + "/" + io));
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream f(line);
      std::string kind;
      f >> kind;
      if (kind == "library") {
        f >> library;
      } else if (kind == "input") {
        std::string name, file;
        int code, bits, ndim;
        f >> name >> code >> bits >> ndim;
        std::vector<int64_t> shape(ndim);
        for (auto& d : shape) f >> d;
        f >> file;
        auto a = std::make_unique<Array>(shape, code, bits);
        std::string data = ReadFile(dir + "/" + file);
        if (data.size() != Bytes(a->h).size()) throw std::runtime_error("bad input " + file);
        std::memcpy(a->h->data, data.data(), data.size());
        names.push_back(name);
        inputs.push_back(std::move(a));
      } else if (kind == "output") {
        std::string index, nbytes, file;
        f >> index >> nbytes >> file;
        outputs.push_back(ReadFile(dir + "/" + file));
      }
    }
  }
  std::vector<TVMValue> Values() const {
    std::vector<TVMValue> v(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) v[i].v_handle = inputs[i]->h;
    return v;
  }
};

/*! \brief runner.run("forward", inputs...) of a VM runner. */
Val RunVM(TVMFunctionHandle run, const std::vector<TVMValue>& inputs, std::vector<int> codes,
          const char* name = "forward") {
  std::vector<TVMValue> v(1);
  v[0].v_str = name;
  v.insert(v.end(), inputs.begin(), inputs.end());
  codes.insert(codes.begin(), kTVMStr);
  return Call(run, v, codes);
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(VMRunner, MatchesTVMOnEveryRelaxModel) {
  for (const char* model : {"mlp_const", "mlp_params", "two_outputs", "digits", "conv"}) {
    SCOPED_TRACE(model);
    Fixture fx(kRelax + "/" + model, "b1_io.txt");
    Val lib = Load(kRelax + "/" + fx.library);
    Val runner = MakeRunner("polyffi.runner.vm", lib);
    Fn run(runner.v.v_handle, "run");
    std::vector<int> codes(fx.inputs.size(), kTVMNDArrayHandle);
    EXPECT_EQ(Outputs(RunVM(run.h, fx.Values(), codes)), fx.outputs);
    // Twice: the second call reuses the pooled VM, and the first result stays valid.
    Val first = RunVM(run.h, fx.Values(), codes);
    Val second = RunVM(run.h, fx.Values(), codes);
    EXPECT_EQ(Outputs(first), fx.outputs);
    EXPECT_EQ(Outputs(second), fx.outputs);
  }
}

TEST(VMRunner, StagesBorrowedAndMisalignedInputs) {
  Fixture fx(kRelax + "/digits", "b1_io.txt");
  Val lib = Load(kRelax + "/digits.so");
  Val runner = MakeRunner("polyffi.runner.vm", lib);
  Fn run(runner.v.v_handle, "run");
  const DLTensor* in = fx.inputs[0]->h;
  const std::string data = Bytes(in);
  // A borrowed DLTensor view 4 bytes past an aligned address: staged into an aligned copy.
  std::vector<char> raw(data.size() + 128);
  char* base = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) + 4;
  std::memcpy(base, data.data(), data.size());
  DLTensor view = *in;
  view.data = base;
  view.byte_offset = 0;
  TVMValue v;
  v.v_handle = &view;
  Val out = RunVM(run.h, {v}, {kTVMDLTensorHandle});
  EXPECT_EQ(Outputs(out), fx.outputs);
  std::memset(base, 0, data.size());  // the caller's memory is free again: the result is not in it
  EXPECT_EQ(Outputs(out), fx.outputs);
  // The same misalignment in an NDArray: a view 4 bytes into an aligned byte array.
  Array big({static_cast<int64_t>(data.size() + 64)}, kDLUInt, 8);
  std::memcpy(static_cast<char*>(big.h->data) + 4, data.data(), data.size());
  std::vector<TVMValue> dims(in->ndim);
  for (int i = 0; i < in->ndim; ++i) dims[i].v_int64 = in->shape[i];
  Val shape = Call(Global("runtime.ShapeTuple"), dims, std::vector<int>(in->ndim, kTVMArgInt));
  TVMValue args[4];
  args[0].v_handle = big.h;
  args[1] = shape.v;
  args[2].v_type = in->dtype;
  args[3].v_int64 = 4;
  Val mis = Call(Global("runtime.TVMArrayCreateView"), {args[0], args[1], args[2], args[3]},
                 {kTVMNDArrayHandle, shape.code, kTVMDataType, kTVMArgInt});
  ASSERT_NE(mis.tensor(), nullptr);
  ASSERT_NE((reinterpret_cast<uintptr_t>(mis.tensor()->data) + mis.tensor()->byte_offset) % 64, 0u);
  EXPECT_EQ(Outputs(RunVM(run.h, {mis.v}, {kTVMNDArrayHandle})), fx.outputs);
}

TEST(VMRunner, TypedErrors) {
  Val vm_lib = Load(kRelax + "/digits.so");
  Val graph_lib = Load(kTvm018 + "/digits_b1/factory.so");
  // A graph export is refused with the way to run it (every binding relies on this check).
  std::string not_vm = ErrorOf([&] { MakeRunner("polyffi.runner.vm", graph_lib); });
  EXPECT_NE(not_vm.find("TypeError: polyffi.runner.vm: a GraphExecutorFactory module is not a "
                        "relax VM executable"),
            std::string::npos)
      << not_vm;
  EXPECT_NE(not_vm.find("runs as a GraphModule"), std::string::npos) << not_vm;
  TVMValue bad;
  bad.v_str = "bogus";
  EXPECT_NE(ErrorOf([&] {
              MakeRunner("polyffi.runner.vm", vm_lib, {bad}, {kTVMStr});
            }).find("ValueError: polyffi.runner.vm: memory_cfg must be"),
            std::string::npos);
  TVMValue dev[3];
  dev[0] = vm_lib.v;
  dev[1].v_int64 = 2;
  dev[2].v_int64 = 0;
  EXPECT_NE(ErrorOf([&] {
              Call(Global("polyffi.runner.vm"), {dev[0], dev[1], dev[2]},
                   {kTVMModuleHandle, kTVMArgInt, kTVMArgInt});
            }).find("ValueError"),
            std::string::npos);
  Val runner = MakeRunner("polyffi.runner.vm", vm_lib);
  Fn run(runner.v.v_handle, "run");
  EXPECT_NE(ErrorOf([&] {
              RunVM(run.h, {}, {}, "no_such_function");
            }).find("AttributeError: the VM executable has no function 'no_such_function'"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { RunVM(run.h, {}, {}); }).find("TypeError"), std::string::npos);
}

TEST(VMRunner, StagesStridedViews) {
  // The input in every other float of a buffer: gathered into a compact copy, same outputs.
  Fixture fx(kRelax + "/digits", "b1_io.txt");
  Val lib = Load(kRelax + "/digits.so");
  Val runner = MakeRunner("polyffi.runner.vm", lib);
  Fn run(runner.v.v_handle, "run");
  const DLTensor* in = fx.inputs[0]->h;
  const auto* src = static_cast<const float*>(in->data);
  std::vector<float> spread(2 * 64, -1.0f);
  for (int i = 0; i < 64; ++i) spread[2 * i] = src[i];
  DLTensor strided = *in;
  strided.data = spread.data();
  int64_t strides[2] = {128, 2};
  strided.strides = strides;
  TVMValue sv;
  sv.v_handle = &strided;
  EXPECT_EQ(Outputs(RunVM(run.h, {sv}, {kTVMDLTensorHandle})), fx.outputs);
  // A negative dimension is a ValueError, not a crash.
  int64_t bad_shape[2] = {1, -64};
  DLTensor bad = *in;
  bad.shape = bad_shape;
  sv.v_handle = &bad;
  EXPECT_NE(ErrorOf([&] { RunVM(run.h, {sv}, {kTVMDLTensorHandle}); }).find("ValueError"),
            std::string::npos);
}

TEST(VMRunner, StatefulVMStillWorks) {
  Fixture fx(kRelax + "/digits", "b1_io.txt");
  Val lib = Load(kRelax + "/digits.so");
  Val runner = MakeRunner("polyffi.runner.vm", lib);
  Fn get_vm(runner.v.v_handle, "vm");
  Val vm = Call(get_vm.h, {}, {});
  ASSERT_EQ(vm.code, kTVMModuleHandle);
  Fn forward(vm.v.v_handle, "forward");
  EXPECT_EQ(Outputs(Call(forward.h, fx.Values(), {kTVMNDArrayHandle})), fx.outputs);
  Fn names(runner.v.v_handle, "param_names");
  TVMValue fwd;
  fwd.v_str = "forward";
  Val ps = Call(names.h, {fwd}, {kTVMStr});
  ASSERT_EQ(ArraySize(ps), 1);
  Val p0 = ArrayItem(ps, 0);
  ASSERT_EQ(p0.code, kTVMStr);
  EXPECT_STREQ(p0.v.v_str, "data");
}

/*! \brief fn(name, extra...) on a runner's function: a str then the given values. */
Val CallNamed(TVMFunctionHandle fn, const char* name, std::vector<TVMValue> v, std::vector<int> c) {
  TVMValue head;
  head.v_str = name;
  v.insert(v.begin(), head);
  c.insert(c.begin(), kTVMStr);
  return Call(fn, v, c);
}

/*! \brief A VM runner over one relax library, with its stateful functions. */
struct StatefulVm {
  explicit StatefulVm(const std::string& library)
      : lib(Load(library)),
        runner(MakeRunner("polyffi.runner.vm", lib)),
        set_input(runner.v.v_handle, "set_input"),
        set_input_named(runner.v.v_handle, "set_input_named"),
        invoke(runner.v.v_handle, "invoke_stateful"),
        get_outputs(runner.v.v_handle, "get_outputs") {}
  Val lib;
  Val runner;
  Fn set_input, set_input_named, invoke, get_outputs;
};

TEST(VMRunner, StatefulAPIOnTheRunner) {
  // mlp_params: forward(x, fc1.weight, fc1.bias, fc2.weight, fc2.bias); two_outputs a tuple.
  Fixture fx(kRelax + "/mlp_params", "b1_io.txt");
  StatefulVm vm(kRelax + "/mlp_params.so");
  const Fn& set_input = vm.set_input;
  const Fn& set_named = vm.set_input_named;
  const Fn& invoke = vm.invoke;
  const Fn& get_outputs = vm.get_outputs;
  EXPECT_NE(ErrorOf([&] { CallNamed(get_outputs.h, "forward", {}, {}); }).find("ValueError"),
            std::string::npos);
  std::vector<int> codes(fx.inputs.size(), kTVMNDArrayHandle);
  CallNamed(set_input.h, "forward", fx.Values(), codes);
  CallNamed(invoke.h, "forward", {}, {});
  Val out = CallNamed(get_outputs.h, "forward", {}, {});
  ASSERT_EQ(out.code, kTVMNDArrayHandle);
  EXPECT_EQ(Outputs(out), fx.outputs);
  // By name, out of order, after one positional value.
  std::vector<TVMValue> v(1);
  std::vector<int> c{kTVMArgInt, kTVMNDArrayHandle};
  v[0].v_int64 = 1;
  v.push_back(fx.Values()[0]);
  for (size_t i = fx.inputs.size(); i-- > 1;) {
    v.push_back(TVMValue{});
    v.back().v_str = fx.names[i].c_str();
    c.push_back(kTVMStr);
    v.push_back(fx.Values()[i]);
    c.push_back(kTVMNDArrayHandle);
  }
  CallNamed(set_named.h, "forward", v, c);
  CallNamed(invoke.h, "forward", {}, {});
  EXPECT_EQ(Outputs(CallNamed(get_outputs.h, "forward", {}, {})), fx.outputs);
  // One message per mistake: unknown (sorted), twice, missing (in parameter order).
  auto named_error = [&](std::vector<TVMValue> nv, std::vector<int> nc) {
    return ErrorOf([&] { CallNamed(set_named.h, "forward", nv, nc); });
  };
  TVMValue args[5];
  args[0].v_int64 = 0;
  args[1].v_str = "zz";
  args[2] = fx.Values()[0];
  args[3].v_str = "aa";
  args[4] = fx.Values()[0];
  EXPECT_NE(named_error({args[0], args[1], args[2], args[3], args[4]},
                        {kTVMArgInt, kTVMStr, kTVMNDArrayHandle, kTVMStr, kTVMNDArrayHandle})
                .find("TypeError: set_input: forward has no parameter aa, zz"),
            std::string::npos);
  args[0].v_int64 = 1;
  args[1] = fx.Values()[0];
  args[2].v_str = "x";
  args[3] = fx.Values()[0];
  EXPECT_NE(named_error({args[0], args[1], args[2], args[3]},
                        {kTVMArgInt, kTVMNDArrayHandle, kTVMStr, kTVMNDArrayHandle})
                .find("TypeError: set_input: parameter x given twice"),
            std::string::npos);
  args[0].v_int64 = 0;
  args[1].v_str = "fc1.bias";
  args[2] = fx.Values()[2];
  EXPECT_NE(named_error({args[0], args[1], args[2]}, {kTVMArgInt, kTVMStr, kTVMNDArrayHandle})
                .find("TypeError: set_input: missing parameter x, fc1.weight, fc2.weight, "
                      "fc2.bias"),
            std::string::npos);
  args[0].v_int64 = 0;
  EXPECT_NE(
      named_error({args[0], args[1]}, {kTVMArgInt, kTVMStr}).find("TypeError: set_input_named"),
      std::string::npos);
  // A tuple result comes back as an Array of its arrays.
  Fixture two(kRelax + "/two_outputs", "b1_io.txt");
  StatefulVm vm2(kRelax + "/two_outputs.so");
  CallNamed(vm2.set_input.h, "forward", two.Values(), {kTVMNDArrayHandle, kTVMNDArrayHandle});
  CallNamed(vm2.invoke.h, "forward", {}, {});
  Val pair = CallNamed(vm2.get_outputs.h, "forward", {}, {});
  ASSERT_EQ(ArraySize(pair), 2);
  EXPECT_EQ(Outputs(pair), two.outputs);
}

/*! \brief runner.run(inputs by position) of a graph runner. */
Val RunGraph(TVMFunctionHandle run, const Fixture& fx) {
  return Call(run, fx.Values(), std::vector<int>(fx.inputs.size(), kTVMNDArrayHandle));
}

/*! \brief TVM's stateful protocol on a graph executor: set_input("data", input 0), run,
 *  get_output(0); output 0's bytes. */
std::string StatefulOutput0(TVMModuleHandle executor, const Fixture& fx) {
  Fn set_input(executor, "set_input");
  Fn ex_run(executor, "run");
  Fn get_output(executor, "get_output");
  TVMValue in[2];
  in[0].v_str = "data";
  in[1].v_handle = fx.inputs[0]->h;
  Call(set_input.h, {in[0], in[1]}, {kTVMStr, kTVMNDArrayHandle});
  Call(ex_run.h, {}, {});
  TVMValue zero;
  zero.v_int64 = 0;
  return Bytes(Call(get_output.h, {zero}, {kTVMArgInt}).tensor());
}

TEST(GraphRunner, MatchesTVMByPositionNameAndIndex) {
  for (const char* model : {"digits_b1", "multi_io_b1", "conv_b1"}) {
    SCOPED_TRACE(model);
    const std::string dir = kTvm018 + "/" + model;
    Fixture fx(dir, "io.txt");
    Val factory = Load(dir + "/factory.so");
    Val runner = MakeRunner("polyffi.runner.graph", factory);
    Fn run(runner.v.v_handle, "run");
    EXPECT_EQ(Outputs(RunGraph(run.h, fx)), fx.outputs);
    // By name, in reverse order, and by index.
    std::vector<TVMValue> v;
    std::vector<int> c;
    for (size_t i = fx.inputs.size(); i-- > 0;) {
      v.push_back(TVMValue{});
      v.back().v_str = fx.names[i].c_str();
      c.push_back(kTVMStr);
      v.push_back(TVMValue{});
      v.back().v_handle = fx.inputs[i]->h;
      c.push_back(kTVMNDArrayHandle);
    }
    EXPECT_EQ(Outputs(Call(run.h, v, c)), fx.outputs);
    Fn input_names(runner.v.v_handle, "input_names");
    Val names = Call(input_names.h, {}, {});
    ASSERT_EQ(ArraySize(names), static_cast<int64_t>(fx.names.size()));
    for (size_t i = 0; i < fx.names.size(); ++i) {
      EXPECT_STREQ(ArrayItem(names, static_cast<int64_t>(i)).v.v_str, fx.names[i].c_str());
    }
    Fn num_outputs(runner.v.v_handle, "num_outputs");
    EXPECT_EQ(Call(num_outputs.h, {}, {}).v.v_int64, static_cast<int64_t>(fx.outputs.size()));
  }
}

TEST(GraphRunner, ThreeArtifactFormAndStatefulExecutor) {
  const std::string dir = kTvm018 + "/digits_b1";
  Fixture fx(dir, "io.txt");
  Val lib = Load(dir + "/kernels.so");
  std::string json = ReadFile(dir + "/graph.json");
  std::string params = ReadFile(dir + "/params.bin");
  TVMByteArray blob{params.data(), params.size()};
  std::vector<TVMValue> v(5);
  v[0].v_str = json.c_str();
  v[1] = lib.v;
  v[2].v_handle = &blob;
  v[3].v_int64 = kDLCPU;
  v[4].v_int64 = 0;
  Val runner = Call(Global("polyffi.runner.graph"), v,
                    {kTVMStr, kTVMModuleHandle, kTVMBytes, kTVMArgInt, kTVMArgInt});
  Fn run(runner.v.v_handle, "run");
  EXPECT_EQ(Outputs(RunGraph(run.h, fx)), fx.outputs);
  // The stateful executor: set_input / run / get_output as in TVM.
  Fn get_ex(runner.v.v_handle, "executor");
  Val ex = Call(get_ex.h, {}, {});
  EXPECT_EQ(StatefulOutput0(ex.v.v_handle, fx), fx.outputs[0]);
  // with_params: the same graph without weights cannot run; with them it gives TVM's outputs.
  v[2].v_handle = nullptr;
  Val bare = Call(Global("polyffi.runner.graph"), v,
                  {kTVMStr, kTVMModuleHandle, kTVMNullptr, kTVMArgInt, kTVMArgInt});
  Fn bare_run(bare.v.v_handle, "run");
  EXPECT_NE(ErrorOf([&] {
              TVMValue in[2];
              in[0].v_str = "data";
              in[1].v_handle = fx.inputs[0]->h;
              Call(bare_run.h, {in[0], in[1]}, {kTVMStr, kTVMNDArrayHandle});
            }).find("have no value yet"),
            std::string::npos);
  Fn with_params(bare.v.v_handle, "with_params");
  TVMValue bv;
  bv.v_handle = &blob;
  Val loaded = Call(with_params.h, {bv}, {kTVMBytes});
  Fn loaded_run(loaded.v.v_handle, "run");
  EXPECT_EQ(Outputs(RunGraph(loaded_run.h, fx)), fx.outputs);
}

TEST(GraphRunner, TypedErrors) {
  const std::string dir = kTvm018 + "/multi_io_b1";
  Fixture fx(dir, "io.txt");
  Val factory = Load(dir + "/factory.so");
  Val vm_lib = Load(kRelax + "/digits.so");
  EXPECT_NE(ErrorOf([&] { MakeRunner("polyffi.runner.graph", vm_lib); })
                .find("module is not a GraphExecutorFactory (a library exported by TVM, which has "
                      "'default')"),
            std::string::npos);
  Val runner = MakeRunner("polyffi.runner.graph", factory);
  Fn run(runner.v.v_handle, "run");
  TVMValue one;
  one.v_handle = fx.inputs[0]->h;
  EXPECT_NE(ErrorOf([&] {
              Call(run.h, {one}, {kTVMNDArrayHandle});
            }).find("TypeError: run: the graph takes 3 inputs (x, idx, z) but 1 were given"),
            std::string::npos);
  TVMValue kv[2];
  kv[0].v_str = "no_such_input";
  kv[1].v_handle = fx.inputs[0]->h;
  EXPECT_NE(ErrorOf([&] {
              Call(run.h, {kv[0], kv[1]}, {kTVMStr, kTVMNDArrayHandle});
            }),
            "<no error>");
  // The runner still works after the errors (the executor went back to the pool intact).
  EXPECT_EQ(Outputs(RunGraph(run.h, fx)), fx.outputs);
}

TEST(GraphRunner, LoadParamsInPlace) {
  const std::string dir = kTvm018 + "/digits_b1";
  Fixture fx(dir, "io.txt");
  Val lib = Load(dir + "/kernels.so");
  std::string json = ReadFile(dir + "/graph.json");
  std::string params = ReadFile(dir + "/params.bin");
  std::vector<TVMValue> v(5);
  v[0].v_str = json.c_str();
  v[1] = lib.v;
  v[2].v_handle = nullptr;
  v[3].v_int64 = kDLCPU;
  v[4].v_int64 = 0;
  Val runner = Call(Global("polyffi.runner.graph"), v,
                    {kTVMStr, kTVMModuleHandle, kTVMNullptr, kTVMArgInt, kTVMArgInt});
  Fn input_names(runner.v.v_handle, "input_names");
  Fn run(runner.v.v_handle, "run");
  EXPECT_GT(ArraySize(Call(input_names.h, {}, {})), 1);  // the weights too, without params
  Fn get_ex(runner.v.v_handle, "executor");
  Val ex_before = Call(get_ex.h, {}, {});
  Fn load_params(runner.v.v_handle, "load_params");
  TVMByteArray blob{params.data(), params.size()};
  TVMValue bv;
  bv.v_handle = &blob;
  TVMValue not_bytes;
  not_bytes.v_int64 = 3;
  EXPECT_NE(ErrorOf([&] { Call(load_params.h, {not_bytes}, {kTVMArgInt}); }).find("TypeError"),
            std::string::npos);
  Call(load_params.h, {bv}, {kTVMBytes});
  // The same runner now takes only the data by position and gives TVM's outputs.
  Val names = Call(input_names.h, {}, {});
  ASSERT_EQ(ArraySize(names), 1);
  EXPECT_STREQ(ArrayItem(names, 0).v.v_str, fx.names[0].c_str());
  EXPECT_EQ(Outputs(RunGraph(run.h, fx)), fx.outputs);
  // And its own executor (the same module) has the weights too.
  Val ex = Call(get_ex.h, {}, {});
  EXPECT_EQ(ex.v.v_handle, ex_before.v.v_handle);
  EXPECT_EQ(StatefulOutput0(ex.v.v_handle, fx), fx.outputs[0]);
}

TEST(GraphRunner, LoadParamsWhileThreadsRun) {
  // Calls in flight keep the weights they started with; every call sees whole weights, never a
  // half-swapped runner (this test runs in the TSan job too).
  const std::string dir = kTvm018 + "/digits_b1";
  Fixture fx(dir, "io.txt");
  Val factory = Load(dir + "/factory.so");
  Val runner = MakeRunner("polyffi.runner.graph", factory);
  std::string params = ReadFile(dir + "/params.bin");
  TVMByteArray blob{params.data(), params.size()};
  TVMValue bv;
  bv.v_handle = &blob;
  std::atomic<bool> done{false};
  std::atomic<int> mismatches{0}, failures{0}, calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      try {
        Fn run(runner.v.v_handle, "run");
        while (!done.load() || calls.load() < 30) {
          if (Outputs(RunGraph(run.h, fx)) != fx.outputs) ++mismatches;
          ++calls;
        }
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  Fn load_params(runner.v.v_handle, "load_params");
  for (int i = 0; i < 10; ++i) Call(load_params.h, {bv}, {kTVMBytes});
  done = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(calls.load(), 30);
}

TEST(GraphRunner, FlatHostBuffersTakeTheInputsShape) {
  // digits_b1's input is [1, 64]: a flat 64-float view goes in as it is; so does a flat output.
  const std::string dir = kTvm018 + "/digits_b1";
  Fixture fx(dir, "io.txt");
  Val factory = Load(dir + "/factory.so");
  Val runner = MakeRunner("polyffi.runner.graph", factory);
  Fn run(runner.v.v_handle, "run");
  const DLTensor* in = fx.inputs[0]->h;
  ASSERT_EQ(in->ndim, 2);
  std::vector<float> data(64);
  std::memcpy(data.data(), in->data, sizeof(float) * 64);
  int64_t flat_shape[1] = {64};
  DLTensor flat = *in;
  flat.data = data.data();
  flat.ndim = 1;
  flat.shape = flat_shape;
  flat.strides = nullptr;
  flat.byte_offset = 0;
  TVMValue fv;
  fv.v_handle = &flat;
  EXPECT_EQ(Outputs(Call(run.h, {fv}, {kTVMDLTensorHandle})), fx.outputs);
  Fn get_ex(runner.v.v_handle, "executor");
  Val ex = Call(get_ex.h, {}, {});
  Fn set_input(ex.v.v_handle, "set_input");
  Fn ex_run(ex.v.v_handle, "run");
  Fn get_output(ex.v.v_handle, "get_output");
  TVMValue key;
  key.v_str = "data";
  Call(set_input.h, {key, fv}, {kTVMStr, kTVMDLTensorHandle});
  Call(ex_run.h, {}, {});
  std::vector<char> out(fx.outputs[0].size());
  int64_t out_shape[1] = {static_cast<int64_t>(out.size() / 4)};
  DLTensor out_t = flat;
  out_t.data = out.data();
  out_t.shape = out_shape;
  TVMValue ov[2];
  ov[0].v_int64 = 0;
  ov[1].v_handle = &out_t;
  Call(get_output.h, {ov[0], ov[1]}, {kTVMArgInt, kTVMDLTensorHandle});
  EXPECT_EQ(std::string(out.data(), out.size()), fx.outputs[0]);
  // Another element count or dtype is still the shape error.
  flat_shape[0] = 63;
  EXPECT_NE(ErrorOf([&] {
              Call(set_input.h, {key, fv}, {kTVMStr, kTVMDLTensorHandle});
            }).find("ValueError: set_input: input 'data' expects [1, 64] float32 but got [63]"),
            std::string::npos);
  flat_shape[0] = 64;
  flat.dtype.code = kDLInt;
  EXPECT_NE(ErrorOf([&] {
              Call(set_input.h, {key, fv}, {kTVMStr, kTVMDLTensorHandle});
            }).find("ValueError"),
            std::string::npos);
}

TEST(GraphRunner, CheckGraphExecutorGivesOneMessage) {
  const std::string dir = kTvm018 + "/digits_b1";
  Val factory = Load(dir + "/factory.so");
  Val kernels = Load(dir + "/kernels.so");
  TVMFunctionHandle check = Global("polyffi.runner.check_graph_executor");
  std::string f = ErrorOf([&] { Call(check, {factory.v}, {kTVMModuleHandle}); });
  EXPECT_NE(f.find("TypeError: GraphModule needs a graph executor, but this module is a "
                   "GraphExecutorFactory (a library exported by TVM): call its default(device) "
                   "first"),
            std::string::npos)
      << f;
  std::string k = ErrorOf([&] { Call(check, {kernels.v}, {kTVMModuleHandle}); });
  EXPECT_NE(k.find("TypeError: GraphModule needs a graph-executor module, not a "),
            std::string::npos)
      << k;
  EXPECT_NE(k.find("(it lacks set_input / run / get_output)"), std::string::npos) << k;
  TVMValue i;
  i.v_int64 = 1;
  EXPECT_NE(ErrorOf([&] { Call(check, {i}, {kTVMArgInt}); }).find("TypeError"), std::string::npos);
  Val runner = MakeRunner("polyffi.runner.graph", factory);
  Fn get_ex(runner.v.v_handle, "executor");
  Val ex = Call(get_ex.h, {}, {});
  EXPECT_EQ(ErrorOf([&] { Call(check, {ex.v}, {kTVMModuleHandle}); }), "<no error>");
}

/*!
 * \brief Inputs that differ from call to call: the recorded float inputs scaled by 1 + k/8.
 *  Integer inputs (indices) stay as recorded.
 */
std::vector<std::vector<std::unique_ptr<Array>>> Variants(const Fixture& fx, int n) {
  std::vector<std::vector<std::unique_ptr<Array>>> out(n);
  for (int k = 0; k < n; ++k) {
    for (const auto& in : fx.inputs) {
      const DLTensor* t = in->h;
      std::vector<int64_t> shape(t->shape, t->shape + t->ndim);
      auto a = std::make_unique<Array>(shape, t->dtype.code, t->dtype.bits);
      std::string data = Bytes(t);
      std::memcpy(a->h->data, data.data(), data.size());
      if (t->dtype.code == kDLFloat && t->dtype.bits == 32) {
        auto* f = static_cast<float*>(a->h->data);
        for (size_t i = 0; i < data.size() / 4; ++i) f[i] *= 1.0f + static_cast<float>(k) / 8;
      }
      out[k].push_back(std::move(a));
    }
  }
  return out;
}

/*!
 * \brief 8 threads call run over the variants many times at once; every result must equal the
 *  one-thread result of the same variant. call(run, inputs) returns the outputs.
 */
void ConcurrentEqualsSerial(
    TVMModuleHandle runner, const Fixture& fx,
    const std::function<Val(TVMFunctionHandle, const std::vector<std::unique_ptr<Array>>&)>& call) {
  constexpr int kVariants = 6, kThreads = 8, kRounds = 40;
  auto variants = Variants(fx, kVariants);
  Fn run(runner, "run");
  std::vector<std::vector<std::string>> expected;
  for (const auto& in : variants) expected.push_back(Outputs(call(run.h, in)));
  EXPECT_NE(expected[0], expected[1]);  // the variants really differ
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        Fn my_run(runner, "run");
        for (int r = 0; r < kRounds; ++r) {
          int k = (t + r) % kVariants;
          if (Outputs(call(my_run.h, variants[k])) != expected[k]) ++mismatches;
        }
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  Fn pool_size(runner, "pool_size");
  int64_t pooled = Call(pool_size.h, {}, {}).v.v_int64;
  EXPECT_GE(pooled, 1);
  EXPECT_LE(pooled, kThreads);
}

TEST(RunnerThreads, VMEightThreadsEqualOneThread) {
  for (const char* model : {"digits", "two_outputs", "mlp_params"}) {
    SCOPED_TRACE(model);
    Fixture fx(kRelax + "/" + model, "b1_io.txt");
    Val lib = Load(kRelax + "/" + fx.library);
    Val runner = MakeRunner("polyffi.runner.vm", lib);
    ConcurrentEqualsSerial(runner.v.v_handle, fx, [](TVMFunctionHandle run, const auto& in) {
      std::vector<TVMValue> v(in.size());
      for (size_t i = 0; i < in.size(); ++i) v[i].v_handle = in[i]->h;
      return RunVM(run, v, std::vector<int>(in.size(), kTVMNDArrayHandle));
    });
  }
}

TEST(RunnerThreads, GraphEightThreadsEqualOneThread) {
  for (const char* model : {"digits_b1", "multi_io_b1"}) {
    SCOPED_TRACE(model);
    const std::string dir = kTvm018 + "/" + model;
    Fixture fx(dir, "io.txt");
    Val factory = Load(dir + "/factory.so");
    Val runner = MakeRunner("polyffi.runner.graph", factory);
    ConcurrentEqualsSerial(runner.v.v_handle, fx, [](TVMFunctionHandle run, const auto& in) {
      std::vector<TVMValue> v(in.size());
      for (size_t i = 0; i < in.size(); ++i) v[i].v_handle = in[i]->h;
      return Call(run, v, std::vector<int>(in.size(), kTVMNDArrayHandle));
    });
  }
}

}  // namespace
