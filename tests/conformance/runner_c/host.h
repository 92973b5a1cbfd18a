// The host callbacks of docs/spec/conformance.md section 2 (host callbacks), written as plain C
// TVMPackedCFunc callbacks, with finalizers that count so every case can check that each ran
// exactly once.
#ifndef POLYFFI_TESTS_CONFORMANCE_RUNNER_C_HOST_H_
#define POLYFFI_TESTS_CONFORMANCE_RUNNER_C_HOST_H_

#include <string>

#include "ffi.h"

namespace conformance {

/*! \brief Whether name is one of the host.* callbacks. */
bool IsHostFunction(const std::string& name);

/*! \brief A new function wrapping host callback name, owned, tagged with the current case. */
ValuePtr MakeHostFunction(const std::string& name);

/*! \brief Host callables are attributed to the case running when they were created. */
void SetCurrentCase(int serial);

/*! \brief How many host callables of a case have not been finalized yet. */
int HostLive(int serial);

/*! \brief Host callables of a case finalized more than once (must be 0). */
int HostFinalizedTwice(int serial);

}  // namespace conformance

#endif  // POLYFFI_TESTS_CONFORMANCE_RUNNER_C_HOST_H_
