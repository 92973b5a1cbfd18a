#include "polyffi/ndarray.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "polyffi/error.h"

namespace polyffi {
namespace {

TEST(NDArrayTest, EmptyIsAlignedAndCompact) {
  auto a = NDArrayObj::Empty({3, 5}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->tensor.data) % 64, 0u);
  EXPECT_EQ(a->tensor.ndim, 2);
  EXPECT_EQ(a->tensor.shape[1], 5);
  EXPECT_EQ(CompactBytes(a->tensor), 60u);
  EXPECT_EQ(NDArrayObj::FromHandle(a->handle()), a.get());
}

TEST(NDArrayTest, ZeroSizedArraysStillHaveData) {
  auto a = NDArrayObj::Empty({0}, DLDataType{kDLInt, 64, 1}, DLDevice{kDLCPU, 0});
  EXPECT_NE(a->tensor.data, nullptr);
  EXPECT_EQ(CompactBytes(a->tensor), 0u);
}

TEST(NDArrayTest, RejectsBadShapesDtypesAndDevices) {
  EXPECT_THROW(NDArrayObj::Empty({-1}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0}), Error);
  EXPECT_THROW(NDArrayObj::Empty({1}, DLDataType{kDLFloat, 7, 1}, DLDevice{kDLCPU, 0}), Error);
  EXPECT_THROW(NDArrayObj::Empty({1}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCUDA, 0}), Error);
}

struct Producer {
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  float data[6] = {0, 1, 2, 3, 4, 5};
  DLManagedTensor managed{};
  int deleted = 0;
};

void ProducerDeleter(DLManagedTensor* self) {
  ++static_cast<Producer*>(self->manager_ctx)->deleted;
}

TEST(NDArrayTest, FromDLPackIsZeroCopyAndDeletesOnce) {
  Producer p;
  p.managed.dl_tensor = DLTensor{p.data, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, p.shape, p.strides, 0};
  p.managed.manager_ctx = &p;
  p.managed.deleter = ProducerDeleter;
  {
    auto a = NDArrayObj::FromDLPack(&p.managed);
    EXPECT_EQ(a->tensor.data, p.data);
    DLManagedTensor* out = a->ToDLPack();
    EXPECT_EQ(out->dl_tensor.data, p.data);
    a = nullptr;  // the export keeps the array alive
    EXPECT_EQ(p.deleted, 0);
    out->deleter(out);
  }
  EXPECT_EQ(p.deleted, 1);
}

TEST(NDArrayTest, NonContiguousDLPackIsRefusedAndNotDeleted) {
  Producer p;
  p.strides[0] = 1;
  p.strides[1] = 2;  // column-major
  p.managed.dl_tensor = DLTensor{p.data, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, p.shape, p.strides, 0};
  p.managed.manager_ctx = &p;
  p.managed.deleter = ProducerDeleter;
  try {
    NDArrayObj::FromDLPack(&p.managed);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
  }
  EXPECT_EQ(p.deleted, 0);  // on failure the caller keeps the tensor
}

}  // namespace
}  // namespace polyffi
