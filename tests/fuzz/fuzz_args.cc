// Fuzz target: argument decoding. TVMFuncCall with random type codes and payloads into
// testing.echo, the typed fixtures, the containers' globals and a C callback (whose return
// goes back through TVMCFuncSetReturn), nested through testing.apply.
//
// Handles are never NULL or dangling (the ABI cannot tell those from valid ones): every
// handle is a live one from a fixed pool, sent with the code of its kind, which is often not
// the kind the callee wants (a module where an NDArray belongs, an NDArray where an Array
// belongs, ...). Unknown type codes are sent too.
//
// After every call the pool must be intact: each object's use count, each tensor's fields and
// data, and testing.live_objects() are what they were before.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

TVMValue Call(TVMFunctionHandle f, std::vector<TVMValue> v, std::vector<int> c, int* code) {
  TVMValue rv;
  int r = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &rv, code);
  if (r != 0) {
    std::fprintf(stderr, "setup call failed: %s\n", TVMGetLastError());
    std::abort();
  }
  return rv;
}

TVMValue Str(const char* s) {
  TVMValue v;
  v.v_str = s;
  return v;
}
TVMValue Int(int64_t i) {
  TVMValue v;
  v.v_int64 = i;
  return v;
}
TVMValue Handle(void* p) {
  TVMValue v;
  v.v_handle = p;
  return v;
}

// A callback that returns its first argument (or None) through TVMCFuncSetReturn.
int ReturnFirst(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n == 0) return 0;
  return TVMCFuncSetReturn(ret, &args[0], &codes[0], 1);
}

struct Pool {
  TVMFunctionHandle nop, echo, callback;
  TVMModuleHandle module;    // libpolyffi_testing.so
  TVMModuleHandle closures;  // runtime.ModuleFromFunctions
  TVMArrayHandle nd_f32, nd_i64;
  void* nd_object;  // nd_f32's object handle (runtime.NDArrayObjectHandle)
  void* array;      // runtime.Array(1, "a", nd_f32)
  void* map;        // runtime.Map("k", 1)
  void* string;     // runtime.String("hello")
  DLTensor plain;   // a caller-owned DLTensor, never an object
  float plain_data[4] = {1, 2, 3, 4};
  int64_t plain_shape[1] = {4};
  float nd_f32_data[3] = {1, 2, 3};
  int64_t nd_i64_data[2] = {7, -7};
  char opaque[16] = {};
  std::vector<void*> objects;  // every object handle above, for use counts
  std::vector<int64_t> use_counts;
  int64_t live = 0;
};

int64_t UseCount(void* obj) {
  static TVMFunctionHandle f = fuzz::Global("runtime.ObjectUseCount");
  int code = 0;
  return Call(f, {Handle(obj)}, {kTVMObjectHandle}, &code).v_int64;
}

int64_t LiveObjects() {
  static TVMFunctionHandle f = fuzz::Global("testing.live_objects");
  int code = 0;
  return Call(f, {}, {}, &code).v_int64;
}

Pool* MakePool() {
  auto* p = new Pool();
  p->nop = fuzz::Global("testing.nop");
  p->echo = fuzz::Global("testing.echo");
  FUZZ_CHECK(TVMFuncCreateFromCFunc(ReturnFirst, nullptr, nullptr, &p->callback) == 0);
  p->module = fuzz::TestingLib();
  int code = 0;
  p->closures = Call(fuzz::Global("runtime.ModuleFromFunctions"),
                     {Str("fuzz.M"), Str("echo"), Handle(p->echo)},
                     {kTVMStr, kTVMStr, kTVMPackedFuncHandle}, &code)
                    .v_handle;
  int64_t s3 = 3, s2 = 2;
  FUZZ_CHECK(TVMArrayAlloc(&s3, 1, kDLFloat, 32, 1, kDLCPU, 0, &p->nd_f32) == 0);
  FUZZ_CHECK(TVMArrayAlloc(&s2, 1, kDLInt, 64, 1, kDLCPU, 0, &p->nd_i64) == 0);
  p->nd_object = Call(fuzz::Global("runtime.NDArrayObjectHandle"), {Handle(p->nd_f32)},
                      {kTVMNDArrayHandle}, &code)
                     .v_handle;
  p->array = Call(fuzz::Global("runtime.Array"), {Int(1), Str("a"), Handle(p->nd_f32)},
                  {kTVMArgInt, kTVMStr, kTVMNDArrayHandle}, &code)
                 .v_handle;
  p->map =
      Call(fuzz::Global("runtime.Map"), {Str("k"), Int(1)}, {kTVMStr, kTVMArgInt}, &code).v_handle;
  p->string = Call(fuzz::Global("runtime.String"), {Str("hello")}, {kTVMStr}, &code).v_handle;
  p->plain = DLTensor{p->plain_data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, p->plain_shape, nullptr, 0};
  p->objects = {p->nop,   p->echo, p->callback, p->module,   p->closures,
                p->array, p->map,  p->string,   p->nd_object};
  for (void* o : p->objects) p->use_counts.push_back(UseCount(o));
  p->live = LiveObjects();
  return p;
}

