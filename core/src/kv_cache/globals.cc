// The globals of TVM 0.27's paged KV cache (names and argument lists as TVM registers them):
//   vm.builtin.paged_attention_kv_cache_create(28 or 29 arguments, see below)
//   vm.builtin.kv_state_clear / add_sequence / remove_sequence / fork_sequence / popn /
//     begin_forward(cache, seq_ids Shape, append_lengths Shape[, token tree None]) / end_forward
//   vm.builtin.attention_kv_cache_attention_with_fused_qkv(cache, layer, sm_scale, qkv, out)
//   vm.builtin.attention_kv_cache_empty / get_num_available_pages /
//     get_total_sequence_length / get_query_positions
// Plus polyffi.kv_cache.sequence_length(cache, seq_id) for drivers and tests.
#include <string>
#include <vector>

#include "kv_cache/paged_kv_cache.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"
#include "polyffi/value.h"
#include "relax_vm/relax_vm.h"

namespace polyffi {
namespace kv_cache {
namespace {

ObjectPtr<PagedKVCacheObj> CacheArg(const Args& args, int i) {
  ObjectPtr<Object> o = args.Obj(i, PagedKVCacheObj::RuntimeTypeIndex());
  return ObjectPtr<PagedKVCacheObj>::Adopt(static_cast<PagedKVCacheObj*>(o.release()));
}

ShapeTupleObj* ShapeOf(const Args& args, int i, const char* what) {
  if (ShapeTupleObj* s = relax_vm::ShapeArg(args, i)) return s;
  Throw("TypeError", args.fname(), ": ", what, " (argument ", i, ") must be a Shape, got ",
        TypeCodeName(args.code(i)));
}

ObjectPtr<FunctionObj> FunctionOf(const RetValue& v, const std::string& what) {
  Object* o = v.object();
  if (o == nullptr || !o->IsInstance(FunctionObj::kTypeIndex)) {
    Throw("TypeError", "paged_attention_kv_cache_create: ", what, " must be a function, got ",
          TypeCodeName(v.type_code()));
  }
  return ObjectPtr<FunctionObj>::Borrow(static_cast<FunctionObj*>(o));
}

ObjectPtr<FunctionObj> FunctionArg(const Args& args, int i, const char* what) {
  RetValue v;
  v.SetFromC(args.value(i), args.code(i));
  return FunctionOf(v, std::string(what) + " (argument " + std::to_string(i) + ")");
}

/*! \brief A backend tuple: ("tirx", f) gives f; () gives null; "flashinfer" is refused. */
ObjectPtr<FunctionObj> BackendArg(const Args& args, int i, const char* what, bool required) {
  const std::string where = std::string(what) + " (argument " + std::to_string(i) + ")";
  Object* o =
      args.code(i) == kTVMObjectHandle ? static_cast<Object*>(args.value(i).v_handle) : nullptr;
  if (o == nullptr || !o->IsInstance(ArrayObj::kTypeIndex)) {
    Throw("TypeError", "paged_attention_kv_cache_create: ", where,
          " must be a tuple (backend, function), got ", TypeCodeName(args.code(i)));
  }
  const auto& items = static_cast<ArrayObj*>(o)->items;
  if (items.empty()) {
    if (required) {
      Throw("ValueError", "paged_attention_kv_cache_create: ", where,
            " is empty but the model needs it");
    }
    return ObjectPtr<FunctionObj>();
  }
  if (items[0].type_code() != kTVMStr) {
    Throw("TypeError", "paged_attention_kv_cache_create: ", where,
          " must start with the backend name");
  }
  const std::string backend = items[0].str();
  if (backend != "tirx") {
    Throw("ValueError", "paged_attention_kv_cache_create: ", where, ": backend \"", backend,
          "\" is not available (polyffi runs TVM's \"tirx\" kernels on the CPU)");
  }
  if (items.size() != 2) {
    Throw("ValueError", "paged_attention_kv_cache_create: ", where,
          " must be (\"tirx\", function), got ", items.size(), " items");
  }
  return FunctionOf(items[1], where);
}

int64_t PositiveArg(const Args& args, int64_t v, const char* what) {
  if (v <= 0 || v > (int64_t{1} << 31)) {
    Throw("ValueError", args.fname(), ": ", what, " must be in [1, 2^31], got ", v);
  }
  return v;
}

// TVM 0.27's argument list (relax/frontend/nn/llm/kv_cache.py, TIRPagedKVCache):
//  0 Shape(max_batch_size, max_total_seq_len, prefill_chunk_size, page_size,
//          support_sliding_window[, layer_sliding_window_size])
//  1 Shape layer partition (indptr; one group here)   2 num_qo_heads   3 num_kv_heads
//  4 qk_head_dim   5 v_head_dim   6 Shape attention kind per layer (0 = MHA)
//  7 enable_disaggregation   8 rope_mode   9 rope_scale   10 rope_theta   11 rope_ext_factors
//  12 a 0-d tensor of the cache dtype   13 transpose_append (MHA)   14 transpose_append (MLA)
//  15 ragged prefill   16 paged prefill   17 paged decode   18 paged prefill sliding window
//  19 paged decode sliding window   20 tree-mask prefill over pages   21 tree-mask ragged
//  22 MLA prefill   23 (merge_inplace, ...)   24 split_rotary   25 copy_single_page
//  26 debug_get_kv   27 compact_kv_copy   [28 CUDA graph flag, ignored]
POLYFFI_CORE_GLOBAL("vm.builtin.paged_attention_kv_cache_create", [](const Args& args,
                                                                     RetValue* rv) {
  if (args.size() != 28 && args.size() != 29) {
    Throw("TypeError", args.fname(), ": expected 28 or 29 arguments but got ", args.size());
  }
  ShapeTupleObj* cfg = ShapeOf(args, 0, "the cache configuration");
  if (cfg->size() != 5 && cfg->size() != 6) {
    Throw("ValueError", args.fname(), ": the cache configuration has ", cfg->size(),
          " fields, expected 5 or 6");
  }
  ShapeTupleObj* layers = ShapeOf(args, 1, "the layer partition");
  if (layers->size() != 2) {
    Throw("ValueError", args.fname(), ": the layer partition must be (begin, end) for one group");
  }
  Config c;
  c.max_batch_size = PositiveArg(args, cfg->data()[0], "max_batch_size");
  const int64_t capacity = PositiveArg(args, cfg->data()[1], "max_total_seq_len");
  c.prefill_chunk_size = PositiveArg(args, cfg->data()[2], "prefill_chunk_size");
  c.page_size = PositiveArg(args, cfg->data()[3], "page_size");
  if (cfg->data()[4] != 0) {
    Throw("ValueError", args.fname(),
          ": sliding window caches (support_sliding_window=1) are not supported by polyffi");
  }
  // Scratch and aux arrays are sized by these two; bound them so a hostile configuration is a
  // ValueError rather than a failed multi-gigabyte allocation.
  if (c.max_batch_size > (int64_t{1} << 20) || c.prefill_chunk_size > (int64_t{1} << 24)) {
    Throw("ValueError", args.fname(), ": max_batch_size ", c.max_batch_size,
          " or prefill_chunk_size ", c.prefill_chunk_size, " is too large (at most 2^20, 2^24)");
  }
  c.num_total_pages = (capacity + c.page_size - 1) / c.page_size + 1;
  const int64_t layer_begin = layers->data()[0], layer_end = layers->data()[1];
  if (layer_begin != 0 || layer_end <= 0 || layer_end > 4096) {
    Throw("ValueError", args.fname(), ": layer partition [", layer_begin, ", ", layer_end,
          ") is not supported (one group starting at layer 0)");
  }
  c.num_layers = layer_end;
  c.num_qo_heads = PositiveArg(args, args.Int(2), "num_qo_heads");
  c.num_kv_heads = PositiveArg(args, args.Int(3), "num_kv_heads");
  c.head_dim = PositiveArg(args, args.Int(4), "qk_head_dim");
  if (args.Int(5) != c.head_dim) {
    Throw("ValueError", args.fname(), ": v_head_dim ", args.Int(5), " differs from qk_head_dim ",
          c.head_dim, " (only multi-head attention is supported)");
  }
  if (c.num_qo_heads % c.num_kv_heads != 0) {
    Throw("ValueError", args.fname(), ": num_qo_heads ", c.num_qo_heads,
          " is not a multiple of num_kv_heads ", c.num_kv_heads);
  }
  ShapeTupleObj* kinds = ShapeOf(args, 6, "the attention kinds");
  if (kinds->ndim() != c.num_layers) {
    Throw("ValueError", args.fname(), ": ", kinds->ndim(), " attention kinds for ", c.num_layers,
          " layers");
  }
  for (size_t i = 0; i < kinds->size(); ++i) {
    if (kinds->data()[i] != 0) {
      Throw("ValueError", args.fname(), ": layer ", i, " has attention kind ", kinds->data()[i],
            "; only multi-head attention (0) is supported by polyffi");
    }
  }
  if (args.Bool(7)) {
    Throw("ValueError", args.fname(), ": KV transfer (disaggregation) is not supported");
  }
  const int64_t rope_mode = args.Int(8);
  if (rope_mode < 0 || rope_mode > 2) {
    Throw("ValueError", args.fname(), ": rope_mode ", rope_mode, " is not 0, 1 or 2");
  }
  c.rope_mode = static_cast<int>(rope_mode);
  c.rotary_scale = args.Float(9);
  c.rotary_theta = args.Float(10);
  if (args.code(11) == kTVMNDArrayHandle || args.code(11) == kTVMDLTensorHandle) {
    Throw("ValueError", args.fname(), ": RoPE extension factors are not supported");
  }
  if (args.code(12) != kTVMNDArrayHandle && args.code(12) != kTVMDLTensorHandle) {
    Throw("TypeError", args.fname(), ": argument 12 must be a tensor of the cache dtype, got ",
          TypeCodeName(args.code(12)));
  }
  const DLTensor* init = static_cast<DLTensor*>(args.value(12).v_handle);
  if (init == nullptr || DeviceTypeOf(init->device) != kDLCPU || init->dtype.lanes != 1 ||
      (init->dtype.code != kDLFloat && init->dtype.code != kDLBfloat) || init->dtype.bits < 16) {
    Throw("ValueError", args.fname(), ": the cache dtype tensor must be a float tensor on the CPU");
  }
  c.dtype = init->dtype;
  Kernels k;
  k.transpose_append = FunctionArg(args, 13, "transpose_append");
  k.prefill_ragged = BackendArg(args, 15, "ragged prefill", true);
  k.prefill_paged = BackendArg(args, 16, "paged prefill", true);
  k.decode_paged = BackendArg(args, 17, "paged decode", true);
  {
    Object* o =
        args.code(23) == kTVMObjectHandle ? static_cast<Object*>(args.value(23).v_handle) : nullptr;
    if (o == nullptr || !o->IsInstance(ArrayObj::kTypeIndex) ||
        static_cast<ArrayObj*>(o)->items.empty()) {
      Throw("TypeError", args.fname(),
            ": argument 23 must be a non-empty tuple of merge functions");
    }
    k.merge_inplace = FunctionOf(static_cast<ArrayObj*>(o)->items[0], "merge_inplace");
  }
  k.split_rotary = FunctionArg(args, 24, "split_rotary");
  k.copy_single_page = FunctionArg(args, 25, "copy_single_page");
  // The pages of every layer must fit in memory the way TVM allocates them (one tensor each).
  const double bytes = static_cast<double>(c.num_total_pages) * 2 * c.num_kv_heads * c.page_size *
                       c.head_dim * (c.dtype.bits / 8) * c.num_layers;
  if (bytes > 64.0 * (1 << 30)) {
    Throw("ValueError", args.fname(), ": the cache would take ", bytes / (1 << 30),
          " GiB (more than 64 GiB)");
  }
  rv->SetObject(MakeObject<PagedKVCacheObj>(c, std::move(k)));
});

POLYFFI_CORE_GLOBAL("vm.builtin.kv_state_clear", [](const Args& args, RetValue*) {
  args.CheckArity(1);
  CacheArg(args, 0)->Clear();
});

POLYFFI_CORE_GLOBAL("vm.builtin.kv_state_add_sequence", [](const Args& args, RetValue*) {
  args.CheckArity(2);
  CacheArg(args, 0)->AddSequence(args.Int(1));
});

POLYFFI_CORE_GLOBAL("vm.builtin.kv_state_remove_sequence", [](const Args& args, RetValue*) {
  args.CheckArity(2);
  CacheArg(args, 0)->RemoveSequence(args.Int(1));
});

POLYFFI_CORE_GLOBAL("vm.builtin.kv_state_fork_sequence", [](const Args& args, RetValue*) {
  args.CheckArity(4);
  CacheArg(args, 0)->ForkSequence(args.Int(1), args.Int(2), args.Int(3));
});

POLYFFI_CORE_GLOBAL("vm.builtin.kv_state_popn", [](const Args& args, RetValue*) {
  args.CheckArity(3);
  CacheArg(args, 0)->PopN(args.Int(1), args.Int(2));
});

POLYFFI_CORE_GLOBAL("vm.builtin.kv_state_begin_forward", [](const Args& args, RetValue*) {
  if (args.size() != 3) args.CheckArity(4);
  auto cache = CacheArg(args, 0);
  ShapeTupleObj* ids = ShapeOf(args, 1, "seq_ids");
  ShapeTupleObj* lens = ShapeOf(args, 2, "append_lengths");
  if (args.size() == 4 && args.code(3) != kTVMNullptr) {
    Throw("ValueError", args.fname(), ": token trees are not supported by polyffi's cache");
  }
  if (ids->size() != lens->size()) {
    Throw("ValueError", "The seq_ids size (", ids->size(), ") and append_lengths size (",
          lens->size(), ") mismatch.");
  }
  cache->BeginForward(ids->data(), lens->data(), ids->ndim());
});

POLYFFI_CORE_GLOBAL("vm.builtin.kv_state_end_forward", [](const Args& args, RetValue*) {
  args.CheckArity(1);
  CacheArg(args, 0)->EndForward();
});

POLYFFI_CORE_GLOBAL("vm.builtin.attention_kv_cache_attention_with_fused_qkv", [](const Args& args,
                                                                                 RetValue*) {
  args.CheckArity(5);
  auto cache = CacheArg(args, 0);
  const int64_t layer = args.Int(1);
  const double sm_scale = args.Float(2);
  for (int i : {3, 4}) {
    const int c = args.code(i);
    if ((c != kTVMNDArrayHandle && c != kTVMDLTensorHandle) || args.value(i).v_handle == nullptr) {
      args.Mismatch(i, "Tensor");
    }
  }
  cache->AttentionWithFusedQKV(layer, *static_cast<DLTensor*>(args.value(3).v_handle),
                               *static_cast<DLTensor*>(args.value(4).v_handle), sm_scale);
});

POLYFFI_CORE_GLOBAL("vm.builtin.attention_kv_cache_empty", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetBool(CacheArg(args, 0)->Empty());
});

POLYFFI_CORE_GLOBAL("vm.builtin.attention_kv_cache_get_num_available_pages",
                    [](const Args& args, RetValue* rv) {
                      args.CheckArity(1);
                      rv->SetInt(CacheArg(args, 0)->NumAvailablePages());
                    });

POLYFFI_CORE_GLOBAL("vm.builtin.attention_kv_cache_get_total_sequence_length",
                    [](const Args& args, RetValue* rv) {
                      args.CheckArity(1);
                      rv->SetInt(CacheArg(args, 0)->TotalSequenceLength());
                    });

POLYFFI_CORE_GLOBAL("vm.builtin.attention_kv_cache_get_query_positions",
                    [](const Args& args, RetValue* rv) {
                      args.CheckArity(1);
                      rv->SetObject(CacheArg(args, 0)->QueryPositions());
                    });

POLYFFI_CORE_GLOBAL("polyffi.kv_cache.sequence_length", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  rv->SetInt(CacheArg(args, 0)->SequenceLength(args.Int(1)));
});

}  // namespace
}  // namespace kv_cache
}  // namespace polyffi
