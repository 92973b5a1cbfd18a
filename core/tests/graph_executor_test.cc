// Tests of tvm.graph_executor.create, through the C ABI (and polyffi.hpp) only.
//
// Small graphs run with kernels made here (a runtime.ModuleFromFunctions module of packed
// functions), so every error path can be reached on purpose; the digits model runs with the
// real libdigits_model.so and must reproduce train.py's predictions.
#include "graph_executor_test_util.h"

namespace graph_executor_test {
namespace {

TEST(GraphExecutor, SmallGraphRunsWithSharedStorage) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_EQ(ex("get_num_inputs").as_int(), 2);
  EXPECT_EQ(ex("get_num_outputs").as_int(), 2);
  EXPECT_EQ(ex("get_input_index", {"c"}).as_int(), 1);
  EXPECT_EQ(ex("get_input_index", {"nope"}).as_int(), -1);
  Array x = Array::Of({1, 2, 3, 4}, {4});
  Array c = Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4});
  ex("set_input", {"x", x});
  ex("set_input", {1, c});
  ex("run");
  EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{2.75f, 6.75f, 12.75f, 20.75f}));
  EXPECT_EQ(ex.Output(1).Get(), (std::vector<float>{2.25f, 6.25f, 12.25f, 20.25f}));
  // A second run with new input overwrites everything (no stale values from the shared slot).
  x.Set({0, 0, 0, 0});
  ex("set_input", {0, x});
  ex("run");
  EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{0.75f, 0.75f, 0.75f, 0.75f}));
}

TEST(GraphExecutor, GetOutputCopiesIntoGivenArray) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  ex("set_input", {"x", Array::Of({1, 1, 1, 1}, {4})});
  ex("set_input", {"c", Array::Of({1, 1, 1, 1}, {4})});
  ex("run");
  Array out({4});
  Any r = ex("get_output", {1, out});
  EXPECT_TRUE(r.is_none());
  EXPECT_EQ(out.Get(), (std::vector<float>{4, 4, 4, 4}));
}

TEST(GraphExecutor, GetOutputReturnsNewArrayThatOutlivesTheExecutor) {
  ObjectRef lib = MakeLib();
  Array held(TVMArrayHandle{nullptr});
  {
    Executor ex(SmallGraph().dump(), lib);
    ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
    ex("set_input", {"c", Array::Of({0, 0, 0, 0}, {4})});
    ex("run");
    held = ex.Output(1);
    ex("set_input", {"x", Array::Of({9, 9, 9, 9}, {4})});
    ex("run");  // Must not change the array already handed out.
  }
  EXPECT_EQ(held.Get(), (std::vector<float>{1, 4, 9, 16}));
}

TEST(GraphExecutor, GetInputIsTheExecutorsStorage) {
  ObjectRef lib = MakeLib();
  Array input(TVMArrayHandle{nullptr});
  {
    Executor ex(SmallGraph().dump(), lib);
    ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
    ex("set_input", {"c", Array::Of({0, 0, 0, 0}, {4})});
    input = ex.InputArray("x");
    EXPECT_EQ(input.Get(), (std::vector<float>{1, 2, 3, 4}));
    // Writing through the returned array feeds the next run, as in TVM.
    input.Set({3, 3, 3, 3});
    ex("run");
    EXPECT_EQ(ex.Output(1).Get(), (std::vector<float>{9, 9, 9, 9}));
  }
  // The view keeps its storage alive after the executor is gone.
  EXPECT_EQ(input.Get(), (std::vector<float>{3, 3, 3, 3}));
}

TEST(GraphExecutor, LoadParamsSetsInputsAndSkipsUnknownNames) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  ex.LoadParams(SaveParams({{"folded_away", {2}, {7, 7}}, {"c", {4}, {1, 2, 3, 4}}}));
  ex("set_input", {"x", Array::Of({0, 0, 0, 0}, {4})});
  ex("run");
  // t1 = c, t2 = c*c, t3 = c*c + c.
  EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{2, 6, 12, 20}));
}

