// Modules from shared libraries (the DSO convention of docs/spec/abi.md section 7, modules and
// compiled models) and the system library.
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <polyffi/c_backend_api.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/registry.h"
#include "polyffi/tvm_ffi_abi.h"

namespace polyffi {
namespace {

/*! \brief The slots a model library may declare so it need not link libpolyffi. */
struct Slot {
  const char* name;
  void* value;
};
const Slot kSlots[] = {
    {"__TVMFuncCall", reinterpret_cast<void*>(&TVMFuncCall)},
    {"__TVMAPISetLastError", reinterpret_cast<void*>(&TVMAPISetLastError)},
    {"__TVMBackendGetFuncFromEnv", reinterpret_cast<void*>(&TVMBackendGetFuncFromEnv)},
    {"__TVMBackendAllocWorkspace", reinterpret_cast<void*>(&TVMBackendAllocWorkspace)},
    {"__TVMBackendFreeWorkspace", reinterpret_cast<void*>(&TVMBackendFreeWorkspace)},
    {"__TVMBackendParallelLaunch", reinterpret_cast<void*>(&TVMBackendParallelLaunch)},
    {"__TVMBackendParallelBarrier", reinterpret_cast<void*>(&TVMBackendParallelBarrier)},
};

class LibraryModule final : public ModuleObj {
 public:
  LibraryModule(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {
    link_map* lm = nullptr;
    if (dlinfo(handle_, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr) loaded_name_ = lm->l_name;
  }
  std::string type_key() const override { return "library"; }

  /*!
   * \brief An embedded blob (`__tvm_dev_mblob`, `__tvm_ffi__library_bin`) with its extent: the
   *  symbol's ELF size bounds every read (null when the library has none).
   */
  const char* EmbeddedBlob(const char* name, size_t* size) const {
    void* p = OwnSymbol(name);
    if (p == nullptr) return nullptr;
    Dl_info info;
    ElfW(Sym)* sym = nullptr;
    if (dladdr1(p, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) == 0 || sym == nullptr) {
      Throw("ValueError", path_, ": cannot find the extent of its ", name);
    }
    *size = sym->st_size;
    return static_cast<const char*>(p);
  }
  const std::string& path() const { return path_; }

  /*!
   * \brief Fill the context slots the library declares: __tvm_module_ctx (classic) or
   *  __tvm_ffi__library_ctx (tvm-ffi) with this module, and the function-pointer slots.
   *  ffi: the library exports `__tvm_ffi_` symbols (from its symbol table, read before).
   */
  void InitSlots(bool ffi) {
    ffi_library_ = ffi || OwnSymbol("__tvm_ffi__library_ctx") != nullptr ||
                   OwnSymbol("__tvm_ffi_main") != nullptr ||
                   OwnSymbol("__tvm_ffi__library_bin") != nullptr;
    if (void* ctx = OwnSymbol("__tvm_module_ctx")) {
      *static_cast<void**>(ctx) = this;
      tvm_library_ = true;
    }
    if (void* ctx = OwnSymbol("__tvm_ffi__library_ctx")) *static_cast<void**>(ctx) = this;
    for (const Slot& slot : kSlots) {
      if (void* p = OwnSymbol(slot.name)) {
        *static_cast<void**>(p) = slot.value;
        tvm_library_ = true;
      }
    }
    for (const tvmffi::ContextSlot* slot = tvmffi::kContextSlots; slot->name; ++slot) {
      if (void* p = OwnSymbol(slot->name)) *static_cast<void**>(p) = slot->value;
    }
    if (OwnSymbol("__tvm_main__") != nullptr || OwnSymbol("__tvm_dev_mblob") != nullptr) {
      tvm_library_ = true;
    }
  }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override {
    // tvm-ffi ABI (TVM >= 0.20): m[name] is `__tvm_ffi_<name>`, so m["main"] is the weak
    // `__tvm_ffi_main` of a single-function library.
    static const std::string kFfiPrefix = "__tvm_ffi_";
    if (void* f = OwnSymbol((kFfiPrefix + name).c_str())) {
      return tvmffi::WrapKernel(f, ObjectPtr<ModuleObj>::Borrow(this), name);
    }
    // A library with none of the symbols a TVM-built library carries (a C++ plugin that only
    // registers globals, or a library built for something else entirely) has no packed
    // functions: calling one of its symbols with the packed signature would be undefined. The
    // same holds for every other symbol of a tvm-ffi library (its fp16 helpers, its slots).
    if (!tvm_library_ || ffi_library_ || name.compare(0, kFfiPrefix.size(), kFfiPrefix) == 0) {
      return nullptr;
    }
    std::string target = name;
    if (name == "__tvm_main__") {
      auto* entry = static_cast<const char*>(OwnSymbol("__tvm_main__"));
      if (entry == nullptr) return nullptr;
      target = entry;
    }
    void* f = OwnSymbol(target.c_str());
    if (f == nullptr) return nullptr;
    return WrapBackendFunction(f, ObjectPtr<ModuleObj>::Borrow(this));
  }

 private:
  /*!
   * \brief dlsym restricted to symbols defined by this library: dlsym also searches its
   *  dependencies, and get_function("malloc") must not hand out libc as a packed function.
   */
  void* OwnSymbol(const char* name) const {
    void* p = dlsym(handle_, name);
    if (p == nullptr) return nullptr;
    Dl_info info;
    if (dladdr(p, &info) == 0 || info.dli_fname == nullptr) return nullptr;
    return loaded_name_ == info.dli_fname ? p : nullptr;
  }
  void* handle_;
  std::string path_;
  std::string loaded_name_;
  bool tvm_library_ = false;  // it declares __tvm_module_ctx, __tvm_main__ or a __TVM* slot
  bool ffi_library_ = false;  // it exports tvm-ffi ABI functions (`__tvm_ffi_<name>`)
};

/*!
 * \brief Refuse an ELF file whose program headers or segments lie beyond its end. glibc's
 *  loader maps segments straight from the file, and touching a mapped page past the end of a
 *  truncated file raises SIGBUS inside dlopen: the process dies instead of getting an error.
 *  Files that are not ELF are left to dlopen, which reports them ("invalid ELF header").
 */
template <typename Ehdr, typename Phdr>
void CheckElfExtents(const std::string& path, const std::string& bytes) {
  auto fail = [&path](const std::string& why) {
    Throw("RuntimeError", "cannot load library '", path, "': truncated or corrupt ELF file (", why,
          ")");
  };
  const uint64_t size = bytes.size();
  if (size < sizeof(Ehdr)) fail("the ELF header is cut short");
  Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  if (eh.e_phnum != 0 && eh.e_phentsize != sizeof(Phdr)) fail("bad program header size");
  uint64_t table_end = uint64_t{eh.e_phoff} + uint64_t{eh.e_phnum} * sizeof(Phdr);
  if (eh.e_phoff > size || table_end > size) {
    fail("program headers end at byte " + std::to_string(table_end) + ", the file has " +
         std::to_string(size));
  }
  // The loader does not need the section headers, but they sit at the end of the file: a file
  // cut anywhere past its segments still loses them, and is refused as the truncated file it is.
  uint64_t sections_end = uint64_t{eh.e_shoff} + uint64_t{eh.e_shnum} * eh.e_shentsize;
  if (eh.e_shoff != 0 && (eh.e_shoff > size || sections_end > size)) {
    fail("section headers end at byte " + std::to_string(sections_end) + ", the file has " +
         std::to_string(size));
  }
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof(Phdr), sizeof(ph));
    uint64_t end = uint64_t{ph.p_offset} + uint64_t{ph.p_filesz};
    if (ph.p_type != PT_NULL && (ph.p_offset > size || end > size)) {
      fail("segment " + std::to_string(i) + " ends at byte " + std::to_string(end) +
           ", the file has " + std::to_string(size));
    }
  }
}

/*! \brief What the loader needs of a library's dynamic symbol table, read from its file. */
struct DynamicSymbols {
  bool known = false;                 // the file has a .dynsym section we could read
  std::vector<std::string> defined;   // defined symbols
  std::vector<std::string> data;      // defined data objects (where slots live)
  std::vector<std::string> imported;  // undefined, non-weak symbols
};

/*!
 * \brief Read .dynsym (located through the section headers, which CheckElfExtents found within
 *  the file). Every offset and name is bounds-checked: anything odd leaves the table unknown,
 *  and the loader then relies on dlsym alone.
 */
template <typename Ehdr, typename Shdr, typename Sym, unsigned char (*kType)(unsigned char),
          unsigned char (*kBind)(unsigned char)>
DynamicSymbols ReadDynamicSymbols(const std::string& bytes) {
  DynamicSymbols out;
  const uint64_t size = bytes.size();
  Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Shdr)) return out;
  if (eh.e_shoff > size || uint64_t{eh.e_shnum} * sizeof(Shdr) > size - eh.e_shoff) return out;
  auto section = [&](uint64_t i) {
    Shdr sh;
    std::memcpy(&sh, bytes.data() + eh.e_shoff + i * sizeof(Shdr), sizeof(sh));
    return sh;
  };
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Shdr sym_sh = section(i);
    if (sym_sh.sh_type != SHT_DYNSYM) continue;
    if (sym_sh.sh_entsize != sizeof(Sym) || sym_sh.sh_link >= eh.e_shnum) return out;
    Shdr str_sh = section(sym_sh.sh_link);
    if (sym_sh.sh_offset > size || sym_sh.sh_size > size - sym_sh.sh_offset) return out;
    if (str_sh.sh_offset > size || str_sh.sh_size > size - str_sh.sh_offset) return out;
    const char* strtab = bytes.data() + str_sh.sh_offset;
    uint64_t strsz = str_sh.sh_size;
    for (uint64_t k = 1; k < sym_sh.sh_size / sizeof(Sym); ++k) {  // entry 0 is the null symbol
      Sym sym;
      std::memcpy(&sym, bytes.data() + sym_sh.sh_offset + k * sizeof(Sym), sizeof(sym));
      if (sym.st_name >= strsz) continue;
      const char* name = strtab + sym.st_name;
      const void* nul = std::memchr(name, '\0', strsz - sym.st_name);
      if (nul == nullptr) continue;
      std::string n(name, static_cast<const char*>(nul) - name);
      if (sym.st_shndx == SHN_UNDEF) {
        if (kBind(sym.st_info) != STB_WEAK) out.imported.push_back(std::move(n));
      } else {
        if (kType(sym.st_info) == STT_OBJECT) out.data.push_back(n);
        out.defined.push_back(std::move(n));
      }
    }
    out.known = true;
    return out;
  }
  return out;
}

