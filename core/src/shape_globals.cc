// Bindings' fast path for reading a shape: runtime.ShapeTupleBytes(shape) returns every dimension
// at once as kTVMBytes (the int64 values in the machine's byte order), so that a binding turns a
// runtime.ShapeTuple into its own sequence with one call instead of 1 + n calls of
// runtime.GetShapeTupleSize / runtime.GetShapeTupleElem. Shapes are built with runtime.ShapeTuple.
#include <cstdint>

#include "polyffi/container.h"
#include "polyffi/registry.h"

namespace polyffi {

POLYFFI_CORE_GLOBAL("runtime.ShapeTupleBytes", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  auto shape = args.ObjAs<ShapeTupleObj>(0);
  rv->SetBytes(reinterpret_cast<const char*>(shape->data()), shape->size() * sizeof(int64_t));
});

}  // namespace polyffi
