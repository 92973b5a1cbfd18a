// TVM-compatible graph executor: runs a graph JSON (TVM's format) with kernels from a module.
//
// Written only against the public C ABI (plus the header-only polyffi.hpp over it), like any
// other client of the runtime: it owns arrays through TVMArray*, calls kernels through
// TVMFuncCall and builds its result module with the core global runtime.ModuleFromFunctions.
// Everything that allocates (parsing, storage planning, kernel lookup, argument packing)
// happens once in create(); run() only walks a prebuilt list of calls.
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
#include <polyffi/c_runtime_api.h>

// Written against the public C ABI and its C++ layer only (polyffi.hpp keeps its classes in
// the inline namespace polyffi::cxx, so they never collide with the core's of the same names).
#include <polyffi/dtype_string.h>

// The one piece from the core: the host's signal check (TVM's C ABI has no function for it).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <polyffi/polyffi.hpp>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "polyffi/env_api.h"

namespace polyffi {
namespace {

using Json = nlohmann::json;

[[noreturn]] void Throw(const char* kind, const std::string& msg) { throw Error(kind, msg); }

std::string ShapeStr(const int64_t* shape, int ndim) {
  std::ostringstream os;
  os << "[";
  for (int i = 0; i < ndim; ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

// For messages: a dtype with no string form reads "<dtype CODE:BITSxLANES>".
std::string DTypeStr(DLDataType t) {
  char buf[32];
  PolyffiDataTypeToString(t, buf, sizeof(buf));
  return buf;
}

// TVM's graph JSON spells dtypes the shared way, except that "bool" there means classic TVM's
// uint1 (stored in one byte), which is what compiled kernels expect.
// Only the storage dtypes the runtime allocates arrays of: anything else would be accepted here
// and then fail in get_output (int4, float8, ...).
DLDataType ParseDType(const std::string& s) {
  DLDataType t;
  bool ok = PolyffiDataTypeFromString(s.c_str(), &t) == 0;
  if (ok && t.code == kDLBool) t = DLDataType{kDLUInt, 1, t.lanes};
  bool whole = t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
  ok = ok &&
       (((t.code == kDLInt || t.code == kDLUInt) && whole) || (t.code == kDLUInt && t.bits == 1) ||
        (t.code == kDLFloat && whole && t.bits != 8) || (t.code == kDLBfloat && t.bits == 16));
  if (!ok) Throw("ValueError", "graph JSON: unsupported dtype '" + s + "'");
  return t;
}

bool SameDType(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

// Byte size of a dense array; shapes come from untrusted JSON and blobs, so overflow is an error.
// Each element takes whole bytes (a bool, TVM's uint1, takes one), as in TVM's GetDataSize and
// the runtime's own arrays: sizing by bits would give a [100] bool 13 bytes of storage for an
// array the kernels and copies treat as 100 bytes.
int64_t NumBytes(const std::vector<int64_t>& shape, DLDataType t) {
  int64_t bytes = (static_cast<int64_t>(t.bits) * t.lanes + 7) / 8;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) {
      Throw("ValueError", "array shape " + ShapeStr(shape.data(), static_cast<int>(shape.size())) +
                              " is negative or too large");
    }
  }
  return bytes;
}

// A JSON value for an error message, cut short: the value may be a whole corrupt graph.
std::string Brief(const Json& j) {
  std::string s = j.dump();
  return s.size() <= 64 ? s : s.substr(0, 61) + "...";
}

// An integer of the graph, checked: nlohmann's get<int64_t>() casts whatever number it holds
// (1e23 into int64_t is undefined behaviour, -1 into uint32_t wraps), so every integer field
// is read here, as an integer in [lo, hi] or an error naming the field.
int64_t JsonInt(const Json& j, const std::string& what, int64_t lo, int64_t hi) {
  bool ok = false;
  int64_t v = 0;
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    ok = u <= static_cast<uint64_t>(hi);
    v = ok ? static_cast<int64_t>(u) : 0;
  } else if (j.is_number_integer()) {
    v = j.get<int64_t>();
    ok = true;
  } else {
    Throw("ValueError", "graph JSON: " + what + " must be an integer, got " + Brief(j));
  }
  if (!ok || v < lo || v > hi) {
    Throw("ValueError", "graph JSON: " + what + " is " + Brief(j) + ", out of range [" +
                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

template <typename T>
std::vector<T> JsonIntList(const Json& j, const std::string& what, const char* item, int64_t lo,
                           int64_t hi) {
  if (!j.is_array()) Throw("ValueError", "graph JSON: " + what + " must be a list");
  std::vector<T> out;
  out.reserve(j.size());
  for (const Json& x : j) {
    out.push_back(
        static_cast<T>(JsonInt(x, what + " " + item + " " + std::to_string(out.size()), lo, hi)));
  }
  return out;
}

constexpr int64_t kMaxU32 = 0xFFFFFFFFLL;
constexpr int64_t kMaxI64 = INT64_MAX;

// TVM writes node attrs as strings ("1"); hand-written graphs often use numbers. Accept both.
int64_t AttrInt(const Json& attrs, const char* key, const std::string& node, bool required,
                int64_t dflt) {
  auto it = attrs.find(key);
  if (it == attrs.end()) {
    if (required) Throw("ValueError", "graph JSON: node '" + node + "' lacks attr " + key);
    return dflt;
  }
  const std::string what = "node '" + node + "' attr " + key;
  if (it->is_number()) return JsonInt(*it, what, 0, kMaxI64);
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (!s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos) {
      return std::stoll(s);  // at most 18 digits: always in range
    }
  }
  Throw("ValueError", "graph JSON: " + what + " must be a non-negative integer (at most 18 " +
                          "digits), got " + Brief(*it));
}

// The value of a graph-level attr, which TVM writes as ["list_int", [...]] and the like.
const Json& GraphAttr(const Json& attrs, const char* key, const char* type) {
  auto it = attrs.find(key);
  if (it == attrs.end()) Throw("ValueError", std::string("graph JSON: attrs lacks ") + key);
  if (!it->is_array() || it->size() != 2 || !(*it)[0].is_string() || (*it)[0] != type ||
      !(*it)[1].is_array()) {
    Throw("ValueError",
          std::string("graph JSON: attrs.") + key + " must be [\"" + type + "\", [...]]");
  }
  return (*it)[1];
}

struct Entry {
  uint32_t node_id;
  uint32_t index;
};

struct Node {
  std::string op;
  std::string name;
  std::string func_name;
  std::vector<Entry> inputs;
  uint32_t num_outputs = 1;
  bool flatten_data = false;
};

// Reads TVM's little-endian binary formats with bounds checks; every failure names the offset.
class Reader {
 public:
  Reader(const char* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T Read(const char* what) {
    T v;
    std::memcpy(&v, Take(sizeof(T), what), sizeof(T));
    return v;
  }
  const char* Take(size_t n, const char* what) {
    if (n > size_ - pos_) {
      std::ostringstream os;
      os << "load_params: params blob truncated reading " << what << " at offset " << pos_
         << " (need " << n << " bytes, " << size_ - pos_ << " left)";
      Throw("ValueError", os.str());
    }
    const char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  size_t remaining() const { return size_ - pos_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

constexpr uint64_t kParamsMagic = 0xF7E58D4F05049CB7ULL;
constexpr uint64_t kNDArrayMagic = 0xDD5E40F096B4A13FULL;

struct ParamArray {
  std::string name;
  DLDataType dtype;
  std::vector<int64_t> shape;
  const char* data;
  size_t nbytes;
};

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

// Owned runtime handles, released by the destructor. Held as members so that they are released
// also when the executor's constructor throws halfway (an op missing from the library, ...).
template <typename H, int (*Free)(H)>
class OwnedHandles {
 public:
  OwnedHandles() = default;
  OwnedHandles(const OwnedHandles&) = delete;
  OwnedHandles& operator=(const OwnedHandles&) = delete;
  ~OwnedHandles() {
    for (H h : items) Free(h);
  }
  std::vector<H> items;
};

// Arrays lent to the executor by set_input_zero_copy / set_output_zero_copy, one slot per entry,
// each held as a DLPack reference (released when replaced or when the executor goes). A raw
// DLTensor view cannot be held: its memory stays the caller's to keep alive, as in TVM.
class ExternalRefs {
 public:
  ExternalRefs() = default;
  ExternalRefs(const ExternalRefs&) = delete;
  ExternalRefs& operator=(const ExternalRefs&) = delete;
  ~ExternalRefs() {
    for (DLManagedTensor* m : items) TVMDLManagedTensorCallDeleter(m);
  }
  void Set(size_t i, DLManagedTensor* m) {
    std::swap(items[i], m);
    TVMDLManagedTensorCallDeleter(m);
  }
  std::vector<DLManagedTensor*> items;
};

// Turns a C API return code into an exception: -2 (the host has an error pending, such as the
// KeyboardInterrupt of a signal check) travels on as -2.
void Check(int rc) {
  if (rc == -2) throw HostErrorPending();
  if (rc != 0) throw Error::FromLastError();
}

class GraphExecutor {
 public:
  GraphExecutor(const std::string& graph_json, void* lib, DLDevice device)
      : lib_(ObjectRef::Borrow(lib)), device_(device) {
    Parse(graph_json);
    PlanStorage();
    SetupOps();
  }

  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  int num_inputs() const { return static_cast<int>(input_nodes_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }

  // Index of the input (arg node) called name, or -1.
  int InputIndex(const std::string& name) const { return InputIndex(name.c_str()); }
  int InputIndex(const char* name) const {  // no string built: get_input(name) is per inference
    if (name == nullptr) return -1;
    for (size_t i = 0; i < input_nodes_.size(); ++i) {
      if (nodes_[input_nodes_[i]].name == name) return static_cast<int>(i);
    }
    return -1;
  }

  // An input given as an index or a name, resolved to its index.
  int ResolveInput(const char* fn, ArgValue key) const {
    if (key.type_code() == kTVMArgInt || key.type_code() == kDLUInt) {
      int64_t i = key.raw().v_int64;
      if (i < 0 || i >= num_inputs()) {
        Throw("IndexError", std::string(fn) + ": input index " + std::to_string(i) +
                                " out of range [0, " + std::to_string(num_inputs()) + ")");
      }
      return static_cast<int>(i);
    }
    if (key.type_code() == kTVMStr && key.raw().v_str != nullptr) {  // the common case: no copy
      for (size_t i = 0; i < input_nodes_.size(); ++i) {
        if (nodes_[input_nodes_[i]].name == key.raw().v_str) return static_cast<int>(i);
      }
    }
    std::string name;
    try {
      name = key.as<std::string>();
    } catch (const Error&) {
      Throw("TypeError", std::string(fn) + ": input must be an int index or a str name, got " +
                             TypeCodeName(key.type_code()));
    }
    int i = InputIndex(name);
    if (i < 0) Throw("KeyError", std::string(fn) + ": the graph has no input named '" + name + "'");
    return i;
  }

  void SetInput(int index, ArgValue array) {
    const Node& node = nodes_[input_nodes_[index]];
    DLTensor* src = TensorArg("set_input", array);
    TVMArrayHandle dst = EntryArray(input_nodes_[index], 0);
    CheckMatch([&] { return "set_input: input '" + node.name + "'"; }, dst, src);
    CopyChecked(src, dst);
    MarkSet(index);
  }

  TVMArrayHandle Input(int index) const { return EntryArray(input_nodes_[index], 0); }

  // get_input hands out the input's own storage, which TVM callers fill in place
  // (get_input(i).copyfrom(x)), so handing it out counts as setting it.
  TVMArrayHandle InputForCaller(int index) {
    MarkSet(index);
    return Input(index);
  }

  TVMArrayHandle Output(int64_t index) const {
    if (index < 0 || index >= num_outputs()) {
      Throw("IndexError", "get_output: output index " + std::to_string(index) +
                              " out of range [0, " + std::to_string(num_outputs()) + ")");
    }
    const Entry& e = outputs_[index];
    return EntryArray(e.node_id, e.index);
  }

  // A new array holding a copy of output index (on dev, or the executor's device); owned by the
  // caller.
  TVMArrayHandle CopyOutput(int64_t index) const { return CopyOutput(index, device_); }
  TVMArrayHandle CopyOutput(int64_t index, DLDevice dev) const {
    TVMArrayHandle src = Output(index);
    TVMArrayHandle out = nullptr;
    CheckCall(TVMArrayAlloc(src->shape, src->ndim, src->dtype.code, src->dtype.bits,
                            src->dtype.lanes, dev.device_type, dev.device_id, &out));
    int rc = TVMArrayCopyFromTo(src, out, nullptr);
    if (rc != 0) {
      Error err = Error::FromLastError();
      TVMArrayFree(out);
      throw err;
    }
    return out;
  }

  void CopyOutputTo(int64_t index, ArgValue out_arg) const {
    TVMArrayHandle src = Output(index);
    DLTensor* out = TensorArg("get_output", out_arg);
    CheckMatch([&] { return "get_output: output " + std::to_string(index); }, src, out);
    CopyChecked(src, out);
  }

  // Index of the output whose node is called name (the last one, as TVM), or -1.
  int OutputIndex(const std::string& name) const {
    int found = -1;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (nodes_[outputs_[i].node_id].name == name) found = static_cast<int>(i);
    }
    return found;
  }

  // An output given as an index, a node name, or TVM's "name:index" key, resolved to its index.
  int ResolveOutput(const char* fn, ArgValue key) const {
    if (key.type_code() == kTVMArgInt || key.type_code() == kDLUInt) {
      int64_t i = key.raw().v_int64;
      if (i < 0 || i >= num_outputs()) {
        Throw("IndexError", std::string(fn) + ": output index " + std::to_string(i) +
                                " out of range [0, " + std::to_string(num_outputs()) + ")");
      }
      return static_cast<int>(i);
    }
    std::string name;
    try {
      name = key.as<std::string>();
    } catch (const Error&) {
      Throw("TypeError", std::string(fn) + ": output must be an int index or a str name, got " +
                             TypeCodeName(key.type_code()));
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (nodes_[outputs_[i].node_id].name + ":" + std::to_string(i) == name) {
        return static_cast<int>(i);
      }
    }
    int i = OutputIndex(name);
    if (i < 0) {
      Throw("KeyError", std::string(fn) + ": the graph has no output named '" + name + "'");
    }
    return i;
  }

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
    for (uint32_t nid : input_nodes_) {
      const std::string& name = nodes_[nid].name;
      if (param_names_.count(name) != 0) continue;
      uint32_t eid = EntryId(nid, 0);
      out.push_back(Info{name, &shapes_[eid], &dtype_strs_[eid]});
    }
    return out;
  }
  std::vector<Info> OutputInfo() const {
    std::vector<Info> out;
    for (const Entry& e : outputs_) {
      uint32_t eid = EntryId(e.node_id, e.index);
      out.push_back(Info{nodes_[e.node_id].name, &shapes_[eid], &dtype_strs_[eid]});
    }
    return out;
  }

  // Zero copy: the input (and every entry sharing its storage, such as a reshape of it) reads
  // the caller's memory from now on; get_input returns an array over it, set_input writes it.
  void SetInputZeroCopy(int index, ArgValue array) {
    const Node& node = nodes_[input_nodes_[index]];
    uint32_t eid = EntryId(input_nodes_[index], 0);
    DLTensor* ext = TensorArg("set_input_zero_copy", array);
    void* data = CheckExternal([&] { return "set_input_zero_copy: input '" + node.name + "'"; },
                               entries_.items[eid], ext);
    external_.Set(eid, HoldExternal(array));
    for (size_t e = 0; e < storage_id_.size(); ++e) {
      if (storage_id_[e] == storage_id_[eid]) PointEntryAt(static_cast<uint32_t>(e), data);
    }
    MarkSet(index);
  }

  // Zero copy: the kernel producing the output writes the caller's memory from now on.
  void SetOutputZeroCopy(int index, ArgValue array) {
    const Entry& out = outputs_[index];
    uint32_t eid = EntryId(out.node_id, out.index);
    DLTensor* ext = TensorArg("set_output_zero_copy", array);
    void* data =
        CheckExternal([&] { return "set_output_zero_copy: output " + std::to_string(index); },
                      entries_.items[eid], ext);
    external_.Set(eid, HoldExternal(array));
    PointEntryAt(eid, data);
    // An output produced by a "__nop" (a reshape sharing its input's memory): the node that
    // writes that input must write the caller's memory, as in TVM.
    const Node& node = nodes_[out.node_id];
    if (node.op == "tvm_op" && node.func_name == "__nop" && !node.inputs.empty()) {
      PointEntryAt(EntryId(node.inputs[0].node_id, node.inputs[0].index), data);
    }
  }

  // share_params: the inputs named in the params blob use the other executor's arrays (no
  // copy); TVM reads only the names of the blob. Everything is checked before anything changes.
  void ShareParams(void* other, const char* data, size_t size) {
    Reader r(data, size);
    uint64_t magic = r.Read<uint64_t>("header magic");
    if (magic != kParamsMagic) Throw("ValueError", "share_params: not a TVM params blob");
    r.Read<uint64_t>("header reserved");
    uint64_t num_names = r.Read<uint64_t>("name count");
    if (num_names > r.remaining() / 8) {
      Throw("ValueError", "share_params: params blob truncated: " + std::to_string(num_names) +
                              " names announced in " + std::to_string(r.remaining()) + " bytes");
    }
    std::vector<std::string> names(num_names);
    for (auto& n : names) {
      uint64_t len = r.Read<uint64_t>("name length");
      n.assign(r.Take(len, "name"), len);
    }
    if (r.Read<uint64_t>("array count") != num_names) {
      Throw("ValueError", "share_params: the params blob's name and array counts differ");
    }
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
      uint32_t eid = EntryId(input_nodes_[idx], 0);
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

  void Run() {
    if (!all_inputs_set_) CheckInputsSet();
    // A long run honours the host's Ctrl-C: its signal check, every 10 ms, may stop it with -2.
    env::PeriodicSignalCheck signals;
    for (Op& op : ops_) {
      Check(signals.Tick());
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

  // TVM's params blob: every array is parsed and checked before any input is written, so a
  // bad blob leaves the executor unchanged.
  void LoadParams(const char* data, size_t size) {
    Reader r(data, size);
    uint64_t magic = r.Read<uint64_t>("header magic");
    if (magic != kParamsMagic) {
      std::ostringstream os;
      os << "load_params: not a TVM params blob: magic 0x" << std::hex << magic << ", expected 0x"
         << kParamsMagic;
      Throw("ValueError", os.str());
    }
    r.Read<uint64_t>("header reserved");
    uint64_t num_names = r.Read<uint64_t>("name count");
    // Each name takes at least 8 bytes, which bounds a corrupt count before reserving memory.
    if (num_names > r.remaining() / 8) {
      Throw("ValueError", "load_params: params blob truncated: " + std::to_string(num_names) +
                              " names announced in " + std::to_string(r.remaining()) + " bytes");
    }
    std::vector<ParamArray> params(num_names);
    for (auto& p : params) {
      uint64_t len = r.Read<uint64_t>("name length");
      p.name.assign(r.Take(len, "name"), len);
    }
    uint64_t num_arrays = r.Read<uint64_t>("array count");
    if (num_arrays != num_names) {
      Throw("ValueError", "load_params: params blob has " + std::to_string(num_names) +
                              " names but " + std::to_string(num_arrays) + " arrays");
    }
    for (auto& p : params) {
      const std::string what = "array '" + p.name + "'";
      if (r.Read<uint64_t>("array magic") != kNDArrayMagic) {
        Throw("ValueError", "load_params: " + what + " does not start with the NDArray magic");
      }
      r.Read<uint64_t>("array reserved");
      r.Read<int32_t>("array device type");  // TVM loads every param to the CPU first too.
      r.Read<int32_t>("array device id");
      int32_t ndim = r.Read<int32_t>("array ndim");
      if (ndim < 0 || ndim > 32) {
        Throw("ValueError", "load_params: " + what + " has invalid ndim " + std::to_string(ndim));
      }
      p.dtype.code = r.Read<uint8_t>("array dtype");
      p.dtype.bits = r.Read<uint8_t>("array dtype");
      p.dtype.lanes = r.Read<uint16_t>("array dtype");
      p.shape.resize(ndim);
      for (auto& d : p.shape) {
        d = r.Read<int64_t>("array shape");
        if (d < 0) Throw("ValueError", "load_params: " + what + " has a negative dimension");
      }
      int64_t nbytes = r.Read<int64_t>("array byte size");
      if (nbytes != NumBytes(p.shape, p.dtype)) {
        Throw("ValueError", "load_params: " + what + " announces " + std::to_string(nbytes) +
                                " bytes but its shape " + ShapeStr(p.shape.data(), ndim) + " " +
                                DTypeStr(p.dtype) + " needs " +
                                std::to_string(NumBytes(p.shape, p.dtype)));
      }
      p.nbytes = static_cast<size_t>(nbytes);
      p.data = r.Take(p.nbytes, "array data");
    }
    if (r.remaining() != 0) {
      Throw("ValueError", "load_params: " + std::to_string(r.remaining()) +
                              " unexpected trailing bytes after the last array");
    }
    std::vector<std::pair<TVMArrayHandle, const ParamArray*>> writes;
    std::vector<int> written;
    for (const auto& p : params) {
      int idx = InputIndex(p.name);
      if (idx < 0) continue;  // As in TVM: params folded out of the graph are ignored.
      written.push_back(idx);
      TVMArrayHandle dst = Input(idx);
      if (!SameDType(dst->dtype, p.dtype) || dst->ndim != static_cast<int>(p.shape.size()) ||
          !std::equal(p.shape.begin(), p.shape.end(), dst->shape)) {
        Throw("ValueError", "load_params: param '" + p.name + "' is " +
                                ShapeStr(p.shape.data(), static_cast<int>(p.shape.size())) + " " +
                                DTypeStr(p.dtype) + " but the graph expects " +
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
      CheckCall(TVMArrayCopyFromBytes(dst, const_cast<char*>(p->data), p->nbytes));
    }
    for (int idx : written) MarkSet(idx);
    // As TVM: every name of the blob counts as a param for get_input_info from now on.
    for (const auto& p : params) param_names_.insert(p.name);
  }

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
  void CheckInputsSet() const {
    std::string missing;
    int count = 0;
    for (size_t i = 0; i < input_set_.size(); ++i) {
      if (input_set_[i]) continue;
      if (count++ < 5)
        missing += (missing.empty() ? "'" : ", '") + nodes_[input_nodes_[i]].name + "'";
    }
    if (count > 5) missing += ", ...";
    Throw("ValueError", "run: " + std::to_string(count) + " of the graph's " +
                            std::to_string(input_set_.size()) + " inputs have no value yet (" +
                            missing + "); set them with set_input or load_params first");
  }

  uint32_t EntryId(uint32_t nid, uint32_t index) const { return node_row_ptr_[nid] + index; }
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
    if (ext->device.device_type != internal->device.device_type ||
        ext->device.device_id != internal->device.device_id) {
      Throw("ValueError", what() + ": the array is on device (" +
                              std::to_string(static_cast<int>(ext->device.device_type)) + ", " +
                              std::to_string(ext->device.device_id) + "), the executor's is (" +
                              std::to_string(static_cast<int>(internal->device.device_type)) +
                              ", " + std::to_string(internal->device.device_id) + ")");
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
  // reports strided arrays clearly.
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

  void Parse(const std::string& text) {
    Json g;
    try {
      g = Json::parse(text);
    } catch (const Json::exception& e) {
      Throw("ValueError", std::string("graph JSON does not parse: ") + e.what());
    }
    // Any structural mismatch nlohmann reports (a string where a number belongs, ...) is the
    // graph's fault, not an internal error.
    try {
      ParseGraph(g);
    } catch (const Json::exception& e) {
      Throw("ValueError", std::string("graph JSON is malformed: ") + e.what());
    }
  }

  static Entry ParseEntry(const Json& j, const std::string& where) {
    if (!j.is_array() || j.size() < 2 || j.size() > 3) {
      Throw("ValueError", "graph JSON: " + where +
                              ": an entry must be [node_id, index, version]"
                              ", got " +
                              Brief(j));
    }
    return Entry{static_cast<uint32_t>(JsonInt(j[0], where + " node_id", 0, kMaxU32)),
                 static_cast<uint32_t>(JsonInt(j[1], where + " index", 0, kMaxU32))};
  }

  void ParseGraph(const Json& g) {
    if (!g.is_object()) Throw("ValueError", "graph JSON: the top level must be an object");
    for (const char* key : {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"}) {
      if (!g.contains(key)) Throw("ValueError", std::string("graph JSON: missing \"") + key + "\"");
    }
    const Json& jnodes = g.at("nodes");
    if (!jnodes.is_array()) Throw("ValueError", "graph JSON: \"nodes\" must be a list");
    for (const Json& jn : jnodes) {
      Node n;
      const std::string where = "node " + std::to_string(nodes_.size());
      if (!jn.is_object()) Throw("ValueError", "graph JSON: " + where + " is not an object");
      n.op = jn.at("op").get<std::string>();
      n.name = jn.at("name").get<std::string>();
      if (jn.contains("inputs")) {
        for (const Json& ji : jn.at("inputs")) {
          Entry e = ParseEntry(ji, where + " ('" + n.name + "') inputs");
          if (e.node_id >= nodes_.size()) {
            Throw("ValueError", "graph JSON: node '" + n.name + "' reads node " +
                                    std::to_string(e.node_id) + ", which does not precede it");
          }
          if (e.index >= nodes_[e.node_id].num_outputs) {
            Throw("ValueError", "graph JSON: node '" + n.name + "' reads output " +
                                    std::to_string(e.index) + " of '" + nodes_[e.node_id].name +
                                    "', which has " +
                                    std::to_string(nodes_[e.node_id].num_outputs));
          }
          n.inputs.push_back(e);
        }
      }
      if (n.op == "tvm_op") {
        if (!jn.contains("attrs") || !jn.at("attrs").is_object()) {
          Throw("ValueError", "graph JSON: tvm_op node '" + n.name + "' lacks attrs");
        }
        const Json& a = jn.at("attrs");
        if (!a.contains("func_name") || !a.at("func_name").is_string()) {
          Throw("ValueError", "graph JSON: tvm_op node '" + n.name + "' lacks attr func_name");
        }
        n.func_name = a.at("func_name").get<std::string>();
        int64_t num_inputs = AttrInt(a, "num_inputs", n.name, true, 0);
        int64_t num_outputs = AttrInt(a, "num_outputs", n.name, true, 1);
        n.flatten_data = AttrInt(a, "flatten_data", n.name, false, 0) != 0;
        if (num_inputs != static_cast<int64_t>(n.inputs.size())) {
          Throw("ValueError", "graph JSON: node '" + n.name + "' declares num_inputs " +
                                  std::to_string(num_inputs) + " but lists " +
                                  std::to_string(n.inputs.size()) + " inputs");
        }
        if (num_outputs < 1 || num_outputs > 1024) {
          Throw("ValueError", "graph JSON: node '" + n.name + "' has invalid num_outputs " +
                                  std::to_string(num_outputs));
        }
        n.num_outputs = static_cast<uint32_t>(num_outputs);
      } else if (n.op != "null") {
        Throw("ValueError", "graph JSON: node '" + n.name + "' has unknown op type '" + n.op +
                                "' (expected \"null\" or \"tvm_op\")");
      } else if (!n.inputs.empty()) {
        Throw("ValueError", "graph JSON: null node '" + n.name + "' must have no inputs");
      }
      nodes_.push_back(std::move(n));
    }

    std::vector<bool> is_input(nodes_.size(), false);
    for (uint32_t nid :
         JsonIntList<uint32_t>(g.at("arg_nodes"), "arg_nodes", "entry", 0, kMaxU32)) {
      if (nid >= nodes_.size() || nodes_[nid].op != "null") {
        Throw("ValueError",
              "graph JSON: arg_nodes entry " + std::to_string(nid) + " is not a null (input) node");
      }
      if (is_input[nid]) {
        Throw("ValueError", "graph JSON: arg_nodes lists node " + std::to_string(nid) + " twice");
      }
      is_input[nid] = true;
      input_nodes_.push_back(nid);
    }
    // A null node outside arg_nodes could never be given a value: kernels would read whatever
    // its memory held.
    for (size_t nid = 0; nid < nodes_.size(); ++nid) {
      if (nodes_[nid].op == "null" && !is_input[nid]) {
        Throw("ValueError", "graph JSON: null node '" + nodes_[nid].name +
                                "' is not listed in arg_nodes, so it could never be set");
      }
    }
    input_set_.assign(input_nodes_.size(), false);
    all_inputs_set_ = input_nodes_.empty();

    node_row_ptr_ =
        JsonIntList<uint32_t>(g.at("node_row_ptr"), "node_row_ptr", "entry", 0, kMaxU32);
    if (node_row_ptr_.size() != nodes_.size() + 1 || node_row_ptr_[0] != 0) {
      Throw("ValueError", "graph JSON: node_row_ptr must have " +
                              std::to_string(nodes_.size() + 1) + " entries starting at 0");
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (uint64_t{node_row_ptr_[i + 1]} != uint64_t{node_row_ptr_[i]} + nodes_[i].num_outputs) {
        Throw("ValueError", "graph JSON: node_row_ptr disagrees with num_outputs of node '" +
                                nodes_[i].name + "'");
      }
    }
    const size_t num_entries = node_row_ptr_.back();

    const Json& heads = g.at("heads");
    if (!heads.is_array()) Throw("ValueError", "graph JSON: \"heads\" must be a list");
    for (const Json& j : heads) {
      Entry e = ParseEntry(j, "heads");
      if (e.node_id >= nodes_.size() || e.index >= nodes_[e.node_id].num_outputs) {
        Throw("ValueError", "graph JSON: heads refers to a missing output " + j.dump());
      }
      outputs_.push_back(e);
    }

    const Json& attrs = g.at("attrs");
    if (!attrs.is_object()) Throw("ValueError", "graph JSON: \"attrs\" must be an object");
    storage_id_ = JsonIntList<int64_t>(GraphAttr(attrs, "storage_id", "list_int"), "storage_id",
                                       "entry", 0, kMaxI64);
    const Json& jshapes = GraphAttr(attrs, "shape", "list_shape");
    for (const Json& js : jshapes) {
      shapes_.push_back(JsonIntList<int64_t>(js, "shape of entry " + std::to_string(shapes_.size()),
                                             "dimension", 0, kMaxI64));
    }
    std::vector<std::string> dltype =
        GraphAttr(attrs, "dltype", "list_str").get<std::vector<std::string>>();
    if (storage_id_.size() != num_entries || shapes_.size() != num_entries ||
        dltype.size() != num_entries) {
      Throw("ValueError", "graph JSON: attrs storage_id/shape/dltype must each have " +
                              std::to_string(num_entries) +
                              " entries (one per node output), "
                              "got " +
                              std::to_string(storage_id_.size()) + "/" +
                              std::to_string(shapes_.size()) + "/" + std::to_string(dltype.size()));
    }
    for (size_t i = 0; i < num_entries; ++i) {
      if (storage_id_[i] < 0) {
        Throw("ValueError", "graph JSON: entry " + std::to_string(i) + " has storage_id " +
                                std::to_string(storage_id_[i]));
      }
      for (int64_t d : shapes_[i]) {
        if (d < 0)
          Throw("ValueError",
                "graph JSON: entry " + std::to_string(i) + " has a negative dimension");
      }
      dtypes_.push_back(ParseDType(dltype[i]));
      dtype_strs_.push_back(dltype[i]);
    }
  }

  // One allocation per storage id, sized for its largest user (TVM plans storage the same way
  // and so may alias entries whose lifetimes do not overlap); each entry is an array viewing
  // its storage with the entry's own shape and dtype.
  void PlanStorage() {
    std::vector<int64_t> bytes;
    for (size_t i = 0; i < storage_id_.size(); ++i) {
      size_t sid = static_cast<size_t>(storage_id_[i]);
      if (sid >= storage_id_.size()) {
        Throw("ValueError",
              "graph JSON: storage_id " + std::to_string(sid) + " exceeds the number of entries");
      }
      if (sid >= bytes.size()) bytes.resize(sid + 1, 0);
      bytes[sid] = std::max(bytes[sid], NumBytes(shapes_[i], dtypes_[i]));
    }
    storage_.items.assign(bytes.size(), nullptr);
    for (size_t sid = 0; sid < bytes.size(); ++sid) {
      // float32 words, as TVM allocates; at least one so data is never NULL.
      int64_t words = std::max<int64_t>(1, (bytes[sid] + 3) / 4);
      CheckCall(TVMArrayAlloc(&words, 1, kDLFloat, 32, 1, device_.device_type, device_.device_id,
                              &storage_.items[sid]));
    }
    entries_.items.assign(storage_id_.size(), nullptr);
    external_.items.assign(storage_id_.size(), nullptr);
    for (size_t i = 0; i < storage_id_.size(); ++i) {
      TVMArrayHandle storage = storage_.items[storage_id_[i]];
      auto* ctx = new ViewContext();
      ctx->shape = shapes_[i];
      if (TVMArrayToDLPack(storage, &ctx->storage_ref) != 0) {
        delete ctx;
        throw Error::FromLastError();
      }
      DLTensor& t = ctx->managed.dl_tensor;
      t.data = storage->data;
      t.device = storage->device;
      t.ndim = static_cast<int>(ctx->shape.size());
      t.dtype = dtypes_[i];
      t.shape = ctx->shape.data();
      t.strides = nullptr;
      t.byte_offset = storage->byte_offset;
      ctx->managed.manager_ctx = ctx;
      ctx->managed.deleter = ViewDeleter;
      if (TVMArrayFromDLPack(&ctx->managed, &entries_.items[i]) != 0) {
        Error err = Error::FromLastError();
        ViewDeleter(&ctx->managed);  // On failure the tensor stays ours to release.
        throw err;
      }
    }
  }

  // Look every kernel up once and pack its arguments once: run() does no lookups, no allocation.
  void SetupOps() {
    size_t num_flat = 0;
    for (const Node& n : nodes_) {
      if (n.op == "tvm_op" && n.flatten_data) num_flat += n.inputs.size() + n.num_outputs;
    }
    // Sized once so the pointers packed below stay valid.
    flat_tensors_.resize(num_flat);
    flat_shapes_.resize(num_flat);
    entry_flat_.assign(entries_.items.size(), {});
    size_t flat_next = 0;
    for (uint32_t nid = 0; nid < nodes_.size(); ++nid) {
      const Node& n = nodes_[nid];
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

  ObjectRef lib_;
  DLDevice device_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> input_nodes_;
  std::vector<bool> input_set_;  // per input: set_input, load_params or get_input reached it
  bool all_inputs_set_ = false;
  std::vector<Entry> outputs_;
  std::vector<uint32_t> node_row_ptr_;
  std::vector<int64_t> storage_id_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<DLDataType> dtypes_;
  std::vector<std::string> dtype_strs_;          // as the graph spells them (get_*_info)
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

void CheckArity(const char* fn, PackedArgs args, int lo, int hi) {
  if (args.size < lo || args.size > hi) {
    std::string want =
        lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    Throw("TypeError", std::string("GraphExecutor.") + fn + ": expected " + want +
                           " arguments but got " + std::to_string(args.size));
  }
}

int64_t IntArg(const char* fn, PackedArgs args, int i) {
  int c = args.codes[i];
  if (c != kTVMArgInt && c != kDLUInt && c != kTVMArgBool) {
    Throw("TypeError", std::string(fn) + ": argument " + std::to_string(i) +
                           " expected int but got " + TypeCodeName(c));
  }
  return args.values[i].v_int64;
}

// A module arrives as kTVMModuleHandle from TVM-style callers; a binding that only knows
// generic objects may pass kTVMObjectHandle, which is accepted when the object is a module.
bool IsModule(int code, void* handle) {
  if (handle == nullptr) return false;
  if (code == kTVMModuleHandle) return true;
  if (code != kTVMObjectHandle) return false;
  static const unsigned module_index = [] {
    unsigned t = ~0u;
    TVMObjectTypeKey2Index("runtime.Module", &t);
    return t;
  }();
  unsigned t = 0;
  int derived = 0;
  return TVMObjectGetTypeIndex(handle, &t) == 0 &&
         TVMObjectDerivedFrom(t, module_index, &derived) == 0 && derived != 0;
}

std::string StrArg(const char* fn, PackedArgs args, int i) {
  try {
    return args[i].as<std::string>();
  } catch (const Error&) {
    Throw("TypeError", std::string(fn) + ": argument " + std::to_string(i) +
                           " expected str but got " + TypeCodeName(args.codes[i]));
  }
}

std::string ModuleTypeKey(void* module) {
  static Function type_key = Function::GetGlobalRequired("runtime.ModuleGetTypeKey");
  TVMValue v;
  int c = kTVMModuleHandle;
  v.v_handle = module;
  Any key = type_key.CallPacked(&v, &c, 1);
  return key.type_code() == kTVMStr ? key.as_str() : std::string();
}

// A shape as TVM returns it: a runtime.ShapeTuple where the runtime registers that type,
// otherwise an Array of ints.
Any ShapeObject(const std::vector<int64_t>& shape) {
  static Function shape_tuple = Function::GetGlobal("runtime.ShapeTuple");
  static Function array = Function::GetGlobalRequired("runtime.Array");
  std::vector<TVMValue> values(shape.size());
  std::vector<int> codes(shape.size(), kTVMArgInt);
  for (size_t i = 0; i < shape.size(); ++i) values[i].v_int64 = shape[i];
  const Function& make = shape_tuple ? shape_tuple : array;
  return make.CallPacked(values.data(), codes.data(), static_cast<int>(values.size()));
}

// {"shape": {name: shape}, "dtype": {name: dtype string}}, TVM's get_input_info result.
template <typename InfoList>
Any InfoMap(const InfoList& info) {
  static Function map = Function::GetGlobalRequired("runtime.Map");
  std::vector<Any> shapes;  // owned until the map holds them
  std::vector<TVMValue> sv, dv;
  std::vector<int> sc, dc;
  for (const auto& item : info) {
    shapes.push_back(ShapeObject(*item.shape));
    TVMValue k, s, d;
    k.v_str = item.name.c_str();
    s.v_handle = shapes.back().as_object().get();
    d.v_str = item.dtype->c_str();
    sv.insert(sv.end(), {k, s});
    sc.insert(sc.end(), {kTVMStr, kTVMObjectHandle});
    dv.insert(dv.end(), {k, d});
    dc.insert(dc.end(), {kTVMStr, kTVMStr});
  }
  Any shape_map = map.CallPacked(sv.data(), sc.data(), static_cast<int>(sv.size()));
  Any dtype_map = map.CallPacked(dv.data(), dc.data(), static_cast<int>(dv.size()));
  return map("shape", shape_map.as_object(), "dtype", dtype_map.as_object());
}

// Returns an array with kTVMNDArrayHandle; the return slot takes its own reference.
void ReturnArray(RetValue* rv, TVMArrayHandle a) {
  TVMValue v;
  v.v_handle = a;
  rv->SetRaw(v, kTVMNDArrayHandle);
}

Any MakeExecutorModule(std::shared_ptr<GraphExecutor> ex) {
  Function set_input = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("set_input", args, 2, 2);
    ex->SetInput(ex->ResolveInput("set_input", args[0]), args[1]);
    rv->Set(nullptr);
  });
  Function run = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("run", args, 0, 0);
    ex->Run();
    rv->Set(nullptr);
  });
  Function get_output = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_output", args, 1, 2);
    int64_t index = args.codes[0] == kTVMStr ? ex->ResolveOutput("get_output", args[0])
                                             : IntArg("get_output", args, 0);
    if (args.size == 2) {
      ex->CopyOutputTo(index, args[1]);
      rv->Set(nullptr);
      return;
    }
    TVMArrayHandle out = ex->CopyOutput(index);
    // The return slot takes its own reference; ours is dropped whether or not that worked.
    try {
      ReturnArray(rv, out);
    } catch (...) {
      TVMArrayFree(out);
      throw;
    }
    TVMArrayFree(out);
  });
  Function get_input = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_input", args, 1, 1);
    // As TVM: an unknown name gives None (GraphModule.set_input relies on it); a bad index is
    // still an IndexError.
    if (args.codes[0] == kTVMStr && args.values[0].v_str != nullptr &&
        ex->InputIndex(args.values[0].v_str) < 0) {
      rv->Set(nullptr);
      return;
    }
    ReturnArray(rv, ex->InputForCaller(ex->ResolveInput("get_input", args[0])));
  });
  Function get_num_outputs = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_num_outputs", args, 0, 0);
    rv->Set(ex->num_outputs());
  });
  Function get_num_inputs = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_num_inputs", args, 0, 0);
    rv->Set(ex->num_inputs());
  });
  Function get_input_index = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_input_index", args, 1, 1);
    rv->Set(ex->InputIndex(args[0].as<std::string>()));
  });
  Function load_params = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("load_params", args, 1, 1);
    if (args.codes[0] != kTVMBytes) {
      Throw("TypeError",
            std::string("load_params: expected bytes but got ") + TypeCodeName(args.codes[0]));
    }
    auto* b = static_cast<TVMByteArray*>(args.values[0].v_handle);
    ex->LoadParams(b->data, b->size);
    rv->Set(nullptr);
  });
  Function get_output_index = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_output_index", args, 1, 1);
    rv->Set(ex->OutputIndex(StrArg("get_output_index", args, 0)));
  });
  Function get_input_info = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_input_info", args, 0, 0);
    rv->Set(InfoMap(ex->InputInfo()).as_object());
  });
  Function get_output_info = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_output_info", args, 0, 0);
    rv->Set(InfoMap(ex->OutputInfo()).as_object());
  });
  Function set_input_zero_copy = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("set_input_zero_copy", args, 2, 2);
    ex->SetInputZeroCopy(ex->ResolveInput("set_input_zero_copy", args[0]), args[1]);
    rv->Set(nullptr);
  });
  Function set_output_zero_copy = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("set_output_zero_copy", args, 2, 2);
    ex->SetOutputZeroCopy(ex->ResolveOutput("set_output_zero_copy", args[0]), args[1]);
    rv->Set(nullptr);
  });
  Function share_params = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("share_params", args, 2, 2);
    if (!IsModule(args.codes[0], args.values[0].v_handle) ||
        ModuleTypeKey(args.values[0].v_handle) != "GraphExecutor") {
      Throw("TypeError", std::string("share_params: argument 0 expected a GraphExecutor module "
                                     "but got ") +
                             TypeCodeName(args.codes[0]));
    }
    if (args.codes[1] != kTVMBytes) {
      Throw("TypeError", std::string("share_params: argument 1 expected bytes but got ") +
                             TypeCodeName(args.codes[1]));
    }
    auto* b = static_cast<TVMByteArray*>(args.values[1].v_handle);
    ex->ShareParams(args.values[0].v_handle, b->data, b->size);
    rv->Set(nullptr);
  });
  // run_from_inputs(dev_type, dev_id, key0, array0, ...): set, run, and return every output as a
  // new array on that (host) device.
  Function run_from_inputs = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    if (args.size < 2 || args.size % 2 != 0) {
      Throw("TypeError",
            "run_from_inputs: expected a device type, a device id and key/array "
            "pairs, got " +
                std::to_string(args.size) + " arguments");
    }
    int64_t dev_type = IntArg("run_from_inputs", args, 0);
    int64_t dev_id = IntArg("run_from_inputs", args, 1);
    if (dev_type != kDLCPU && dev_type != kDLCUDAHost) {
      Throw("ValueError", "run_from_inputs: device type " + std::to_string(dev_type) +
                              " is not available (this runtime has CPU only)");
    }
    for (int i = 2; i < args.size; i += 2) {
      ex->SetInput(ex->ResolveInput("run_from_inputs", args[i]), args[i + 1]);
    }
    ex->Run();
    OwnedHandles<TVMArrayHandle, TVMArrayFree> outs;
    DLDevice host{static_cast<DLDeviceType>(dev_type), static_cast<int32_t>(dev_id)};
    for (int i = 0; i < ex->num_outputs(); ++i) outs.items.push_back(ex->CopyOutput(i, host));
    std::vector<TVMValue> values(outs.items.size());
    std::vector<int> codes(outs.items.size(), kTVMNDArrayHandle);
    for (size_t i = 0; i < values.size(); ++i) values[i].v_handle = outs.items[i];
    static Function make_array = Function::GetGlobalRequired("runtime.Array");
    Any arr = make_array.CallPacked(values.data(), codes.data(), static_cast<int>(values.size()));
    rv->Set(arr.as_object());
  });
  Function make = Function::GetGlobalRequired("runtime.ModuleFromFunctions");
  return make("GraphExecutor", "set_input", set_input, "run", run, "get_output", get_output,
              "get_input", get_input, "get_num_outputs", get_num_outputs, "get_num_inputs",
              get_num_inputs, "get_input_index", get_input_index, "load_params", load_params,
              "get_output_index", get_output_index, "get_input_info", get_input_info,
              "get_output_info", get_output_info, "set_input_zero_copy", set_input_zero_copy,
              "set_output_zero_copy", set_output_zero_copy, "share_params", share_params,
              "run_from_inputs", run_from_inputs);
}

