// Printing and assertions of relax programs (TVM 0.27 registers them in its Python package):
//   relax.run.print(format, values...)        prints the values, formatted, to stdout
//   relax.run.assert_op(cond, format, values...)   AssertionError with the formatted values
//                                                  when cond (bool, int, bool scalar) is false
//   vm.builtin.debug_print(line, tensor)      "<line>: shape = (..), dtype = .., data =\n.."
// As TVM's: an empty format joins the values (", " for assertions, " " for print); otherwise
// it is a Python format string whose {} / {N} fields take the values ({{ and }} are braces;
// format specs are refused). Values render as Python shows them (ints, floats, True/False,
// None, tuples as (a, b), strings as is), except tensors: nested brackets of their elements
// ([[1, 2.5], [3, 4]]) rather than numpy's layout.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "../contrib/contrib.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {
namespace {

/*! \brief The shortest text that reads back as v (in v's own precision), as Python's repr. */
template <typename T>
std::string FloatText(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round trip, as Python's repr
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string ElementText(const char* p, DLDataType t) {
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 16) return FloatText(contrib::HalfToFloat(load(uint16_t{})));
      if (t.bits == 32) return FloatText(load(float{}));
      if (t.bits == 64) return FloatText(load(double{}));
      break;
    case kDLInt:
      if (t.bits == 8) return std::to_string(load(int8_t{}));
      if (t.bits == 16) return std::to_string(load(int16_t{}));
      if (t.bits == 32) return std::to_string(load(int32_t{}));
      if (t.bits == 64) return std::to_string(load(int64_t{}));
      break;
    case kDLUInt:
      if (t.bits == 8) return std::to_string(load(uint8_t{}));
      if (t.bits == 16) return std::to_string(load(uint16_t{}));
      if (t.bits == 32) return std::to_string(load(uint32_t{}));
      if (t.bits == 64) return std::to_string(load(uint64_t{}));
      break;
    case kDLBool:
      return load(uint8_t{}) ? "True" : "False";
    default:
      break;
  }
  return "?";
}

void TensorText(const DLTensor& t, int dim, int64_t* offset, std::string* out) {
  if (dim == t.ndim) {
    *out += ElementText(contrib::DataOf(&t) + *offset * static_cast<int64_t>(ElementBytes(t.dtype)),
                        t.dtype);
    ++*offset;
    return;
  }
  *out += '[';
  for (int64_t i = 0; i < t.shape[dim]; ++i) {
    if (i != 0) *out += ", ";
    TensorText(t, dim + 1, offset, out);
  }
  *out += ']';
}

std::string DLTensorText(const DLTensor& t) {
  // A caller's DLTensor may be malformed: its size is checked (ValueError for a negative ndim or
  // dimension) before any element is read, and a dtype that ElementText cannot read whole (no
  // bytes, several lanes) or elements without data print as "<tensor>".
  const size_t bytes = CheckedBytes(t.shape, t.ndim, t.dtype);
  const bool readable =
      t.dtype.lanes == 1 && t.dtype.bits != 0 && (t.dtype.bits % 8 == 0 || t.dtype.bits == 1);
  if (DeviceTypeOf(t.device) != kDLCPU || !IsCompact(t) || !readable ||
      (bytes != 0 && t.data == nullptr)) {
    return "<tensor>";
  }
  // No elements: "[]" as numpy prints it (walking the dimensions before a 0 could take forever).
  if (bytes == 0) return "[]";
  std::string s;
  int64_t offset = 0;
  TensorText(t, 0, &offset, &s);
  return s;
}

std::string ShapeText(const int64_t* dims, int64_t n) {
  std::string s = "(";
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (n == 1 ? ",)" : ")");
}

std::string Render(TVMValue v, int code);

std::string RenderObject(Object* o) {
  if (o == nullptr) return "None";
  const uint32_t ti = o->type_index();
  if (ti == TypeIndex::kNDArray) return DLTensorText(static_cast<NDArrayObj*>(o)->tensor);
  if (ti == ShapeObj::kTypeIndex) {
    auto* s = static_cast<ShapeObj*>(o);
    return ShapeText(s->data(), s->ndim());
  }
  if (ti == StringObj::kTypeIndex) return static_cast<StringObj*>(o)->data;
  if (ti == ArrayObj::kTypeIndex) {
    std::string s = "(";
    const auto& items = static_cast<ArrayObj*>(o)->items;
    for (size_t i = 0; i < items.size(); ++i) {
      TVMValue iv;
      int ic;
      TVMByteArray scratch;
      items[i].AsArg(&iv, &ic, &scratch);
      s += (i ? ", " : "") + Render(iv, ic);
    }
    return s + ")";
  }
  return "<" + TypeIndex2Key(ti) + ">";
}