unsigned char Elf64Type(unsigned char info) { return ELF64_ST_TYPE(info); }
unsigned char Elf64Bind(unsigned char info) { return ELF64_ST_BIND(info); }
unsigned char Elf32Type(unsigned char info) { return ELF32_ST_TYPE(info); }
unsigned char Elf32Bind(unsigned char info) { return ELF32_ST_BIND(info); }

/*!
 * \brief Check an ELF file before dlopen sees it (extents), and read its dynamic symbols.
 *  Files that are not ELF give an unknown table and are left to dlopen.
 */
DynamicSymbols CheckElfFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};  // dlopen reports what is wrong
  std::string head(EI_NIDENT, '\0');
  if (!f.read(&head[0], EI_NIDENT) || std::memcmp(head.data(), ELFMAG, SELFMAG) != 0) return {};
  f.seekg(0, std::ios::end);
  std::string bytes(static_cast<size_t>(f.tellg()), '\0');
  f.seekg(0);
  f.read(&bytes[0], static_cast<std::streamsize>(bytes.size()));
  if (head[EI_CLASS] == ELFCLASS64) {
    CheckElfExtents<Elf64_Ehdr, Elf64_Phdr>(path, bytes);
    return ReadDynamicSymbols<Elf64_Ehdr, Elf64_Shdr, Elf64_Sym, Elf64Type, Elf64Bind>(bytes);
  }
  if (head[EI_CLASS] == ELFCLASS32) {
    CheckElfExtents<Elf32_Ehdr, Elf32_Phdr>(path, bytes);
    return ReadDynamicSymbols<Elf32_Ehdr, Elf32_Shdr, Elf32_Sym, Elf32Type, Elf32Bind>(bytes);
  }
  return {};
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

