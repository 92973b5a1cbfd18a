// The packed import blob of a TVM-exported library (`__tvm_dev_mblob`, TVM <= 0.19).
//
// Layout (little-endian, as TVM's export_library writes it): u64 payload size, then the payload:
// u64 entry count, and per entry a string type key (u64 length + bytes) followed by what that
// key's loader reads. Two keys are structural: "_lib" stands for the library itself, and
// "_import_tree" carries two u64 vectors (CSR row pointers and child indices) giving each
// module's imports; the root is then module 0. Without an import tree (old exports) the library
// is the root and imports every other module. Any other key is loaded by the global
// `runtime.module.loadbinary_<key>`, called with one argument, a function read(n) -> bytes that
// hands out the next n bytes of the blob: the registry is the extension point, and a loader
// written in any language can read its own section.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace {

/*! \brief Bounds-checked little-endian reader; every failure names the origin and offset. */
class BlobReader {
 public:
  BlobReader(const char* data, size_t size, const std::string& origin)
      : data_(data), size_(size), origin_(origin) {}

  const char* Take(uint64_t n, const char* what) {
    if (n > size_ - pos_) {
      Throw("ValueError", origin_, ": packed import blob truncated reading ", what, " at offset ",
            pos_, " (need ", n, " bytes, ", size_ - pos_, " left)");
    }
    const char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint64_t U64(const char* what) {
    uint64_t v;
    std::memcpy(&v, Take(sizeof(v), what), sizeof(v));
    return v;
  }
  std::string Str(const char* what) {
    uint64_t n = U64(what);
    return std::string(Take(n, what), n);
  }
  std::vector<uint64_t> U64Vector(const char* what) {
    uint64_t n = U64(what);
    if (n > (size_ - pos_) / sizeof(uint64_t)) {
      Throw("ValueError", origin_, ": packed import blob announces ", n, " entries of ", what,
            " at offset ", pos_, " but only ", size_ - pos_, " bytes are left");
    }
    std::vector<uint64_t> v(n);
    if (n != 0) std::memcpy(v.data(), Take(n * sizeof(uint64_t), what), n * sizeof(uint64_t));
    return v;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const std::string& origin() const { return origin_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& origin_;
};

/*!
 * \brief The read(n) function handed to a loader. It reads through a pointer that is cleared
 *  when the loader returns, so a loader that keeps the function gets an error, not a dangling
 *  read.
 */
struct ReaderState {
  BlobReader* reader = nullptr;
};

ObjectPtr<ModuleObj> LoadEntry(const std::string& key, BlobReader* reader) {
  auto loader = Registry::Global()->Get("runtime.module.loadbinary_" + key);
  if (!loader) {
    Throw("ValueError", reader->origin(), ": the packed import blob holds a module of type '", key,
          "' and no loader for it is registered (runtime.module.loadbinary_", key, ")");
  }
  auto state = std::make_shared<ReaderState>();
  state->reader = reader;
  auto read = MakeFunction(
      [state](const Args& args, RetValue* rv) {
        args.CheckArity(1);
        int64_t n = args.Int(0);
        if (state->reader == nullptr) {
          Throw("RuntimeError", "module blob reader used after its loader returned");
        }
        if (n < 0) Throw("ValueError", "module blob reader: negative byte count ", n);
        const char* p = state->reader->Take(static_cast<uint64_t>(n), "a module's bytes");
        rv->SetBytes(p, static_cast<size_t>(n));
      },
      "runtime.module.blob_reader");
  struct Clear {
    ReaderState* s;
    ~Clear() { s->reader = nullptr; }
  } clear{state.get()};
  TVMValue arg;
  int code = kTVMPackedFuncHandle;
  arg.v_handle = read.get();
  RetValue rv;
  try {
    loader->Call(&arg, &code, 1, &rv);
  } catch (const Error& e) {  // say which module of which file failed
    std::string why = e.message();
    const std::string prefix = reader->origin() + ": ";
    if (why.compare(0, prefix.size(), prefix) == 0) why.erase(0, prefix.size());
    Throw(e.kind().c_str(), reader->origin(), ": cannot load the '", key,
          "' module of its packed import blob: ", why);
  }
  Object* obj = rv.object();
  if (obj == nullptr || obj->type_index() != TypeIndex::kModule) {
    Throw("TypeError", reader->origin(), ": runtime.module.loadbinary_", key,
          " did not return a module");
  }
  return ObjectPtr<ModuleObj>::Borrow(static_cast<ModuleObj*>(obj));
}

}  // namespace

/*! \brief Reject import trees with a cycle: they would leak and make lookups recurse forever. */
void CheckImportTreeAcyclic(const std::vector<uint64_t>& row, const std::vector<uint64_t>& child,
                            const std::string& origin, const char* what) {
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
        Throw("ValueError", origin, ": the ", what, "'s import tree has a cycle through module ",
              c);
      }
      if (state[c] == 0) {
        state[c] = 1;
        stack.push_back({c, row[c]});
      }
    }
  }
}