TEST(GraphExecutor, FlattenDataPassesOneDimensionalTensors) {
  ObjectRef lib = MakeLib();
  GraphBuilder g;
  int x = g.Input("x", {2, 3}, 0);
  int y = g.Op("flat_copy", {{x, 0}}, {{{2, 3}, 1}}, /*flatten=*/true);
  g.Head(y);
  Executor ex(g.Build().dump(), lib);
  ex("set_input", {0, Array::Of({1, 2, 3, 4, 5, 6}, {2, 3})});
  ex("run");
  Array out = ex.Output(0);
  EXPECT_EQ(out.get()->ndim, 2);  // Outputs keep the graph's shape.
  EXPECT_EQ(out.Get(), (std::vector<float>{1, 2, 3, 4, 5, 6}));

  GraphBuilder unflat;  // Without flatten_data the kernel sees [2, 3] and refuses.
  x = unflat.Input("x", {2, 3}, 0);
  unflat.Head(unflat.Op("flat_copy", {{x, 0}}, {{{2, 3}, 1}}));
  Executor ex2(unflat.Build().dump(), lib);
  ex2("set_input", {0, Array::Of({1, 2, 3, 4, 5, 6}, {2, 3})});
  EXPECT_EQ(ErrorOf([&] { ex2("run"); }), "ValueError: not flattened");
}

TEST(GraphExecutor, MultiOutputNode) {
  ObjectRef lib = MakeLib();
  GraphBuilder g;
  int x = g.Input("x", {4}, 0);
  int s = g.Op("split", {{x, 0}}, {{{2}, 1}, {{2}, 2}});
  int m = g.Op("mul", {{s, 0}, {s, 1}}, {{{2}, 3}});
  g.Head(m);
  g.Head(s, 1);
  Executor ex(g.Build().dump(), lib);
  ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
  ex("run");
  EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{3, 8}));
  EXPECT_EQ(ex.Output(1).Get(), (std::vector<float>{3, 4}));
}

TEST(GraphExecutor, KernelErrorPropagatesFromRun) {
  ObjectRef lib = MakeLib();
  GraphBuilder g;
  int x = g.Input("x", {2}, 0);
  g.Head(g.Op("fail", {{x, 0}}, {{{2}, 1}}));
  Executor ex(g.Build().dump(), lib);
  ex("set_input", {"x", Array::Of({1, 2}, {2})});
  EXPECT_EQ(ErrorOf([&] { ex("run"); }), "AssertionError: kernel refused its input");
}

// ---- TVM 0.18's other executor functions -------------------------------------------------------

// A shape from get_*_info: a runtime.ShapeTuple where the runtime has that type, else an Array.
std::vector<int64_t> ShapeOf(const ObjectRef& obj) {
  bool tuple = obj.type_key() == "runtime.ShapeTuple";
  Function size =
      Function::GetGlobalRequired(tuple ? "runtime.GetShapeTupleSize" : "runtime.ArraySize");
  Function item =
      Function::GetGlobalRequired(tuple ? "runtime.GetShapeTupleElem" : "runtime.ArrayGetItem");
  std::vector<int64_t> out;
  int64_t n = size(obj).as_int();
  for (int64_t i = 0; i < n; ++i) out.push_back(item(obj, i).as_int());
  return out;
}

// get_input_info / get_output_info as {name: (shape, dtype)}.
std::map<std::string, std::pair<std::vector<int64_t>, std::string>> Info(const Any& info) {
  Function get = Function::GetGlobalRequired("runtime.MapGetItem");
  Function items = Function::GetGlobalRequired("runtime.MapItems");
  Function size = Function::GetGlobalRequired("runtime.ArraySize");
  Function at = Function::GetGlobalRequired("runtime.ArrayGetItem");
  Any shapes = get(info.as_object(), "shape");
  Any dtypes = get(info.as_object(), "dtype");
  std::map<std::string, std::pair<std::vector<int64_t>, std::string>> out;
  Any flat = items(shapes.as_object());
  for (int64_t i = 0; i < size(flat.as_object()).as_int(); i += 2) {
    std::string name = at(flat.as_object(), i).as_str();
    out[name].first = ShapeOf(at(flat.as_object(), i + 1).as_object());
    out[name].second = get(dtypes.as_object(), name).as_str();
  }
  EXPECT_EQ(size(items(dtypes.as_object()).as_object()).as_int(),
            2 * static_cast<int64_t>(out.size()));
  return out;
}

