// type_code_name.h on its own, as strict C++17, included twice. Built, never run.
#include <polyffi/type_code_name.h>

const char* polyffi_header_type_code_name_cxx17_probe() { return PolyffiTypeCodeName(kTVMStr); }
