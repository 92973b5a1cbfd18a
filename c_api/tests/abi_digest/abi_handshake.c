/*
 * The ABI handshake from C: a program compiled against c_runtime_api.h compares
 * POLYFFI_ABI_DIGEST with what the loaded libpolyffi reports (TVMAPIGetAbiDigest) and refuses a
 * library whose digest differs, with a message naming both sides.
 *   abi_handshake                    the linked libpolyffi must be accepted
 *   abi_handshake --expect-refusal   run with LD_LIBRARY_PATH=build/lib/abi_variant (the same
 *                                    library with another digest; the RUNPATH gives way to it):
 *                                    it must be refused, naming both digests
 */
#include <polyffi/c_runtime_api.h>
#include <stdio.h>
#include <string.h>

/* 0 when the loaded library's digest is the one this program was built against; else -1 and
 * the reason in why. */
static int Handshake(char* why, size_t size) {
  int major = -1, minor = -1, patch = -1;
  const char* digest = NULL;
  TVMAPIGetVersion(&major, &minor, &patch);
  if (TVMAPIGetAbiDigest(&digest) != 0 || digest == NULL) {
    snprintf(why, size, "RuntimeError: the loaded libpolyffi reports no ABI digest");
    return -1;
  }
  if (strcmp(digest, POLYFFI_ABI_DIGEST) != 0) {
    snprintf(why, size,
             "RuntimeError: polyffi ABI mismatch: this program was built against libpolyffi %s "
             "with ABI digest %s, but the loaded libpolyffi %d.%d.%d has ABI digest %s",
             POLYFFI_VERSION, POLYFFI_ABI_DIGEST, major, minor, patch, digest);
    return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  char why[1024];
  int expect_refusal = argc > 1 && strcmp(argv[1], "--expect-refusal") == 0;
  if (TVMAPIGetAbiDigest(NULL) != -1 ||
      strcmp(TVMGetLastError(), "ValueError: TVMAPIGetAbiDigest: out is NULL") != 0) {
    fprintf(stderr, "FAIL: TVMAPIGetAbiDigest(NULL) must fail with a ValueError\n");
    return 1;
  }
  int rc = Handshake(why, sizeof(why));
  if (!expect_refusal) {
    if (rc != 0) fprintf(stderr, "FAIL: %s\n", why);
    return rc == 0 ? 0 : 1;
  }
  if (rc == 0) {
    fprintf(stderr, "FAIL: the loaded library was accepted (is LD_LIBRARY_PATH the variant's?)\n");
    return 1;
  }
  const char* loaded = NULL;
  TVMAPIGetAbiDigest(&loaded);
  if (strstr(why, POLYFFI_ABI_DIGEST) == NULL || strstr(why, loaded) == NULL ||
      strncmp(why, "RuntimeError: polyffi ABI mismatch", 34) != 0) {
    fprintf(stderr, "FAIL: the refusal does not name both digests: %s\n", why);
    return 1;
  }
  printf("refused as expected: %s\n", why);
  return 0;
}
