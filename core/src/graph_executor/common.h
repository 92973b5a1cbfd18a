// One home for the graph executor's parts (graph_executor/*.cc): the graph JSON reader
// (graph_json.cc), the storage plan (storage_plan.cc), the executor (executor.cc, its params in
// executor_params.cc) and its function table (executor_module.cc); the factory (factory.cc) and
// the runtime.*Params globals (params.cc) sit beside them.
//
// Written only against the public C ABI (plus the header-only polyffi.hpp over it), like any
// other client of the runtime; polyffi.hpp keeps its classes in the inline namespace
// polyffi::cxx, so they never collide with the core's of the same names. The one piece from the
// core is the host's signal check (env_api.h: TVM's C ABI has no function for it), and the
// binary-format readers of formats/, which are free of the core's classes too.
#ifndef POLYFFI_CORE_GRAPH_EXECUTOR_COMMON_H_
#define POLYFFI_CORE_GRAPH_EXECUTOR_COMMON_H_

#include <polyffi/c_runtime_api.h>
#include <polyffi/dtype_string.h>

#include <cstdint>
#include <polyffi/polyffi.hpp>
#include <string>
#include <vector>

#include "formats/ndarray_record.h"

namespace polyffi {
namespace graph_executor {

[[noreturn]] inline void Throw(const char* kind, const std::string& msg) { throw Error(kind, msg); }

inline std::string ShapeStr(const int64_t* shape, int ndim) {
  return formats::ShapeText(shape, ndim);
}

// For messages: a dtype with no string form reads "<dtype CODE:BITSxLANES>".
inline std::string DTypeStr(DLDataType t) {
  char buf[32];
  PolyffiDataTypeToString(t, buf, sizeof(buf));
  return buf;
}

inline bool SameDType(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

// Byte size of a dense array; shapes come from untrusted JSON and blobs, so overflow is an error.
// Each element takes whole bytes (a bool, TVM's uint1, takes one), as in TVM's GetDataSize and
// the runtime's own arrays: sizing by bits would give a [100] bool 13 bytes of storage for an
// array the kernels and copies treat as 100 bytes.
inline int64_t NumBytes(const std::vector<int64_t>& shape, DLDataType t) {
  int64_t bytes = (static_cast<int64_t>(t.bits) * t.lanes + 7) / 8;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) {
      Throw("ValueError", "array shape " + ShapeStr(shape.data(), static_cast<int>(shape.size())) +
                              " is negative or too large");
    }
  }
  return bytes;
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

/*! \brief A graph JSON, read and checked (graph_json.cc). */
struct Graph {
  std::vector<Node> nodes;
  std::vector<uint32_t> input_nodes;  // the arg nodes, in order
  std::vector<Entry> outputs;         // the heads
  std::vector<uint32_t> node_row_ptr;
  std::vector<int64_t> storage_id;  // per entry
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DLDataType> dtypes;
  std::vector<std::string> dtype_strs;  // as the graph spells them (get_*_info)
};

/*! \brief Parse and check TVM's graph JSON: every failure is a ValueError naming the field. */
Graph ParseGraphJson(const std::string& text);

// An input or output given by index (an int key; else a name).
inline bool IsIndexKey(ArgValue key) {
  return key.type_code() == kTVMArgInt || key.type_code() == kDLUInt;
}

// The index, or "fn: <what> index i out of range [0, n)" as an IndexError.
inline int CheckIndex(const char* fn, const char* what, int64_t i, int n) {
  if (i < 0 || i >= n) {
    Throw("IndexError", std::string(fn) + ": " + what + " index " + std::to_string(i) +
                            " out of range [0, " + std::to_string(n) + ")");
  }
  return static_cast<int>(i);
}

// The name of a key that is not an index (a TypeError unless it is a string).
inline std::string KeyName(const char* fn, const char* what, ArgValue key) {
  try {
    return key.as<std::string>();
  } catch (const Error&) {
    Throw("TypeError", std::string(fn) + ": " + what + " must be an int index or a str name, got " +
                           TypeCodeName(key.type_code()));
  }
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

/*!
 * \brief One array per storage id, sized for its largest user, and one view array per entry
 *  (storage_plan.cc).
 */
void PlanStorage(const Graph& graph, DLDevice device,
                 OwnedHandles<TVMArrayHandle, TVMArrayFree>* storage,
                 OwnedHandles<TVMArrayHandle, TVMArrayFree>* entries);

// Turns a C API return code into an exception: -2 (the host has an error pending, such as the
// KeyboardInterrupt of a signal check) travels on as -2.
inline void Check(int rc) {
  if (rc == -2) throw HostErrorPending();
  if (rc != 0) throw Error::FromLastError();
}

}  // namespace graph_executor
}  // namespace polyffi
#endif  // POLYFFI_CORE_GRAPH_EXECUTOR_COMMON_H_
