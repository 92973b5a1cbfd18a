# nlohmann/json, header-only, copied from Debian's nlohmann-json3-dev by ci/package.sh so that the
# packaged sources (sdist, crate, npm fallback) build without it installed. Gives the target that
# core/CMakeLists.txt links: nlohmann_json::nlohmann_json.
if(NOT TARGET nlohmann_json::nlohmann_json)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  get_filename_component(_polyffi_vendor_include "${CMAKE_CURRENT_LIST_DIR}/../../include" ABSOLUTE)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_polyffi_vendor_include}")
endif()
