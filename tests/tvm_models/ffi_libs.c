/*
 * Hand-made tvm-ffi ABI libraries for the loader's refusals and the `__tvm_ffi__library_bin`
 * reader (one variant per FFI_LIB_* define): what TVM 0.27 writes is in tvm027/, these are the
 * cases it never writes. Each exports one kernel, `__tvm_ffi_answer`, returning 0.
 */
#include <stdint.h>

typedef struct {
  int32_t type_index;
  uint32_t pad;
  int64_t value;
} Any;

#define EXPORT __attribute__((visibility("default")))

EXPORT int32_t __tvm_ffi_answer(void* self, const Any* args, int32_t n, Any* result) {
  (void)self, (void)args, (void)n, (void)result;
  return 0;
}

#if defined(FFI_LIB_UNKNOWN_SLOT)
/* A context slot polyffi does not fill (a future tvm-ffi service): calling it would be NULL. */
EXPORT __attribute__((weak)) void* __TVMFFIEnvTensorAlloc = 0;
#endif

#if defined(FFI_LIB_UNKNOWN_IMPORT)
/* A tvm-ffi runtime function polyffi does not provide. */
extern int TVMFFIFunctionGetGlobal(const void* name, void** out);
EXPORT int32_t __tvm_ffi_lookup(void* self, const Any* args, int32_t n, Any* result) {
  (void)self, (void)args, (void)n, (void)result;
  void* out = 0;
  return TVMFFIFunctionGetGlobal(0, &out);
}
#endif

#if defined(FFI_LIB_PARALLEL_RAISE)
/* A parallel loop whose last task raises (on a pool thread when there are several): the error
 * must reach the caller of the kernel, not stay on the worker. */
typedef struct {
  void* sync;
  int32_t num_task;
} Env;
typedef int (*Lambda)(int task_id, Env* env, void* cdata);
EXPORT __attribute__((weak)) int (*__TVMBackendParallelLaunch)(Lambda, void*, int) = 0;
extern void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, int32_t n);

static int Task(int task_id, Env* env, void* cdata) {
  (void)cdata;
  if (task_id != env->num_task - 1) return 0;
  const char* parts[3] = {"task ", task_id == 0 ? "0" : "N", " refused"};
  TVMFFIErrorSetRaisedFromCStrParts("ValueError", parts, 3);
  return -1;
}

EXPORT int32_t __tvm_ffi_parallel_raise(void* self, const Any* args, int32_t n, Any* result) {
  (void)self, (void)args, (void)n, (void)result;
  return __TVMBackendParallelLaunch(Task, 0, 0) == 0 ? 0 : -1;
}
#endif

/* ---- __tvm_ffi__library_bin variants ------------------------------------------------------ */
/* Little-endian u64s written as 8 bytes each. */
#define U64(x)                                                   \
  (unsigned char)((x)&0xff), (unsigned char)(((x) >> 8) & 0xff), \
      (unsigned char)(((x) >> 16) & 0xff), (unsigned char)(((x) >> 24) & 0xff), 0, 0, 0, 0
#define KIND_LIB U64(4), '_', 'l', 'i', 'b'
/* "polyffi_test.echo": the test registers ffi.Module.load_from_bytes.polyffi_test.echo */
#define KIND_ECHO \
  U64(17), 'p', 'o', 'l', 'y', 'f', 'f', 'i', '_', 't', 'e', 's', 't', '.', 'e', 'c', 'h', 'o'
#define KIND_NONE U64(12), 'n', 'o', '.', 's', 'u', 'c', 'h', '.', 'k', 'i', 'n', 'd'

#if defined(FFI_LIB_BIN_TREE)
/* Root = echo module "abc" importing the library (module 1) and a second echo "de" (module 2),
 * which imports the library too: indptr [0, 2, 2, 3], children [1, 2, 1]. */
#define PAYLOAD                                                                                   \
  U64(4), U64(0), U64(2), U64(2), U64(3), U64(3), U64(1), U64(2), U64(1), KIND_ECHO, U64(3), 'a', \
      'b', 'c', KIND_LIB, KIND_ECHO, U64(2), 'd', 'e'
#define PAYLOAD_SIZE (9 * 8 + 25 + 8 + 3 + 12 + 25 + 8 + 2)
#elif defined(FFI_LIB_BIN_NO_LOADER)
#define PAYLOAD U64(3), U64(0), U64(1), U64(1), U64(1), U64(1), KIND_NONE, U64(1), 'x', KIND_LIB
#define PAYLOAD_SIZE (6 * 8 + 20 + 8 + 1 + 12)
#elif defined(FFI_LIB_BIN_TRUNCATED)
/* The second module's bytes announce 100 and hold 2. */
#define PAYLOAD \
  U64(3), U64(0), U64(1), U64(1), U64(1), U64(1), KIND_LIB, KIND_ECHO, U64(100), 'd', 'e'
#define PAYLOAD_SIZE (6 * 8 + 12 + 25 + 8 + 2)
#elif defined(FFI_LIB_BIN_CYCLE)
/* Module 0 imports 1, module 1 imports 0. */
#define PAYLOAD \
  U64(3), U64(0), U64(1), U64(2), U64(2), U64(1), U64(0), KIND_ECHO, U64(1), 'x', KIND_LIB
#define PAYLOAD_SIZE (7 * 8 + 25 + 8 + 1 + 12)
#elif defined(FFI_LIB_BIN_BAD_CHILD)
#define PAYLOAD U64(2), U64(0), U64(1), U64(1), U64(7), KIND_LIB
#define PAYLOAD_SIZE (5 * 8 + 12)
#elif defined(FFI_LIB_BIN_SIZE_OVERFLOW)
/* The size prefix announces more than the symbol holds. */
#define PAYLOAD U64(2), U64(0), U64(0), U64(0), KIND_LIB
#define PAYLOAD_SIZE (1000000)
#endif

#ifdef PAYLOAD
EXPORT const unsigned char __tvm_ffi__library_bin[] = {U64(PAYLOAD_SIZE), PAYLOAD};
#endif