std::string Render(TVMValue v, int code) {
  switch (code) {
    case kTVMArgInt:
      return std::to_string(v.v_int64);
    case kTVMArgBool:
      return v.v_int64 ? "True" : "False";
    case kTVMArgFloat:
      return FloatText(v.v_float64);
    case kTVMNullptr:
      return "None";
    case kTVMStr:
      return v.v_str ? v.v_str : "";
    case kTVMDLTensorHandle:
      return v.v_handle ? DLTensorText(*static_cast<DLTensor*>(v.v_handle)) : "None";
    default:
      if (IsObjectCode(code)) return RenderObject(ObjectOfArg(v, code));
      return std::string("<") + TypeCodeName(code) + ">";
  }
}

/*! \brief Python's str.format over rendered values: {} and {N} fields, {{ and }} escapes. */
std::string Format(const char* fname, const std::string& fmt,
                   const std::vector<std::string>& vals) {
  std::string out;
  size_t next = 0;
  bool automatic = false, manual = false;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      Throw("ValueError", fname, ": Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) {
      Throw("ValueError", fname, ": Single '{' encountered in format string");
    }
    std::string field = fmt.substr(i + 1, close - i - 1);
    size_t index;
    if (field.empty()) {
      automatic = true;
      index = next++;
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      manual = true;
      index = std::stoul(field);
    } else {
      Throw("ValueError", fname, ": unsupported format field {", field,
            "} (only {} and {N} are supported)");
    }
    if (automatic && manual) {
      Throw("ValueError", fname,
            ": cannot switch from automatic field numbering to manual field specification");
    }
    if (index >= vals.size()) {
      Throw("IndexError", fname, ": Replacement index ", index, " out of range for positional ",
            "args tuple");
    }
    out += vals[index];
    i = close;
  }
  return out;
}

std::vector<std::string> RenderFrom(const Args& args, int first) {
  std::vector<std::string> vals;
  for (int i = first; i < args.size(); ++i) vals.push_back(Render(args.value(i), args.code(i)));
  return vals;
}

std::string Join(const std::vector<std::string>& vals, const char* sep) {
  std::string s;
  for (size_t i = 0; i < vals.size(); ++i) s += (i ? sep : "") + vals[i];
  return s;
}

}  // namespace

POLYFFI_CORE_GLOBAL("relax.run.print", [](const Args& args, RetValue*) {
  args.CheckMinArity(1);
  const std::string fmt = args.Str(0);
  std::vector<std::string> vals = RenderFrom(args, 1);
  std::string text = fmt.empty() ? Join(vals, " ") : Format(args.fname(), fmt, vals);
  std::cout << text << std::endl;
});

POLYFFI_CORE_GLOBAL("relax.run.assert_op", [](const Args& args, RetValue*) {
  args.CheckMinArity(2);
  if (args.code(1) != kTVMStr) {
    Throw("ValueError", "The format string argument to assert must be a string, given ",
          TypeCodeName(args.code(1)));
  }
  bool ok;
  const int code = args.code(0);
  if (code == kTVMArgInt || code == kTVMArgBool) {
    ok = args.value(0).v_int64 != 0;
  } else if (DLTensor* t = TensorArg(args, 0)) {
    if (t->dtype.code != kDLBool) {
      Throw("ValueError", "The condition must be a bool scalar, but given a ",
            DataTypeName(t->dtype), " tensor");
    }
    if (t->ndim != 0) {
      Throw("ValueError", "The condition must be a scalar, but it has a shape of ",
            ShapeText(t->shape, t->ndim));
    }
    if (DeviceTypeOf(t->device) != kDLCPU) Throw("ValueError", "the condition is not on the CPU");
    ok = *contrib::DataOf(t) != 0;
  } else {
    Throw("ValueError", "The condition for relax assert must be a bool, int, or Tensor, but ",
          "received a ", TypeCodeName(code), ".");
  }
  if (ok) return;
  const std::string fmt = args.Str(1);
  std::vector<std::string> vals = RenderFrom(args, 2);
  std::string msg = "Assertion Failed";
  if (!vals.empty() || !fmt.empty()) {
    msg = fmt.empty() ? Join(vals, ", ") : Format(args.fname(), fmt, vals);
  }
  Throw("AssertionError", msg);
});

POLYFFI_CORE_GLOBAL("vm.builtin.debug_print", [](const Args& args, RetValue*) {
  args.CheckArity(2);
  DLTensor* t = TensorArg(args, 1);
  if (t == nullptr) args.Mismatch(1, "Tensor");
  std::cout << Render(args.value(0), args.code(0)) << ": shape = " << ShapeText(t->shape, t->ndim)
            << ", dtype = " << DataTypeName(t->dtype) << ", data =\n"
            << Render(args.value(1), args.code(1)) << std::endl;
});

}  // namespace relax_vm
}  // namespace polyffi
