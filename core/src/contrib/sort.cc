// TVM's extern sorting kernels, called by compiled code (R.sort / R.argsort / R.topk lower to
// them on a CPU target; TVM 0.18 and 0.27 use the same names and arguments):
//   tvm.contrib.sort.sort(data, out, axis, is_ascend)
//   tvm.contrib.sort.argsort(data, out_indices, axis, is_ascend)
//   tvm.contrib.sort.argsort_nms(data, valid_count, out_indices, axis, is_ascend)
//   tvm.contrib.sort.topk(data, [values], [indices], k, axis, ret_type, is_ascend)
// Semantics as TVM's: a stable sort along one axis (ties keep their input order, also when
// descending); top-k keeps the first k of the order (value, then index) and k < 1 means all;
// float16 compares as float. Indices may be stored as int32, int64, float32 or float64. TVM's
// unsupported dtypes and bad axes are InternalErrors, as there. Unlike TVM's, every output shape
// and dtype is checked against the input (a mismatch is a ValueError, never a stray write).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "contrib.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace contrib {
namespace {

/*! \brief A tensor seen as [before, len, after] around the sort axis. */
struct Lines {
  int64_t before = 1, len = 0, after = 1;
};

int NormalizeAxis(const Args& args, const DLTensor* t, int64_t axis) {
  if (axis < 0) axis += t->ndim;
  if (axis < 0 || axis >= t->ndim) {
    Throw("InternalError", args.fname(), ": Axis out of boundary for input ndim ", t->ndim);
  }
  return static_cast<int>(axis);
}

Lines LinesOf(const DLTensor* t, int axis) {
  Lines l;
  for (int i = 0; i < t->ndim; ++i) {
    if (i < axis) l.before *= t->shape[i];
    if (i > axis) l.after *= t->shape[i];
  }
  l.len = t->shape[axis];
  return l;
}

/*! \brief out must have data's shape except `extent` along axis (and, if given, a dtype). */
void CheckOutShape(const Args& args, const DLTensor* data, const DLTensor* out, int axis,
                   int64_t extent, const char* what) {
  bool ok = out->ndim == data->ndim;
  for (int i = 0; ok && i < data->ndim; ++i) {
    ok = out->shape[i] == (i == axis ? extent : data->shape[i]);
  }
  if (!ok) {
    std::vector<int64_t> want(data->shape, data->shape + data->ndim);
    want[axis] = extent;
    std::string w, g;
    for (int64_t d : want) w += (w.empty() ? "" : ", ") + std::to_string(d);
    for (int i = 0; i < out->ndim; ++i)
      g += (g.empty() ? "" : ", ") + std::to_string(out->shape[i]);
    Throw("ValueError", args.fname(), ": the ", what, " has shape (", g, ") but (", w,
          ") is needed");
  }
}

/*! \brief Store an index as the index output's dtype (null: unsupported). */
using IndexStore = void (*)(char* base, int64_t pos, int64_t index);
template <typename T>
void StoreIndex(char* base, int64_t pos, int64_t index) {
  T v = static_cast<T>(index);
  std::memcpy(base + pos * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}
IndexStore IndexStoreFor(DLDataType t) {
  if (Is(t, kDLInt, 32)) return StoreIndex<int32_t>;
  if (Is(t, kDLInt, 64)) return StoreIndex<int64_t>;
  if (Is(t, kDLFloat, 32)) return StoreIndex<float>;
  if (Is(t, kDLFloat, 64)) return StoreIndex<double>;
  return nullptr;
}

/*! \brief The comparison key of an element (float16 compares as float). */
template <typename T>
struct Key {
  using Type = T;
  static T Load(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
};
struct Half {};
template <>
struct Key<Half> {
  using Type = float;
  static float Load(const char* p) {
    uint16_t h;
    std::memcpy(&h, p, sizeof(h));
    return HalfToFloat(h);
  }
};

/*! \brief Where the ordered positions of one line go: values (element bytes) and/or indices. */
struct Sink {
  const char* src = nullptr;  // the input's data, to copy values from
  char* values = nullptr;
  char* indices = nullptr;
  IndexStore store = nullptr;
  int64_t elem = 0;  // bytes per element
};

template <typename K>
using Entry = std::pair<int64_t, K>;  // (index along the axis, key)

template <typename K>
bool Ascend(const Entry<K>& a, const Entry<K>& b) {
  return a.second < b.second;
}
template <typename K>
bool Descend(const Entry<K>& a, const Entry<K>& b) {
  return a.second > b.second;
}
// Total orders for top-k: equal keys rank by index.
template <typename K>
bool AscendThenIndex(const Entry<K>& a, const Entry<K>& b) {
  return a.second == b.second ? a.first < b.first : a.second < b.second;
}
template <typename K>
bool DescendThenIndex(const Entry<K>& a, const Entry<K>& b) {
  return a.second == b.second ? a.first < b.first : a.second > b.second;
}

/*!
 * \brief Order every line of data along the axis and hand each line's first `keep` entries to
 *  the sink (out_extent: the outputs' extent along the axis). keep < 0: a full stable sort;
 *  otherwise top-k with a bounded heap of the best `keep` so far, then sorted.
 */
template <typename T>
void OrderLines(const DLTensor* data, const Lines& l, bool ascend, int64_t keep, int64_t out_extent,
                const Sink& sink, const std::vector<int64_t>* counts) {
  using K = typename Key<T>::Type;
  const char* src = DataOf(data);
  const int64_t esz = sink.elem;
  std::vector<Entry<K>> line;
  auto cmp = ascend ? Ascend<K> : Descend<K>;
  auto total = ascend ? AscendThenIndex<K> : DescendThenIndex<K>;
  for (int64_t i = 0; i < l.before; ++i) {
    for (int64_t j = 0; j < l.after; ++j) {
      const int64_t in_base = i * l.len * l.after + j;
      const int64_t out_base = i * out_extent * l.after + j;
      line.clear();
      int64_t n = l.len;
      if (counts != nullptr) n = (*counts)[i * l.after + j];
      if (keep < 0) {
        for (int64_t k = 0; k < n; ++k) {
          line.emplace_back(k, Key<T>::Load(src + (in_base + k * l.after) * esz));
        }
        std::stable_sort(line.begin(), line.end(), cmp);
      } else {
        // The heap's top is the worst of the best `keep` so far; a better element replaces it.
        int64_t k = 0;
        for (; k < keep && k < n; ++k) {
          line.emplace_back(k, Key<T>::Load(src + (in_base + k * l.after) * esz));
        }
        std::make_heap(line.begin(), line.end(), total);
        for (; k < n; ++k) {
          Entry<K> e(k, Key<T>::Load(src + (in_base + k * l.after) * esz));
          if (total(e, line.front())) {
            line.push_back(e);
            std::push_heap(line.begin(), line.end(), total);
            std::pop_heap(line.begin(), line.end(), total);
            line.pop_back();
          }
        }
        std::stable_sort(line.begin(), line.end(), total);
      }
      const int64_t written = static_cast<int64_t>(line.size());
      for (int64_t r = 0; r < written; ++r) {
        const int64_t pos = out_base + r * l.after;
        if (sink.values != nullptr) {
          std::memcpy(sink.values + pos * esz, sink.src + (in_base + line[r].first * l.after) * esz,
                      static_cast<size_t>(esz));
        }
        if (sink.indices != nullptr) sink.store(sink.indices, pos, line[r].first);
      }
      // argsort_nms: positions past the valid count keep their own index.
      if (counts != nullptr && sink.indices != nullptr) {
        for (int64_t r = written; r < out_extent; ++r)
          sink.store(sink.indices, out_base + r * l.after, r);
      }
    }
  }
}

using OrderFn = void (*)(const DLTensor*, const Lines&, bool, int64_t, int64_t, const Sink&,
                         const std::vector<int64_t>*);

/*! \brief The line orderer for an input dtype (null: unsupported). with_bytes: topk's extra
 *  8-bit integer inputs. */
OrderFn OrderFor(DLDataType t, bool with_bytes) {
  if (Is(t, kDLFloat, 32)) return OrderLines<float>;
  if (Is(t, kDLFloat, 64)) return OrderLines<double>;
  if (Is(t, kDLFloat, 16)) return OrderLines<Half>;
  if (Is(t, kDLInt, 32)) return OrderLines<int32_t>;
  if (Is(t, kDLInt, 64)) return OrderLines<int64_t>;
  if (with_bytes && Is(t, kDLInt, 8)) return OrderLines<int8_t>;
  if (with_bytes && Is(t, kDLUInt, 8)) return OrderLines<uint8_t>;
  return nullptr;
}

OrderFn InputOrder(const Args& args, const DLTensor* data, bool with_bytes) {
  OrderFn f = OrderFor(data->dtype, with_bytes);
  if (f == nullptr) {
    Throw("InternalError", args.fname(), ": Unsupported input dtype: ", DataTypeName(data->dtype));
  }
  return f;
}

IndexStore OutputIndexStore(const Args& args, const DLTensor* data, const DLTensor* out,
                            bool with_bytes) {
  IndexStore s = IndexStoreFor(out->dtype);
  // topk may also return 8-bit integer indices of an input of the same dtype.
  if (s == nullptr && with_bytes && out->dtype.code == data->dtype.code &&
      Is(out->dtype, data->dtype.code, 8)) {
    s = out->dtype.code == kDLInt ? StoreIndex<int8_t> : StoreIndex<uint8_t>;
  }
  if (s == nullptr) {
    Throw("InternalError", args.fname(), ": Unsupported output dtype: ", DataTypeName(out->dtype));
  }
  return s;
}

// sort / argsort: (data, out, axis, is_ascend).
void SortOrArgsort(const Args& args, bool values) {
  args.CheckArity(4);
  DLTensor* data = CpuTensor(args, 0, "input");
  DLTensor* out = CpuTensor(args, 1, "output");
  int axis = NormalizeAxis(args, data, args.Int(2));
  bool ascend = args.Bool(3);
  OrderFn order = InputOrder(args, data, false);
  Sink sink;
  sink.src = DataOf(data);
  sink.elem = static_cast<int64_t>(ElementBytes(data->dtype));
  if (values) {
    if (DataTypeName(out->dtype) != DataTypeName(data->dtype)) {
      Throw("InternalError", args.fname(),
            ": Check failed: (data_dtype == out_dtype) is false: ", DataTypeName(data->dtype),
            " vs. ", DataTypeName(out->dtype));
    }
    sink.values = DataOf(out);
  } else {
    sink.store = OutputIndexStore(args, data, out, false);
    sink.indices = DataOf(out);
  }
  Lines l = LinesOf(data, axis);
  CheckOutShape(args, data, out, axis, l.len, "output");
  order(data, l, ascend, -1, l.len, sink, nullptr);
}

POLYFFI_CORE_GLOBAL("tvm.contrib.sort.sort",
                    [](const Args& args, RetValue*) { SortOrArgsort(args, true); });
POLYFFI_CORE_GLOBAL("tvm.contrib.sort.argsort",
                    [](const Args& args, RetValue*) { SortOrArgsort(args, false); });

// argsort_nms(data, valid_count, out_indices, axis, is_ascend): only the first valid_count[...]
// elements of each line are sorted; float32 input, int32 counts and indices (as TVM's).
POLYFFI_CORE_GLOBAL("tvm.contrib.sort.argsort_nms", [](const Args& args, RetValue*) {
  args.CheckArity(5);
  DLTensor* data = CpuTensor(args, 0, "input");
  DLTensor* valid = CpuTensor(args, 1, "valid count");
  DLTensor* out = CpuTensor(args, 2, "output");
  int axis = NormalizeAxis(args, data, args.Int(3));
  bool ascend = args.Bool(4);
  if (!Is(data->dtype, kDLFloat, 32)) {
    Throw("InternalError", args.fname(),
          ": Currently only supports input dtype to be float32, got ", DataTypeName(data->dtype));
  }
  if (!Is(valid->dtype, kDLInt, 32) || !Is(out->dtype, kDLInt, 32)) {
    Throw("InternalError", args.fname(), ": the valid count and the output must be int32");
  }
  Lines l = LinesOf(data, axis);
  CheckOutShape(args, data, out, axis, l.len, "output");
  if (NumElements(valid) != l.before * l.after) {
    Throw("ValueError", args.fname(), ": the valid count has ", NumElements(valid),
          " elements but the input has ", l.before * l.after, " lines");
  }
  std::vector<int64_t> counts(static_cast<size_t>(l.before * l.after));
  const char* vp = DataOf(valid);
  for (size_t i = 0; i < counts.size(); ++i) {
    int32_t c;
    std::memcpy(&c, vp + i * sizeof(c), sizeof(c));
    counts[i] = std::clamp<int64_t>(c, 0, l.len);
  }
  Sink sink;
  sink.src = DataOf(data);
  sink.elem = 4;
  sink.indices = DataOf(out);
  sink.store = StoreIndex<int32_t>;
  OrderLines<float>(data, l, ascend, -1, l.len, sink, &counts);
});

// topk(data, [values], [indices], k, axis, ret_type, is_ascend): ret_type "both", "values" or
// "indices" says which outputs are passed.
POLYFFI_CORE_GLOBAL("tvm.contrib.sort.topk", [](const Args& args, RetValue*) {
  args.CheckMinArity(6);
  const int n = args.size();
  const std::string ret_type = args.Str(n - 2);
  int outputs;
  if (ret_type == "both") {
    outputs = 2;
  } else if (ret_type == "values" || ret_type == "indices") {
    outputs = 1;
  } else {
    Throw("InternalError", args.fname(), ": Unsupported ret type: ", ret_type);
  }
  args.CheckArity(5 + outputs);
  DLTensor* data = CpuTensor(args, 0, "input");
  DLTensor* values = ret_type == "indices" ? nullptr : CpuTensor(args, 1, "values output");
  DLTensor* indices = ret_type == "values" ? nullptr : CpuTensor(args, outputs, "indices output");
  int64_t k = args.Int(n - 4);
  int axis = NormalizeAxis(args, data, args.Int(n - 3));
  bool ascend = args.Bool(n - 1);
  OrderFn order = InputOrder(args, data, true);
  Lines l = LinesOf(data, axis);
  if (k < 1) k = l.len;
  Sink sink;
  sink.src = DataOf(data);
  sink.elem = static_cast<int64_t>(ElementBytes(data->dtype));
  if (values != nullptr) {
    if (DataTypeName(values->dtype) != DataTypeName(data->dtype)) {
      Throw("ValueError", args.fname(), ": the values output is ", DataTypeName(values->dtype),
            " but the input is ", DataTypeName(data->dtype));
    }
    CheckOutShape(args, data, values, axis, k, "values output");
    sink.values = DataOf(values);
  }
  if (indices != nullptr) {
    sink.store = OutputIndexStore(args, data, indices, true);
    CheckOutShape(args, data, indices, axis, k, "indices output");
    sink.indices = DataOf(indices);
  }
  order(data, l, ascend, k, k, sink, nullptr);
});

}  // namespace
}  // namespace contrib
}  // namespace polyffi