/*!
 * \brief Refuse, before it is opened, a library that needs what polyffi cannot give: a
 *  context slot we do not fill would be a NULL call inside a kernel, and an imported tvm-ffi
 *  function we do not define would fail at load with a less helpful message. Returns whether
 *  it is a tvm-ffi ABI library.
 */
bool CheckLibraryNeeds(const std::string& path, const DynamicSymbols& syms) {
  if (!syms.known) return false;
  for (const std::string& name : syms.data) {
    if (!StartsWith(name, "__TVM")) continue;
    bool known = false;
    for (const Slot& slot : kSlots) known = known || name == slot.name;
    for (const tvmffi::ContextSlot* slot = tvmffi::kContextSlots; slot->name; ++slot) {
      known = known || name == slot->name;
    }
    if (!known) {
      Throw("RuntimeError", "cannot load library '", path, "': it has the context slot '", name,
            "', which polyffi cannot fill (calling through it would crash)");
    }
  }
  bool ffi = false;
  for (const std::string& name : syms.imported) {
    if (!StartsWith(name, "TVMFFI")) continue;
    ffi = true;
    if (name != "TVMFFIErrorSetRaisedFromCStrParts" && name != "TVMFFIErrorSetRaisedFromCStr") {
      Throw("RuntimeError", "cannot load library '", path, "': it imports '", name,
            "' from a tvm-ffi runtime; polyffi provides only TVMFFIErrorSetRaisedFromCStrParts "
            "and TVMFFIErrorSetRaisedFromCStr to tvm-ffi ABI libraries");
    }
  }
  for (const std::string& name : syms.defined) ffi = ffi || StartsWith(name, "__tvm_ffi_");
  return ffi;
}

