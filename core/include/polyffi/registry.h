// The global function registry: many readers, one writer, never destroyed.
#ifndef POLYFFI_CORE_REGISTRY_H_
#define POLYFFI_CORE_REGISTRY_H_

#include <string>
#include <vector>

#include "polyffi/function.h"

namespace polyffi {

class Registry {
 public:
  /*! \brief The process-wide registry; leaked at exit so no finalizer runs after its host. */
  static Registry* Global();
  /*! \brief ValueError when the name is taken and override is false. */
  void Register(const std::string& name, ObjectPtr<FunctionObj> f, bool override);
  /*! \brief The function, or null when missing. */
  ObjectPtr<FunctionObj> Get(const std::string& name) const;
  /*! \brief Whether something was removed. */
  bool Remove(const std::string& name);
  std::vector<std::string> ListNames() const;
};

/*! \brief Register a core global at static-initialisation time. */
template <typename F>
int RegisterCoreGlobal(const char* name, F body) {
  Registry::Global()->Register(name, MakeFunction(std::move(body), name), true);
  return 0;
}

#define POLYFFI_CORE_CAT_(a, b) a##b
#define POLYFFI_CORE_CAT(a, b) POLYFFI_CORE_CAT_(a, b)
/*! \brief POLYFFI_CORE_GLOBAL("runtime.X", [](const Args& args, RetValue* rv) { ... }); */
#define POLYFFI_CORE_GLOBAL(name, ...)                                              \
  [[maybe_unused]] static const int POLYFFI_CORE_CAT(polyffi_core_reg_, __LINE__) = \
      ::polyffi::RegisterCoreGlobal(name, __VA_ARGS__)

}  // namespace polyffi
#endif  // POLYFFI_CORE_REGISTRY_H_
