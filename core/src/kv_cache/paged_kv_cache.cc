// The paged KV cache's bookkeeping and its forward pass (see paged_kv_cache.h).
#include "paged_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>
#include <unordered_set>
#include <utility>

#include "polyffi/error.h"
#include "polyffi/value.h"

namespace polyffi {
namespace kv_cache {
namespace {

/*! \brief A DLTensor view with its own shape storage (not copyable: shape points inside). */
struct View {
  DLTensor t{};
  int64_t shape[5]{};
  View(void* data, DLDataType dtype, std::initializer_list<int64_t> dims) {
    int i = 0;
    for (int64_t d : dims) shape[i++] = d;
    t.data = data;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = i;
    t.dtype = dtype;
    t.shape = shape;
  }
  View(const View&) = delete;
  View& operator=(const View&) = delete;
};

/*! \brief A kernel's packed arguments. */
class KernelArgs {
 public:
  KernelArgs& T(const DLTensor* t) {
    values_[n_].v_handle = const_cast<DLTensor*>(t);
    codes_[n_++] = kTVMDLTensorHandle;
    return *this;
  }
  KernelArgs& T(const View& v) { return T(&v.t); }
  KernelArgs& T(const ObjectPtr<NDArrayObj>& a) { return T(&a->tensor); }
  KernelArgs& I(int64_t x) {
    values_[n_].v_int64 = x;
    codes_[n_++] = kTVMArgInt;
    return *this;
  }
  KernelArgs& F(double x) {
    values_[n_].v_float64 = x;
    codes_[n_++] = kTVMArgFloat;
    return *this;
  }
  // Appends a group of arguments several kernels share (part(*this) appends them).
  template <typename Part>
  KernelArgs& With(const Part& part) {
    part(*this);
    return *this;
  }
  void Call(const ObjectPtr<FunctionObj>& f) {
    RetValue rv;
    f->Call(values_, codes_, n_, &rv);
  }

 private:
  TVMValue values_[16];
  int codes_[16];
  int n_ = 0;
};

constexpr DLDataType kInt32{kDLInt, 32, 1};
constexpr DLDataType kFloat32{kDLFloat, 32, 1};

std::string DTypeText(DLDataType t) {
  return std::string(t.code == kDLFloat ? "float"
                     : t.code == kDLInt ? "int"
                                        : "other") +
         std::to_string(t.bits);
}

}  // namespace

uint32_t PagedKVCacheObj::KVStateTypeIndex() {
  static const uint32_t index = RegisterTypeKey("relax.vm.KVState", TypeIndex::kObject);
  return index;
}

uint32_t PagedKVCacheObj::RuntimeTypeIndex() {
  static const uint32_t index =
      RegisterTypeKey("relax.vm.PagedAttentionKVCache",
                      RegisterTypeKey("relax.vm.AttentionKVCache", KVStateTypeIndex()));
  return index;
}

[[maybe_unused]] static const uint32_t kRegisterTypes[] = {PagedKVCacheObj::RuntimeTypeIndex()};

PagedKVCacheObj::AuxArray PagedKVCacheObj::NewAux(int64_t capacity) const {
  AuxArray a;
  a.buf = NDArrayObj::Empty({std::max<int64_t>(capacity, 1)}, kInt32, DLDevice{kDLCPU, 0});
  return a;
}

PagedKVCacheObj::PagedKVCacheObj(const Config& config, Kernels kernels)
    : Object(RuntimeTypeIndex()), cfg_(config), k_(std::move(kernels)) {
  const DLDevice cpu{kDLCPU, 0};
  // Zeroed (TVM leaves them uninitialised): a kernel that reads a whole tile and masks the
  // slots past a sequence's end then never meets a NaN left in reused memory.
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    auto p = NDArrayObj::Empty(
        {cfg_.num_total_pages, 2, cfg_.num_kv_heads, cfg_.page_size, cfg_.head_dim}, cfg_.dtype,
        cpu);
    const size_t bytes = static_cast<size_t>(cfg_.num_total_pages) * 2 * cfg_.num_kv_heads *
                         cfg_.page_size * cfg_.head_dim * ((cfg_.dtype.bits + 7) / 8);
    std::memset(p->tensor.data, 0, bytes);
    pages_.push_back(std::move(p));
  }
  const int64_t b = cfg_.max_batch_size, n = cfg_.prefill_chunk_size;
  append_indptr_ = NewAux(b + 1);
  page_indptr_ = NewAux(b + 1);
  page_indices_ = NewAux(cfg_.num_total_pages);
  last_page_len_ = NewAux(b);
  k_rope_offset_ = NewAux(b);
  k_ragged_offset_ = NewAux(b);
  q_positions_ = NewAux(n);
  append_pos_ = NewAux(n);
  q_ = NDArrayObj::Empty({n, cfg_.num_qo_heads, cfg_.head_dim}, cfg_.dtype, cpu);
  k_tmp_ = NDArrayObj::Empty({n, cfg_.num_kv_heads, cfg_.head_dim}, cfg_.dtype, cpu);
  v_tmp_ = NDArrayObj::Empty({n, cfg_.num_kv_heads, cfg_.head_dim}, cfg_.dtype, cpu);
  o_tmp_ = NDArrayObj::Empty({n, cfg_.num_qo_heads, cfg_.head_dim}, cfg_.dtype, cpu);
  lse_tmp_ = NDArrayObj::Empty({n, cfg_.num_qo_heads}, kFloat32, cpu);
  lse_merged_ = NDArrayObj::Empty({n, cfg_.num_qo_heads}, kFloat32, cpu);
  Clear();
}

// ---------------------------------------------------------------- sequences

void PagedKVCacheObj::Clear() {
  seqs_.clear();
  free_pages_.clear();
  for (int64_t p = cfg_.num_total_pages - 1; p >= 0; --p) {
    free_pages_.push_back(static_cast<int32_t>(p));
  }
  in_forward_ = false;
}

PagedKVCacheObj::Sequence& PagedKVCacheObj::Find(int64_t seq_id) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end()) {
    Throw("KeyError", "The sequence \"", seq_id, "\" cannot be found in KV cache.");
  }
  return it->second;
}