/*!
 * \brief Libraries are never unloaded (plugins leave globals and finalizers pointing into
 *  them), so one module per library lives for the whole process; loading again returns it.
 */
ObjectPtr<ModuleObj> LoadSharedLibrary(const std::string& path) {
  static std::mutex* mu = new std::mutex();
  struct Loaded {
    ObjectPtr<LibraryModule> lib;
    ObjectPtr<ModuleObj> root;  // lib itself, or the root of its embedded module tree
  };
  static auto* loaded = new std::unordered_map<void*, Loaded>();
  DynamicSymbols syms = CheckElfFile(path);
  bool ffi = CheckLibraryNeeds(path, syms);
  // A tvm-ffi library imports TVMFFIErrorSetRaisedFromCStrParts without naming a library: it
  // resolves only from the global scope, where libpolyffi may not be (loaded RTLD_LOCAL by a
  // Python extension, a Node addon, System.load).
  if (ffi || !syms.known) tvmffi::PromoteSelfToGlobalScope();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = dlerror();
    Throw("RuntimeError", "cannot load library '", path, "': ", why ? why : "unknown error");
  }
  std::lock_guard<std::mutex> lock(*mu);
  auto& entry = (*loaded)[handle];
  if (!entry.lib) {
    entry.lib = MakeObject<LibraryModule>(handle, path);
    entry.lib->InitSlots(ffi);
  }
  if (!entry.root) {
    // A TVM export: the root is the first module of the embedded tree (GraphExecutorFactory
    // for TVM <= 0.19, relax.VMExecutable for 0.27), which imports the library. Built once; a
    // blob that fails to load fails every load.
    auto self = ObjectPtr<ModuleObj>::Borrow(entry.lib.get());
    size_t size = 0;
    if (const char* bin = entry.lib->EmbeddedBlob("__tvm_ffi__library_bin", &size)) {
      entry.root = tvmffi::LoadLibraryBin(bin, size, self, path);
    } else if (const char* blob = entry.lib->EmbeddedBlob("__tvm_dev_mblob", &size)) {
      entry.root = LoadModuleBlob(blob, size, self, path);
    } else {
      entry.root = self;
    }
  }
  return entry.root;
}

