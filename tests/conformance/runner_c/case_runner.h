// Runs one conformance case (a JSON object, see tests/conformance/README.md) against the C ABI.
#ifndef POLYFFI_TESTS_CONFORMANCE_RUNNER_C_CASE_RUNNER_H_
#define POLYFFI_TESTS_CONFORMANCE_RUNNER_C_CASE_RUNNER_H_

#include <nlohmann/json.hpp>
#include <string>

namespace conformance {

/*! \brief Outcome of one case: ok, or the first failure with the step that produced it. */
struct CaseResult {
  bool ok = true;
  std::string message;
};

/*!
 * \brief Run a case. Every handle the case created is released before this returns, every
 *  global it registered is removed, and its host callables must all have been finalized once.
 * \param lib_dir where lib<name>.so module fixtures live.
 * \param serial a number unique to this case, to attribute host callables to it.
 */
CaseResult RunCase(const nlohmann::json& c, const std::string& lib_dir, int serial);

}  // namespace conformance

#endif  // POLYFFI_TESTS_CONFORMANCE_RUNNER_C_CASE_RUNNER_H_
