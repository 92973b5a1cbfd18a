// The embedded module tree of a library exported by TVM >= 0.20 (`__tvm_ffi__library_bin`,
// docs/spec/tvm-formats.md part 2 section 2, `__tvm_ffi__library_bin`).
//
// Layout (little-endian): u64 payload size N, then N bytes: a CSR import tree (vec<u64> indptr,
// vec<u64> child_indices; vec = u64 count + items), then for each module i in
// [0, len(indptr) - 1): a kind string (u64 length + bytes) and, unless the kind is "_lib", its
// bytes (u64 length + bytes). "_lib" is where the shared library's own module goes; any other
// kind is loaded by the global `ffi.Module.load_from_bytes.<kind>`, called with ONE argument,
// the bytes (kTVMBytes), and returning a Module. Module i imports the modules
// child_indices[indptr[i] .. indptr[i + 1]); the root, module 0, is what loading the file gives.
// The whole tree is validated before any loader runs, so a corrupt blob has no side effects.
#include <cstring>
#include <string>
#include <vector>

#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/registry.h"
#include "polyffi/tvm_ffi_abi.h"

namespace polyffi {
namespace tvmffi {
namespace {

constexpr const char* kWhat = "__tvm_ffi__library_bin";

/*! \brief Bounds-checked little-endian reader; every failure names the origin and offset. */
class Reader {
 public:
  Reader(const char* data, size_t size, const std::string& origin)
      : data_(data), size_(size), origin_(origin) {}