// Restores the data the callees may legitimately write (nd_add_one writes its output).
void ResetData(Pool* p) {
  FUZZ_CHECK(TVMArrayCopyFromBytes(p->nd_f32, p->nd_f32_data, sizeof(p->nd_f32_data)) == 0);
  FUZZ_CHECK(TVMArrayCopyFromBytes(p->nd_i64, p->nd_i64_data, sizeof(p->nd_i64_data)) == 0);
}

void CheckTensor(const DLTensor* t, int64_t n, DLDataType dtype) {
  FUZZ_CHECK(t->ndim == 1 && t->shape[0] == n && t->byte_offset == 0 && t->strides == nullptr);
  FUZZ_CHECK(t->dtype.code == dtype.code && t->dtype.bits == dtype.bits && t->dtype.lanes == 1);
  FUZZ_CHECK(t->device.device_type == kDLCPU && t->data != nullptr);
}

void CheckPool(Pool* p) {
  for (size_t i = 0; i < p->objects.size(); ++i) {
    if (UseCount(p->objects[i]) != p->use_counts[i]) {
      std::fprintf(stderr, "pool object %zu: use count %lld, expected %lld\n", i,
                   static_cast<long long>(UseCount(p->objects[i])),
                   static_cast<long long>(p->use_counts[i]));
      std::abort();
    }
  }
  CheckTensor(p->nd_f32, 3, {kDLFloat, 32, 1});
  CheckTensor(p->nd_i64, 2, {kDLInt, 64, 1});
  FUZZ_CHECK(p->plain.data == p->plain_data && p->plain.shape == p->plain_shape);
  FUZZ_CHECK(p->plain.ndim == 1 && p->plain_shape[0] == 4);
  FUZZ_CHECK(LiveObjects() == p->live);
}

// The callees: name, and whether it is safe with any arguments (all of these are).
const char* const kFunctions[] = {"testing.echo",
                                  "testing.nop",
                                  "testing.add",
                                  "testing.add3",
                                  "testing.sum",
                                  "testing.concat",
                                  "testing.bytes_reverse",
                                  "testing.return_type",
                                  "testing.raise_error",
                                  "testing.device",
                                  "testing.dtype",
                                  "testing.apply",
                                  "testing.wrap_callback",
                                  "testing.return_closure",
                                  "testing.call_and_catch",
                                  "testing.object_use_count",
                                  "testing.nd_sum",
                                  "testing.nd_add_one",
                                  "testing.nd_data_ptr",
                                  "testing.make_array",
                                  "testing.make_map",
                                  "testing.array_sum_ints",
                                  "runtime.Array",
                                  "runtime.ArraySize",
                                  "runtime.ArrayGetItem",
                                  "runtime.Map",
                                  "runtime.MapSize",
                                  "runtime.MapGetItem",
                                  "runtime.MapCount",
                                  "runtime.MapItems",
                                  "runtime.String",
                                  "runtime.StringBytes",
                                  "runtime.ObjectUseCount",
                                  "runtime.String2DLDataType",
                                  "runtime.DLDataType2String",
                                  "runtime.ModuleGetTypeKey",
                                  "runtime.ModuleImportsSize",
                                  "runtime.ModuleGetImport",
                                  "runtime.ModuleGetFunction",
                                  "runtime.NDArrayObjectHandle",
                                  "runtime.ModuleFromFunctions",
                                  "runtime.SystemLib",
                                  "plugin.AddOne"};
constexpr size_t kNumFunctions = sizeof(kFunctions) / sizeof(kFunctions[0]);

// Storage that must outlive one call's arguments.
struct Scratch {
  std::vector<std::string> strings;
  std::vector<TVMByteArray> bytes;
  std::vector<void*> slots;  // kTVMObjectRValueRefArg slots, each holding a retained object
  Scratch() {
    strings.reserve(16);
    bytes.reserve(16);
    slots.reserve(16);
  }
};

void* PoolObject(Pool* p, FuzzedDataProvider& in) {
  return p->objects[in.ConsumeIntegralInRange<size_t>(0, p->objects.size() - 1)];
}

