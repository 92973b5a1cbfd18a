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
#include <string>
#include <vector>

#include "formats/byte_reader.h"
#include "formats/module_tree.h"
#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/registry.h"
#include "polyffi/tvm_ffi_abi.h"

namespace polyffi {
namespace tvmffi {

ObjectPtr<ModuleObj> LoadLibraryBin(const char* blob, size_t size, ObjectPtr<ModuleObj> lib,
                                    const std::string& origin) {
  const std::string kFormat = "__tvm_ffi__library_bin";
  formats::ByteReader header(blob, size, origin, kFormat);
  uint64_t payload = header.Read<uint64_t>("the blob size");
  if (payload > header.remaining()) {
    header.Fail(kFormat + " announces " + std::to_string(payload) + " bytes but holds " +
                std::to_string(header.remaining()));
  }
  formats::ByteReader r(blob + sizeof(uint64_t), payload, origin, kFormat);
  std::vector<uint64_t> indptr = r.U64Vector("the import tree's indptr");
  std::vector<uint64_t> child = r.U64Vector("the import tree's child indices");
  const uint64_t count = indptr.empty() ? 0 : indptr.size() - 1;
  formats::CheckImportTree(indptr, child, count, r);
  if (count > r.remaining() / sizeof(uint64_t)) {  // each module has at least a kind length
    r.Fail(kFormat + " announces " + std::to_string(count) + " modules in " +
           std::to_string(r.remaining()) + " bytes");
  }

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
    if (e.kind.empty()) r.Fail(kFormat + " has a module with no kind");
    if (e.kind == "_lib") {
      if (have_lib) r.Fail(kFormat + " lists the library twice");
      have_lib = true;
      continue;
    }
    e.data = r.Bytes(&e.size, "a module's bytes");
  }
  r.ExpectEnd("its last module");
  std::vector<ObjectPtr<ModuleObj>> modules;
  modules.reserve(count);
  for (const Entry& e : entries) {
    if (e.kind == "_lib") {
      modules.push_back(lib);
      continue;
    }
    TVMByteArray bytes{e.data, static_cast<size_t>(e.size)};
    TVMValue arg;
    arg.v_handle = &bytes;
    modules.push_back(formats::CallModuleLoader("ffi.Module.load_from_bytes." + e.kind, e.kind, arg,
                                                kTVMBytes, r));
  }
  return formats::LinkImportTree(modules, indptr, child);
}

}  // namespace tvmffi

// runtime.ModuleLoadFromLibraryBin(bytes) -> Module: a `__tvm_ffi__library_bin` (size prefix
// included) read on its own, "_lib" being an empty library. The same reader as a loaded
// library's; for the fuzzer and for blobs kept apart from their library.
POLYFFI_CORE_GLOBAL("runtime.ModuleLoadFromLibraryBin", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  const TVMByteArray& b = formats::BytesArg(args, 0);
  rv->SetObject(
      tvmffi::LoadLibraryBin(b.data, b.size, MakeObject<formats::DetachedLibrary>(), "blob"));
});

}  // namespace polyffi
