/* c_direct_api.h on its own, as strict C11, included twice. Built, never run. */
#include <polyffi/c_direct_api.h>
#include <polyffi/c_direct_api.h>

static int polyffi_header_direct_nop(void* resource, const TVMValue* args, const int* codes,
                                     int num_args, TVMValue* ret_val, int* ret_type_code) {
  (void)resource, (void)args, (void)codes, (void)num_args, (void)ret_val, (void)ret_type_code;
  return 0;
}

TVMDirectCFunc polyffi_header_direct_c11_probe(void);
TVMDirectCFunc polyffi_header_direct_c11_probe(void) { return &polyffi_header_direct_nop; }
