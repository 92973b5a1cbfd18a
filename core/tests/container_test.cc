#include "polyffi/container.h"

#include <gtest/gtest.h>

#include "polyffi/registry.h"

namespace polyffi {
namespace {

RetValue Call(const char* name, std::vector<TVMValue> values, std::vector<int> codes) {
  auto f = Registry::Global()->Get(name);
  EXPECT_TRUE(f) << name;
  RetValue rv;
  f->Call(values.data(), codes.data(), static_cast<int>(values.size()), &rv);
  return rv;
}

TVMValue Int(int64_t x) {
  TVMValue v;
  v.v_int64 = x;
  return v;
}
TVMValue Str(const char* s) {
  TVMValue v;
  v.v_str = s;
  return v;
}
TVMValue Handle(void* p) {
  TVMValue v;
  v.v_handle = p;
  return v;
}

TEST(ContainerTest, ArrayKeepsItemsInOrder) {
  RetValue arr = Call("runtime.Array", {Int(1), Str("two")}, {kTVMArgInt, kTVMStr});
  ASSERT_EQ(arr.type_code(), kTVMObjectHandle);
  EXPECT_EQ(arr.object()->type_index(), TypeIndex::kArray);
  EXPECT_EQ(Call("runtime.ArraySize", {Handle(arr.object())}, {kTVMObjectHandle}).value().v_int64,
            2);
  RetValue item =
      Call("runtime.ArrayGetItem", {Handle(arr.object()), Int(1)}, {kTVMObjectHandle, kTVMArgInt});
  EXPECT_EQ(item.str(), "two");
}

TEST(ContainerTest, ArrayIndexOutOfRangeIsIndexError) {
  RetValue arr = Call("runtime.Array", {}, {});
  try {
    Call("runtime.ArrayGetItem", {Handle(arr.object()), Int(0)}, {kTVMObjectHandle, kTVMArgInt});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "IndexError");
  }
}

TEST(ContainerTest, MapReplacesDuplicateKeysAndKeepsInsertionOrder) {
  RetValue map = Call("runtime.Map", {Str("a"), Int(1), Str("b"), Int(2), Str("a"), Int(3)},
                      {kTVMStr, kTVMArgInt, kTVMStr, kTVMArgInt, kTVMStr, kTVMArgInt});
  auto* m = static_cast<MapObj*>(map.object());
  ASSERT_EQ(m->items.size(), 2u);
  EXPECT_EQ(m->items[0].first.str(), "a");
  EXPECT_EQ(m->items[0].second.value().v_int64, 3);
  EXPECT_EQ(
      Call("runtime.MapCount", {Handle(m), Str("b")}, {kTVMObjectHandle, kTVMStr}).value().v_int64,
      1);
  EXPECT_EQ(
      Call("runtime.MapCount", {Handle(m), Str("z")}, {kTVMObjectHandle, kTVMStr}).value().v_int64,
      0);
}

TEST(ContainerTest, MapIntAndStringKeysAreDistinct) {
  RetValue map = Call("runtime.Map", {Int(1), Str("int"), Str("1"), Str("str")},
                      {kTVMArgInt, kTVMStr, kTVMStr, kTVMStr});
  RetValue v =
      Call("runtime.MapGetItem", {Handle(map.object()), Int(1)}, {kTVMObjectHandle, kTVMArgInt});
  EXPECT_EQ(v.str(), "int");
  try {
    Call("runtime.MapGetItem", {Handle(map.object()), Str("nope")}, {kTVMObjectHandle, kTVMStr});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "KeyError");
  }
}

TEST(ContainerTest, OddMapArgumentsAreValueError) {
  EXPECT_THROW(Call("runtime.Map", {Int(1)}, {kTVMArgInt}), Error);
}

TEST(ContainerTest, StringsWithNulComeBackAsStringObjects) {
  std::string s("a\0b", 3);
  TVMByteArray b{s.data(), s.size()};
  RetValue obj = Call("runtime.String", {Handle(&b)}, {kTVMBytes});
  ASSERT_EQ(obj.object()->type_index(), TypeIndex::kString);
  EXPECT_EQ(static_cast<StringObj*>(obj.object())->data, s);
  RetValue arr = Call("runtime.Array", {Handle(obj.object())}, {kTVMObjectHandle});
  RetValue item =
      Call("runtime.ArrayGetItem", {Handle(arr.object()), Int(0)}, {kTVMObjectHandle, kTVMArgInt});
  ASSERT_EQ(item.type_code(), kTVMObjectHandle);
  EXPECT_EQ(static_cast<StringObj*>(item.object())->data, s);
  RetValue bytes = Call("runtime.StringBytes", {Handle(obj.object())}, {kTVMObjectHandle});
  EXPECT_EQ(bytes.type_code(), kTVMBytes);
  EXPECT_EQ(bytes.str(), s);
}

TEST(ContainerTest, ItemsKeepObjectsAlive) {
  auto s = MakeObject<StringObj>("kept");
  {
    RetValue arr = Call("runtime.Array", {Handle(s.get())}, {kTVMObjectHandle});
    EXPECT_EQ(s->use_count(), 2);
  }
  EXPECT_EQ(s->use_count(), 1);
}

}  // namespace
}  // namespace polyffi