const PagedKVCacheObj::Sequence& PagedKVCacheObj::Find(int64_t seq_id) const {
  return const_cast<PagedKVCacheObj*>(this)->Find(seq_id);
}

int64_t PagedKVCacheObj::SequenceLength(int64_t seq_id) const { return Find(seq_id).length; }

void PagedKVCacheObj::AddSequence(int64_t seq_id) {
  if (seqs_.count(seq_id) != 0) {
    Throw("ValueError", "The sequence \"", seq_id, "\" is already in the KV cache.");
  }
  seqs_.emplace(seq_id, Sequence{});
  in_forward_ = false;
}

void PagedKVCacheObj::RemoveSequence(int64_t seq_id) {
  Sequence& s = Find(seq_id);
  for (auto it = s.pages.rbegin(); it != s.pages.rend(); ++it) free_pages_.push_back(*it);
  seqs_.erase(seq_id);
  in_forward_ = false;
}

void PagedKVCacheObj::ForkSequence(int64_t parent_seq_id, int64_t child_seq_id, int64_t fork_pos) {
  auto pit = seqs_.find(parent_seq_id);
  if (pit == seqs_.end()) {
    Throw("KeyError", "The parent sequence \"", parent_seq_id, "\" cannot be found in KV cache.");
  }
  if (seqs_.count(child_seq_id) != 0) {
    Throw("ValueError", "The child sequence \"", child_seq_id, "\" is already in the KV cache.");
  }
  const int64_t parent_len = pit->second.length;
  if (fork_pos < -1 || fork_pos > parent_len) {
    Throw("ValueError", "The forked position ", fork_pos,
          " should be -1 (the end) or within the parent sequence's length ", parent_len, ".");
  }
  if (fork_pos == -1) fork_pos = parent_len;
  const int64_t npages = PagesFor(fork_pos);
  if (npages > static_cast<int64_t>(free_pages_.size())) {
    Throw("ValueError", "The KV cache is full. No page can be allocated: forking ", fork_pos,
          " tokens needs ", npages, " pages, ", free_pages_.size(), " are free.");
  }
  Sequence child;
  child.length = fork_pos;
  for (int64_t i = 0; i < npages; ++i) {
    const int32_t src = pit->second.pages[i];
    const int32_t dst = free_pages_.back();
    free_pages_.pop_back();
    child.pages.push_back(dst);
    const int64_t len = std::min(cfg_.page_size, fork_pos - i * cfg_.page_size);
    for (const auto& layer : pages_) {
      KernelArgs().T(layer).I(src).I(dst).I(len).Call(k_.copy_single_page);
    }
  }
  seqs_.emplace(child_seq_id, std::move(child));
  in_forward_ = false;
}

