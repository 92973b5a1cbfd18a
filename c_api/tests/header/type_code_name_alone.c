/* type_code_name.h on its own, as strict C11, included twice. Built, never run. */
#include <polyffi/type_code_name.h>

const char* polyffi_header_type_code_name_c11_probe(void);
const char* polyffi_header_type_code_name_c11_probe(void) { return PolyffiTypeCodeName(kTVMStr); }
