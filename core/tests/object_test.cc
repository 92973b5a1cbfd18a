#include "polyffi/object.h"

#include <gtest/gtest.h>

#include "polyffi/error.h"
#include "polyffi/function.h"

namespace polyffi {
namespace {

struct Counted : Object {
  explicit Counted(int* dtor_count) : Object(TypeIndex::kObject), dtors(dtor_count) {}
  ~Counted() override { ++*dtors; }
  int* dtors;
};

TEST(ObjectTest, NewObjectIsOwnedOnceAndDiesWithLastReference) {
  int dtors = 0;
  {
    ObjectPtr<Counted> a = MakeObject<Counted>(&dtors);
    EXPECT_EQ(a->use_count(), 1);
    ObjectPtr<Counted> b = a;
    EXPECT_EQ(a->use_count(), 2);
    ObjectPtr<Counted> c = std::move(b);
    EXPECT_EQ(a->use_count(), 2);
    EXPECT_FALSE(b);
  }
  EXPECT_EQ(dtors, 1);
}

TEST(ObjectTest, ReleaseAndAdoptKeepTheCountBalanced) {
  int dtors = 0;
  Counted* raw = MakeObject<Counted>(&dtors).release();
  EXPECT_EQ(raw->use_count(), 1);
  {
    auto p = ObjectPtr<Counted>::Borrow(raw);
    EXPECT_EQ(raw->use_count(), 2);
  }
  EXPECT_EQ(dtors, 0);
  { auto p = ObjectPtr<Counted>::Adopt(raw); }
  EXPECT_EQ(dtors, 1);
}

TEST(TypeTableTest, StaticKeysHaveClassicIndices) {
  EXPECT_EQ(TypeKey2Index("runtime.Object"), TypeIndex::kObject);
  EXPECT_EQ(TypeKey2Index("runtime.Module"), TypeIndex::kModule);
  EXPECT_EQ(TypeKey2Index("runtime.NDArray"), TypeIndex::kNDArray);
  EXPECT_EQ(TypeKey2Index("runtime.String"), TypeIndex::kString);
  EXPECT_EQ(TypeKey2Index("Array"), TypeIndex::kArray);
  EXPECT_EQ(TypeKey2Index("Map"), TypeIndex::kMap);
  EXPECT_EQ(TypeKey2Index("runtime.PackedFunc"), TypeIndex::kFunction);
  EXPECT_EQ(TypeIndex2Key(TypeIndex::kArray), "Array");
}

TEST(TypeTableTest, DynamicTypesDeriveFromTheirParent) {
  uint32_t base = RegisterTypeKey("test.Base", TypeIndex::kObject);
  uint32_t child = RegisterTypeKey("test.Child", base);
  EXPECT_GE(base, static_cast<uint32_t>(TypeIndex::kDynamicBegin));
  EXPECT_EQ(RegisterTypeKey("test.Base", TypeIndex::kObject), base);  // idempotent
  EXPECT_TRUE(TypeDerivedFrom(child, base));
  EXPECT_TRUE(TypeDerivedFrom(child, TypeIndex::kObject));
  EXPECT_FALSE(TypeDerivedFrom(base, child));
  EXPECT_FALSE(TypeDerivedFrom(child, TypeIndex::kArray));
}

TEST(TypeTableTest, UnknownKeysAndIndicesAreKeyErrors) {
  try {
    TypeKey2Index("no.such.Type");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "KeyError");
  }
  EXPECT_THROW(TypeIndex2Key(100000), Error);
}

TEST(ErrorTest, ParseSplitsKindFromMessageAndKeepsTraceback) {
  Error e = Error::Parse("ValueError: bad value\n  at frame 1");
  EXPECT_EQ(e.kind(), "ValueError");
  EXPECT_EQ(e.message(), "bad value\n  at frame 1");
  EXPECT_EQ(e.Full(), "ValueError: bad value\n  at frame 1");
  EXPECT_EQ(Error::Parse("my.pkg.Error_2: x").kind(), "my.pkg.Error_2");
}

TEST(ErrorTest, TextWithoutAValidKindIsATVMError) {
  EXPECT_EQ(Error::Parse("just text").kind(), "TVMError");
  EXPECT_EQ(Error::Parse("bad kind!: text").kind(), "TVMError");
  EXPECT_EQ(Error::Parse("line one\nKind: later").kind(), "TVMError");
  EXPECT_EQ(Error::Parse("").message(), "");
}

}  // namespace
}  // namespace polyffi