void PagedKVCacheObj::PopN(int64_t seq_id, int64_t n) {
  Sequence& s = Find(seq_id);
  if (n < 0) Throw("ValueError", "The length of popping ", n, " cannot be negative.");
  if (n > s.length) {
    Throw("ValueError", "The sequence only has length ", s.length, ", while the length of pop is ",
          n, " which exceeds the whole sequence length.");
  }
  s.length -= n;
  const int64_t keep = PagesFor(s.length);
  while (static_cast<int64_t>(s.pages.size()) > keep) {
    free_pages_.push_back(s.pages.back());
    s.pages.pop_back();
  }
  in_forward_ = false;
}

bool PagedKVCacheObj::Empty() const {
  return seqs_.empty() && static_cast<int64_t>(free_pages_.size()) == cfg_.num_total_pages;
}

int64_t PagedKVCacheObj::TotalSequenceLength() const {
  int64_t total = 0;
  for (const auto& kv : seqs_) total += kv.second.length;
  return total;
}

ObjectPtr<NDArrayObj> PagedKVCacheObj::QueryPositions() const {
  if (!in_forward_) {
    Throw("ValueError",
          "attention_kv_cache_get_query_positions: no forward has begun "
          "(call kv_state_begin_forward first)");
  }
  auto out = NDArrayObj::Empty({q_positions_.size}, kInt32, DLDevice{kDLCPU, 0});
  if (q_positions_.size != 0) {
    std::memcpy(out->tensor.data, q_positions_.data(), q_positions_.size * sizeof(int32_t));
  }
  return out;
}

// ---------------------------------------------------------------- forward

