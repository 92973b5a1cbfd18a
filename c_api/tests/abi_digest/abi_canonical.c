/*
 * Prints the canonical text POLYFFI_ABI_DIGEST is the SHA-256 of (check_abi_digest.cmake
 * hashes it and compares): the declarations of c_runtime_api.h, c_backend_api.h and
 * c_async_api.h with comments
 * removed and whitespace runs collapsed to one space (the version macros and the digest macro
 * itself left out: they change without the ABI changing), then the size, alignment and field
 * offsets of every public struct as this compiler lays them out.
 *   abi_canonical <c_runtime_api.h> <c_backend_api.h> <c_async_api.h>
 */
#include <polyffi/c_async_api.h>
#include <polyffi/c_backend_api.h>
#include <polyffi/c_runtime_api.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines (after comment removal) that do not take part: their values change per release. */
static int Excluded(const char* line) {
  while (*line == ' ' || *line == '\t') ++line;
  return strncmp(line, "#define POLYFFI_VERSION", 23) == 0 ||
         strncmp(line, "#define POLYFFI_ABI_DIGEST", 26) == 0;
}

static int Canonical(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "abi_canonical: cannot open %s\n", path);
    return 1;
  }
  /* Pass 1: strip comments (string literals in these headers hold no comment markers). */
  size_t cap = 1 << 16, n = 0;
  char* text = malloc(cap);
  int c, prev = 0, in_block = 0, in_line = 0;
  while ((c = fgetc(f)) != EOF) {
    if (n + 2 >= cap) text = realloc(text, cap *= 2);
    if (in_block) {
      if (prev == '*' && c == '/') in_block = 0, c = 0;
    } else if (in_line) {
      if (c == '\n') in_line = 0, text[n++] = '\n';
    } else if (prev == '/' && c == '*') {
      --n, in_block = 1, c = 0;
    } else if (prev == '/' && c == '/') {
      --n, in_line = 1;
    } else {
      text[n++] = (char)c;
    }
    prev = c;
  }
  fclose(f);
  text[n] = '\0';
  /* Pass 2: per line, drop excluded ones; collapse whitespace (newlines included). */
  int space = 0, started = 0;
  for (char* line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    if (Excluded(line)) continue;
    for (const char* p = line; *p; ++p) {
      if (*p == ' ' || *p == '\t' || *p == '\r') {
        space = 1;
        continue;
      }
      if (space && started) putchar(' ');
      putchar(*p);
      space = 0, started = 1;
    }
    space = 1;
  }
  putchar('\n');
  free(text);
  return 0;
}

#define TYPE(T) printf("%s size %zu align %zu\n", #T, sizeof(T), alignof(T))
#define FIELD(T, f) \
  printf("%s.%s offset %zu size %zu\n", #T, #f, offsetof(T, f), sizeof(((T*)0)->f))

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: abi_canonical <c_runtime_api.h> <c_backend_api.h> <c_async_api.h>\n");
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    if (Canonical(argv[i]) != 0) return 1;
  }
  TYPE(TVMValue);
  FIELD(TVMValue, v_int64);
  FIELD(TVMValue, v_float64);
  FIELD(TVMValue, v_handle);
  FIELD(TVMValue, v_str);
  FIELD(TVMValue, v_type);
  FIELD(TVMValue, v_device);
  TYPE(TVMByteArray);
  FIELD(TVMByteArray, data);
  FIELD(TVMByteArray, size);
  TYPE(TVMArgTypeCode);
  TYPE(TVMParallelGroupEnv);
  FIELD(TVMParallelGroupEnv, sync_handle);
  FIELD(TVMParallelGroupEnv, num_task);
  TYPE(DLDataType);
  FIELD(DLDataType, code);
  FIELD(DLDataType, bits);
  FIELD(DLDataType, lanes);
  TYPE(DLDevice);
  FIELD(DLDevice, device_type);
  FIELD(DLDevice, device_id);
  TYPE(DLTensor);
  FIELD(DLTensor, data);
  FIELD(DLTensor, device);
  FIELD(DLTensor, ndim);
  FIELD(DLTensor, dtype);
  FIELD(DLTensor, shape);
  FIELD(DLTensor, strides);
  FIELD(DLTensor, byte_offset);
  TYPE(DLManagedTensor);
  FIELD(DLManagedTensor, dl_tensor);
  FIELD(DLManagedTensor, manager_ctx);
  FIELD(DLManagedTensor, deleter);
  TYPE(tvm_index_t);
  TYPE(tvm_crt_error_t);
  TYPE(TVMAsyncStatus);
  TYPE(TVMAsyncCancelState);
  return 0;
}
