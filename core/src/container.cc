// String, Array and Map, and the runtime.* globals that build and read them (docs/spec/abi.md
// section 6, objects and containers).
#include "polyffi/container.h"

#include <cstring>

#include "polyffi/registry.h"

namespace polyffi {

std::string MapObj::KeyOf(const RetValue& key) {
  TVMValue v = key.value();
  switch (key.type_code()) {
    case kTVMStr:
      return "s" + key.str();
    case kTVMBytes:
      return "b" + key.str();
    case kTVMArgInt:
      return "i" + std::to_string(v.v_int64);
    case kTVMArgBool:
      return "?" + std::to_string(v.v_int64);
    case kTVMArgFloat: {
      char buf[sizeof(double)];
      std::memcpy(buf, &v.v_float64, sizeof(double));
      return "f" + std::string(buf, sizeof(buf));
    }
    case kTVMNullptr:
      return "n";
    case kTVMObjectHandle:
      // A runtime.String key equals the plain string with the same bytes.
      if (key.object()->type_index() == TypeIndex::kString) {
        return "s" + static_cast<StringObj*>(key.object())->data;
      }
      [[fallthrough]];
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle:
      return "o" + std::to_string(reinterpret_cast<uintptr_t>(key.object()));
    default:
      Throw("TypeError", "Map: unsupported key type ", TypeCodeName(key.type_code()));
  }
}

void MapObj::Set(RetValue key, RetValue value) {
  std::string k = KeyOf(key);
  auto it = index_.find(k);
  if (it != index_.end()) {
    items[it->second].second = std::move(value);
    return;
  }
  index_.emplace(std::move(k), items.size());
  items.emplace_back(std::move(key), std::move(value));
}

int64_t MapObj::Find(const RetValue& key) const {
  auto it = index_.find(KeyOf(key));
  return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
}

namespace {

RetValue ArgAsValue(const Args& args, int i) {
  RetValue v;
  v.SetFromC(args.value(i), args.code(i));
  return v;
}

/*! \brief Return a stored item; a string with a NUL byte comes back as a runtime.String. */
void ReturnItem(const RetValue& item, RetValue* rv) {
  if (item.type_code() == kTVMStr && item.str().find('\0') != std::string::npos) {
    return rv->SetObject(MakeObject<StringObj>(item.str()));
  }
  rv->CopyFrom(item);
}

}  // namespace

POLYFFI_CORE_GLOBAL("runtime.String", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetObject(MakeObject<StringObj>(args.Str(0)));
});

POLYFFI_CORE_GLOBAL("runtime.StringBytes", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetBytes(args.ObjAs<StringObj>(0)->data);
});

POLYFFI_CORE_GLOBAL("runtime.Array", [](const Args& args, RetValue* rv) {
  auto arr = MakeObject<ArrayObj>();
  arr->items.reserve(args.size());
  for (int i = 0; i < args.size(); ++i) arr->items.push_back(ArgAsValue(args, i));
  rv->SetObject(std::move(arr));
});

POLYFFI_CORE_GLOBAL("runtime.ArraySize", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetInt(static_cast<int64_t>(args.ObjAs<ArrayObj>(0)->items.size()));
});

POLYFFI_CORE_GLOBAL("runtime.ArrayGetItem", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  auto arr = args.ObjAs<ArrayObj>(0);
  int64_t i = args.Int(1);
  int64_t n = static_cast<int64_t>(arr->items.size());
  if (i < 0 || i >= n) Throw("IndexError", "Array index ", i, " out of range [0, ", n, ")");
  ReturnItem(arr->items[i], rv);
});

POLYFFI_CORE_GLOBAL("runtime.Map", [](const Args& args, RetValue* rv) {
  if (args.size() % 2 != 0) {
    Throw("ValueError", "runtime.Map: expected key/value pairs but got ", args.size(),
          " arguments");
  }
  auto map = MakeObject<MapObj>();
  for (int i = 0; i < args.size(); i += 2) map->Set(ArgAsValue(args, i), ArgAsValue(args, i + 1));
  rv->SetObject(std::move(map));
});

POLYFFI_CORE_GLOBAL("runtime.MapSize", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetInt(static_cast<int64_t>(args.ObjAs<MapObj>(0)->items.size()));
});

POLYFFI_CORE_GLOBAL("runtime.MapGetItem", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  auto map = args.ObjAs<MapObj>(0);
  int64_t i = map->Find(ArgAsValue(args, 1));
  if (i < 0) {
    std::string key = args.code(1) == kTVMStr ? args.value(1).v_str : TypeCodeName(args.code(1));
    Throw("KeyError", "key '", key, "' is not in the Map");
  }
  ReturnItem(map->items[i].second, rv);
});

POLYFFI_CORE_GLOBAL("runtime.MapCount", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  rv->SetInt(args.ObjAs<MapObj>(0)->Find(ArgAsValue(args, 1)) >= 0 ? 1 : 0);
});

POLYFFI_CORE_GLOBAL("runtime.MapItems", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  auto map = args.ObjAs<MapObj>(0);
  auto arr = MakeObject<ArrayObj>();
  arr->items.reserve(map->items.size() * 2);
  for (const auto& kv : map->items) {
    RetValue k, v;
    ReturnItem(kv.first, &k);
    ReturnItem(kv.second, &v);
    arr->items.push_back(std::move(k));
    arr->items.push_back(std::move(v));
  }
  rv->SetObject(std::move(arr));
});

POLYFFI_CORE_GLOBAL("runtime.ObjectUseCount", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  // Minus the reference Obj() itself takes.
  rv->SetInt(args.Obj(0)->use_count() - 1);
});

POLYFFI_CORE_GLOBAL("runtime.String2DLDataType", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetDataType(ParseDataType(args.Str(0)));
});

POLYFFI_CORE_GLOBAL("runtime.DLDataType2String", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  if (args.code(0) != kTVMDataType) args.Mismatch(0, "dtype");
  rv->SetStr(DataTypeString(args.value(0).v_type));
});

// A dtype string as one int, code | bits << 8 | lanes << 16: a dtype result reads back as its
// string (docs/abi-decisions.md), so a binding without dtype_string.h (Rust) parses through this.
POLYFFI_CORE_GLOBAL("polyffi.DataTypeFromString", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  DLDataType t = ParseDataType(args.Str(0));
  rv->SetInt(int64_t{t.code} | int64_t{t.bits} << 8 | int64_t{t.lanes} << 16);
});

// The name error messages give a type code ("expected int but got float"), for bindings that
// cannot include type_code_name.h (Rust), so a message reads the same from every language.
POLYFFI_CORE_GLOBAL("polyffi.TypeCodeName", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetStr(TypeCodeName(static_cast<int>(args.Int(0))));
});

}  // namespace polyffi
