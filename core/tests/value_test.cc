#include "polyffi/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "polyffi/container.h"

namespace polyffi {
namespace {

TEST(DataTypeTest, ParsesAndPrintsEveryStorageType) {
  for (const char* s :
       {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
        "float32", "float64", "bool", "handle", "float32x4", "bfloat16"}) {
    EXPECT_EQ(DataTypeString(ParseDataType(s)), s);
  }
  DLDataType t = ParseDataType("int8x4");
  EXPECT_EQ(t.code, kDLInt);
  EXPECT_EQ(t.bits, 8);
  EXPECT_EQ(t.lanes, 4);
}

TEST(DataTypeTest, RejectsMalformedStrings) {
  for (const char* s : {"", "float", "f32", "int0", "int8x", "int8x0", "uint-1", "float32 "}) {
    if (std::string(s) == "float") continue;  // "float" alone means float32, like TVM
    EXPECT_THROW(ParseDataType(s), Error) << s;
  }
  EXPECT_EQ(DataTypeString(ParseDataType("float")), "float32");
}

TEST(RetValueTest, HoldsPodValues) {
  RetValue rv;
  rv.SetInt(-7);
  EXPECT_EQ(rv.type_code(), kTVMArgInt);
  EXPECT_EQ(rv.value().v_int64, -7);
  rv.SetBool(true);
  EXPECT_EQ(rv.type_code(), kTVMArgBool);
  rv.SetFloat(-0.0);
  EXPECT_TRUE(std::signbit(rv.value().v_float64));
}

TEST(RetValueTest, CopiesStringsIn) {
  char buf[] = "hello";
  TVMValue v;
  v.v_str = buf;
  RetValue rv;
  rv.SetFromC(v, kTVMStr);
  buf[0] = 'J';
  EXPECT_EQ(rv.str(), "hello");
}

TEST(RetValueTest, MoveToCPutsStringsInThreadLocalStorage) {
  RetValue rv;
  rv.SetStr("abc");
  TVMValue out;
  int code = -1;
  rv.MoveToC(&out, &code);
  EXPECT_EQ(code, kTVMStr);
  EXPECT_STREQ(out.v_str, "abc");
  EXPECT_EQ(rv.type_code(), kTVMNullptr);
}

TEST(RetValueTest, DataTypesReturnAsStrings) {
  RetValue rv;
  rv.SetDataType(ParseDataType("float16"));
  TVMValue out;
  int code = -1;
  rv.MoveToC(&out, &code);
  EXPECT_EQ(code, kTVMStr);
  EXPECT_STREQ(out.v_str, "float16");
}

TEST(RetValueTest, RetainsObjectsAndTransfersThemOut) {
  auto s = MakeObject<StringObj>("x");
  TVMValue v;
  v.v_handle = s.get();
  {
    RetValue rv;
    rv.SetFromC(v, kTVMObjectHandle);
    EXPECT_EQ(s->use_count(), 2);
    TVMValue out;
    int code;
    rv.MoveToC(&out, &code);
    EXPECT_EQ(code, kTVMObjectHandle);
    EXPECT_EQ(out.v_handle, s.get());
    EXPECT_EQ(s->use_count(), 2);  // the C side now owns one reference
    static_cast<Object*>(out.v_handle)->DecRef();
  }
  EXPECT_EQ(s->use_count(), 1);
}

TEST(RetValueTest, RValueRefMovesTheReferenceOut) {
  Object* raw = MakeObject<StringObj>("y").release();
  TVMValue v;
  v.v_handle = &raw;
  RetValue rv;
  rv.SetFromC(v, kTVMObjectRValueRefArg);
  EXPECT_EQ(raw, nullptr);
  EXPECT_EQ(rv.type_code(), kTVMObjectHandle);
  EXPECT_EQ(rv.object()->use_count(), 1);
}

TEST(RetValueTest, UnknownTypeCodeIsATypeError) {
  RetValue rv;
  TVMValue v;
  v.v_int64 = 0;
  try {
    rv.SetFromC(v, 99);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "TypeError");
    EXPECT_NE(e.message().find("99"), std::string::npos);
  }
}

TEST(ArgsTest, ConvertsWithTheReceivingRules) {
  TVMValue v[3];
  int c[3] = {kTVMArgInt, kTVMArgBool, kTVMArgFloat};
  v[0].v_int64 = 4;
  v[1].v_int64 = 1;
  v[2].v_float64 = 2.5;
  Args args(v, c, 3, "f");
  EXPECT_EQ(args.Float(0), 4.0);  // int accepted as float
  EXPECT_EQ(args.Float(1), 1.0);  // bool accepted as float
  EXPECT_EQ(args.Int(1), 1);
  try {
    args.Int(2);  // float never accepted as int
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "TypeError");
    EXPECT_EQ(e.message(), "f: argument 2 expected int but got float");
  }
}

TEST(ArgsTest, ArityErrorsNameBothCounts) {
  Args args(nullptr, nullptr, 1, "g");
  try {
    args.CheckArity(2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "g: expected 2 arguments but got 1");
  }
}

TEST(ArgsTest, ObjectMismatchNamesTheTypeKey) {
  auto s = MakeObject<StringObj>("z");
  TVMValue v;
  v.v_handle = s.get();
  int c = kTVMObjectHandle;
  Args args(&v, &c, 1, "h");
  EXPECT_EQ(args.Str(0), "z");
  try {
    args.ObjAs<ArrayObj>(0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "h: argument 0 expected Array but got runtime.String");
  }
}

}  // namespace
}  // namespace polyffi