void PagedKVCacheObj::BeginForward(const int64_t* seq_ids, const int64_t* append_lengths,
                                   int64_t batch) {
  in_forward_ = false;
  if (batch <= 0) Throw("ValueError", "kv_state_begin_forward: the batch is empty");
  if (batch > cfg_.max_batch_size) {
    Throw("ValueError", "kv_state_begin_forward: a batch of ", batch,
          " sequences exceeds the cache's max_batch_size ", cfg_.max_batch_size);
  }
  // Check everything before changing anything: a refused forward leaves the cache as it was.
  std::vector<Sequence*> seqs;
  std::unordered_set<int64_t> seen;
  int64_t total = 0, new_pages = 0;
  bool decode = true;
  for (int64_t i = 0; i < batch; ++i) {
    Sequence& s = Find(seq_ids[i]);
    if (!seen.insert(seq_ids[i]).second) {
      Throw("ValueError", "kv_state_begin_forward: the sequence \"", seq_ids[i],
            "\" appears twice in one batch");
    }
    if (append_lengths[i] <= 0) {
      Throw("ValueError", "Append with length ", append_lengths[i], " is not allowed (sequence \"",
            seq_ids[i], "\").");
    }
    if (append_lengths[i] > cfg_.prefill_chunk_size) {
      Throw("ValueError", "kv_state_begin_forward: appending ", append_lengths[i],
            " tokens exceeds the cache's prefill_chunk_size ", cfg_.prefill_chunk_size);
    }
    total += append_lengths[i];
    if (append_lengths[i] != 1) decode = false;
    new_pages += PagesFor(s.length + append_lengths[i]) - static_cast<int64_t>(s.pages.size());
    seqs.push_back(&s);
  }
  if (total > cfg_.prefill_chunk_size) {
    Throw("ValueError", "kv_state_begin_forward: ", total,
          " tokens in one forward exceed the cache's prefill_chunk_size ", cfg_.prefill_chunk_size);
  }
  if (new_pages > static_cast<int64_t>(free_pages_.size())) {
    Throw("ValueError", "The KV cache is full. No page can be allocated: the forward needs ",
          new_pages, " new pages of ", cfg_.page_size, " tokens, ", free_pages_.size(),
          " are free.");
  }

  // The page table the attention kernels read: for a decode, the pages after the append (the
  // decode kernel attends over everything, the new token included); for a prefill, the pages
  // before it (the new tokens attend to each other through the ragged kernel, to the cached
  // ones through the paged kernel, and the two are merged).
  auto fill_page_table = [&]() {
    page_indptr_.Clear();
    page_indices_.Clear();
    last_page_len_.Clear();
    k_rope_offset_.Clear();
    page_indptr_.Push(0);
    for (Sequence* s : seqs) {
      for (int32_t p : s->pages) page_indices_.Push(p);
      page_indptr_.Push(static_cast<int32_t>(page_indices_.size));
      last_page_len_.Push(
          s->length == 0 ? 0 : static_cast<int32_t>((s->length - 1) % cfg_.page_size + 1));
      k_rope_offset_.Push(0);
    }
  };
  if (!decode) fill_page_table();
  has_cached_ = !decode && page_indices_.size > 0;

  append_indptr_.Clear();
  k_ragged_offset_.Clear();
  q_positions_.Clear();
  append_pos_.Clear();
  append_indptr_.Push(0);
  for (int64_t i = 0; i < batch; ++i) {
    Sequence& s = *seqs[i];
    const int64_t old_len = s.length, n = append_lengths[i];
    k_ragged_offset_.Push(static_cast<int32_t>(old_len));
    s.length += n;
    while (static_cast<int64_t>(s.pages.size()) < PagesFor(s.length)) {
      s.pages.push_back(free_pages_.back());
      free_pages_.pop_back();
    }
    for (int64_t pos = old_len; pos < s.length; ++pos) {
      q_positions_.Push(static_cast<int32_t>(pos));
      append_pos_.Push(static_cast<int32_t>(s.pages[pos / cfg_.page_size] * cfg_.page_size +
                                            pos % cfg_.page_size));
    }
    append_indptr_.Push(static_cast<int32_t>(append_indptr_.data()[i] + n));
  }
  if (decode) fill_page_table();
  decode_ = decode;
  batch_ = batch;
  total_append_ = total;
  in_forward_ = true;
}

