// The graph executor's storage plan: one allocation per storage id, sized for its largest user,
// and per entry an array viewing that storage with the entry's own shape and dtype.
#include <algorithm>
#include <string>
#include <vector>

#include "graph_executor/common.h"

namespace polyffi {
namespace graph_executor {
namespace {

// Keeps a view's shape and a reference to its storage (taken with TVMArrayToDLPack) alive for
// as long as the view array lives, so an array handed out by get_input stays valid even after
// the executor is gone.
struct ViewContext {
  DLManagedTensor managed;
  std::vector<int64_t> shape;
  DLManagedTensor* storage_ref;
};

void ViewDeleter(DLManagedTensor* self) {
  auto* ctx = static_cast<ViewContext*>(self->manager_ctx);
  TVMDLManagedTensorCallDeleter(ctx->storage_ref);
  delete ctx;
}

}  // namespace

// One allocation per storage id, sized for its largest user (TVM plans storage the same way
// and so may alias entries whose lifetimes do not overlap); each entry is an array viewing
// its storage with the entry's own shape and dtype.
void PlanStorage(const Graph& graph, DLDevice device,
                 OwnedHandles<TVMArrayHandle, TVMArrayFree>* storage_out,
                 OwnedHandles<TVMArrayHandle, TVMArrayFree>* entries_out) {
  std::vector<int64_t> bytes;
  for (size_t i = 0; i < graph.storage_id.size(); ++i) {
    size_t sid = static_cast<size_t>(graph.storage_id[i]);
    if (sid >= graph.storage_id.size()) {
      Throw("ValueError",
            "graph JSON: storage_id " + std::to_string(sid) + " exceeds the number of entries");
    }
    if (sid >= bytes.size()) bytes.resize(sid + 1, 0);
    bytes[sid] = std::max(bytes[sid], NumBytes(graph.shapes[i], graph.dtypes[i]));
  }
  storage_out->items.assign(bytes.size(), nullptr);
  for (size_t sid = 0; sid < bytes.size(); ++sid) {
    // float32 words, as TVM allocates; at least one so data is never NULL.
    int64_t words = std::max<int64_t>(1, (bytes[sid] + 3) / 4);
    CheckCall(TVMArrayAlloc(&words, 1, kDLFloat, 32, 1, device.device_type, device.device_id,
                            &storage_out->items[sid]));
  }
  entries_out->items.assign(graph.storage_id.size(), nullptr);
  for (size_t i = 0; i < graph.storage_id.size(); ++i) {
    TVMArrayHandle storage = storage_out->items[graph.storage_id[i]];
    auto* ctx = new ViewContext();
    ctx->shape = graph.shapes[i];
    if (TVMArrayToDLPack(storage, &ctx->storage_ref) != 0) {
      delete ctx;
      throw Error::FromLastError();
    }
    DLTensor& t = ctx->managed.dl_tensor;
    t.data = storage->data;
    t.device = storage->device;
    t.ndim = static_cast<int>(ctx->shape.size());
    t.dtype = graph.dtypes[i];
    t.shape = ctx->shape.data();
    t.strides = nullptr;
    t.byte_offset = storage->byte_offset;
    ctx->managed.manager_ctx = ctx;
    ctx->managed.deleter = ViewDeleter;
    if (TVMArrayFromDLPack(&ctx->managed, &entries_out->items[i]) != 0) {
      Error err = Error::FromLastError();
      ViewDeleter(&ctx->managed);  // On failure the tensor stays ours to release.
      throw err;
    }
  }
}

}  // namespace graph_executor
}  // namespace polyffi
