// What the two containers of a library's modules share: TVM's packed import blob
// (`__tvm_dev_mblob`, module_blob.cc) and tvm-ffi's library bin (`__tvm_ffi__library_bin`,
// library_bin.cc). Both hold modules and a CSR import tree (row pointers and child indices), hand
// each module's section to a loader found in the registry, and can be read without their
// library, whose place a DetachedLibrary then takes.
#ifndef POLYFFI_CORE_FORMATS_MODULE_TREE_H_
#define POLYFFI_CORE_FORMATS_MODULE_TREE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "formats/byte_reader.h"
#include "polyffi/module.h"

namespace polyffi {
namespace formats {

/*!
 * \brief Check an import tree over count modules (row: count + 1 ordered pointers from 0 to
 *  child.size(); children below count; no cycle). r names the source in messages.
 */
void CheckImportTree(const std::vector<uint64_t>& row, const std::vector<uint64_t>& child,
                     size_t count, const ByteReader& r);

/*! \brief Module i imports modules child[row[i] .. row[i + 1]); the root is module 0. */
ObjectPtr<ModuleObj> LinkImportTree(const std::vector<ObjectPtr<ModuleObj>>& modules,
                                    const std::vector<uint64_t>& row,
                                    const std::vector<uint64_t>& child);

/*!
 * \brief Call the loader registered as loader_name for a module of type key with one argument;
 *  its failure is rethrown saying which module of which container failed (its kind kept).
 */
ObjectPtr<ModuleObj> CallModuleLoader(const std::string& loader_name, const std::string& key,
                                      TVMValue arg, int code, const ByteReader& r);

/*! \brief Stands for "_lib" when a container is read without its library. */
class DetachedLibrary final : public ModuleObj {
 public:
  std::string type_key() const override { return "library"; }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string&) override { return nullptr; }
};

/*! \brief The bytes argument of a runtime.ModuleLoadFrom* global (NULL data is an error). */
const TVMByteArray& BytesArg(const Args& args, int i);

}  // namespace formats
}  // namespace polyffi
#endif  // POLYFFI_CORE_FORMATS_MODULE_TREE_H_
