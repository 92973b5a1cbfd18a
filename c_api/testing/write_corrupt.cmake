# Writes OUT: bytes that are not an ELF object, long enough that the loader complains about the
# header rather than about a short file.
if(NOT OUT)
  message(FATAL_ERROR "write_corrupt.cmake: pass -DOUT=<path>")
endif()
string(REPEAT "polyffi corrupt library fixture: these bytes are not an ELF shared object.\n" 8
  _garbage)
file(WRITE ${OUT} "${_garbage}")
