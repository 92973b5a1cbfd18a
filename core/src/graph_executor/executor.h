// The graph executor itself. One home for the graph executor's parts (graph_executor/*.cc): the
// graph JSON reader (graph_json.cc), the storage plan (storage_plan.cc), the executor (executor.cc,
// its params in executor_params.cc) and its function table (executor_module.cc); the factory
// (factory.cc) and the runtime.*Params globals (params.cc) sit beside them.
//
// Written only against the public C ABI (plus the header-only polyffi.hpp over it), like any
// other client of the runtime; polyffi.hpp keeps its classes in the inline namespace
// polyffi::cxx, so they never collide with the core's of the same names. The one piece from the
// core is the host's signal check (env_api.h: TVM's C ABI has no function for it), and the
// binary-format readers of formats/, which are free of the core's classes too.
//
// Semantics follow TVM's GraphExecutor (src/runtime/graph_executor): inputs are the graph's
// arg_nodes (parameters included), entries share memory by storage_id, load_params skips
// names that are not graph inputs, get_input returns the executor's own storage. One
// difference, asked for by polyffi's contract: get_output(i) returns a new array holding a
// copy (TVM returns its internal storage), so a later run() never changes an array already
// handed out. Two more, for inputs from untrusted files: run() refuses to start before every
// input has a value (set_input, load_params or get_input), where TVM would compute on whatever
// the memory held; and load_params refuses a blob none of whose names is an input of the graph
// (the params of another model). An executor is not thread-safe, as in TVM: one caller at a time.
//
// Everything that allocates (parsing, storage planning, kernel lookup, argument packing)
// happens once in the constructor; Run() only walks a prebuilt list of calls.
#ifndef POLYFFI_CORE_GRAPH_EXECUTOR_EXECUTOR_H_
#define POLYFFI_CORE_GRAPH_EXECUTOR_EXECUTOR_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graph_executor/common.h"
#include "polyffi/ndarray.h"

namespace polyffi {
namespace graph_executor {

// Arrays lent to the executor by set_input_zero_copy / set_output_zero_copy, one slot per entry,
// each held as a DLPack reference (released when replaced or when the executor goes). A raw
// DLTensor view cannot be held: its memory stays the caller's to keep alive, as in TVM.
inline int ReleaseExternal(DLManagedTensor* m) {
  TVMDLManagedTensorCallDeleter(m);
  return 0;
}
class ExternalRefs : public OwnedHandles<DLManagedTensor*, ReleaseExternal> {
 public:
  void Set(size_t i, DLManagedTensor* m) {
    std::swap(items[i], m);
    TVMDLManagedTensorCallDeleter(m);
  }
};

class GraphExecutor {
 public:
  GraphExecutor(const std::string& graph_json, void* lib, DLDevice device);

  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  int num_inputs() const { return static_cast<int>(graph_.input_nodes.size()); }
  int num_outputs() const { return static_cast<int>(graph_.outputs.size()); }

  // Index of the input (arg node) called name, or -1.
  int InputIndex(const std::string& name) const { return InputIndex(name.c_str()); }
  int InputIndex(const char* name) const {  // no string built: get_input(name) is per inference
    if (name == nullptr) return -1;
    for (size_t i = 0; i < graph_.input_nodes.size(); ++i) {
      if (graph_.nodes[graph_.input_nodes[i]].name == name) return static_cast<int>(i);
    }
    return -1;
  }

  // An input given as an index or a name, resolved to its index.
  int ResolveInput(const char* fn, ArgValue key) const;

  void SetInput(int index, ArgValue array) {
    const Node& node = graph_.nodes[graph_.input_nodes[index]];
    DLTensor* src = TensorArg("set_input", array);
    TVMArrayHandle dst = EntryArray(graph_.input_nodes[index], 0);
    if (CopyFlat(src, dst, src)) return MarkSet(index);
    CheckMatch([&] { return "set_input: input '" + node.name + "'"; }, dst, src);
    CopyChecked(src, dst);
    MarkSet(index);
  }

  TVMArrayHandle Input(int index) const { return EntryArray(graph_.input_nodes[index], 0); }

  // get_input hands out the input's own storage, which TVM callers fill in place
  // (get_input(i).copyfrom(x)), so handing it out counts as setting it.
  TVMArrayHandle InputForCaller(int index) {
    MarkSet(index);
    return Input(index);
  }

  TVMArrayHandle Output(int64_t index) const {
    const Entry& e = graph_.outputs[CheckIndex("get_output", "output", index, num_outputs())];
    return EntryArray(e.node_id, e.index);
  }

  // A new array holding a copy of output index (on dev, or the executor's device); owned by the
  // caller.
  TVMArrayHandle CopyOutput(int64_t index) const { return CopyOutput(index, device_); }
  TVMArrayHandle CopyOutput(int64_t index, DLDevice dev) const;

  void CopyOutputTo(int64_t index, ArgValue out_arg) const {
    TVMArrayHandle src = Output(index);
    DLTensor* out = TensorArg("get_output", out_arg);
    if (CopyFlat(src, out, out)) return;
    CheckMatch([&] { return "get_output: output " + std::to_string(index); }, src, out);
    CopyChecked(src, out);
  }

