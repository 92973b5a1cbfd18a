// The graph executor's params: load_params copies a params blob's arrays into the inputs it
// names, share_params points them at another executor's. The blob is read by the core's one
// params-blob reader (formats/params_blob.h).
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "formats/params_blob.h"
#include "graph_executor/executor.h"

namespace polyffi {
namespace graph_executor {
namespace {

// The format readers throw the core's errors, all ValueErrors (docs/abi-decisions.md, "Binary
// formats"); this file speaks polyffi.hpp's.
formats::ParamsBlob ReadParams(const char* data, size_t size, const char* fn, bool names_only) {
  try {
    return formats::ReadParamsBlob(data, size, fn, names_only);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    Throw("ValueError", e.what());
  }
}

}  // namespace

void GraphExecutor::ShareParams(void* other, const char* data, size_t size) {
  const std::vector<std::string> names = ReadParams(data, size, "share_params", true).names;
  TVMFunctionHandle get_input = nullptr;
  Check(TVMModGetFunction(other, "get_input", 0, &get_input));
  if (get_input == nullptr) Throw("TypeError", "share_params: the module has no get_input");
  OwnedHandles<TVMFunctionHandle, TVMFuncFree> hold_fn;
  hold_fn.items.push_back(get_input);
  OwnedHandles<TVMArrayHandle, TVMArrayFree> shared;  // owned until swapped in
  std::vector<uint32_t> eids;
  std::vector<int> indices;
  for (const std::string& name : names) {
    int idx = InputIndex(name);
    if (idx < 0) continue;
    TVMValue v, rv;
    int c = kTVMStr, rc = kTVMNullptr;
    v.v_str = name.c_str();
    Check(TVMFuncCall(get_input, &v, &c, 1, &rv, &rc));
    if (rc != kTVMNDArrayHandle) {
      if (Any::IsObjectCode(rc)) TVMObjectFree(rv.v_handle);
      Throw("ValueError", "share_params: the other executor has no input '" + name + "'");
    }
    shared.items.push_back(static_cast<TVMArrayHandle>(rv.v_handle));
    uint32_t eid = EntryId(graph_.input_nodes[idx], 0);
    CheckMatch([&] { return "share_params: input '" + name + "'"; }, entries_.items[eid],
               shared.items.back());
    eids.push_back(eid);
    indices.push_back(idx);
  }
  for (size_t k = 0; k < eids.size(); ++k) {
    TVMArrayHandle old = entries_.items[eids[k]];
    TVMArrayHandle now = shared.items[k];
    shared.items[k] = old;  // released with `shared`
    entries_.items[eids[k]] = now;
    for (Op& op : ops_) {
      for (TVMValue& v : op.values) {
        if (v.v_handle == old) v.v_handle = now;
      }
    }
    for (DLTensor* f : entry_flat_[eids[k]]) {
      f->data = now->data;
      f->byte_offset = now->byte_offset;
    }
    MarkSet(indices[k]);
  }
}

void GraphExecutor::LoadParams(const char* data, size_t size) {
  formats::ParamsBlob blob = ReadParams(data, size, "load_params", false);
  struct Param {
    const std::string& name;
    const formats::NDArrayRecord& array;
  };
  std::vector<Param> params;
  for (size_t i = 0; i < blob.names.size(); ++i) params.push_back({blob.names[i], blob.arrays[i]});
  std::vector<std::pair<TVMArrayHandle, const Param*>> writes;
  std::vector<int> written;
  for (const auto& p : params) {
    int idx = InputIndex(p.name);
    if (idx < 0) continue;  // As in TVM: params folded out of the graph are ignored.
    written.push_back(idx);
    TVMArrayHandle dst = Input(idx);
    const std::vector<int64_t>& shape = p.array.shape;
    if (!SameDType(dst->dtype, p.array.dtype) || dst->ndim != static_cast<int>(shape.size()) ||
        !std::equal(shape.begin(), shape.end(), dst->shape)) {
      Throw("ValueError", "load_params: param '" + p.name + "' is " +
                              ShapeStr(shape.data(), static_cast<int>(shape.size())) + " " +
                              DTypeStr(p.array.dtype) + " but the graph expects " +
                              ShapeStr(dst->shape, dst->ndim) + " " + DTypeStr(dst->dtype));
    }
    writes.emplace_back(dst, &p);
  }
  // Some names may be folded out of the graph, but a blob none of whose names is an input
  // belongs to another model: ignoring it would leave every weight unset.
  if (!params.empty() && writes.empty()) {
    std::string names;
    for (size_t i = 0; i < params.size() && i < 3; ++i) {
      names += (i ? ", '" : "'") + params[i].name + "'";
    }
    if (params.size() > 3) names += ", ...";
    Throw("ValueError", "load_params: none of the " + std::to_string(params.size()) +
                            " params in the blob (" + names +
                            ") is an input of this graph; are they the params of another "
                            "model?");
  }
  for (const auto& [dst, p] : writes) {
    CheckCall(TVMArrayCopyFromBytes(dst, const_cast<char*>(p->array.data), p->array.nbytes));
  }
  for (int idx : written) MarkSet(idx);
  // As TVM: every name of the blob counts as a param for get_input_info from now on.
  for (const auto& p : params) param_names_.insert(p.name);
}

}  // namespace graph_executor
}  // namespace polyffi
