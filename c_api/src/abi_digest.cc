// TVMAPIGetAbiDigest: the ABI digest of the headers this library was compiled with. Built a
// second time with POLYFFI_ABI_DIGEST_VARIANT into build/lib/abi_variant/libpolyffi.so (tests
// only): a library identical in every export but its digest, for the bindings' mismatch tests.
#include <polyffi/c_runtime_api.h>

namespace {
#ifdef POLYFFI_ABI_DIGEST_VARIANT
// Not a SHA-256 of anything: a digest no real header can have.
constexpr const char kDigest[] = "variant-for-tests-" POLYFFI_ABI_DIGEST;
#else
constexpr const char kDigest[] = POLYFFI_ABI_DIGEST;
#endif
}  // namespace

int TVMAPIGetAbiDigest(const char** out) {
  if (out == nullptr) {
    TVMAPISetLastError("ValueError: TVMAPIGetAbiDigest: out is NULL");
    return -1;
  }
  *out = kDigest;
  return 0;
}