ObjectPtr<ModuleObj> LoadModuleBlob(const char* blob, size_t size, ObjectPtr<ModuleObj> lib,
                                    const std::string& origin) {
  BlobReader header(blob, size, origin);
  uint64_t payload = header.U64("the blob size");
  if (payload > header.remaining()) {
    Throw("ValueError", origin, ": packed import blob announces ", payload, " bytes but holds ",
          header.remaining());
  }
  BlobReader r(blob + sizeof(uint64_t), payload, origin);
  uint64_t count = r.U64("the module count");
  if (count > r.remaining() / sizeof(uint64_t)) {  // each entry has at least a key length
    Throw("ValueError", origin, ": packed import blob announces ", count, " modules in ",
          r.remaining(), " bytes");
  }
  std::vector<ObjectPtr<ModuleObj>> modules;
  std::vector<uint64_t> row, child;
  bool have_tree = false, have_lib = false;
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = r.Str("a module type key");
    if (key == "_lib") {
      if (have_lib) Throw("ValueError", origin, ": packed import blob lists the library twice");
      have_lib = true;
      modules.push_back(lib);
    } else if (key == "_import_tree") {
      if (have_tree) Throw("ValueError", origin, ": packed import blob has two import trees");
      have_tree = true;
      row = r.U64Vector("import tree row pointers");
      child = r.U64Vector("import tree children");
    } else {
      modules.push_back(LoadEntry(key, &r));
    }
  }
  if (r.remaining() != 0) {
    Throw("ValueError", origin, ": packed import blob has ", r.remaining(),
          " unexpected bytes after its last module");
  }
  if (!have_tree) {  // exports older than the import tree: the library imports everything
    for (auto& m : modules) {
      if (m.get() != lib.get()) lib->Import(m);
    }
    return lib;
  }
  if (modules.empty()) Throw("ValueError", origin, ": packed import blob has no modules");
  if (row.size() != modules.size() + 1 || row.front() != 0 || row.back() != child.size()) {
    Throw("ValueError", origin, ": packed import blob's import tree does not match its ",
          modules.size(), " modules");
  }
  for (size_t i = 0; i + 1 < row.size(); ++i) {
    if (row[i] > row[i + 1]) {
      Throw("ValueError", origin, ": packed import blob's import tree is not ordered");
    }
  }
  for (uint64_t c : child) {
    if (c >= modules.size()) {
      Throw("ValueError", origin, ": packed import blob imports module ", c, " of ",
            modules.size());
    }
  }
  CheckImportTreeAcyclic(row, child, origin, "packed import blob");
  for (size_t i = 0; i < modules.size(); ++i) {
    for (uint64_t j = row[i]; j < row[i + 1]; ++j) modules[i]->Import(modules[child[j]]);
  }
  return modules[0];
}

namespace {

/*! \brief Stands for "_lib" when a blob is read without its library. */
class DetachedLibrary final : public ModuleObj {
 public:
  std::string type_key() const override { return "library"; }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string&) override { return nullptr; }
};

}  // namespace

// runtime.ModuleLoadFromBlob(bytes) -> Module: a packed import blob (size prefix included) read
// on its own, "_lib" being an empty library. The same reader as a loaded library's blob; for
// blobs kept apart from their library, and for the fuzzer.
POLYFFI_CORE_GLOBAL("runtime.ModuleLoadFromBlob", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  if (args.code(0) != kTVMBytes) args.Mismatch(0, "bytes");
  auto* b = static_cast<TVMByteArray*>(args.value(0).v_handle);
  if (b == nullptr || (b->data == nullptr && b->size != 0)) {
    Throw("ValueError", args.fname(), ": bytes value is NULL");
  }
  rv->SetObject(LoadModuleBlob(b->data, b->size, MakeObject<DetachedLibrary>(), "blob"));
});

}  // namespace polyffi
