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
#include <memory>
#include <string>
#include <vector>

#include "formats/byte_reader.h"
#include "formats/module_tree.h"
#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace {

using formats::ByteReader;

/*!
 * \brief The read(n) function handed to a loader. It reads through a pointer that is cleared
 *  when the loader returns, so a loader that keeps the function gets an error, not a dangling
 *  read.
 */
struct ReaderState {
  ByteReader* reader = nullptr;
};

ObjectPtr<ModuleObj> LoadEntry(const std::string& key, ByteReader* reader) {
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
  arg.v_handle = read.get();
  return formats::CallModuleLoader("runtime.module.loadbinary_" + key, key, arg,
                                   kTVMPackedFuncHandle, *reader);
}

}  // namespace

ObjectPtr<ModuleObj> LoadModuleBlob(const char* blob, size_t size, ObjectPtr<ModuleObj> lib,
                                    const std::string& origin) {
  const char* kFormat = "packed import blob";
  ByteReader header(blob, size, origin, kFormat);
  uint64_t payload = header.Read<uint64_t>("the blob size");
  if (payload > header.remaining()) {
    header.Fail(std::string(kFormat) + " announces " + std::to_string(payload) +
                " bytes but holds " + std::to_string(header.remaining()));
  }
  ByteReader r(blob + sizeof(uint64_t), payload, origin, kFormat);
  // Each entry has at least a key length.
  uint64_t count = r.Count(sizeof(uint64_t), "the module count");
  std::vector<ObjectPtr<ModuleObj>> modules;
  std::vector<uint64_t> row, child;
  bool have_tree = false, have_lib = false;
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = r.Str("a module type key");
    if (key == "_lib") {
      if (have_lib) r.Fail(std::string(kFormat) + " lists the library twice");
      have_lib = true;
      modules.push_back(lib);
    } else if (key == "_import_tree") {
      if (have_tree) r.Fail(std::string(kFormat) + " has two import trees");
      have_tree = true;
      row = r.U64Vector("import tree row pointers");
      child = r.U64Vector("import tree children");
    } else {
      modules.push_back(LoadEntry(key, &r));
    }
  }
  r.ExpectEnd("its last module");
  if (!have_tree) {  // exports older than the import tree: the library imports everything
    for (auto& m : modules) {
      if (m.get() != lib.get()) lib->Import(m);
    }
    return lib;
  }
  formats::CheckImportTree(row, child, modules.size(), r);
  return formats::LinkImportTree(modules, row, child);
}

// runtime.ModuleLoadFromBlob(bytes) -> Module: a packed import blob (size prefix included) read
// on its own, "_lib" being an empty library. The same reader as a loaded library's blob; for
// blobs kept apart from their library, and for the fuzzer.
POLYFFI_CORE_GLOBAL("runtime.ModuleLoadFromBlob", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  const TVMByteArray& b = formats::BytesArg(args, 0);
  rv->SetObject(LoadModuleBlob(b.data, b.size, MakeObject<formats::DetachedLibrary>(), "blob"));
});

}  // namespace polyffi
