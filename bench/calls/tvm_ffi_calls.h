// The apache-tvm-ffi side of bench_calls, compiled only when CMake found tvm-ffi. It lives in
// its own translation unit because tvm-ffi ships its own dlpack.h (a newer version than the
// system one polyffi's header includes); the two never meet in one file.
#ifndef POLYFFI_BENCH_CALLS_TVM_FFI_CALLS_H_
#define POLYFFI_BENCH_CALLS_TVM_FFI_CALLS_H_

namespace bench {
/*!
 * \brief Load the tvm-ffi fixture library (bench.* globals) and add the calls/.../tvm_ffi
 *  cases. \param fixture_path path of libbench_tvm_ffi_fixtures.so.
 */
void AddTvmFfiCallCases(const char* fixture_path);
}  // namespace bench

#endif  // POLYFFI_BENCH_CALLS_TVM_FFI_CALLS_H_