class SystemLibModule final : public ModuleObj {
 public:
  // TVM's key: its system library is a library module too.
  std::string type_key() const override { return "library"; }
  void Register(const std::string& name, void* ptr) {
    if (name == "__tvm_module_ctx") {
      *static_cast<void**>(ptr) = this;
      return;
    }
    if (name == "__tvm_dev_mblob") {  // read on the next SystemLib(), once every symbol is in
      std::lock_guard<std::mutex> lock(mu_);
      blob_ = static_cast<const char*>(ptr);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    symbols_[name] = ptr;
  }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string target = name;
    if (name == "__tvm_main__") {
      auto it = symbols_.find(name);
      if (it == symbols_.end()) return nullptr;
      target = static_cast<const char*>(it->second);
    }
    auto it = symbols_.find(target);
    if (it == symbols_.end()) return nullptr;
    return WrapBackendFunction(it->second, ObjectPtr<ModuleObj>::Borrow(this));
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, void*> symbols_;
  const char* blob_ = nullptr;
  ObjectPtr<ModuleObj> root_;

 public:
  /*! \brief A blob registered and not yet read (null if none). */
  const char* PendingModuleBlob() {
    std::lock_guard<std::mutex> lock(mu_);
    return blob_;
  }
  /*! \brief The pending blob was read into root: later calls return root. */
  void SetRoot(ObjectPtr<ModuleObj> root) {
    std::lock_guard<std::mutex> lock(mu_);
    root_ = std::move(root);
    blob_ = nullptr;
  }
  /*! \brief The blob's root once one was read, else the system library itself. */
  ObjectPtr<ModuleObj> root() {
    std::lock_guard<std::mutex> lock(mu_);
    return root_ ? root_ : ObjectPtr<ModuleObj>::Borrow(this);
  }
};

SystemLibModule* SystemLibInstance() {
  static SystemLibModule* lib = new SystemLibModule();  // lives for the process
  return lib;
}

}  // namespace

ObjectPtr<ModuleObj> LoadModuleFromFile(const std::string& path, std::string format) {
  if (format.empty()) {
    size_t dot = path.rfind('.');
    size_t slash = path.rfind('/');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
      format = path.substr(dot + 1);
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) Throw("ValueError", "cannot find file '", path, "'");
  if (format == "so" || format == "dll" || format == "dylib") return LoadSharedLibrary(path);
  // Other formats come from loaders registered as globals, the classic extension point.
  auto loader = Registry::Global()->Get("runtime.module.loadfile_" + format);
  if (!loader) Throw("ValueError", "unknown module format '", format, "' for '", path, "'");
  TVMValue args[2];
  int codes[2] = {kTVMStr, kTVMStr};
  args[0].v_str = path.c_str();
  args[1].v_str = format.c_str();
  RetValue rv;
  loader->Call(args, codes, 2, &rv);
  Object* obj = rv.object();
  if (obj == nullptr || obj->type_index() != TypeIndex::kModule) {
    Throw("TypeError", "module loader for '", format, "' did not return a module");
  }
  return ObjectPtr<ModuleObj>::Borrow(static_cast<ModuleObj*>(obj));
}

ObjectPtr<ModuleObj> SystemLib() {
  static std::mutex* loading = new std::mutex();  // one reader of a new blob at a time
  std::lock_guard<std::mutex> lock(*loading);
  SystemLibModule* lib = SystemLibInstance();
  const char* blob = lib->PendingModuleBlob();
  if (blob == nullptr) return lib->root();
  // A --system-lib export registers its packed import blob like any symbol. It was compiled
  // into this program, so its own size prefix is the only extent there is.
  uint64_t payload;
  std::memcpy(&payload, blob, sizeof(payload));
  if (payload > std::numeric_limits<size_t>::max() - sizeof(payload)) {
    Throw("ValueError", "system library: corrupt __tvm_dev_mblob size ", payload);
  }
  lib->SetRoot(LoadModuleBlob(blob, payload + sizeof(payload), ObjectPtr<ModuleObj>::Borrow(lib),
                              "system library"));
  return lib->root();
}

void RegisterSystemLibSymbol(const std::string& name, void* ptr) {
  if (ptr == nullptr) Throw("ValueError", "system library symbol '", name, "' is NULL");
  SystemLibInstance()->Register(name, ptr);
}

}  // namespace polyffi