using InfoMap = std::map<std::string, std::pair<std::vector<int64_t>, std::string>>;

TEST(ExecutorFunctions, InfoListsInputsLoadParamsHasNotNamed) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_EQ(Info(ex("get_input_info")),
            (InfoMap{{"x", {{4}, "float32"}}, {"c", {{4}, "float32"}}}));
  // As TVM: every name of a loaded blob counts as a param, in the graph or not.
  ex.LoadParams(SaveParams({{"c", {4}, {1, 2, 3, 4}}, {"folded_away", {1}, {0}}}));
  EXPECT_EQ(Info(ex("get_input_info")), (InfoMap{{"x", {{4}, "float32"}}}));
  // Outputs by their nodes' names: t3 is "add_4", t2 "mul_3".
  EXPECT_EQ(Info(ex("get_output_info")),
            (InfoMap{{"add_4", {{4}, "float32"}}, {"mul_3", {{4}, "float32"}}}));
  EXPECT_EQ(ErrorOf([&] { ex("get_input_info", {1}); }),
            "TypeError: GraphExecutor.get_input_info: expected 0 arguments but got 1");
}

TEST(ExecutorFunctions, GetInputOfAnUnknownNameIsNone) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_TRUE(ex("get_input", {"nope"}).is_none());
  EXPECT_EQ(ex.InputArray("c").get()->shape[0], 4);
  EXPECT_EQ(ErrorOf([&] { ex("get_input", {7}); }),
            "IndexError: get_input: input index 7 out of range [0, 2)");
}

TEST(ExecutorFunctions, OutputsByName) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_EQ(ex("get_output_index", {"add_4"}).as_int(), 0);
  EXPECT_EQ(ex("get_output_index", {"mul_3"}).as_int(), 1);
  EXPECT_EQ(ex("get_output_index", {"x"}).as_int(), -1);
  EXPECT_EQ(ErrorOf([&] { ex("get_output_index", {1}); }),
            "TypeError: get_output_index: argument 0 expected str but got int");
  ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
  ex("set_input", {"c", Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4})});
  ex("run");
  Array by_name = CallArray(ex.F("get_output"), {"mul_3"});
  EXPECT_EQ(by_name.Get(), ex.Output(1).Get());
}

TEST(ExecutorFunctions, InputZeroCopyReadsTheCallersMemory) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  {
    Array x = Array::Of({1, 2, 3, 4}, {4});
    ex("set_input_zero_copy", {"x", x});
    ex("set_input", {"c", Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4})});
    ex("run");
    EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{2.75f, 6.75f, 12.75f, 20.75f}));
    // Changing the caller's array (no set_input) changes the next run.
    x.Set({0, 0, 0, 0});
    ex("run");
    EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{0.75f, 0.75f, 0.75f, 0.75f}));
    // get_input returns an array over the same memory; set_input writes into it.
    EXPECT_EQ(ex.InputArray("x").get()->data, x.get()->data);
    ex("set_input", {"x", Array::Of({1, 1, 1, 1}, {4})});
    EXPECT_EQ(x.Get(), (std::vector<float>{1, 1, 1, 1}));
  }
  // The caller's handle is gone; the executor still holds the array it reads.
  ex("run");
  EXPECT_EQ(ex.Output(1).Get(), (std::vector<float>{2.25f, 2.25f, 2.25f, 2.25f}));
}

TEST(ExecutorFunctions, OutputZeroCopyWritesTheCallersMemory) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  Array t3({4}), t2({4});
  ex("set_output_zero_copy", {0, t3});
  ex("set_output_zero_copy", {"mul_3:1", t2});  // TVM's "name:index" key
  ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
  ex("set_input", {"c", Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4})});
  ex("run");
  EXPECT_EQ(t3.Get(), (std::vector<float>{2.75f, 6.75f, 12.75f, 20.75f}));
  EXPECT_EQ(t2.Get(), (std::vector<float>{2.25f, 6.25f, 12.25f, 20.25f}));
  EXPECT_EQ(ex.Output(0).Get(), t3.Get());
}

