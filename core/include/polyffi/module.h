// Modules: named collections of functions with imports (libraries, the system lib, tables).
#ifndef POLYFFI_CORE_MODULE_H_
#define POLYFFI_CORE_MODULE_H_

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "polyffi/function.h"

namespace polyffi {

class ModuleObj : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kModule;
  ModuleObj() : Object(kTypeIndex) {}
  /*! \brief "library" (shared and system libraries), or the key a table module was made with. */
  virtual std::string type_key() const = 0;
  /*!
   * \brief Look up a function (null when missing). The returned function keeps this module
   *  alive. query_imports searches imported modules too, depth first.
   */
  ObjectPtr<FunctionObj> GetFunction(const std::string& name, bool query_imports);
  void Import(ObjectPtr<ModuleObj> dep);
  std::vector<ObjectPtr<ModuleObj>> imports() const;
  /*! \brief Drop every import (runtime.ModuleClearImports). */
  void ClearImports();
  /*! \brief TVMBackendGetFuncFromEnv: module, imports, then the registry; cached, borrowed. */
  FunctionObj* GetFuncFromEnv(const std::string& name);
  /*!
   * \brief TVMFFIEnvModLookupFromImports: the imports (depth first), then the registry; not the
   *  module itself. Cached and borrowed like GetFuncFromEnv; AttributeError when missing.
   */
  FunctionObj* GetFuncFromImports(const std::string& name);

 protected:
  virtual ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) = 0;

 private:
  mutable std::mutex mu_;
  std::vector<ObjectPtr<ModuleObj>> imports_;
  std::unordered_map<std::string, ObjectPtr<FunctionObj>> env_cache_;
  std::unordered_map<std::string, ObjectPtr<FunctionObj>> import_cache_;
};

/*! \brief Load a module from a file (shared libraries: "so", "dll", "dylib"). */
ObjectPtr<ModuleObj> LoadModuleFromFile(const std::string& path, std::string format);

/*! \brief Wrap a backend function (TVMBackendPackedCFunc) so calling it keeps owner alive. */
ObjectPtr<FunctionObj> WrapBackendFunction(void* faddr, ObjectPtr<ModuleObj> owner);

/*!
 * \brief Read a packed import blob (`__tvm_dev_mblob`, size prefix included, at most size
 *  bytes) and wire up its modules; returns the root. lib stands for "_lib"; origin names the
 *  file in errors. Bounds-checked throughout: a corrupt blob is a ValueError.
 */
ObjectPtr<ModuleObj> LoadModuleBlob(const char* blob, size_t size, ObjectPtr<ModuleObj> lib,
                                    const std::string& origin);

/*! \brief The system library module (symbols from TVMBackendRegisterSystemLibSymbol). */
ObjectPtr<ModuleObj> SystemLib();
void RegisterSystemLibSymbol(const std::string& name, void* ptr);

}  // namespace polyffi
#endif  // POLYFFI_CORE_MODULE_H_
