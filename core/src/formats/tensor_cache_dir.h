// A tensor-cache directory (MLC-LLM's weight format, TVM 0.27's vm.builtin.tensor_cache.load and
// tvm.contrib.tvmjs.dump_tensor_cache): a JSON index, tensor-cache.json (ndarray-cache.json in
// older MLC-LLM caches, read when there is no tensor-cache.json), and binary shards beside it.
//   {"records": [{"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": N,
//                 "records": [{"name", "shape", "dtype", "format", "nbytes", "byteOffset"}]}]}
// A parameter's format "f32-to-bf16" with dtype float32 stores bfloat16 (the upper half of each
// float32); any other format is the raw little-endian bytes of its shape and dtype, as TVM reads.
//
// Every refusal is a ValueError naming the file (docs/abi-decisions.md, "Binary formats"): the
// index is not JSON or lacks a field, a shard is missing or is not nbytes long, a parameter lies
// outside its shard or its nbytes does not match its shape and dtype, a shard path leaves the
// directory. Shards are read through the core's bounds-checked ByteReader.
#ifndef POLYFFI_CORE_FORMATS_TENSOR_CACHE_DIR_H_
#define POLYFFI_CORE_FORMATS_TENSOR_CACHE_DIR_H_

#include <string>
#include <utility>
#include <vector>

#include "polyffi/ndarray.h"

namespace polyffi {
namespace formats {

/*! \brief Every parameter of the cache in dir, in index order (shard by shard), on the CPU. */
std::vector<std::pair<std::string, ObjectPtr<NDArrayObj>>> LoadTensorCacheDir(
    const std::string& dir);

}  // namespace formats
}  // namespace polyffi
#endif  // POLYFFI_CORE_FORMATS_TENSOR_CACHE_DIR_H_
