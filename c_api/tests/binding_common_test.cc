// The C++ helpers of polyffi/binding_common.h that the Python, Node and Java natives share: core
// globals looked up once (from any thread), the String/ShapeTuple type indices, making container
// objects and reading String/ShapeTuple objects back, with a typed failure for each way it can
// go wrong.
#include <gtest/gtest.h>
#include <polyffi/binding_common.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

using polyffi::binding::BytesResult;
using polyffi::binding::Failure;
using polyffi::binding::Global;
using polyffi::binding::ObjectResult;

void* MakeString(const std::string& s) {
  TVMByteArray arr{s.data(), s.size()};
  TVMValue v;
  v.v_handle = &arr;
  int code = kTVMBytes;
  ObjectResult made = polyffi::binding::MakeObject(Global::kString, &v, &code, 1);
  EXPECT_EQ(made.failure, Failure::kNone);
  return made.handle;
}

void* MakeShape(const std::vector<int64_t>& dims) {
  std::vector<TVMValue> values(dims.size());
  std::vector<int> codes(dims.size(), kTVMArgInt);
  for (size_t i = 0; i < dims.size(); ++i) values[i].v_int64 = dims[i];
  ObjectResult made = polyffi::binding::MakeObject(Global::kShapeTuple, values.data(), codes.data(),
                                                   static_cast<int>(dims.size()));
  EXPECT_EQ(made.failure, Failure::kNone);
  return made.handle;
}

TEST(BindingCommon, GlobalsAreLookedUpOnceAndSharedByEveryThread) {
  Failure failure = Failure::kNone;
  int rc = 0;
  TVMFunctionHandle first = polyffi::binding::CachedGlobal(Global::kArray, &failure, &rc);
  ASSERT_NE(first, nullptr);
  EXPECT_STREQ(polyffi::binding::GlobalName(Global::kShapeTupleBytes), "runtime.ShapeTupleBytes");
  // Every slot, asked from eight threads at once: each thread sees one handle per global.
  constexpr int kThreads = 8;
  constexpr int kGlobals = static_cast<int>(Global::kCount);
  std::vector<std::vector<TVMFunctionHandle>> seen(kThreads,
                                                   std::vector<TVMFunctionHandle>(kGlobals));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&seen, t] {
      for (int g = kGlobals - 1; g >= 0; --g) {
        Failure f = Failure::kNone;
        int code = 0;
        seen[t][g] = polyffi::binding::CachedGlobal(static_cast<Global>(g), &f, &code);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int g = 0; g < kGlobals; ++g) {
    ASSERT_NE(seen[0][g], nullptr) << polyffi::binding::GlobalName(static_cast<Global>(g));
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t][g], seen[0][g]);
  }
  EXPECT_EQ(seen[0][static_cast<int>(Global::kArray)], first);
}

TEST(BindingCommon, TypeIndicesAreTheRuntimes) {
  unsigned string_index = 0, shape_index = 0;
  ASSERT_EQ(TVMObjectTypeKey2Index("runtime.String", &string_index), 0);
  ASSERT_EQ(TVMObjectTypeKey2Index("runtime.ShapeTuple", &shape_index), 0);
  EXPECT_EQ(polyffi::binding::CachedTypeIndex(polyffi::binding::TypeKey::kString), string_index);
  EXPECT_EQ(polyffi::binding::CachedTypeIndex(polyffi::binding::TypeKey::kShapeTuple), shape_index);
  void* s = MakeString("abc");
  unsigned tindex = 0;
  ASSERT_EQ(TVMObjectGetTypeIndex(s, &tindex), 0);
  EXPECT_EQ(tindex, string_index);
  TVMObjectFree(s);
}

TEST(BindingCommon, StringObjectBytesKeepEmbeddedNul) {
  const std::string text("a\0b\xc3\xa9", 5);
  void* s = MakeString(text);
  ASSERT_NE(s, nullptr);
  BytesResult r = polyffi::binding::StringObjectBytes(s);
  ASSERT_EQ(r.failure, Failure::kNone);
  EXPECT_EQ(std::string(r.data, r.size), text);
  TVMObjectFree(s);
}

