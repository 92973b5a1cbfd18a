// TVM's graph JSON, read and checked: nodes, arg_nodes, heads, node_row_ptr and the attrs
// storage_id, shape and dltype. Every integer is range-checked and every index validated, so a
// corrupt graph is a ValueError and the executor never meets an out-of-range entry.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph_executor/common.h"

namespace polyffi {
namespace graph_executor {
namespace {

using Json = nlohmann::json;

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

Entry ParseEntry(const Json& j, const std::string& where) {
  if (!j.is_array() || j.size() < 2 || j.size() > 3) {
    Throw("ValueError", "graph JSON: " + where +
                            ": an entry must be [node_id, index, version]"
                            ", got " +
                            Brief(j));
  }
  return Entry{static_cast<uint32_t>(JsonInt(j[0], where + " node_id", 0, kMaxU32)),
               static_cast<uint32_t>(JsonInt(j[1], where + " index", 0, kMaxU32))};
}

void ParseGraph(const Json& g, Graph* graph) {
  if (!g.is_object()) Throw("ValueError", "graph JSON: the top level must be an object");
  for (const char* key : {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"}) {
    if (!g.contains(key)) Throw("ValueError", std::string("graph JSON: missing \"") + key + "\"");
  }
  const Json& jnodes = g.at("nodes");
  if (!jnodes.is_array()) Throw("ValueError", "graph JSON: \"nodes\" must be a list");
  for (const Json& jn : jnodes) {
    Node n;
    const std::string where = "node " + std::to_string(graph->nodes.size());
    if (!jn.is_object()) Throw("ValueError", "graph JSON: " + where + " is not an object");
    n.op = jn.at("op").get<std::string>();
    n.name = jn.at("name").get<std::string>();
    if (jn.contains("inputs")) {
      for (const Json& ji : jn.at("inputs")) {
        Entry e = ParseEntry(ji, where + " ('" + n.name + "') inputs");
        if (e.node_id >= graph->nodes.size()) {
          Throw("ValueError", "graph JSON: node '" + n.name + "' reads node " +
                                  std::to_string(e.node_id) + ", which does not precede it");
        }
        if (e.index >= graph->nodes[e.node_id].num_outputs) {
          Throw("ValueError", "graph JSON: node '" + n.name + "' reads output " +
                                  std::to_string(e.index) + " of '" + graph->nodes[e.node_id].name +
                                  "', which has " +
                                  std::to_string(graph->nodes[e.node_id].num_outputs));
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
    graph->nodes.push_back(std::move(n));
  }

  std::vector<bool> is_input(graph->nodes.size(), false);
  for (uint32_t nid : JsonIntList<uint32_t>(g.at("arg_nodes"), "arg_nodes", "entry", 0, kMaxU32)) {
    if (nid >= graph->nodes.size() || graph->nodes[nid].op != "null") {
      Throw("ValueError",
            "graph JSON: arg_nodes entry " + std::to_string(nid) + " is not a null (input) node");
    }
    if (is_input[nid]) {
      Throw("ValueError", "graph JSON: arg_nodes lists node " + std::to_string(nid) + " twice");
    }
    is_input[nid] = true;
    graph->input_nodes.push_back(nid);
  }
  // A null node outside arg_nodes could never be given a value: kernels would read whatever
  // its memory held.
  for (size_t nid = 0; nid < graph->nodes.size(); ++nid) {
    if (graph->nodes[nid].op == "null" && !is_input[nid]) {
      Throw("ValueError", "graph JSON: null node '" + graph->nodes[nid].name +
                              "' is not listed in arg_nodes, so it could never be set");
    }
  }

  graph->node_row_ptr =
      JsonIntList<uint32_t>(g.at("node_row_ptr"), "node_row_ptr", "entry", 0, kMaxU32);
  if (graph->node_row_ptr.size() != graph->nodes.size() + 1 || graph->node_row_ptr[0] != 0) {
    Throw("ValueError", "graph JSON: node_row_ptr must have " +
                            std::to_string(graph->nodes.size() + 1) + " entries starting at 0");
  }
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    if (uint64_t{graph->node_row_ptr[i + 1]} !=
        uint64_t{graph->node_row_ptr[i]} + graph->nodes[i].num_outputs) {
      Throw("ValueError", "graph JSON: node_row_ptr disagrees with num_outputs of node '" +
                              graph->nodes[i].name + "'");
    }
  }
  const size_t num_entries = graph->node_row_ptr.back();

  const Json& heads = g.at("heads");
  if (!heads.is_array()) Throw("ValueError", "graph JSON: \"heads\" must be a list");
  for (const Json& j : heads) {
    Entry e = ParseEntry(j, "heads");
    if (e.node_id >= graph->nodes.size() || e.index >= graph->nodes[e.node_id].num_outputs) {
      Throw("ValueError", "graph JSON: heads refers to a missing output " + j.dump());
    }
    graph->outputs.push_back(e);
  }

  const Json& attrs = g.at("attrs");
  if (!attrs.is_object()) Throw("ValueError", "graph JSON: \"attrs\" must be an object");
  graph->storage_id = JsonIntList<int64_t>(GraphAttr(attrs, "storage_id", "list_int"), "storage_id",
                                           "entry", 0, kMaxI64);
  const Json& jshapes = GraphAttr(attrs, "shape", "list_shape");
  for (const Json& js : jshapes) {
    graph->shapes.push_back(JsonIntList<int64_t>(
        js, "shape of entry " + std::to_string(graph->shapes.size()), "dimension", 0, kMaxI64));
  }
  std::vector<std::string> dltype =
      GraphAttr(attrs, "dltype", "list_str").get<std::vector<std::string>>();
  if (graph->storage_id.size() != num_entries || graph->shapes.size() != num_entries ||
      dltype.size() != num_entries) {
    Throw("ValueError", "graph JSON: attrs storage_id/shape/dltype must each have " +
                            std::to_string(num_entries) +
                            " entries (one per node output), "
                            "got " +
                            std::to_string(graph->storage_id.size()) + "/" +
                            std::to_string(graph->shapes.size()) + "/" +
                            std::to_string(dltype.size()));
  }
  for (size_t i = 0; i < num_entries; ++i) {
    if (graph->storage_id[i] < 0) {
      Throw("ValueError", "graph JSON: entry " + std::to_string(i) + " has storage_id " +
                              std::to_string(graph->storage_id[i]));
    }
    for (int64_t d : graph->shapes[i]) {
      if (d < 0)
        Throw("ValueError", "graph JSON: entry " + std::to_string(i) + " has a negative dimension");
    }
    graph->dtypes.push_back(ParseDType(dltype[i]));
    graph->dtype_strs.push_back(dltype[i]);
  }
}

}  // namespace

Graph ParseGraphJson(const std::string& text) {
  Graph graph;
  Json g;
  try {
    g = Json::parse(text);
  } catch (const Json::exception& e) {
    Throw("ValueError", std::string("graph JSON does not parse: ") + e.what());
  }
  // Any structural mismatch nlohmann reports (a string where a number belongs, ...) is the
  // graph's fault, not an internal error.
  try {
    ParseGraph(g, &graph);
  } catch (const Json::exception& e) {
    Throw("ValueError", std::string("graph JSON is malformed: ") + e.what());
  }
  return graph;
}

}  // namespace graph_executor
}  // namespace polyffi