// One argument: a code and a payload that is valid for that code.
void MakeArg(Pool* p, FuzzedDataProvider& in, Scratch& s, TVMValue* v, int* code) {
  switch (in.ConsumeIntegralInRange<int>(0, 17)) {
    case 0:
      *code = kTVMArgInt, v->v_int64 = in.ConsumeIntegral<int64_t>();
      break;
    case 1:
      *code = kTVMArgInt, v->v_int64 = in.ConsumeIntegralInRange<int64_t>(-3, 8);
      break;
    case 2:
      *code = kTVMArgFloat, v->v_float64 = in.ConsumeFloatingPoint<double>();
      break;
    case 3:
      *code = kTVMArgBool, v->v_int64 = in.ConsumeIntegralInRange<int64_t>(0, 1);
      break;
    case 4:
      *code = kDLUInt, v->v_int64 = in.ConsumeIntegral<int64_t>();
      break;
    case 5:
      s.strings.push_back(in.ConsumeRandomLengthString(64));
      *code = kTVMStr, v->v_str = s.strings.back().c_str();
      break;
    case 6:
      s.strings.push_back(in.ConsumeRandomLengthString(64));
      s.bytes.push_back(TVMByteArray{s.strings.back().data(), s.strings.back().size()});
      *code = kTVMBytes, v->v_handle = &s.bytes.back();
      break;
    case 7:
      *code = kTVMDataType;
      v->v_type.code = in.ConsumeIntegral<uint8_t>();
      v->v_type.bits = in.ConsumeIntegral<uint8_t>();
      v->v_type.lanes = in.ConsumeIntegral<uint16_t>();
      break;
    case 8:
      *code = kDLDevice;
      {
        int32_t type = in.ConsumeIntegral<int32_t>();  // any int32, written as bits
        std::memcpy(&v->v_device.device_type, &type, sizeof(type));
      }
      v->v_device.device_id = in.ConsumeIntegral<int32_t>();
      break;
    case 9:
      *code = kTVMNullptr, v->v_handle = nullptr;
      break;
    case 10:
      *code = kTVMOpaqueHandle, v->v_handle = p->opaque;
      break;
    case 11:
      *code = kTVMObjectHandle, v->v_handle = PoolObject(p, in);
      break;
    case 12:
      *code = kTVMModuleHandle, v->v_handle = in.ConsumeBool() ? p->module : p->closures;
      break;
    case 13: {
      TVMFunctionHandle fs[] = {p->nop, p->echo, p->callback};
      *code = kTVMPackedFuncHandle, v->v_handle = fs[in.ConsumeIntegralInRange<int>(0, 2)];
      break;
    }
    case 14:
      *code = kTVMNDArrayHandle, v->v_handle = in.ConsumeBool() ? p->nd_f32 : p->nd_i64;
      break;
    case 15:
      *code = kTVMDLTensorHandle;
      v->v_handle = in.ConsumeBool() ? static_cast<DLTensor*>(p->nd_f32) : &p->plain;
      break;
    case 16: {
      void* obj = PoolObject(p, in);
      FUZZ_CHECK(TVMObjectRetain(obj) == 0);
      s.slots.push_back(obj);
      *code = kTVMObjectRValueRefArg, v->v_handle = &s.slots.back();
      break;
    }
    default: {
      // A code no value has: extension range, beyond it, negative.
      const int unknown[] = {16, 20, 63, 64, 127, 128, 1000, -1, -100};
      *code = unknown[in.ConsumeIntegralInRange<int>(0, 8)];
      v->v_int64 = in.ConsumeIntegral<int64_t>();
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The callees first: their handles are references too, counted in the pool's baseline.
  static std::vector<TVMFunctionHandle> functions = [] {
    std::vector<TVMFunctionHandle> fs;
    TVMModuleHandle plugin = nullptr;
    FUZZ_CHECK(TVMModLoadFromFile(POLYFFI_FUZZ_LIB_DIR "/libpolyffi_test_plugin.so", "", &plugin) ==
               0);
    for (const char* name : kFunctions) fs.push_back(fuzz::Global(name));
    return fs;
  }();
  static Pool* pool = MakePool();
  FuzzedDataProvider in(data, size);
  int calls = in.ConsumeIntegralInRange<int>(1, 4);
  for (int c = 0; c < calls && in.remaining_bytes() > 0; ++c) {
    // Callee: a global, the callback, or a pool function nested through testing.apply.
    size_t which = in.ConsumeIntegralInRange<size_t>(0, kNumFunctions);
    TVMFunctionHandle f = which == kNumFunctions ? pool->callback : functions[which];
    Scratch s;
    int n = in.ConsumeIntegralInRange<int>(0, 6);
    std::vector<TVMValue> values(n);
    std::vector<int> codes(n);
    for (int i = 0; i < n; ++i) MakeArg(pool, in, s, &values[i], &codes[i]);
    TVMValue rv;
    int rc = kTVMNullptr;
    if (std::getenv("FUZZ_VERBOSE") != nullptr) {
      std::fprintf(stderr, "call %s codes",
                   which == kNumFunctions ? "callback" : kFunctions[which]);
      for (int i = 0; i < n; ++i) std::fprintf(stderr, " %d", codes[i]);
      std::fprintf(stderr, "\n");
    }
    int r = TVMFuncCall(f, values.data(), codes.data(), n, &rv, &rc);
    if (r == 0) {
      fuzz::ReleaseReturn(rv, rc);
    } else {
      fuzz::CheckFailure(r);
    }
    // Moved-from slots are NULL; the rest still hold our reference.
    for (void* obj : s.slots) {
      if (obj != nullptr) FUZZ_CHECK(TVMObjectFree(obj) == 0);
    }
    ResetData(pool);
    CheckPool(pool);
  }
  return 0;
}