void PagedKVCacheObj::AttentionWithFusedQKV(int64_t layer_id, const DLTensor& qkv,
                                            const DLTensor& out, double sm_scale) {
  const char* fn = "attention_kv_cache_attention_with_fused_qkv";
  if (layer_id < 0 || layer_id >= cfg_.num_layers) {
    Throw("IndexError", fn, ": layer ", layer_id, " out of range [0, ", cfg_.num_layers, ")");
  }
  if (!in_forward_) {
    Throw("ValueError", fn, ": no forward has begun (call kv_state_begin_forward first)");
  }
  const int64_t nq = cfg_.num_qo_heads, nkv = cfg_.num_kv_heads, d = cfg_.head_dim;
  auto same_dtype = [&](const DLTensor& t) {
    return t.dtype.code == cfg_.dtype.code && t.dtype.bits == cfg_.dtype.bits && t.dtype.lanes == 1;
  };
  if (!same_dtype(qkv) || !same_dtype(out)) {
    Throw("ValueError", fn, ": qkv and output must be ", DTypeText(cfg_.dtype),
          " like the cache, got ", DTypeText(qkv.dtype), " and ", DTypeText(out.dtype));
  }
  if (qkv.ndim != 3 || out.ndim != 3 || qkv.shape[1] != nq + 2 * nkv || qkv.shape[2] != d ||
      out.shape[0] != qkv.shape[0] || out.shape[1] != nq || out.shape[2] != d) {
    Throw("ValueError", fn, ": qkv must be (n, ", nq + 2 * nkv, ", ", d, ") and the output (n, ",
          nq, ", ", d, ")");
  }
  if (qkv.shape[0] < total_append_) {
    Throw("ValueError", fn, ": qkv has ", qkv.shape[0], " tokens, the forward appends ",
          total_append_);
  }
  if ((qkv.strides != nullptr || out.strides != nullptr) || DeviceTypeOf(qkv.device) != kDLCPU ||
      DeviceTypeOf(out.device) != kDLCPU) {
    // The VM's tensors are compact CPU tensors; anything else is a caller's mistake.
    Throw("ValueError", fn, ": qkv and output must be compact CPU tensors");
  }
  const int64_t n = total_append_;
  const DLDataType dt = cfg_.dtype;
  char* qkv_data = static_cast<char*>(qkv.data) + qkv.byte_offset;
  char* out_data = static_cast<char*>(out.data) + out.byte_offset;
  View qkv_v(qkv_data, dt, {n, nq + 2 * nkv, d});
  View out_v(out_data, dt, {n, nq, d});
  View q(q_->tensor.data, dt, {n, nq, d});
  View k(k_tmp_->tensor.data, dt, {n, nkv, d});
  View v(v_tmp_->tensor.data, dt, {n, nkv, d});
  View positions(q_positions_.data(), kInt32, {n});
  View append_pos(append_pos_.data(), kInt32, {n});
  View lse(lse_merged_->tensor.data, kFloat32, {n, nq});
  View indptr(append_indptr_.data(), kInt32, {batch_ + 1});
  View page_indptr(page_indptr_.data(), kInt32, {batch_ + 1});
  View page_indices(page_indices_.data(), kInt32, {page_indices_.size});
  View last_len(last_page_len_.data(), kInt32, {batch_});
  View k_rope(k_rope_offset_.data(), kInt32, {batch_});
  View k_ragged(k_ragged_offset_.data(), kInt32, {batch_});
  const auto& pages = pages_[layer_id];
  const int64_t inline_rope = cfg_.rope_mode == 2 ? 1 : 0;
  // The arguments the kernels over cached pages take after their queries, and the ones every
  // attention kernel ends with.
  auto over_pages = [&](KernelArgs& a) {
    a.T(pages).T(page_indptr).T(page_indices).T(last_len).T(k_rope).T(positions);
  };
  auto rope_and_scale = [&](KernelArgs& a) {
    a.I(inline_rope).F(cfg_.rotary_scale).F(cfg_.rotary_theta).F(sm_scale);
  };

  // Split q/k/v; in "normal" mode rotary embeddings go onto q and k here.
  KernelArgs()
      .T(qkv_v)
      .T(positions)
      .T(q)
      .T(k)
      .T(v)
      .I(cfg_.rope_mode == 1 ? 1 : 0)
      .Call(k_.split_rotary);
  if (decode_) {
    KernelArgs().T(pages).T(k).T(v).T(append_pos).Call(k_.transpose_append);
    KernelArgs().T(q).With(over_pages).T(out_v).T(lse).With(rope_and_scale).Call(k_.decode_paged);
    return;
  }
  KernelArgs()
      .T(q)
      .T(indptr)
      .T(k)
      .T(v)
      .T(indptr)
      .T(positions)
      .T(k_ragged)
      .T(out_v)
      .T(lse)
      .I(1)  // causal
      .With(rope_and_scale)
      .Call(k_.prefill_ragged);
  if (has_cached_) {
    View o_other(o_tmp_->tensor.data, dt, {n, nq, d});
    View lse_other(lse_tmp_->tensor.data, kFloat32, {n, nq});
    KernelArgs()
        .T(q)
        .T(indptr)
        .With(over_pages)
        .T(o_other)
        .T(lse_other)
        .I(0)  // not causal: every cached token precedes the new ones
        .With(rope_and_scale)
        .Call(k_.prefill_paged);
    KernelArgs().T(out_v).T(lse).T(o_other).T(lse_other).Call(k_.merge_inplace);
  }
  KernelArgs().T(pages).T(k).T(v).T(append_pos).Call(k_.transpose_append);
}

}  // namespace kv_cache
}  // namespace polyffi
