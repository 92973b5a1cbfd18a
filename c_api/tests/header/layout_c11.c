/* Compile-time layout pin: the build fails if a public struct or a type code moves. Built as
 * strict C11 (the form a C binding generator sees). Run-time twin: layout_test.cc. */
#include <polyffi/c_backend_api.h>
#include <polyffi/dlpack_compat.h>
#include <stddef.h>
#include <stdint.h>

#include "layout_expected.h"

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
#define POLYFFI_CHECK_CODE(name, value) \
  _Static_assert((int)(name) == (value), #name " must be " #value);
#define POLYFFI_CHECK_SIZE(type, size) \
  _Static_assert(sizeof(type) == (size), "sizeof(" #type ") must be " #size);
#define POLYFFI_CHECK_OFFSET(type, member, offset)   \
  _Static_assert(offsetof(type, member) == (offset), \
                 "offsetof(" #type ", " #member ") must be " #offset);

POLYFFI_TYPE_CODES(POLYFFI_CHECK_CODE)
POLYFFI_STRUCT_SIZES(POLYFFI_CHECK_SIZE)
POLYFFI_STRUCT_OFFSETS(POLYFFI_CHECK_OFFSET)
POLYFFI_COMPAT_CODES(POLYFFI_CHECK_CODE)
POLYFFI_COMPAT_SIZES(POLYFFI_CHECK_SIZE)
POLYFFI_COMPAT_OFFSETS(POLYFFI_CHECK_OFFSET)
_Static_assert(_Alignof(TVMValue) == 8, "TVMValue must be 8-byte aligned");
#else
#error "the pinned layout is for 64-bit (LP64) targets"
#endif

/* ISO C forbids an empty translation unit. */
typedef int polyffi_layout_c11_nonempty;