TEST(ExecutorFunctions, ZeroCopyFollowsSharedStorageAndFlattening) {
  ObjectRef lib = MakeLib();
  // x[2, 2] -> __nop (a reshape to [4] sharing x's storage) -> flat_copy (flattened) -> y[4];
  // y -> __nop (a reshape to [2, 2] sharing y's storage) is the output.
  GraphBuilder g;
  int x = g.Input("x", {2, 2}, 0);
  int r = g.Op("__nop", {{x, 0}}, {{{4}, 0}});
  int y = g.Op("flat_copy", {{r, 0}}, {{{4}, 1}}, /*flatten=*/true);
  int out = g.Op("__nop", {{y, 0}}, {{{2, 2}, 1}});
  g.Head(out);
  Executor ex(g.Build().dump(), lib);
  Array in = Array::Of({1, 2, 3, 4}, {2, 2});
  Array result({2, 2});
  ex("set_input_zero_copy", {0, in});
  ex("set_output_zero_copy", {0, result});
  ex("run");
  EXPECT_EQ(result.Get(), (std::vector<float>{1, 2, 3, 4}));
  in.Set({5, 6, 7, 8});
  ex("run");
  EXPECT_EQ(result.Get(), (std::vector<float>{5, 6, 7, 8}));
}

TEST(ExecutorFunctions, ZeroCopyRefusesArraysThatDoNotFit) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_EQ(ErrorOf([&] {
              ex("set_input_zero_copy", {"x", Array::Of({1, 2}, {2})});
            }),
            "ValueError: set_input_zero_copy: input 'x' expects [4] float32 but got [2] float32");
  Array ints({4}, DLDataType{kDLInt, 32, 1});
  EXPECT_EQ(ErrorOf([&] {
              ex("set_output_zero_copy", {1, ints});
            }),
            "ValueError: set_output_zero_copy: output 1 expects [4] float32 but got [4] int32");
  // A view 4 bytes into an array is not 64-byte aligned.
  Array big({8});
  DLTensor view = *big.get();
  int64_t four = 4;
  view.shape = &four;
  view.byte_offset = 4;
  Arg misaligned(0);
  misaligned.v.v_handle = &view, misaligned.code = kTVMDLTensorHandle;
  EXPECT_EQ(ErrorOf([&] {
              ex("set_input_zero_copy", {"x", misaligned});
            }),
            "ValueError: set_input_zero_copy: input 'x': the array's data must be 64-byte "
            "aligned (and not NULL)");
  view.byte_offset = 0;  // an aligned view is lent as is
  ex("set_input_zero_copy", {"x", misaligned});
  EXPECT_EQ(ErrorOf([&] {
              ex("set_input_zero_copy", {"nope", big});
            }),
            "KeyError: set_input_zero_copy: the graph has no input named 'nope'");
  EXPECT_EQ(ErrorOf([&] {
              ex("set_output_zero_copy", {"nope", big});
            }),
            "KeyError: set_output_zero_copy: the graph has no output named 'nope'");
  EXPECT_EQ(ErrorOf([&] {
              ex("set_output_zero_copy", {2, big});
            }),
            "IndexError: set_output_zero_copy: output index 2 out of range [0, 2)");
  EXPECT_EQ(ErrorOf([&] {
              ex("set_input_zero_copy", {"x", 1.5});
            }),
            "TypeError: set_input_zero_copy: expected an array but got float");
}

TEST(ExecutorFunctions, ShareParamsUsesTheOtherExecutorsArrays) {
  ObjectRef lib = MakeLib();
  Executor a(SmallGraph().dump(), lib);
  Executor b(SmallGraph().dump(), lib);
  std::string blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}, {"folded_away", {1}, {0}}});
  a.LoadParams(blob);
  TVMByteArray bytes{blob.data(), blob.size()};
  b("share_params", {Arg::Module(a.module().get()), &bytes});
  EXPECT_EQ(b.InputArray("c").get()->data, a.InputArray("c").get()->data);
  b("set_input", {"x", Array::Of({0, 0, 0, 0}, {4})});
  b("run");  // c counts as set in b
  EXPECT_EQ(b.Output(0).Get(), (std::vector<float>{2, 6, 12, 20}));
  // New params loaded into a are what b computes with.
  a.LoadParams(SaveParams({{"c", {4}, {1, 1, 1, 1}}}));
  b("run");
  EXPECT_EQ(b.Output(0).Get(), (std::vector<float>{2, 2, 2, 2}));
}

