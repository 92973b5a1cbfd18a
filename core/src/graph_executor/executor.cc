// The graph executor: inputs and outputs, zero copy, the run loop and its kernel table.
#include "graph_executor/executor.h"

#include "polyffi/async.h"
#include "polyffi/env_api.h"

namespace polyffi {
namespace graph_executor {

GraphExecutor::GraphExecutor(const std::string& graph_json, void* lib, DLDevice device)
    : lib_(ObjectRef::Borrow(lib)), device_(device), graph_(ParseGraphJson(graph_json)) {
  input_set_.assign(graph_.input_nodes.size(), false);
  all_inputs_set_ = graph_.input_nodes.empty();
  PlanStorage(graph_, device_, &storage_, &entries_);
  external_.items.assign(graph_.storage_id.size(), nullptr);
  SetupOps();
}

int GraphExecutor::ResolveInput(const char* fn, ArgValue key) const {
  if (IsIndexKey(key)) return CheckIndex(fn, "input", key.raw().v_int64, num_inputs());
  if (key.type_code() == kTVMStr && key.raw().v_str != nullptr) {  // the common case: no copy
    for (size_t i = 0; i < graph_.input_nodes.size(); ++i) {
      if (graph_.nodes[graph_.input_nodes[i]].name == key.raw().v_str) return static_cast<int>(i);
    }
  }
  std::string name = KeyName(fn, "input", key);
  int i = InputIndex(name);
  if (i < 0) Throw("KeyError", std::string(fn) + ": the graph has no input named '" + name + "'");
  return i;
}

TVMArrayHandle GraphExecutor::CopyOutput(int64_t index, DLDevice dev) const {
  TVMArrayHandle src = Output(index);
  TVMArrayHandle out = nullptr;
  CheckCall(TVMArrayAlloc(src->shape, src->ndim, src->dtype.code, src->dtype.bits, src->dtype.lanes,
                          dev.device_type, dev.device_id, &out));
  int rc = TVMArrayCopyFromTo(src, out, nullptr);
  if (rc != 0) {
    Error err = Error::FromLastError();
    TVMArrayFree(out);
    throw err;
  }
  return out;
}

int GraphExecutor::ResolveOutput(const char* fn, ArgValue key) const {
  if (IsIndexKey(key)) return CheckIndex(fn, "output", key.raw().v_int64, num_outputs());
  std::string name = KeyName(fn, "output", key);
  for (size_t i = 0; i < graph_.outputs.size(); ++i) {
    if (graph_.nodes[graph_.outputs[i].node_id].name + ":" + std::to_string(i) == name) {
      return static_cast<int>(i);
    }
  }
  int i = OutputIndex(name);
  if (i < 0) {
    Throw("KeyError", std::string(fn) + ": the graph has no output named '" + name + "'");
  }
  return i;
}

void GraphExecutor::SetInputZeroCopy(int index, ArgValue array) {
  const Node& node = graph_.nodes[graph_.input_nodes[index]];
  uint32_t eid = EntryId(graph_.input_nodes[index], 0);
  DLTensor* ext = TensorArg("set_input_zero_copy", array);
  void* data = CheckExternal([&] { return "set_input_zero_copy: input '" + node.name + "'"; },
                             entries_.items[eid], ext);
  external_.Set(eid, HoldExternal(array));
  for (size_t e = 0; e < graph_.storage_id.size(); ++e) {
    if (graph_.storage_id[e] == graph_.storage_id[eid])
      PointEntryAt(static_cast<uint32_t>(e), data);
  }
  MarkSet(index);
}

void GraphExecutor::SetOutputZeroCopy(int index, ArgValue array) {
  const Entry& out = graph_.outputs[index];
  uint32_t eid = EntryId(out.node_id, out.index);
  DLTensor* ext = TensorArg("set_output_zero_copy", array);
  void* data =
      CheckExternal([&] { return "set_output_zero_copy: output " + std::to_string(index); },
                    entries_.items[eid], ext);
  external_.Set(eid, HoldExternal(array));
  PointEntryAt(eid, data);
  // An output produced by a "__nop" (a reshape sharing its input's memory): the node that
  // writes that input must write the caller's memory, as in TVM.
  const Node& node = graph_.nodes[out.node_id];
  if (node.op == "tvm_op" && node.func_name == "__nop" && !node.inputs.empty()) {
    PointEntryAt(EntryId(node.inputs[0].node_id, node.inputs[0].index), data);
  }
}

void GraphExecutor::Run() {
  if (!all_inputs_set_) CheckInputsSet();
  // A long run honours the host's Ctrl-C: its signal check, every 10 ms, may stop it with -2.
  env::PeriodicSignalCheck signals;
  // An async call (polyffi/async.h) that was cancelled stops between nodes too.
  for (Op& op : ops_) {
    Check(signals.Tick());
    Check(async::CheckCancelled());
    if (op.func == nullptr) {
      // "__copy" (TVM's device copy node): inputs[0] -> outputs[0]. "__nop" has no entry.
      CheckCall(TVMArrayCopyFromTo(static_cast<DLTensor*>(op.values[0].v_handle),
                                   static_cast<DLTensor*>(op.values[1].v_handle), nullptr));
      continue;
    }
    TVMValue rv;
    int rc = kTVMNullptr;
    Check(TVMFuncCall(op.func, op.values.data(), op.codes.data(),
                      static_cast<int>(op.values.size()), &rv, &rc));
    // Kernels return nothing; should one return an object anyway, do not leak it.
    if (rc == kTVMNDArrayHandle) {
      TVMArrayFree(static_cast<TVMArrayHandle>(rv.v_handle));
    } else if (Any::IsObjectCode(rc)) {
      TVMObjectFree(rv.v_handle);
    }
  }
}

void GraphExecutor::CheckInputsSet() const {
  std::string missing;
  int count = 0;
  for (size_t i = 0; i < input_set_.size(); ++i) {
    if (input_set_[i]) continue;
    if (count++ < 5)
      missing += (missing.empty() ? "'" : ", '") + graph_.nodes[graph_.input_nodes[i]].name + "'";
  }
  if (count > 5) missing += ", ...";
  Throw("ValueError", "run: " + std::to_string(count) + " of the graph's " +
                          std::to_string(input_set_.size()) + " inputs have no value yet (" +
                          missing + "); set them with set_input or load_params first");
}

void GraphExecutor::SetupOps() {
  size_t num_flat = 0;
  for (const Node& n : graph_.nodes) {
    if (n.op == "tvm_op" && n.flatten_data) num_flat += n.inputs.size() + n.num_outputs;
  }
  // Sized once so the pointers packed below stay valid.
  flat_tensors_.resize(num_flat);
  flat_shapes_.resize(num_flat);
  entry_flat_.assign(entries_.items.size(), {});
  size_t flat_next = 0;
  for (uint32_t nid = 0; nid < graph_.nodes.size(); ++nid) {
    const Node& n = graph_.nodes[nid];
    if (n.op != "tvm_op" || n.func_name == "__nop") continue;
    Op op;
    std::vector<uint32_t> eids;
    for (const Entry& e : n.inputs) eids.push_back(EntryId(e.node_id, e.index));
    for (uint32_t k = 0; k < n.num_outputs; ++k) eids.push_back(EntryId(nid, k));
    std::vector<DLTensor*> args;
    for (uint32_t eid : eids) args.push_back(entries_.items[eid]);
    if (n.flatten_data) {
      for (size_t a = 0; a < args.size(); ++a) {
        DLTensor*& t = args[a];
        DLTensor& flat = flat_tensors_[flat_next];
        entry_flat_[eids[a]].push_back(&flat);
        flat = *t;
        flat_shapes_[flat_next] = 1;
        for (int d = 0; d < t->ndim; ++d) flat_shapes_[flat_next] *= t->shape[d];
        flat.ndim = 1;
        flat.shape = &flat_shapes_[flat_next];
        t = &flat;
        ++flat_next;
      }
    }
    for (DLTensor* t : args) {
      TVMValue v;
      v.v_handle = t;
      op.values.push_back(v);
      op.codes.push_back(kTVMDLTensorHandle);
    }
    if (n.func_name == "__copy") {
      if (n.inputs.size() != 1 || n.num_outputs != 1) {
        Throw("ValueError", "graph JSON: __copy node '" + n.name +
                                "' must map 1 input to 1 "
                                "output");
      }
    } else {
      CheckCall(TVMModGetFunction(lib_.get(), n.func_name.c_str(), 1, &op.func));
      if (op.func != nullptr) functions_.items.push_back(op.func);
      if (op.func == nullptr) {
        Throw("KeyError", "graph executor: function '" + n.func_name + "' of node '" + n.name +
                              "' is not in the library module");
      }
    }
    ops_.push_back(std::move(op));
  }
}

}  // namespace graph_executor
}  // namespace polyffi
