// The data-dependent-output globals of relax's set operators (TVM 0.27 registers them in its
// Python package, over numpy; the semantics here are numpy's, bit for bit):
//   relax.run.unique(x, sorted, return_index, return_inverse, return_counts, [axis])
//     the unique elements of x (axis None: flattened) or unique slices along axis; alone a
//     Tensor, with any flag a tuple (values, [index], [inverse], [counts]) of int64 extras.
//     sorted = 0 keeps the order of first occurrence.
//   relax.run.nonzero(x) -> int64 (max(ndim, 1), count): the coordinates of nonzero elements.
// Floats compare by value (-0.0 == 0.0), NaNs sort last and are equal to each other (numpy's
// equal_nan); float16 compares as float.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "../contrib/contrib.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {
namespace {

using contrib::DataOf;
using contrib::Is;

/*! \brief Three-way comparison of two elements of one dtype. */
using ElemCmp = int (*)(const char* a, const char* b);

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
int CmpInt(const char* a, const char* b) {
  T x = Load<T>(a), y = Load<T>(b);
  return x < y ? -1 : (y < x ? 1 : 0);
}
template <typename T>
int CmpFloatValues(T x, T y) {
  const bool nx = std::isnan(x), ny = std::isnan(y);
  if (nx || ny) return nx == ny ? 0 : (nx ? 1 : -1);
  return x < y ? -1 : (y < x ? 1 : 0);
}
template <typename T>
int CmpFloat(const char* a, const char* b) {
  return CmpFloatValues(Load<T>(a), Load<T>(b));
}
int CmpHalf(const char* a, const char* b) {
  return CmpFloatValues(contrib::HalfToFloat(Load<uint16_t>(a)),
                        contrib::HalfToFloat(Load<uint16_t>(b)));
}

ElemCmp CmpFor(const Args& args, DLDataType t) {
  if (t.lanes == 1) {
    switch (t.code) {
      case kDLFloat:
        if (t.bits == 16) return CmpHalf;
        if (t.bits == 32) return CmpFloat<float>;
        if (t.bits == 64) return CmpFloat<double>;
        break;
      case kDLInt:
        if (t.bits == 8) return CmpInt<int8_t>;
        if (t.bits == 16) return CmpInt<int16_t>;
        if (t.bits == 32) return CmpInt<int32_t>;
        if (t.bits == 64) return CmpInt<int64_t>;
        break;
      case kDLUInt:
      case kDLBool:
        if (t.bits == 8 || (t.code == kDLBool && t.bits == 1)) return CmpInt<uint8_t>;
        if (t.bits == 16) return CmpInt<uint16_t>;
        if (t.bits == 32) return CmpInt<uint32_t>;
        if (t.bits == 64) return CmpInt<uint64_t>;
        break;
      default:
        break;
    }
  }
  Throw("TypeError", args.fname(), ": unsupported dtype ", DataTypeName(t));
}

ObjectPtr<NDArrayObj> Int64Tensor(const std::vector<int64_t>& shape,
                                  const std::vector<int64_t>& values) {
  auto out = NDArrayObj::Empty(shape, DLDataType{kDLInt, 64, 1}, DLDevice{kDLCPU, 0});
  if (!values.empty()) std::memcpy(out->tensor.data, values.data(), values.size() * 8);
  return out;
}

/*! \brief Whether an argument is a true flag (an int or bool). */
bool Flag(const Args& args, int i) { return args.Int(i) != 0; }

}  // namespace