  const char* Take(uint64_t n, const char* what) {
    if (n > size_ - pos_) {
      Throw("ValueError", origin_, ": ", kWhat, " truncated reading ", what, " at offset ", pos_,
            " (need ", n, " bytes, ", size_ - pos_, " left)");
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
  /*! \brief A length-prefixed byte string, as a pointer into the blob. */
  const char* Bytes(uint64_t* n, const char* what) {
    *n = U64(what);
    return Take(*n, what);
  }
  std::vector<uint64_t> U64Vector(const char* what) {
    uint64_t n = U64(what);
    if (n > (size_ - pos_) / sizeof(uint64_t)) {
      Throw("ValueError", origin_, ": ", kWhat, " announces ", n, " entries of ", what,
            " at offset ", pos_, " but only ", size_ - pos_, " bytes are left");
    }
    std::vector<uint64_t> v(n);
    if (n != 0) std::memcpy(v.data(), Take(n * sizeof(uint64_t), what), n * sizeof(uint64_t));
    return v;
  }
  size_t remaining() const { return size_ - pos_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& origin_;
};

ObjectPtr<ModuleObj> LoadFromBytes(const std::string& kind, const char* data, uint64_t size,
                                   const std::string& origin) {
  const std::string loader_name = "ffi.Module.load_from_bytes." + kind;
  auto loader = Registry::Global()->Get(loader_name);
  if (!loader) {
    Throw("ValueError", origin, ": its ", kWhat, " holds a module of kind '", kind,
          "' and no loader for it is registered (", loader_name, ")");
  }
  TVMByteArray bytes{data, static_cast<size_t>(size)};
  TVMValue arg;
  arg.v_handle = &bytes;
  int code = kTVMBytes;
  RetValue rv;
  try {
    loader->Call(&arg, &code, 1, &rv);
  } catch (const Error& e) {  // say which module of which file failed
    std::string why = e.message();
    const std::string prefix = origin + ": ";
    if (why.compare(0, prefix.size(), prefix) == 0) why.erase(0, prefix.size());
    Throw(e.kind().c_str(), origin, ": cannot load the '", kind, "' module of its ", kWhat, ": ",
          why);
  }
  Object* obj = rv.object();
  if (obj == nullptr || obj->type_index() != TypeIndex::kModule) {
    Throw("TypeError", origin, ": ", loader_name, " returned a ", TypeCodeName(rv.type_code()),
          ", not a module");
  }
  return ObjectPtr<ModuleObj>::Borrow(static_cast<ModuleObj*>(obj));
}

/*! \brief Stands for "_lib" when a blob is read without its library. */
class DetachedLibrary final : public ModuleObj {
 public:
  std::string type_key() const override { return "library"; }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string&) override { return nullptr; }
};

}  // namespace

ObjectPtr<ModuleObj> LoadLibraryBin(const char* blob, size_t size, ObjectPtr<ModuleObj> lib,
                                    const std::string& origin) {
  Reader header(blob, size, origin);
  uint64_t payload = header.U64("the blob size");
  if (payload > header.remaining()) {
    Throw("ValueError", origin, ": ", kWhat, " announces ", payload, " bytes but holds ",
          header.remaining());
  }
  Reader r(blob + sizeof(uint64_t), payload, origin);
  std::vector<uint64_t> indptr = r.U64Vector("the import tree's indptr");
  std::vector<uint64_t> child = r.U64Vector("the import tree's child indices");
  if (indptr.size() < 2) Throw("ValueError", origin, ": ", kWhat, " has no modules");
  const uint64_t count = indptr.size() - 1;
  if (count > r.remaining() / sizeof(uint64_t)) {  // each module has at least a kind length
    Throw("ValueError", origin, ": ", kWhat, " announces ", count, " modules in ", r.remaining(),
          " bytes");
  }
  if (indptr.front() != 0 || indptr.back() != child.size()) {
    Throw("ValueError", origin, ": ", kWhat, "'s import tree does not match its ", child.size(),
          " child indices");
  }
  for (size_t i = 0; i + 1 < indptr.size(); ++i) {
    if (indptr[i] > indptr[i + 1]) {
      Throw("ValueError", origin, ": ", kWhat, "'s import tree is not ordered");
    }
  }
  for (uint64_t c : child) {
    if (c >= count) {
      Throw("ValueError", origin, ": ", kWhat, " imports module ", c, " of ", count);
    }
  }
  CheckImportTreeAcyclic(indptr, child, origin, kWhat);

  // Kinds and extents first, loaders after: a blob truncated at its last module runs none.
  struct Entry {
    std::string kind;
    const char* data = nullptr;
    uint64_t size = 0;
  };
  std::vector<Entry> entries(count);
  bool have_lib = false;
  for (Entry& e : entries) {
    uint64_t n = 0;
    const char* k = r.Bytes(&n, "a module kind");
    e.kind.assign(k, n);
    if (e.kind.empty()) Throw("ValueError", origin, ": ", kWhat, " has a module with no kind");
    if (e.kind == "_lib") {
      if (have_lib) Throw("ValueError", origin, ": ", kWhat, " lists the library twice");
      have_lib = true;
      continue;
    }
    e.data = r.Bytes(&e.size, "a module's bytes");
  }
  if (r.remaining() != 0) {
    Throw("ValueError", origin, ": ", kWhat, " has ", r.remaining(),
          " unexpected bytes after its last module");
  }
  std::vector<ObjectPtr<ModuleObj>> modules;
  modules.reserve(count);
  for (const Entry& e : entries) {
    modules.push_back(e.kind == "_lib" ? lib : LoadFromBytes(e.kind, e.data, e.size, origin));
  }
  for (size_t i = 0; i < modules.size(); ++i) {
    for (uint64_t j = indptr[i]; j < indptr[i + 1]; ++j) modules[i]->Import(modules[child[j]]);
  }
  return modules[0];
}

}  // namespace tvmffi

// runtime.ModuleLoadFromLibraryBin(bytes) -> Module: a `__tvm_ffi__library_bin` (size prefix
// included) read on its own, "_lib" being an empty library. The same reader as a loaded
// library's; for the fuzzer and for blobs kept apart from their library.
POLYFFI_CORE_GLOBAL("runtime.ModuleLoadFromLibraryBin", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  if (args.code(0) != kTVMBytes) args.Mismatch(0, "bytes");
  auto* b = static_cast<TVMByteArray*>(args.value(0).v_handle);
  if (b == nullptr || (b->data == nullptr && b->size != 0)) {
    Throw("ValueError", args.fname(), ": bytes value is NULL");
  }
  rv->SetObject(
      tvmffi::LoadLibraryBin(b->data, b->size, MakeObject<tvmffi::DetachedLibrary>(), "blob"));
});

}  // namespace polyffi