TEST(BindingCommon, ShapeTupleObjectBytesAreItsDims) {
  const std::vector<int64_t> dims{3, 0, INT64_MAX, INT64_MIN};
  void* shape = MakeShape(dims);
  ASSERT_NE(shape, nullptr);
  BytesResult r = polyffi::binding::ShapeTupleObjectBytes(shape);
  ASSERT_EQ(r.failure, Failure::kNone);
  ASSERT_EQ(r.size, dims.size() * sizeof(int64_t));
  for (size_t i = 0; i < dims.size(); ++i) EXPECT_EQ(polyffi::binding::ShapeDim(r, i), dims[i]);
  TVMObjectFree(shape);
}

TEST(BindingCommon, ArrayAndMapAreMadeOfTheirItems) {
  TVMValue v[2];
  int codes[2] = {kTVMArgInt, kTVMStr};
  v[0].v_int64 = 7;
  v[1].v_str = "seven";
  ObjectResult arr = polyffi::binding::MakeObject(Global::kArray, v, codes, 2);
  ASSERT_EQ(arr.failure, Failure::kNone);
  TVMFunctionHandle size = nullptr;
  ASSERT_EQ(TVMFuncGetGlobal("runtime.ArraySize", &size), 0);
  TVMValue a;
  a.v_handle = arr.handle;
  int a_code = kTVMObjectHandle;
  TVMValue ret;
  int ret_code = 0;
  ASSERT_EQ(TVMFuncCall(size, &a, &a_code, 1, &ret, &ret_code), 0);
  EXPECT_EQ(ret_code, kTVMArgInt);
  EXPECT_EQ(ret.v_int64, 2);
  TVMFuncFree(size);
  TVMObjectFree(arr.handle);

  ObjectResult map = polyffi::binding::MakeObject(Global::kMap, v, codes, 2);
  ASSERT_EQ(map.failure, Failure::kNone);
  EXPECT_NE(map.handle, nullptr);
  TVMObjectFree(map.handle);
}

TEST(BindingCommon, FailuresAreTyped) {
  // The core refuses the call: kCallFailed, with the runtime's error behind rc.
  TVMValue v[1];
  int codes[1] = {kTVMArgInt};
  v[0].v_int64 = 1;
  ObjectResult odd = polyffi::binding::MakeObject(Global::kMap, v, codes, 1);
  EXPECT_EQ(odd.failure, Failure::kCallFailed);
  EXPECT_NE(odd.rc, 0);
  EXPECT_EQ(odd.handle, nullptr);
  EXPECT_NE(std::string(TVMGetLastError()).find("key/value pairs"), std::string::npos)
      << TVMGetLastError();

  void* shape = MakeShape({2, 3});
  BytesResult not_a_string = polyffi::binding::StringObjectBytes(shape);
  EXPECT_EQ(not_a_string.failure, Failure::kCallFailed);
  EXPECT_NE(std::string(TVMGetLastError()).find("TypeError"), std::string::npos)
      << TVMGetLastError();

  // A global that answers with another type code: kWrongCode, the code kept, the result dropped.
  BytesResult wrong = polyffi::binding::ObjectBytes(Global::kArray, shape, false);
  EXPECT_EQ(wrong.failure, Failure::kWrongCode);
  EXPECT_EQ(wrong.ret_code, kTVMObjectHandle);
  EXPECT_EQ(wrong.data, nullptr);
  ObjectResult not_an_object =
      polyffi::binding::MakeObject(Global::kShapeTupleBytes, nullptr, nullptr, 0);
  EXPECT_EQ(not_an_object.failure, Failure::kCallFailed);  // it needs its argument
  TVMObjectFree(shape);
}

}  // namespace