// tvm.graph_executor.create(graph_json, lib, dev_type, dev_id) -> Module
void Create(PackedArgs args, RetValue* rv) {
  // TVM passes (graph_json, lib, dev_type, dev_id[, dev_type, dev_id ...]).
  if (args.size < 4 || args.size % 2 != 0) {
    Throw("TypeError",
          "tvm.graph_executor.create(graph_json, lib, dev_type, dev_id): "
          "expected 4 arguments (or more device pairs) but got " +
              std::to_string(args.size));
  }
  std::string graph_json;
  try {
    graph_json = args[0].as<std::string>();
  } catch (const Error&) {
    Throw("TypeError", std::string("tvm.graph_executor.create: argument 0 (graph_json) "
                                   "expected str but got ") +
                           TypeCodeName(args.codes[0]));
  }
  if (!IsModule(args.codes[1], args.values[1].v_handle)) {
    Throw("TypeError", std::string("tvm.graph_executor.create: argument 1 (lib) expected "
                                   "Module but got ") +
                           TypeCodeName(args.codes[1]));
  }
  DLDevice dev{kDLCPU, 0};
  for (int i = 2; i < args.size; i += 2) {
    int64_t type = IntArg("tvm.graph_executor.create", args, i);
    int64_t id = IntArg("tvm.graph_executor.create", args, i + 1);
    if (type != kDLCPU) {
      Throw("ValueError",
            "tvm.graph_executor.create: only CPU (device type 1) is supported, "
            "got device type " +
                std::to_string(type));
    }
    if (i == 2) dev.device_id = static_cast<int32_t>(id);
  }
  auto ex = std::make_shared<GraphExecutor>(graph_json, args.values[1].v_handle, dev);
  rv->Set(MakeExecutorModule(std::move(ex)));
}

POLYFFI_REGISTER_GLOBAL("tvm.graph_executor.create").set_body_packed(Create);

}  // namespace
}  // namespace polyffi
