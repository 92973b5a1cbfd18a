/*
 * DLPack >= 1.0 definitions missing from older system headers (Debian 12 ships DLPack 0.6).
 * Defines exactly kDLBool, DLPackVersion, DLManagedTensorVersioned and its flag bits, with the
 * values and layout of the DLPack specification, and only when <dlpack/dlpack.h> lacks them.
 * The C ABI itself exchanges the classic DLManagedTensor; bindings use these to accept and
 * produce versioned capsules (numpy >= 2, torch). c_api/tests pins the layout.
 */
#ifndef POLYFFI_DLPACK_COMPAT_H_
#define POLYFFI_DLPACK_COMPAT_H_

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(DLPACK_MAJOR_VERSION)
/* DLPack < 1.0: DLPACK_VERSION is 60..80 and the versioned struct does not exist. */

#if DLPACK_VERSION < 80
/*! \brief Boolean dtype code of DLPack >= 0.8 (8-bit storage). */
#define kDLBool ((DLDataTypeCode)6)
#endif

/*! \brief DLPack ABI version carried by a versioned tensor. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/*! \brief DLManagedTensorVersioned of DLPack 1.0. */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

#endif /* !DLPACK_MAJOR_VERSION */

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* POLYFFI_DLPACK_COMPAT_H_ */