TEST(ExecutorFunctions, ShareParamsRefusesBadArguments) {
  ObjectRef lib = MakeLib();
  Executor a(SmallGraph().dump(), lib);
  Executor b(SmallGraph().dump(), lib);
  std::string blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}});
  TVMByteArray bytes{blob.data(), blob.size()};
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {Arg::Module(lib.get()), &bytes});
            }),
            "TypeError: share_params: argument 0 expected a GraphExecutor module but got Module");
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {1, &bytes});
            }),
            "TypeError: share_params: argument 0 expected a GraphExecutor module but got int");
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {Arg::Module(a.module().get()), "c"});
            }),
            "TypeError: share_params: argument 1 expected bytes but got str");
  std::string junk = "not a params blob at all";
  TVMByteArray junk_bytes{junk.data(), junk.size()};
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {Arg::Module(a.module().get()), &junk_bytes});
            }),
            "ValueError: share_params: not a TVM params blob: magic 0x6170206120746f6e, expected "
            "0xf7e58d4f05049cb7");
  // An executor whose "c" has another shape cannot lend it.
  GraphBuilder g;
  int x = g.Input("x", {2}, 0);
  int c = g.Input("c", {2}, 1);
  g.Head(g.Op("add", {{x, 0}, {c, 0}}, {{{2}, 2}}));
  Executor other(g.Build().dump(), lib);
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {Arg::Module(other.module().get()), &bytes});
            }),
            "ValueError: share_params: input 'c' expects [4] float32 but got [2] float32");
  EXPECT_NE(b.InputArray("c").get()->data, other.InputArray("c").get()->data);  // unchanged
}

TEST(ExecutorFunctions, RunFromInputsReturnsEveryOutput) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  Array x = Array::Of({1, 2, 3, 4}, {4});
  Array c = Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4});
  Any outs = ex("run_from_inputs", {kDLCPU, 0, "x", x, 1, c});
  Function size = Function::GetGlobalRequired("runtime.ArraySize");
  ASSERT_EQ(size(outs.as_object()).as_int(), 2);
  // Each item is a new array holding a copy of the output.
  Function item = Function::GetGlobalRequired("runtime.ArrayGetItem");
  TVMValue args[2];
  int codes[2] = {kTVMObjectHandle, kTVMArgInt};
  args[0].v_handle = outs.as_object().get();
  args[1].v_int64 = 1;
  TVMValue rv;
  int rc = kTVMNullptr;
  ASSERT_EQ(TVMFuncCall(item.get(), args, codes, 2, &rv, &rc), 0) << TVMGetLastError();
  ASSERT_EQ(rc, kTVMNDArrayHandle);
  Array second(static_cast<TVMArrayHandle>(rv.v_handle));
  EXPECT_EQ(second.Get(), (std::vector<float>{2.25f, 6.25f, 12.25f, 20.25f}));
  EXPECT_EQ(ErrorOf([&] {
              ex("run_from_inputs", {kDLCPU, 0, "x"});
            }),
            "TypeError: run_from_inputs: expected a device type, a device id and key/array "
            "pairs, got 3 arguments");
  EXPECT_EQ(ErrorOf([&] {
              ex("run_from_inputs", {kDLCPU, 0, "nope", x});
            }),
            "KeyError: run_from_inputs: the graph has no input named 'nope'");
  EXPECT_EQ(ErrorOf([&] {
              ex("run_from_inputs", {2, 0});
            }),
            "ValueError: run_from_inputs: device type 2 is not available (this runtime has CPU "
            "only)");
}

