// The token sampling and logit penalty builtins a TVM 0.27 language-model driver calls (TVM's
// src/runtime/vm/lm_support.cc), on CPU float32 logits / probabilities:
//   vm.builtin.sample_top_p_from_logits(logits, temperature, top_p, uniform) -> token index
//   vm.builtin.sample_top_p_from_prob(prob, top_p, uniform) -> token index
//   vm.builtin.multinomial_from_uniform(prob [b, v], uniform [b, ...]) -> int64 [b, 1]
//   vm.builtin.apply_repetition_penalty(logits, token_ids, penalty)            in place
//   vm.builtin.apply_presence_and_frequency_penalty(logits, token_ids, token_freqs,
//                                                   presence, frequency)        in place
//   vm.builtin.apply_softmax_with_temperature(logits, temperature)             in place
// Outputs are bit-identical to TVM's for the same inputs: the same float/double arithmetic in the
// same order, the same libm calls and the same std::sort (so ties between equal values land in
// the same order). tests/tvm_models/tvm027/sampling holds what TVM 0.27's own runtime returned.
//
// Where TVM reads out of bounds or dereferences an empty vector (a token id outside the logits,
// an empty vocabulary, a tensor of another dtype) these refuse with a ValueError before touching
// anything, so an in-place builtin either applies completely or leaves the logits as they were.
// The two refusals TVM itself raises (all-NaN probabilities, a uniform sample outside the
// distribution) are InternalErrors with TVM's texts.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "../contrib/contrib.h"
#include "polyffi/error.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace sampling {
namespace {

using contrib::DataOf;
using contrib::Is;
using contrib::NumElements;

/*! \brief A compact CPU tensor at argument i with dtype code/bits and at least one dimension. */
DLTensor* TypedTensor(const Args& args, int i, const char* what, int code, int bits) {
  DLTensor* t = contrib::CpuTensor(args, i, what);
  if (!Is(t->dtype, code, bits)) {
    Throw("ValueError", args.fname(), ": the ", what, " must be ",
          code == kDLFloat ? "float" : "int", bits, ", got ", DataTypeName(t->dtype));
  }
  if (t->ndim < 1) Throw("ValueError", args.fname(), ": the ", what, " must have a last dimension");
  // Elements are read as float / int32 in place: their address must suit the type.
  if (reinterpret_cast<uintptr_t>(DataOf(t)) % (bits / 8) != 0) {
    Throw("ValueError", args.fname(), ": the ", what, "'s data is not aligned to its ", bits / 8,
          "-byte elements");
  }
  return t;
}

/*! \brief The last dimension of a float32 distribution whose other dimensions are all 1. */
int64_t SingleRowLength(const Args& args, const DLTensor* t, const char* what) {
  for (int d = 0; d + 1 < t->ndim; ++d) {
    if (t->shape[d] != 1) {
      Throw("ValueError", args.fname(), ": the leading dimensions of the ", what,
            " must be 1 (dimension ", d, " is ", t->shape[d], ")");
    }
  }
  const int64_t n = t->shape[t->ndim - 1];
  if (n < 1) Throw("ValueError", args.fname(), ": the ", what, " has no elements");
  if (n > INT_MAX) {
    Throw("ValueError", args.fname(), ": the ", what, " has ", n, " elements (at most ", INT_MAX,
          ": token indices are int)");
  }
  return n;
}

int64_t SampleTopPFromLogits(const Args& args) {
  args.CheckArity(4);
  DLTensor* logits = TypedTensor(args, 0, "logits", kDLFloat, 32);
  const double temperature = args.Float(1), top_p = args.Float(2), uniform_sample = args.Float(3);
  const int64_t n = SingleRowLength(args, logits, "logits");
  const auto* plogits = reinterpret_cast<const float*>(DataOf(logits));
  std::vector<std::pair<float, int>> data(static_cast<size_t>(n));
  for (size_t i = 0; i < data.size(); ++i) data[i] = {plogits[i], static_cast<int>(i)};
  // Largest first; std::sort as TVM's, so equal logits come out in the same order.
  std::sort(data.begin(), data.end(),
            [](const std::pair<float, int>& a, const std::pair<float, int>& b) {
              return a.first > b.first;
            });
  if (temperature < 1e-6f) return data[0].second;  // argmax
  float sum = 0.0f, logit_scale = 1.0f / temperature;
  const float max_value = data[0].first;
  for (auto& d : data) {
    d.first = expf((d.first - max_value) * logit_scale);
    sum += d.first;
  }
  float cum_sum_prob = 0.0f, top_p_sum = 0.0f;
  for (auto& d : data) {
    const float prob = d.first / sum;
    if (cum_sum_prob < top_p) top_p_sum += prob;
    cum_sum_prob += prob;
    d.first = cum_sum_prob;
  }
  for (const auto& d : data) {
    if (uniform_sample < d.first / top_p_sum) return d.second;
  }
  if (!(uniform_sample <= data[0].first)) {
    Throw("InternalError", "Check failed: uniform_sample <= data[0].first (", uniform_sample,
          " vs. ", data[0].first, ") :");
  }
  return data[0].second;
}

int64_t SampleTopPFromProb(const Args& args) {
  args.CheckArity(3);
  DLTensor* prob = TypedTensor(args, 0, "prob", kDLFloat, 32);
  const double top_p = args.Float(1), uniform_sample = args.Float(2);
  const int64_t ndata = SingleRowLength(args, prob, "prob");
  const auto* p_prob = reinterpret_cast<const float*>(DataOf(prob));
  std::vector<std::pair<float, int>> data;
  // TVM's filter-then-sort: keep the entries at or above a cutoff, sort them, and when they do
  // not reach top_p retry with every entry (cutoff 0).
  auto sample_with_cutoff = [&](float cutoff) -> int64_t {
    data.clear();
    for (int64_t i = 0; i < ndata; ++i) {
      if (p_prob[i] >= cutoff) data.emplace_back(p_prob[i], static_cast<int>(i));
    }
    if (data.empty()) return -1;
    std::sort(data.begin(), data.end(),
              [](const std::pair<float, int>& a, const std::pair<float, int>& b) {
                return a.first > b.first;
              });
    if (uniform_sample < data[0].first / top_p) return data[0].second;
    float cum_sum_prob = 0.0f, top_p_sum = 0.0f;
    for (auto& d : data) {
      const float p = d.first;
      if (!(cum_sum_prob < top_p)) break;
      top_p_sum += p;
      cum_sum_prob += p;
      d.first = cum_sum_prob;
    }
    if (cum_sum_prob < top_p && cutoff != 0.0f) return -1;
    for (const auto& d : data) {
      if (uniform_sample < d.first / top_p_sum) return d.second;
    }
    return data.back().second;
  };
  if (top_p < 1) {
    data.reserve(128);
    const int64_t sampled = sample_with_cutoff(top_p / 1024);
    if (sampled >= 0) return sampled;
  }
  data.reserve(static_cast<size_t>(ndata));
  const int64_t sampled = sample_with_cutoff(0.0f);
  if (sampled >= 0) return sampled;
  if (std::all_of(p_prob, p_prob + ndata, [](float x) { return std::isnan(x); })) {
    Throw("InternalError", "The output probabilities are all NaNs, can not sample from it");
  }
  Throw("InternalError",
        "Cannot sample from the given probability distribution due to unknown reason");
}

void MultinomialFromUniform(const Args& args, RetValue* rv) {
  args.CheckArity(2);
  DLTensor* prob = TypedTensor(args, 0, "prob", kDLFloat, 32);
  DLTensor* uniform = TypedTensor(args, 1, "uniform_sample", kDLFloat, 32);
  const int64_t batch_size = prob->shape[0], vocab_size = prob->shape[prob->ndim - 1];
  int64_t rows = 0;
  if (prob->ndim < 2 || __builtin_mul_overflow(batch_size, vocab_size, &rows) ||
      rows != NumElements(prob)) {
    Throw("ValueError", args.fname(),
          ": the prob must be [batch_size, vocab_size] (middle dimensions of 1), got ndim ",
          prob->ndim);
  }
  if (NumElements(uniform) < batch_size) {
    Throw("ValueError", args.fname(), ": the uniform_sample has ", NumElements(uniform),
          " elements for a batch of ", batch_size);
  }
  const auto* pprob = reinterpret_cast<const float*>(DataOf(prob));
  const auto* psample = reinterpret_cast<const float*>(DataOf(uniform));
  ObjectPtr<NDArrayObj> out =
      NDArrayObj::Empty({batch_size, 1}, DLDataType{kDLInt, 64, 1}, DLDevice{kDLCPU, 0});
  auto* parray = static_cast<int64_t*>(out->tensor.data);
  for (int64_t i = 0; i < batch_size; ++i) {
    float cum_sum_prob = 0.0f;
    int64_t prob_idx = 0;
    for (int64_t j = 0; j < vocab_size; ++j) {
      prob_idx = j;
      cum_sum_prob += pprob[i * vocab_size + j];
      if (cum_sum_prob > psample[i]) break;
    }
    parray[i] = prob_idx;
  }
  rv->SetObject(std::move(out));
}

/*!
 * \brief The token ids (int32, the last dimension's count of them) and, when freqs_arg >= 0,
 *  their frequencies: every id is checked against the logits before any logit changes.
 */
struct Tokens {
  float* logits;
  const int32_t* ids;
  const int32_t* freqs = nullptr;
  int64_t count;
};

Tokens PenaltyTokens(const Args& args, int freqs_arg) {
  DLTensor* logits = TypedTensor(args, 0, "logits", kDLFloat, 32);
  DLTensor* ids = TypedTensor(args, 1, "token_ids", kDLInt, 32);
  Tokens t{reinterpret_cast<float*>(DataOf(logits)), reinterpret_cast<const int32_t*>(DataOf(ids)),
           nullptr, ids->shape[ids->ndim - 1]};
  if (t.count > NumElements(ids)) {
    Throw("ValueError", args.fname(), ": the token_ids have ", NumElements(ids),
          " elements, fewer than their last dimension ", t.count);
  }
  if (freqs_arg >= 0) {
    DLTensor* freqs = TypedTensor(args, freqs_arg, "token_freqs", kDLInt, 32);
    if (NumElements(freqs) < t.count) {
      Throw("ValueError", args.fname(), ": ", t.count, " token_ids but only ", NumElements(freqs),
            " token_freqs");
    }
    t.freqs = reinterpret_cast<const int32_t*>(DataOf(freqs));
  }
  const int64_t vocab = NumElements(logits);
  for (int64_t i = 0; i < t.count; ++i) {
    if (t.ids[i] < 0 || t.ids[i] >= vocab) {
      Throw("ValueError", args.fname(), ": token id ", t.ids[i], " at ", i,
            " is outside the logits (", vocab, " elements)");
    }
  }
  return t;
}

void ApplyRepetitionPenalty(const Args& args) {
  args.CheckArity(3);
  const Tokens t = PenaltyTokens(args, -1);
  const double penalty = args.Float(2);
  for (int64_t i = 0; i < t.count; ++i) {
    float& logit = t.logits[t.ids[i]];
    if (logit <= 0) {
      logit *= penalty;
    } else {
      logit /= penalty;
    }
  }
}

void ApplyPresenceAndFrequencyPenalty(const Args& args) {
  args.CheckArity(5);
  const Tokens t = PenaltyTokens(args, 2);
  const double presence_penalty = args.Float(3), frequency_penalty = args.Float(4);
  for (int64_t i = 0; i < t.count; ++i) {
    const int token_freq = t.freqs[i];
    t.logits[t.ids[i]] -= (token_freq * frequency_penalty + presence_penalty);
  }
}

void ApplySoftmaxWithTemperature(const Args& args) {
  args.CheckArity(2);
  DLTensor* logits = TypedTensor(args, 0, "logits", kDLFloat, 32);
  const double temperature = args.Float(1);
  const int64_t last = logits->shape[logits->ndim - 1];
  if (last > INT_MAX) {
    Throw("ValueError", args.fname(), ": the logits' last dimension ", last, " exceeds ", INT_MAX);
  }
  const int vocab_size = static_cast<int>(last);
  auto* data = reinterpret_cast<float*>(DataOf(logits));
  // TVM's online softmax of the first row, from the same (smallest positive float) start value.
  const float inv_temp = 1.0f / temperature;
  float m = std::numeric_limits<float>::min();
  double d = 0.0f;
  for (int i = 0; i < vocab_size; ++i) {
    const float x = data[i] * inv_temp;
    const float m_prev = m;
    m = std::max(m, x);
    d = d * std::exp(m_prev - m) + std::exp(x - m);
  }
  for (int i = 0; i < vocab_size; ++i) {
    const float x = data[i] * inv_temp;
    data[i] = std::exp(x - m) / d;
  }
}

}  // namespace

POLYFFI_CORE_GLOBAL("vm.builtin.sample_top_p_from_logits",
                    [](const Args& args, RetValue* rv) { rv->SetInt(SampleTopPFromLogits(args)); });
POLYFFI_CORE_GLOBAL("vm.builtin.sample_top_p_from_prob",
                    [](const Args& args, RetValue* rv) { rv->SetInt(SampleTopPFromProb(args)); });
POLYFFI_CORE_GLOBAL("vm.builtin.multinomial_from_uniform", MultinomialFromUniform);
POLYFFI_CORE_GLOBAL("vm.builtin.apply_repetition_penalty",
                    [](const Args& args, RetValue*) { ApplyRepetitionPenalty(args); });
POLYFFI_CORE_GLOBAL("vm.builtin.apply_presence_and_frequency_penalty",
                    [](const Args& args, RetValue*) { ApplyPresenceAndFrequencyPenalty(args); });
POLYFFI_CORE_GLOBAL("vm.builtin.apply_softmax_with_temperature",
                    [](const Args& args, RetValue*) { ApplySoftmaxWithTemperature(args); });

}  // namespace sampling
}  // namespace polyffi
