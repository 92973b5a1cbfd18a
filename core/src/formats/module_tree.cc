// The import tree and loader calls shared by packed import blobs and tvm-ffi library bins.
#include "formats/module_tree.h"

#include <utility>

#include "polyffi/error.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace formats {
namespace {

/*! \brief Reject import trees with a cycle: they would leak and make lookups recurse forever. */
void CheckAcyclic(const std::vector<uint64_t>& row, const std::vector<uint64_t>& child,
                  const ByteReader& r) {
  size_t n = row.size() - 1;
  std::vector<int> state(n, 0);  // 0 new, 1 on the stack, 2 done
  std::vector<std::pair<size_t, uint64_t>> stack;
  for (size_t start = 0; start < n; ++start) {
    if (state[start] != 0) continue;
    stack.push_back({start, row[start]});
    state[start] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == row[node + 1]) {
        state[node] = 2;
        stack.pop_back();
        continue;
      }
      uint64_t c = child[next++];
      if (state[c] == 1) {
        r.Fail("the " + r.format() + "'s import tree has a cycle through module " +
               std::to_string(c));
      }
      if (state[c] == 0) {
        state[c] = 1;
        stack.push_back({c, row[c]});
      }
    }
  }
}

}  // namespace

void CheckImportTree(const std::vector<uint64_t>& row, const std::vector<uint64_t>& child,
                     size_t count, const ByteReader& r) {
  if (count == 0) r.Fail(r.format() + " has no modules");
  if (row.size() != count + 1 || row.front() != 0 || row.back() != child.size()) {
    r.Fail(r.format() + "'s import tree does not match its " + std::to_string(count) +
           " modules and " + std::to_string(child.size()) + " child indices");
  }
  for (size_t i = 0; i + 1 < row.size(); ++i) {
    if (row[i] > row[i + 1]) r.Fail(r.format() + "'s import tree is not ordered");
  }
  for (uint64_t c : child) {
    if (c >= count) {
      r.Fail(r.format() + " imports module " + std::to_string(c) + " of " + std::to_string(count));
    }
  }
  CheckAcyclic(row, child, r);
}

ObjectPtr<ModuleObj> LinkImportTree(const std::vector<ObjectPtr<ModuleObj>>& modules,
                                    const std::vector<uint64_t>& row,
                                    const std::vector<uint64_t>& child) {
  for (size_t i = 0; i < modules.size(); ++i) {
    for (uint64_t j = row[i]; j < row[i + 1]; ++j) modules[i]->Import(modules[child[j]]);
  }
  return modules[0];
}

ObjectPtr<ModuleObj> CallModuleLoader(const std::string& loader_name, const std::string& key,
                                      TVMValue arg, int code, const ByteReader& r) {
  const std::string& origin = r.source();
  auto loader = Registry::Global()->Get(loader_name);
  if (!loader) {
    Throw("ValueError", origin, ": its ", r.format(), " holds a module of kind '", key,
          "' and no loader for it is registered (", loader_name, ")");
  }
  RetValue rv;
  try {
    loader->Call(&arg, &code, 1, &rv);
  } catch (const Error& e) {  // say which module of which file failed
    std::string why = e.message();
    const std::string prefix = origin + ": ";
    if (why.compare(0, prefix.size(), prefix) == 0) why.erase(0, prefix.size());
    Throw(e.kind().c_str(), origin, ": cannot load the '", key, "' module of its ", r.format(),
          ": ", why);
  }
  Object* obj = rv.object();
  if (obj == nullptr || obj->type_index() != TypeIndex::kModule) {
    Throw("TypeError", origin, ": ", loader_name, " returned a ", TypeCodeName(rv.type_code()),
          ", not a module");
  }
  return ObjectPtr<ModuleObj>::Borrow(static_cast<ModuleObj*>(obj));
}

const TVMByteArray& BytesArg(const Args& args, int i) {
  if (args.code(i) != kTVMBytes) args.Mismatch(i, "bytes");
  auto* b = static_cast<TVMByteArray*>(args.value(i).v_handle);
  if (b == nullptr || (b->data == nullptr && b->size != 0)) {
    Throw("ValueError", args.fname(), ": bytes value is NULL");
  }
  return *b;
}

}  // namespace formats
}  // namespace polyffi
