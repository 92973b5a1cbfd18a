# Checks libpolyffi's dynamic symbol table (docs/spec/abi.md section 1, headers and symbols).
#   cmake -DNM=nm -DLIB=path/to/libpolyffi.so -DMODE=only_tvm|required -P check_symbols.cmake
# only_tvm: every defined dynamic symbol starts with "TVM" (hidden visibility alone lets
#           libstdc++ template instantiations leak; the version script must catch them).
# required: every function of docs/spec/abi.md section 3, functions (plus TVMAPIGetVersion) and
#           every other C function TVM 0.18's libtvm_runtime.so exports is exported as code.
foreach(_var NM LIB MODE)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "check_symbols.cmake: -D${_var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${LIB}")
  message(FATAL_ERROR "library not found: ${LIB}")
endif()

execute_process(COMMAND "${NM}" -D --defined-only "${LIB}"
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "nm -D --defined-only ${LIB} failed (${_rc}): ${_err}")
endif()

# Lines look like "0000000000012340 T TVMFuncCall" (or "TVMFuncCall@@VER" with a named
# version node). Keep type letter and name.
string(REPLACE "\n" ";" _lines "${_out}")
set(_exported "")
set(_leaked "")
foreach(_line IN LISTS _lines)
  if(_line MATCHES "^[0-9a-fA-F]*[ \t]+([A-Za-z])[ \t]+([^ \t@]+)")
    set(_type "${CMAKE_MATCH_1}")
    set(_name "${CMAKE_MATCH_2}")
    # An absolute symbol naming a version node (type A, e.g. "POLYFFI_0.1") is not an export.
    if(_type STREQUAL "A" AND _name MATCHES "^[A-Z_]+[0-9._]*$" AND NOT _name MATCHES "^TVM")
      continue()
    endif()
    if(_name MATCHES "^TVM")
      list(APPEND _exported "${_type}:${_name}")
    else()
      list(APPEND _leaked "${_type} ${_name}")
    endif()
  endif()
endforeach()

if(MODE STREQUAL "only_tvm")
  list(LENGTH _exported _n_ok)
  if(_n_ok EQUAL 0)
    message(FATAL_ERROR "no TVM* symbol exported by ${LIB}: nm output was:\n${_out}")
  endif()
  if(_leaked)
    list(LENGTH _leaked _n_bad)
    string(REPLACE ";" "\n  " _pretty "${_leaked}")
    message(FATAL_ERROR
      "${_n_bad} exported symbol(s) of ${LIB} do not start with TVM:\n  ${_pretty}")
  endif()
  message(STATUS "only TVM* exported: ${_n_ok} symbols")
elseif(MODE STREQUAL "required")
  set(_required
    TVMAPIGetVersion
    TVMFuncCall TVMFuncFree TVMFuncCreateFromCFunc TVMCFuncSetReturn TVMCbArgToReturn
    TVMFuncRegisterGlobal TVMFuncGetGlobal TVMFuncListGlobalNames TVMFuncRemoveGlobal
    TVMGetLastError TVMAPISetLastError
    TVMModLoadFromFile TVMModImport TVMModGetFunction TVMModFree
    TVMArrayAlloc TVMArrayFree TVMArrayCopyFromBytes TVMArrayCopyToBytes
    TVMArrayCopyFromTo TVMArrayFromDLPack TVMArrayToDLPack TVMDLManagedTensorCallDeleter
    TVMObjectGetTypeIndex TVMObjectTypeKey2Index TVMObjectTypeIndex2Key TVMObjectRetain
    TVMObjectFree TVMObjectDerivedFrom TVMByteArrayFree
    TVMSetStream TVMSynchronize
    TVMBackendGetFuncFromEnv TVMBackendRegisterSystemLibSymbol
    TVMBackendAllocWorkspace TVMBackendFreeWorkspace TVMBackendParallelLaunch
    TVMBackendParallelBarrier TVMBackendRunOnce
    # The rest of TVM 0.18's libtvm_runtime.so exports (nm -D --defined-only, 58 TVM* in all).
    TVMAPISetLastPythonError TVMGetLastPythonError TVMDropLastPythonError
    TVMGetLastBacktrace TVMThrowLastError TVMBackendRegisterEnvCAPI
    TVMArrayGetTypeIndex TVMStreamCreate TVMStreamFree TVMStreamStreamSynchronize
    TVMDeviceAllocDataSpace TVMDeviceAllocDataSpaceWithScope TVMDeviceFreeDataSpace
    TVMDeviceCopyDataFromTo
    TVMBackendAnyListSetPackedArg TVMBackendAnyListResetItem
    TVMBackendAnyListMoveFromPackedReturn
    TVMLogf TVMPlatformAbort
    # polyffi's direct call protocol (c_direct_api.h).
    TVMFuncCreateDirect TVMFuncGetDirect TVMDirectReturnString)
  set(_missing "")
  foreach(_fn IN LISTS _required)
    # Functions are text symbols (T); anything else (a data symbol, weak W is fine) is wrong.
    list(FIND _exported "T:${_fn}" _i)
    list(FIND _exported "W:${_fn}" _w)
    if(_i EQUAL -1 AND _w EQUAL -1)
      list(APPEND _missing ${_fn})
    endif()
  endforeach()
  if(_missing)
    list(LENGTH _missing _n_missing)
    string(REPLACE ";" "\n  " _pretty "${_missing}")
    message(FATAL_ERROR
      "${_n_missing} required ABI function(s) not exported by ${LIB}:\n  ${_pretty}")
  endif()
  list(LENGTH _required _n_req)
  message(STATUS "all ${_n_req} required ABI functions exported")
else()
  message(FATAL_ERROR "unknown MODE '${MODE}' (only_tvm or required)")
endif()