  // Index of the output whose node is called name (the last one, as TVM), or -1.
  int OutputIndex(const std::string& name) const {
    int found = -1;
    for (size_t i = 0; i < graph_.outputs.size(); ++i) {
      if (graph_.nodes[graph_.outputs[i].node_id].name == name) found = static_cast<int>(i);
    }
    return found;
  }

  // An output given as an index, a node name, or TVM's "name:index" key, resolved to its index.
  int ResolveOutput(const char* fn, ArgValue key) const;

  // The shape and dtype of inputs (those load_params has not named: what the caller still has
  // to set) or of outputs, as TVM's get_input_info / get_output_info: per name, the entry's
  // shape and the graph's dtype string.
  struct Info {
    std::string name;
    const std::vector<int64_t>* shape;
    const std::string* dtype;
  };
  std::vector<Info> InputInfo() const {
    std::vector<Info> out;
    for (uint32_t nid : graph_.input_nodes) {
      const std::string& name = graph_.nodes[nid].name;
      if (param_names_.count(name) != 0) continue;
      uint32_t eid = EntryId(nid, 0);
      out.push_back(Info{name, &graph_.shapes[eid], &graph_.dtype_strs[eid]});
    }
    return out;
  }
  std::vector<Info> OutputInfo() const {
    std::vector<Info> out;
    for (const Entry& e : graph_.outputs) {
      uint32_t eid = EntryId(e.node_id, e.index);
      out.push_back(
          Info{graph_.nodes[e.node_id].name, &graph_.shapes[eid], &graph_.dtype_strs[eid]});
    }
    return out;
  }

  // Zero copy: the input (and every entry sharing its storage, such as a reshape of it) reads
  // the caller's memory from now on; get_input returns an array over it, set_input writes it.
  void SetInputZeroCopy(int index, ArgValue array);

  // Zero copy: the kernel producing the output writes the caller's memory from now on.
  void SetOutputZeroCopy(int index, ArgValue array);

  // share_params: the inputs named in the params blob use the other executor's arrays (no
  // copy); TVM reads only the names of the blob. Everything is checked before anything changes.
  void ShareParams(void* other, const char* data, size_t size);

  void Run();

  // TVM's params blob: every array is parsed and checked before any input is written, so a
  // bad blob leaves the executor unchanged.
  void LoadParams(const char* data, size_t size);

 private:
  struct Op {
    TVMFunctionHandle func = nullptr;
    std::vector<TVMValue> values;
    std::vector<int> codes;
  };

  void MarkSet(int index) {
    if (all_inputs_set_ || input_set_[index]) return;
    input_set_[index] = true;
    all_inputs_set_ = std::find(input_set_.begin(), input_set_.end(), false) == input_set_.end();
  }

  // run() before every input has a value would compute on uninitialised memory.
  void CheckInputsSet() const;

  uint32_t EntryId(uint32_t nid, uint32_t index) const { return graph_.node_row_ptr[nid] + index; }
  TVMArrayHandle EntryArray(uint32_t nid, uint32_t index) const {
    return entries_.items[EntryId(nid, index)];
  }

  // Point an entry (its array, and the flattened copies kernels receive) at other memory.
  void PointEntryAt(uint32_t eid, void* data) {
    DLTensor* t = entries_.items[eid];
    t->data = data;
    t->byte_offset = 0;
    for (DLTensor* f : entry_flat_[eid]) {
      f->data = data;
      f->byte_offset = 0;
    }
  }

  // A reference that keeps a lent NDArray alive; NULL for a raw DLTensor view.
  static DLManagedTensor* HoldExternal(ArgValue array) {
    if (array.type_code() != kTVMNDArrayHandle) return nullptr;
    DLManagedTensor* m = nullptr;
    CheckCall(TVMArrayToDLPack(static_cast<TVMArrayHandle>(array.raw().v_handle), &m));
    return m;
  }

  // TVM's checks of lent memory (CheckExternalDLTensor), plus dtype and compactness: the same
  // shape, dtype and device as the entry, compact, 64-byte aligned. Returns its first byte.
  template <typename What>
  static void* CheckExternal(const What& what, const DLTensor* internal, const DLTensor* ext) {
    CheckMatch(what, internal, ext);
    if (DeviceTypeOf(ext->device) != DeviceTypeOf(internal->device) ||
        ext->device.device_id != internal->device.device_id) {
      Throw("ValueError", what() + ": the array is on device (" +
                              std::to_string(DeviceTypeOf(ext->device)) + ", " +
                              std::to_string(ext->device.device_id) + "), the executor's is (" +
                              std::to_string(DeviceTypeOf(internal->device)) + ", " +
                              std::to_string(internal->device.device_id) + ")");
    }
    if (!IsCompact(*ext)) Throw("ValueError", what() + ": the array is not contiguous");
    char* data = static_cast<char*>(ext->data) + ext->byte_offset;
    if (ext->data == nullptr || reinterpret_cast<uintptr_t>(data) % 64 != 0) {
      Throw("ValueError", what() + ": the array's data must be 64-byte aligned (and not NULL)");
    }
    return data;
  }

