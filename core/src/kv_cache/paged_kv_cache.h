// TVM 0.27's paged KV cache for the CPU (relax.vm.PagedAttentionKVCache): the object a compiled
// language model creates with vm.builtin.paged_attention_kv_cache_create and its attention
// layers call through vm.builtin.attention_kv_cache_*; a driver manages sequences with
// vm.builtin.kv_state_*.
//
// Semantics follow TVM 0.27's runtime (src/runtime/vm/paged_kv_cache.cc): KV data lives in pages
// of `page_size` tokens, one tensor per layer of shape (num_pages, 2, num_kv_heads, page_size,
// head_dim) (index 0 on the "2" axis is K, 1 is V); a sequence owns a list of pages; the compiled
// kernels handed to the constructor split q/k/v and apply rotary embeddings, append K/V to the
// pages, and compute attention from the page table and the auxiliary int32 arrays built at
// begin_forward (page indptr/indices, last-page lengths, rope offsets, positions), which are laid
// out as TVM's kernels read them.
//
// Differences from TVM (the results are the same): a fork copies the parent's pages instead of
// sharing its full pages, so a forked sequence uses pages of its own; sliding windows, attention
// sinks, token trees, MLA and KV transfer are refused with a ValueError.
#ifndef POLYFFI_CORE_KV_CACHE_PAGED_KV_CACHE_H_
#define POLYFFI_CORE_KV_CACHE_PAGED_KV_CACHE_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "polyffi/function.h"
#include "polyffi/ndarray.h"
#include "polyffi/object.h"

namespace polyffi {
namespace kv_cache {

/*! \brief The kernels the compiled model hands the cache (TVM's "tirx" backend). */
struct Kernels {
  ObjectPtr<FunctionObj> transpose_append;  // (pages, k, v, position_map)
  ObjectPtr<FunctionObj> prefill_ragged;    // self attention over the new tokens
  ObjectPtr<FunctionObj> prefill_paged;     // attention of the new tokens over cached pages
  ObjectPtr<FunctionObj> decode_paged;      // one token per sequence over its pages
  ObjectPtr<FunctionObj> merge_inplace;     // (o, lse, o_other, lse_other)
  ObjectPtr<FunctionObj> split_rotary;      // (qkv, positions, q, k, v, apply_rope)
  ObjectPtr<FunctionObj> copy_single_page;  // (pages, src, dst, length)
};

struct Config {
  int64_t num_layers = 0;
  int64_t num_qo_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t page_size = 0;
  int64_t num_total_pages = 0;
  int64_t max_batch_size = 0;      // reserved number of sequences in one forward
  int64_t prefill_chunk_size = 0;  // the most tokens in one forward
  int rope_mode = 0;               // 0 none, 1 normal (k roped before it is cached), 2 inline
  double rotary_scale = 1.0;
  double rotary_theta = 10000.0;
  DLDataType dtype{kDLFloat, 32, 1};
};

class PagedKVCacheObj final : public Object {
 public:
  /*! \brief relax.vm.PagedAttentionKVCache (under relax.vm.AttentionKVCache, relax.vm.KVState). */
  static uint32_t RuntimeTypeIndex();
  /*! \brief relax.vm.KVState: what the kv_state_* globals accept. */
  static uint32_t KVStateTypeIndex();

  PagedKVCacheObj(const Config& config, Kernels kernels);

  // ---- kv_state_* (errors: unknown sequence KeyError, duplicate ValueError, full ValueError)
  void Clear();
  void AddSequence(int64_t seq_id);
  void RemoveSequence(int64_t seq_id);
  void ForkSequence(int64_t parent_seq_id, int64_t child_seq_id, int64_t fork_pos);
  void PopN(int64_t seq_id, int64_t n);
  void BeginForward(const int64_t* seq_ids, const int64_t* append_lengths, int64_t batch);
  void EndForward() {}

  // ---- attention_kv_cache_*
  void AttentionWithFusedQKV(int64_t layer_id, const DLTensor& qkv, const DLTensor& out,
                             double sm_scale);
  bool Empty() const;
  int64_t NumAvailablePages() const { return static_cast<int64_t>(free_pages_.size()); }
  int64_t TotalSequenceLength() const;
  /*! \brief The rope positions of the tokens of the current forward (int32). */
  ObjectPtr<NDArrayObj> QueryPositions() const;
  /*! \brief Length of a sequence (KeyError when unknown). */
  int64_t SequenceLength(int64_t seq_id) const;

 private:
  struct Sequence {
    std::vector<int32_t> pages;
    int64_t length = 0;
  };
  /*! \brief int32 buffer of fixed capacity, 64-byte aligned, that kernels read. */
  struct AuxArray {
    ObjectPtr<NDArrayObj> buf;
    int64_t size = 0;
    int32_t* data() const { return static_cast<int32_t*>(buf->tensor.data); }
    void Clear() { size = 0; }
    void Push(int32_t v) { data()[size++] = v; }
  };

  Sequence& Find(int64_t seq_id);
  const Sequence& Find(int64_t seq_id) const;
  int64_t PagesFor(int64_t length) const { return (length + cfg_.page_size - 1) / cfg_.page_size; }
  AuxArray NewAux(int64_t capacity) const;

  Config cfg_;
  Kernels k_;
  std::vector<ObjectPtr<NDArrayObj>> pages_;  // per layer
  std::vector<int32_t> free_pages_;           // taken from the back
  std::unordered_map<int64_t, Sequence> seqs_;

  // The current forward (begin_forward .. the next begin_forward).
  bool in_forward_ = false;
  bool decode_ = false;      // every sequence appends one token: decode kernel after append
  bool has_cached_ = false;  // prefill: some sequence had tokens before (cross attention)
  int64_t batch_ = 0;
  int64_t total_append_ = 0;
  AuxArray append_indptr_;    // (batch + 1) cumulative append lengths (= qo indptr)
  AuxArray page_indptr_;      // (batch + 1)
  AuxArray page_indices_;     // (nnz pages)
  AuxArray last_page_len_;    // (batch)
  AuxArray k_rope_offset_;    // (batch) position of each sequence's first cached token (0)
  AuxArray k_ragged_offset_;  // (batch) sequence length before this append
  AuxArray q_positions_;      // (tokens) rope position of each new token
  AuxArray append_pos_;       // (tokens) page_id * page_size + slot for each new token

  // Scratch (prefill_chunk_size rows).
  ObjectPtr<NDArrayObj> q_, k_tmp_, v_tmp_, o_tmp_, lse_tmp_, lse_merged_;
};

}  // namespace kv_cache
}  // namespace polyffi
#endif  // POLYFFI_CORE_KV_CACHE_PAGED_KV_CACHE_H_