POLYFFI_CORE_GLOBAL("relax.run.unique", [](const Args& args, RetValue* rv) {
  if (args.size() != 5) args.CheckArity(6);
  DLTensor* x = contrib::CpuTensor(args, 0, "input");
  const bool sorted = Flag(args, 1), want_index = Flag(args, 2), want_inverse = Flag(args, 3),
             want_counts = Flag(args, 4);
  const bool has_axis = args.size() == 6 && args.code(5) != kTVMNullptr;
  ElemCmp cmp = CmpFor(args, x->dtype);
  const int64_t esz = static_cast<int64_t>(ElementBytes(x->dtype));
  const int64_t numel = contrib::NumElements(x);
  // Items: elements (no axis) or slices along the axis, each `inner` elements laid out as
  // [before][after] with a stride of len * after between the `before` blocks.
  int64_t before = 1, len = numel, after = 1;
  int axis = 0;
  if (has_axis) {
    int64_t a = args.Int(5);
    if (a < 0) a += x->ndim;
    if (a < 0 || a >= x->ndim) {
      Throw("IndexError", args.fname(), ": axis ", args.Int(5), " is out of bounds for a tensor",
            " of dimension ", x->ndim);
    }
    axis = static_cast<int>(a);
    len = x->shape[axis];
    for (int i = 0; i < x->ndim; ++i) {
      if (i < axis) before *= x->shape[i];
      if (i > axis) after *= x->shape[i];
    }
  }
  // Items with no elements (a zero-size tensor along a non-empty axis) are all equal: one
  // group, found without the per-item work below, whose buffers would be sized by the axis
  // length alone, with no data behind it (fuzz_globals long run: shape (2^57, 0) asked for
  // exabytes).
  const bool empty_items = numel == 0 && len > 0;
  const char* base = DataOf(x);
  auto item_cmp = [&](int64_t p, int64_t q) {
    for (int64_t b = 0; b < before; ++b) {
      for (int64_t a = 0; a < after; ++a) {
        const int64_t off = b * len * after + a;
        int c = cmp(base + (off + p * after) * esz, base + (off + q * after) * esz);
        if (c != 0) return c;
      }
    }
    return 0;
  };
  // A stable sort of the items: each group of equal items starts with its first occurrence.
  std::vector<int64_t> first, counts, group_of;
  if (empty_items) {
    first = {0};
    counts = {len};
  } else {
    std::vector<int64_t> order(static_cast<size_t>(len));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t p, int64_t q) { return item_cmp(p, q) < 0; });
    group_of.resize(static_cast<size_t>(len));
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || item_cmp(order[i - 1], order[i]) != 0) {
        first.push_back(order[i]);
        counts.push_back(0);
      }
      ++counts.back();
      group_of[order[i]] = static_cast<int64_t>(first.size()) - 1;
    }
  }
  const int64_t u = static_cast<int64_t>(first.size());
  // rank[g]: where group g goes in the output (sorted: as is; else by first occurrence).
  std::vector<int64_t> by_out(static_cast<size_t>(u));
  std::iota(by_out.begin(), by_out.end(), 0);
  if (!sorted) {
    std::sort(by_out.begin(), by_out.end(),
              [&](int64_t g, int64_t h) { return first[g] < first[h]; });
  }
  std::vector<int64_t> rank(static_cast<size_t>(u));
  for (int64_t r = 0; r < u; ++r) rank[by_out[r]] = r;

  std::vector<int64_t> vshape{u};
  if (has_axis) {
    vshape.assign(x->shape, x->shape + x->ndim);
    vshape[axis] = u;
  }
  auto values = NDArrayObj::Empty(vshape, x->dtype, DLDevice{kDLCPU, 0});
  char* dst = static_cast<char*>(values->tensor.data);
  for (int64_t r = 0; r < u; ++r) {
    const int64_t src_item = first[by_out[r]];
    for (int64_t b = 0; b < before; ++b) {
      for (int64_t a = 0; a < after; ++a) {
        std::memcpy(dst + ((b * u + r) * after + a) * esz,
                    base + ((b * len + src_item) * after + a) * esz, static_cast<size_t>(esz));
      }
    }
  }
  if (!want_index && !want_inverse && !want_counts) return rv->SetObject(std::move(values));
  auto tuple = MakeObject<ArrayObj>();
  tuple->items.emplace_back();
  tuple->items.back().SetObject(std::move(values));
  auto add = [&](std::vector<int64_t> v) {
    std::vector<int64_t> shape{static_cast<int64_t>(v.size())};
    tuple->items.emplace_back();
    tuple->items.back().SetObject(Int64Tensor(shape, v));
  };
  if (want_index) {
    std::vector<int64_t> idx(static_cast<size_t>(u));
    for (int64_t r = 0; r < u; ++r) idx[r] = first[by_out[r]];
    add(std::move(idx));
  }
  if (want_inverse && empty_items) {
    // Every item is in the one group: len zeros, allocated (and refused when too large) as a
    // tensor rather than a vector.
    auto zeros = Int64Tensor({len}, {});
    std::memset(zeros->tensor.data, 0, static_cast<size_t>(len) * 8);
    tuple->items.emplace_back();
    tuple->items.back().SetObject(std::move(zeros));
  } else if (want_inverse) {
    std::vector<int64_t> inv(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) inv[i] = rank[group_of[i]];
    add(std::move(inv));
  }
  if (want_counts) {
    std::vector<int64_t> c(static_cast<size_t>(u));
    for (int64_t r = 0; r < u; ++r) c[r] = counts[by_out[r]];
    add(std::move(c));
  }
  rv->SetObject(std::move(tuple));
});

POLYFFI_CORE_GLOBAL("relax.run.nonzero", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  DLTensor* x = contrib::CpuTensor(args, 0, "input");
  ElemCmp cmp = CmpFor(args, x->dtype);
  const int64_t esz = static_cast<int64_t>(ElementBytes(x->dtype));
  const int64_t numel = contrib::NumElements(x);
  const int rows = std::max(x->ndim, 1);
  const char zero[8] = {};
  const char* base = DataOf(x);
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < numel; ++i) {
    if (cmp(base + i * esz, zero) != 0) hits.push_back(i);
  }
  const int64_t n = static_cast<int64_t>(hits.size());
  std::vector<int64_t> coords(static_cast<size_t>(rows * n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t rest = hits[k];
    for (int d = x->ndim - 1; d >= 0; --d) {
      coords[d * n + k] = rest % x->shape[d];
      rest /= x->shape[d];
    }
    if (x->ndim == 0) coords[k] = 0;
  }
  rv->SetObject(Int64Tensor({rows, n}, coords));
});

}  // namespace relax_vm
}  // namespace polyffi
