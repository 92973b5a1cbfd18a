// Run-time twin of header/layout_c11.c: the same pinned numbers, checked as C++ and reported
// per struct and per type code, plus the version macros against TVMAPIGetVersion.
#include <gtest/gtest.h>
#include <polyffi/c_backend_api.h>
#include <polyffi/c_runtime_api.h>
#include <polyffi/dlpack_compat.h>

#include <cstddef>
#include <type_traits>

#include "header/layout_expected.h"

namespace {

TEST(Layout, TypeCodeValues) {
#define POLYFFI_EXPECT_CODE(name, value) EXPECT_EQ(static_cast<int>(name), value) << #name;
  POLYFFI_TYPE_CODES(POLYFFI_EXPECT_CODE)
#undef POLYFFI_EXPECT_CODE
}

TEST(Layout, StructSizes) {
#define POLYFFI_EXPECT_SIZE(type, size) EXPECT_EQ(sizeof(type), size##u) << #type;
  POLYFFI_STRUCT_SIZES(POLYFFI_EXPECT_SIZE)
#undef POLYFFI_EXPECT_SIZE
}

TEST(Layout, StructOffsets) {
#define POLYFFI_EXPECT_OFFSET(type, member, offset) \
  EXPECT_EQ(offsetof(type, member), offset##u) << #type "." #member;
  POLYFFI_STRUCT_OFFSETS(POLYFFI_EXPECT_OFFSET)
#undef POLYFFI_EXPECT_OFFSET
}

TEST(Layout, DLPackCompatDefinitions) {
#define POLYFFI_EXPECT_CODE(name, value) EXPECT_EQ(static_cast<int>(name), value) << #name;
#define POLYFFI_EXPECT_SIZE(type, size) EXPECT_EQ(sizeof(type), size##u) << #type;
#define POLYFFI_EXPECT_OFFSET(type, member, offset) \
  EXPECT_EQ(offsetof(type, member), offset##u) << #type "." #member;
  POLYFFI_COMPAT_CODES(POLYFFI_EXPECT_CODE)
  POLYFFI_COMPAT_SIZES(POLYFFI_EXPECT_SIZE)
  POLYFFI_COMPAT_OFFSETS(POLYFFI_EXPECT_OFFSET)
#undef POLYFFI_EXPECT_CODE
#undef POLYFFI_EXPECT_SIZE
#undef POLYFFI_EXPECT_OFFSET
}

TEST(Layout, TVMValueIsAPlainEightByteUnion) {
  EXPECT_EQ(alignof(TVMValue), 8u);
  EXPECT_TRUE(std::is_trivially_copyable<TVMValue>::value);
  EXPECT_TRUE(std::is_standard_layout<TVMByteArray>::value);
  EXPECT_TRUE(std::is_standard_layout<TVMParallelGroupEnv>::value);
}

TEST(Layout, HandlesArePointers) {
  // Bindings pass every handle as a pointer-sized opaque value.
  EXPECT_EQ(sizeof(TVMFunctionHandle), sizeof(void*));
  EXPECT_EQ(sizeof(TVMModuleHandle), sizeof(void*));
  EXPECT_EQ(sizeof(TVMObjectHandle), sizeof(void*));
  EXPECT_EQ(sizeof(TVMRetValueHandle), sizeof(void*));
  EXPECT_EQ(sizeof(TVMStreamHandle), sizeof(void*));
  EXPECT_EQ(sizeof(TVMArrayHandle), sizeof(void*));
  EXPECT_EQ(sizeof(tvm_index_t), 8u);
}

TEST(Version, RuntimeMatchesHeaderMacros) {
  int major = -1, minor = -1, patch = -1;
  ASSERT_EQ(TVMAPIGetVersion(&major, &minor, &patch), 0);
  EXPECT_EQ(major, POLYFFI_VERSION_MAJOR);
  EXPECT_EQ(minor, POLYFFI_VERSION_MINOR);
  EXPECT_EQ(patch, POLYFFI_VERSION_PATCH);
}

TEST(Version, AcceptsNullOutPointers) {
  // Documented: "any may be NULL"; returns 0 always.
  EXPECT_EQ(TVMAPIGetVersion(nullptr, nullptr, nullptr), 0);
  int major = -1;
  EXPECT_EQ(TVMAPIGetVersion(&major, nullptr, nullptr), 0);
  EXPECT_EQ(major, POLYFFI_VERSION_MAJOR);
}

}  // namespace