// A host exception object raised in a kernel comes out of run() as the same object.
int RaiseHostException(TVMValue*, int*, int, TVMRetValueHandle, void* resource) {
  TVMAPISetLastPythonError(resource);
  return -1;
}

TEST(ExecutorFunctions, HostExceptionOfAKernelCrossesRun) {
  int host_exception = 0;  // stands for a PyObject*; no hooks: held borrowed
  TVMFunctionHandle raise = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(RaiseHostException, &host_exception, nullptr, &raise), 0);
  Function make = Function::GetGlobalRequired("runtime.ModuleFromFunctions");
  Any lib = make("test.Raise", "raise", Function::Adopt(raise));
  GraphBuilder g;
  int x = g.Input("x", {2}, 0);
  g.Head(g.Op("raise", {{x, 0}}, {{{2}, 1}}));
  Executor ex(g.Build().dump(), lib.as_object());
  ex("set_input", {"x", Array::Of({1, 2}, {2})});
  Function run = ex.F("run");
  TVMValue rv;
  int rc = kTVMNullptr;
  EXPECT_EQ(TVMFuncCall(run.get(), nullptr, nullptr, 0, &rv, &rc), -1);
  EXPECT_EQ(TVMGetLastPythonError(), &host_exception);
  TVMDropLastPythonError();
  EXPECT_EQ(TVMGetLastPythonError(), nullptr);
}

// ---- The digits model --------------------------------------------------------------------------

ObjectRef LoadDigitsLib() {
  TVMModuleHandle h = nullptr;
  polyffi::CheckCall(TVMModLoadFromFile(DIGITS_MODEL_LIB, "", &h));
  return ObjectRef::Adopt(h);
}

TEST(DigitsModel, ReproducesTrainingScriptPredictions) {
  const std::string dir = DIGITS_MODEL_DIR;
  ObjectRef lib = LoadDigitsLib();
  Executor ex(ReadFile(dir + "/graph.json"), lib);
  ex.LoadParams(ReadFile(dir + "/params.bin"));
  Json expected = Json::parse(ReadFile(dir + "/expected.json"));
  const std::vector<int> pred = expected["predictions"].get<std::vector<int>>();
  const int64_t n = static_cast<int64_t>(pred.size());
  std::string xs = ReadFile(dir + "/test_x.bin");
  std::string ys = ReadFile(dir + "/test_y.bin");
  ASSERT_EQ(xs.size(), static_cast<size_t>(n * 64 * 4));
  ASSERT_EQ(ys.size(), static_cast<size_t>(n * 4));
  Array x({n, 64});
  polyffi::CheckCall(TVMArrayCopyFromBytes(x.get(), xs.data(), xs.size()));
  ex("set_input", {"data", x});
  ex("run");
  std::vector<float> probs = ex.Output(0).Get();
  int correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = probs.data() + i * 10;
    int best = static_cast<int>(std::max_element(row, row + 10) - row);
    EXPECT_EQ(best, pred[i]) << "sample " << i;
    int32_t label;
    std::memcpy(&label, ys.data() + i * 4, 4);
    correct += best == label;
  }
  EXPECT_DOUBLE_EQ(static_cast<double>(correct) / n, expected["accuracy"].get<double>());
}

TEST(DigitsModel, KernelShapeCheckReportsThroughTheErrorSlot) {
  // A graph whose first weight has 63 input features: the DSO's own check must fail the run
  // with its message, delivered through __TVMAPISetLastError.
  Json g = Json::parse(ReadFile(std::string(DIGITS_MODEL_DIR) + "/graph_b1.json"));
  g["attrs"]["shape"][1][1] = Json::array({32, 63});
  ObjectRef lib = LoadDigitsLib();
  Executor ex(g.dump(), lib);
  for (int i = 0; i < ex("get_num_inputs").as_int(); ++i) ex.InputArray(i);  // values don't matter
  EXPECT_EQ(ErrorOf([&] { ex("run"); }),
            "ValueError: fused_dense_bias_relu: weight has 63 input features but data has 64");
}

// ---- Errors: create ----------------------------------------------------------------------------

}  // namespace
}  // namespace graph_executor_test