  static DLTensor* TensorArg(const char* fn, ArgValue a) {
    if (a.type_code() != kTVMNDArrayHandle && a.type_code() != kTVMDLTensorHandle) {
      Throw("TypeError",
            std::string(fn) + ": expected an array but got " + TypeCodeName(a.type_code()));
    }
    auto* t = static_cast<DLTensor*>(a.raw().v_handle);
    if (t == nullptr) Throw("ValueError", std::string(fn) + ": array is NULL");
    return t;
  }

  // Copy between tensors CheckMatch already found equal in shape and dtype: a plain memcpy
  // when both are compact (the per-inference case), else the runtime's checked copy, which
  // gathers a strided source (a transposed image, as TVM's frontends copy it) and reports a
  // strided destination clearly.
  static void CopyChecked(const DLTensor* src, DLTensor* dst) {
    if (IsCompact(*src) && IsCompact(*dst)) {
      size_t n = (static_cast<size_t>(src->dtype.bits) * src->dtype.lanes + 7) / 8;
      for (int i = 0; i < src->ndim; ++i) n *= static_cast<size_t>(src->shape[i]);
      if (n != 0) {
        std::memcpy(static_cast<char*>(dst->data) + dst->byte_offset,
                    static_cast<const char*>(src->data) + src->byte_offset, n);
      }
      return;
    }
    CheckCall(TVMArrayCopyFromTo(const_cast<DLTensor*>(src), dst, nullptr));
  }

  // The caller's flat host buffer (`given`: src or dst) for a tensor of another shape: when it is
  // 1-D, both are compact CPU tensors of one dtype and one element count, copy the bytes as they
  // are and return true (bindings pass a TypedArray / slice / Buffer without shaping it). False
  // when the shapes already match or the rule does not apply (CheckMatch then reports it).
  static bool CopyFlat(const DLTensor* src, DLTensor* dst, const DLTensor* given) {
    if (given->ndim != 1 || src->ndim == dst->ndim || !SameDType(src->dtype, dst->dtype) ||
        !IsCompact(*src) || !IsCompact(*dst) || DeviceTypeOf(src->device) != kDLCPU ||
        DeviceTypeOf(dst->device) != kDLCPU) {
      return false;
    }
    int64_t n_src = 1, n_dst = 1;
    for (int i = 0; i < src->ndim; ++i) n_src *= src->shape[i];
    for (int i = 0; i < dst->ndim; ++i) n_dst *= dst->shape[i];
    if (n_src != n_dst || (n_src != 0 && (src->data == nullptr || dst->data == nullptr))) {
      return false;
    }
    size_t n = (static_cast<size_t>(src->dtype.bits) * src->dtype.lanes + 7) / 8 *
               static_cast<size_t>(n_src);
    if (n != 0) {
      std::memcpy(static_cast<char*>(dst->data) + dst->byte_offset,
                  static_cast<const char*>(src->data) + src->byte_offset, n);
    }
    return true;
  }

  static bool IsCompact(const DLTensor& t) {
    if (t.strides == nullptr) return true;
    int64_t expected = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expected) return false;
      expected *= t.shape[i];
    }
    return true;
  }

  // `what` builds the message's subject only on failure: this runs on every inference.
  template <typename What>
  static void CheckMatch(const What& what, const DLTensor* want, const DLTensor* got) {
    bool same = SameDType(want->dtype, got->dtype) && want->ndim == got->ndim &&
                std::equal(want->shape, want->shape + want->ndim, got->shape);
    if (!same) {
      Throw("ValueError", what() + " expects " + ShapeStr(want->shape, want->ndim) + " " +
                              DTypeStr(want->dtype) + " but got " +
                              ShapeStr(got->shape, got->ndim) + " " + DTypeStr(got->dtype));
    }
  }

  // Look every kernel up once and pack its arguments once: run() does no lookups, no allocation.
  void SetupOps();

  ObjectRef lib_;
  DLDevice device_;
  Graph graph_;
  std::vector<bool> input_set_;  // per input: set_input, load_params or get_input reached it
  bool all_inputs_set_ = false;
  std::unordered_set<std::string> param_names_;  // every name load_params has seen
  OwnedHandles<TVMArrayHandle, TVMArrayFree> storage_;
  OwnedHandles<TVMArrayHandle, TVMArrayFree> entries_;
  ExternalRefs external_;                                   // per entry: arrays lent by zero copy
  std::vector<std::vector<DLTensor*>> entry_flat_;          // per entry: its flattened copies
  OwnedHandles<TVMFunctionHandle, TVMFuncFree> functions_;  // the kernels of ops_
  std::vector<DLTensor> flat_tensors_;
  std::vector<int64_t> flat_shapes_;
  std::vector<Op> ops_;
};

}  // namespace graph_executor
}  // namespace polyffi
#endif  // POLYFFI_CORE_GRAPH_EXECUTOR_EXECUTOR_H_
