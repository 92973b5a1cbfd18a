#include "case_runner.h"

#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "ffi.h"
#include "host.h"

namespace conformance {

namespace {

using nlohmann::json;

/*! \brief The single tag of a tagged value ({"int": 1} -> "int"). */
const std::string& TagOf(const json& tagged) {
  if (!tagged.is_object() || tagged.size() != 1) {
    throw Failure("expected a tagged value with exactly one key, got " + tagged.dump());
  }
  return tagged.begin().key();
}

double ParseFloat(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "-0.0") return -0.0;
  }
  throw Failure("bad float " + j.dump());
}

uint64_t Bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

std::string HexDecode(const std::string& hex) {
  if (hex.size() % 2 != 0) throw Failure("odd-length bytes_hex " + hex);
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string HexEncode(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

/*! \brief {"str": s} or {"str_repeat": [unit, count]} -> the string. */
std::string StringOf(const std::string& tag, const json& body) {
  if (tag == "str") return body.get<std::string>();
  std::string unit = body.at(0).get<std::string>(), out;
  int64_t count = body.at(1).get<int64_t>();
  out.reserve(unit.size() * static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out += unit;
  return out;
}

/*! \brief The dtype strings: int8, uint16, float32, bfloat16, bool, handle, with "xLANES". */
DLDataType ParseDType(const std::string& text) {
  DLDataType t;
  t.lanes = 1;
  std::string base = text;
  size_t x = text.find('x');
  if (x != std::string::npos) {
    base = text.substr(0, x);
    t.lanes = static_cast<uint16_t>(std::stoi(text.substr(x + 1)));
  }
  if (base == "bool") {
    // polyffi reads "bool" as DLPack's kDLBool (= 6, 8 bits), which the system dlpack.h (0.6)
    // does not name yet; see the core's dtype parser and docs/abi-decisions.md.
    t.code = 6;
    t.bits = 8;
    return t;
  }
  if (base == "handle") {
    t.code = kTVMOpaqueHandle;
    t.bits = 64;
    return t;
  }
  struct Prefix {
    const char* name;
    uint8_t code;
  };
  for (Prefix p : {Prefix{"uint", kDLUInt}, Prefix{"int", kDLInt}, Prefix{"bfloat", kDLBfloat},
                   Prefix{"float", kDLFloat}}) {
    size_t len = std::strlen(p.name);
    if (base.compare(0, len, p.name) == 0 && base.size() > len) {
      t.code = p.code;
      t.bits = static_cast<uint8_t>(std::stoi(base.substr(len)));
      return t;
    }
  }
  throw Failure("unknown dtype " + text);
}

/*! \brief Element bytes of an ndarray tag's data, in its dtype. */
std::string NDArrayBytes(const json& nd) {
  std::string dtype = nd.at("dtype").get<std::string>();
  std::string out;
  auto put = [&out](const auto& x) { out.append(reinterpret_cast<const char*>(&x), sizeof x); };
  for (const json& e : nd.at("data")) {
    if (dtype == "float32") {
      put(static_cast<float>(ParseFloat(e)));
    } else if (dtype == "float64") {
      put(ParseFloat(e));
    } else if (dtype == "int8") {
      put(e.get<int8_t>());
    } else if (dtype == "int16") {
      put(e.get<int16_t>());
    } else if (dtype == "int32") {
      put(e.get<int32_t>());
    } else if (dtype == "int64") {
      put(e.get<int64_t>());
    } else if (dtype == "uint8") {
      put(e.get<uint8_t>());
    } else if (dtype == "uint16") {
      put(e.get<uint16_t>());
    } else if (dtype == "uint32") {
      put(e.get<uint32_t>());
    } else if (dtype == "uint64") {
      put(e.get<uint64_t>());
    } else {
      throw Failure("unsupported ndarray dtype " + dtype);
    }
  }
  return out;
}

/*! \brief JSON text that tolerates invalid UTF-8 (bytes-like strings in messages). */
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string Describe(const Value& v) {
  std::ostringstream os;
  os << TypeCodeName(v.code());
  switch (v.code()) {
    case kTVMArgInt:
    case kDLUInt:
    case kTVMArgBool:
      os << " " << v.raw().v_int64;
      break;
    case kTVMArgFloat:
      os << " " << v.raw().v_float64 << " (bits 0x" << std::hex << Bits(v.raw().v_float64) << ")";
      break;
    case kTVMStr:
      os << " " << Dump(json(v.text())).substr(0, 200);
      break;
    case kTVMBytes:
      os << " 0x" << HexEncode(v.text()).substr(0, 200);
      break;
    case kDLDevice:
      os << " (" << v.raw().v_device.device_type << ", " << v.raw().v_device.device_id << ")";
      break;
    case kTVMObjectHandle:
      try {
        os << " " << TypeKeyOf(v.raw().v_handle);
      } catch (const ApiError&) {
        os << " (no type key)";
      }
      [[fallthrough]];
    default:
      if (v.IsObject()) os << " @" << v.raw().v_handle;
      break;
  }
  return os.str();
}

/*! \brief State of one running case: bound variables, registered names, loaded modules. */
class CaseRun {
 public:
  CaseRun(std::string lib_dir, int serial) : lib_dir_(std::move(lib_dir)), serial_(serial) {}

  void RunStep(const json& step);
  /*! \brief Release everything; remove registered globals. Safe after a failure. */
  void Cleanup();

 private:
  ValuePtr Build(const json& tagged);
  ValuePtr LoadModule(const std::string& name);
  ValuePtr ResolveModule(const json& ref);
  ValuePtr ModuleFunction(const json& spec, bool required);
  void Expect(const json& expect, const ValuePtr& actual, const Args& args,
              const std::string& path);
  void ExpectError(const json& spec, const ApiError& error);
  void RunCall(const json& step, const ValuePtr& function);
  ValuePtr Var(const std::string& name);
  ValuePtr ItemCall(const ValuePtr& f, Args args) { return CallFunction(f->raw().v_handle, args); }

  std::string lib_dir_;
  int serial_;
  std::map<std::string, ValuePtr> vars_;
  std::vector<ValuePtr> modules_;
  std::vector<std::string> registered_;
};

ValuePtr CaseRun::Var(const std::string& name) {
  auto it = vars_.find(name);
  if (it == vars_.end()) throw Failure("variable " + name + " is not bound");
  return it->second;
}

ValuePtr CaseRun::LoadModule(const std::string& name) {
  std::string path = lib_dir_ + "/lib" + name + ".so";
  TVMModuleHandle m = nullptr;
  CheckCall(TVMModLoadFromFile(path.c_str(), "", &m));
  TVMValue v;
  v.v_handle = m;
  return Value::Adopt(v, kTVMModuleHandle);
}

ValuePtr CaseRun::ResolveModule(const json& ref) {
  ValuePtr m = ref.is_string() ? LoadModule(ref.get<std::string>()) : Build(ref);
  if (m->code() != kTVMModuleHandle) {
    throw Failure(std::string("expected a module but got ") + Describe(*m));
  }
  return m;
}

ValuePtr CaseRun::ModuleFunction(const json& spec, bool required) {
  ValuePtr m = ResolveModule(spec.at("module"));
  std::string name = spec.at("function").get<std::string>();
  TVMFunctionHandle f = nullptr;
  CheckCall(TVMModGetFunction(m->raw().v_handle, name.c_str(),
                              spec.value("query_imports", false) ? 1 : 0, &f));
  if (f == nullptr) {
    if (required) throw Failure("module has no function " + name);
    return nullptr;
  }
  TVMValue v;
  v.v_handle = f;
  return Value::Adopt(v, kTVMPackedFuncHandle);
}

ValuePtr CaseRun::Build(const json& tagged) {
  const std::string& tag = TagOf(tagged);
  const json& body = tagged.begin().value();
  const Globals& g = Globals::Get();
  if (tag == "int") return Value::Int(body.get<int64_t>());
  if (tag == "float") return Value::Float(ParseFloat(body));
  if (tag == "bool") return Value::Int(body.get<bool>() ? 1 : 0, kTVMArgBool);
  if (tag == "str" || tag == "str_repeat") return MakeString(StringOf(tag, body));
  if (tag == "bytes_hex") return Value::Bytes(HexDecode(body.get<std::string>()));
  if (tag == "null") return Value::Null();
  if (tag == "device") {
    DLDevice d;
    d.device_type = static_cast<DLDeviceType>(body.at(0).get<int>());
    d.device_id = body.at(1).get<int>();
    return Value::Device(d);
  }
  if (tag == "dtype") return Value::DType(ParseDType(body.get<std::string>()));
  if (tag == "host") return MakeHostFunction(body.get<std::string>());
  if (tag == "global") return GetGlobal(body.get<std::string>());
  if (tag == "var") return Var(body.get<std::string>());
  if (tag == "module") return LoadModule(body.get<std::string>());
  if (tag == "array") {
    Args items;
    for (const json& item : body) items.push_back(Build(item));
    return ItemCall(g.array_make, items);
  }
  if (tag == "map") {
    Args items;
    for (const json& kv : body) {
      items.push_back(Build(kv.at(0)));
      items.push_back(Build(kv.at(1)));
    }
    return ItemCall(g.map_make, items);
  }
  if (tag == "shape") {
    Args dims;
    for (const json& d : body) dims.push_back(Value::Int(d.get<int64_t>()));
    return ItemCall(g.shape_make, dims);
  }
  if (tag == "ndarray") {
    DLDataType t = ParseDType(body.at("dtype").get<std::string>());
    std::vector<int64_t> shape = body.at("shape").get<std::vector<int64_t>>();
    TVMArrayHandle a = nullptr;
    CheckCall(TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), t.code, t.bits, t.lanes,
                            kDLCPU, 0, &a));
    TVMValue v;
    v.v_handle = a;
    ValuePtr owned = Value::Adopt(v, kTVMNDArrayHandle);
    std::string data = NDArrayBytes(body);
    CheckCall(TVMArrayCopyFromBytes(a, data.empty() ? nullptr : &data[0], data.size()));
    return owned;
  }
  throw Failure("unknown value tag " + tag);
}

void CaseRun::Expect(const json& expect, const ValuePtr& actual, const Args& args,
                     const std::string& path) {
  const std::string& tag = TagOf(expect);
  const json& body = expect.begin().value();
  const Globals& g = Globals::Get();
  auto fail = [&](const std::string& why) {
    throw Failure(path + ": expected " + Dump(expect).substr(0, 300) + " but got " +
                  Describe(*actual) + (why.empty() ? "" : " (" + why + ")"));
  };
  auto need_code = [&](int code) {
    if (actual->code() != code)
      fail(std::string("type code ") + std::to_string(actual->code()) + ", want " +
           TypeCodeName(code));
  };
  if (tag == "int") {
    need_code(kTVMArgInt);
    if (actual->raw().v_int64 != body.get<int64_t>()) fail("");
  } else if (tag == "bool") {
    need_code(kTVMArgBool);
    if ((actual->raw().v_int64 != 0) != body.get<bool>()) fail("");
  } else if (tag == "float") {
    need_code(kTVMArgFloat);
    if (Bits(actual->raw().v_float64) != Bits(ParseFloat(body))) fail("bits differ");
  } else if (tag == "str" || tag == "str_repeat") {
    std::string want = StringOf(tag, body);
    if (want.find('\0') == std::string::npos) {
      need_code(kTVMStr);
      if (actual->text() != want) fail("");
    } else {
      // docs/spec/abi.md section 6, objects and containers: a NUL-carrying string comes back as
      // a runtime.String object.
      need_code(kTVMObjectHandle);
      if (TypeKeyOf(actual->raw().v_handle) != "runtime.String") fail("not a runtime.String");
      if (StringObjectContents(actual->raw().v_handle) != want) fail("contents differ");
    }
  } else if (tag == "bytes_hex") {
    need_code(kTVMBytes);
    if (actual->text() != HexDecode(body.get<std::string>())) fail("");
  } else if (tag == "null") {
    need_code(kTVMNullptr);
  } else if (tag == "device") {
    need_code(kDLDevice);
    DLDevice d = actual->raw().v_device;
    if (d.device_type != body.at(0).get<int>() || d.device_id != body.at(1).get<int>()) fail("");
  } else if (tag == "dtype") {
    need_code(kTVMStr);  // docs/abi-decisions.md: dtypes come back as their string form
    if (actual->text() != body.get<std::string>()) fail("");
  } else if (tag == "any") {
    if (body.get<std::string>() != TypeCodeName(actual->code())) fail("");
  } else if (tag == "same_as_arg" || tag == "var") {
    ValuePtr want;
    if (tag == "var") {
      want = Var(body.get<std::string>());
    } else {
      size_t i = body.get<size_t>();
      if (i >= args.size())
        throw Failure(path + ": same_as_arg " + std::to_string(i) + " out of range");
      want = args[i];
    }
    if (actual->code() != want->code()) fail("type code differs from " + Describe(*want));
    if (want->IsObject()) {
      if (actual->raw().v_handle != want->raw().v_handle) fail("not the same handle");
    } else if (want->code() == kTVMArgFloat) {
      if (Bits(actual->raw().v_float64) != Bits(want->raw().v_float64)) fail("");
    } else if (want->code() == kTVMStr || want->code() == kTVMBytes) {
      if (actual->text() != want->text()) fail("");
    } else if (want->code() == kDLDevice) {
      DLDevice a = actual->raw().v_device, b = want->raw().v_device;
      if (a.device_type != b.device_type || a.device_id != b.device_id) fail("");
    } else if (want->code() != kTVMNullptr && actual->raw().v_int64 != want->raw().v_int64) {
      fail("");
    }
  } else if (tag == "array") {
    need_code(kTVMObjectHandle);
    if (TypeKeyOf(actual->raw().v_handle) != "Array") fail("not an Array");
    ValuePtr size = ItemCall(g.array_size, {actual});
    if (size->code() != kTVMArgInt || size->raw().v_int64 != static_cast<int64_t>(body.size())) {
      fail("size " + Describe(*size));
    }
    for (size_t i = 0; i < body.size(); ++i) {
      ValuePtr item = ItemCall(g.array_get, {actual, Value::Int(static_cast<int64_t>(i))});
      Expect(body[i], item, args, path + "[" + std::to_string(i) + "]");
    }
  } else if (tag == "map") {
    need_code(kTVMObjectHandle);
    if (TypeKeyOf(actual->raw().v_handle) != "Map") fail("not a Map");
    ValuePtr size = ItemCall(g.map_size, {actual});
    if (size->code() != kTVMArgInt || size->raw().v_int64 != static_cast<int64_t>(body.size())) {
      fail("size " + Describe(*size));
    }
    for (const json& kv : body) {
      ValuePtr key = Build(kv.at(0));
      ValuePtr item;
      try {
        item = ItemCall(g.map_get, {actual, key});
      } catch (const ApiError& e) {
        fail("looking up key " + kv.at(0).dump() + ": " + e.text());
      }
      Expect(kv.at(1), item, args, path + "[" + kv.at(0).dump() + "]");
    }
  } else if (tag == "shape") {
    // Read with TVM's own globals (runtime.GetShapeTupleSize / GetShapeTupleElem).
    need_code(kTVMObjectHandle);
    if (TypeKeyOf(actual->raw().v_handle) != "runtime.ShapeTuple") fail("not a runtime.ShapeTuple");
    ValuePtr size = ItemCall(g.shape_size, {actual});
    if (size->code() != kTVMArgInt || size->raw().v_int64 != static_cast<int64_t>(body.size())) {
      fail("size " + Describe(*size));
    }
    for (size_t i = 0; i < body.size(); ++i) {
      ValuePtr d = ItemCall(g.shape_get, {actual, Value::Int(static_cast<int64_t>(i))});
      if (d->code() != kTVMArgInt || d->raw().v_int64 != body[i].get<int64_t>()) {
        fail("dimension " + std::to_string(i) + " is " + Describe(*d));
      }
    }
  } else if (tag == "ndarray") {
    need_code(kTVMNDArrayHandle);
    const auto* t = static_cast<const DLTensor*>(actual->raw().v_handle);
    DLDataType want = ParseDType(body.at("dtype").get<std::string>());
    if (t->dtype.code != want.code || t->dtype.bits != want.bits || t->dtype.lanes != want.lanes) {
      fail("dtype differs");
    }
    std::vector<int64_t> shape = body.at("shape").get<std::vector<int64_t>>();
    if (t->ndim != static_cast<int>(shape.size()) ||
        !std::equal(shape.begin(), shape.end(), t->shape)) {
      fail("shape differs");
    }
    std::string want_bytes = NDArrayBytes(body), got(want_bytes.size(), '\0');
    CheckCall(
        TVMArrayCopyToBytes(const_cast<DLTensor*>(t), got.empty() ? nullptr : &got[0], got.size()));
    if (got != want_bytes) fail("data differs: 0x" + HexEncode(got).substr(0, 200));
  } else {
    throw Failure(path + ": unknown expectation tag " + tag);
  }
}

void CaseRun::ExpectError(const json& spec, const ApiError& error) {
  auto fail = [&](const std::string& why) {
    throw Failure("expected error " + spec.dump() + " but got status " +
                  std::to_string(error.status()) + " with \"" + error.text() + "\" (" + why + ")");
  };
  if (error.status() != -1) fail("status must be -1");
  if (spec.contains("kind") && error.kind() != spec["kind"].get<std::string>()) fail("kind");
  if (spec.contains("message") && error.message() != spec["message"].get<std::string>()) {
    fail("message");
  }
  if (spec.contains("contains") &&
      error.text().find(spec["contains"].get<std::string>()) == std::string::npos) {
    fail("text");
  }
}

void CaseRun::RunCall(const json& step, const ValuePtr& function) {
  if (function->code() != kTVMPackedFuncHandle) {
    throw Failure("callee is not a function: " + Describe(*function));
  }
  Args args;
  for (const json& a : step.at("args")) args.push_back(Build(a));
  ValuePtr result;
  try {
    result = step.value("async", false) ? CallFunctionAsync(function->raw().v_handle, args)
                                        : CallFunction(function->raw().v_handle, args);
  } catch (const ApiError& e) {
    if (step.contains("expect_error")) {
      ExpectError(step["expect_error"], e);
      return;
    }
    throw Failure("call failed: " + e.text());
  }
  if (step.contains("expect_error")) {
    throw Failure("expected error " + step["expect_error"].dump() + " but the call returned " +
                  Describe(*result));
  }
  if (step.contains("expect")) Expect(step["expect"], result, args, "result");
  if (step.contains("bind")) vars_[step["bind"].get<std::string>()] = result;
  // args (and the host callables built for them) are released here, right after the call.
}

void CaseRun::RunStep(const json& step) {
  if (step.contains("call")) {
    RunCall(step, GetGlobal(step["call"].get<std::string>()));
  } else if (step.contains("call_value")) {
    RunCall(step, Build(step["call_value"]));
  } else if (step.contains("module_call")) {
    RunCall(step, ModuleFunction(step["module_call"], true));
  } else if (step.contains("let")) {
    vars_[step["let"].get<std::string>()] = Build(step.at("value"));
  } else if (step.contains("release")) {
    if (vars_.erase(step["release"].get<std::string>()) == 0) {
      throw Failure("release of unbound variable " + step["release"].dump());
    }
  } else if (step.contains("register")) {
    std::string name = step["register"].get<std::string>();
    ValuePtr f = Build(step.at("value"));
    if (f->code() != kTVMPackedFuncHandle) throw Failure("register needs a function");
    try {
      CheckCall(TVMFuncRegisterGlobal(name.c_str(), f->raw().v_handle,
                                      step.value("override", false) ? 1 : 0));
    } catch (const ApiError& e) {
      if (!step.contains("expect_error")) throw Failure("register failed: " + e.text());
      ExpectError(step["expect_error"], e);
      return;
    }
    registered_.push_back(name);
    if (step.contains("expect_error")) throw Failure("register " + name + " succeeded");
  } else if (step.contains("remove")) {
    int status = TVMFuncRemoveGlobal(step["remove"].get<std::string>().c_str());
    if (status != 0) throw Failure(std::string("remove failed: ") + TVMGetLastError());
  } else if (step.contains("exists")) {
    TVMFunctionHandle f = nullptr;
    CheckCall(TVMFuncGetGlobal(step["exists"].get<std::string>().c_str(), &f));
    TVMFuncFree(f);
    if ((f != nullptr) != step.at("expect").get<bool>()) {
      throw Failure("TVMFuncGetGlobal(" + step["exists"].dump() + ") " +
                    (f != nullptr ? "found it" : "did not find it"));
    }
  } else if (step.contains("listed")) {
    int size = 0;
    const char** names = nullptr;
    CheckCall(TVMFuncListGlobalNames(&size, &names));
    std::string want = step["listed"].get<std::string>();
    bool found = false;
    for (int i = 0; i < size && !found; ++i) found = want == names[i];
    if (found != step.at("expect").get<bool>()) {
      throw Failure("TVMFuncListGlobalNames " + std::string(found ? "lists " : "does not list ") +
                    want + " (" + std::to_string(size) + " names)");
    }
  } else if (step.contains("host_live")) {
    int live = HostLive(serial_), want = step["host_live"].get<int>();
    if (live != want) {
      throw Failure("host callables alive: " + std::to_string(live) + ", want " +
                    std::to_string(want));
    }
  } else if (step.contains("load_module")) {
    ValuePtr m;
    try {
      m = LoadModule(step["load_module"].get<std::string>());
    } catch (const ApiError& e) {
      if (!step.contains("expect_error")) throw Failure("load failed: " + e.text());
      ExpectError(step["expect_error"], e);
      return;
    }
    if (step.contains("expect_error")) throw Failure("loading the module succeeded");
    if (step.contains("bind")) {
      vars_[step["bind"].get<std::string>()] = m;
    } else {
      modules_.push_back(m);  // kept until the case ends, like a binding's loaded module
    }
  } else if (step.contains("import")) {
    ValuePtr m = ResolveModule(step["import"].at("module"));
    ValuePtr dep = ResolveModule(step["import"].at("dep"));
    CheckCall(TVMModImport(m->raw().v_handle, dep->raw().v_handle));
  } else if (step.contains("module_get")) {
    ValuePtr f = ModuleFunction(step["module_get"], false);
    if (step.contains("expect") && (f != nullptr) != step["expect"].get<bool>()) {
      throw Failure("TVMModGetFunction " + std::string(f ? "found " : "did not find ") +
                    step["module_get"].dump());
    }
    if (step.contains("bind")) {
      if (f == nullptr) throw Failure("module_get found nothing to bind");
      vars_[step["bind"].get<std::string>()] = f;
    }
  } else {
    throw Failure("unknown step " + step.dump());
  }
}

void CaseRun::Cleanup() {
  vars_.clear();
  modules_.clear();
  for (const std::string& name : registered_) TVMFuncRemoveGlobal(name.c_str());
  registered_.clear();
}

}  // namespace

CaseResult RunCase(const json& c, const std::string& lib_dir, int serial) {
  CaseResult result;
  SetCurrentCase(serial);
  CaseRun run(lib_dir, serial);
  std::vector<json> steps;
  if (c.contains("steps")) {
    steps = c["steps"].get<std::vector<json>>();
  } else {
    steps.push_back(c);
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    try {
      run.RunStep(steps[i]);
    } catch (const std::exception& e) {
      result.ok = false;
      result.message = (c.contains("steps") ? "step " + std::to_string(i) + ": " : "") + e.what();
      break;
    }
  }
  run.Cleanup();
  if (result.ok) {
    // Ownership rules (docs/spec/abi.md section 4, ownership): once the runner dropped
    // everything, each host callable of the case has been finalized exactly once.
    int live = HostLive(serial), twice = HostFinalizedTwice(serial);
    if (live != 0 || twice != 0) {
      result.ok = false;
      result.message = "after the case: " + std::to_string(live) +
                       " host callable(s) never finalized, " + std::to_string(twice) +
                       " finalized more than once";
    }
  }
  return result;
}

}  // namespace conformance
