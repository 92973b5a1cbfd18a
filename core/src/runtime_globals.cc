// The standard runtime.* globals TVM 0.18's frontend calls in deploy flows, with TVM's
// signatures and results (docs/spec/tvm-formats.md part 1 section 6, docs/compatibility.md):
// ShapeTuple, ADT/Tuple, GetFFIString, ObjectPtrHash, array allocation and views, devices,
// RuntimeEnabled, NumThreads and the module queries. Error kinds follow TVM's where its
// frontend tells them apart (InternalError and TVMError are tvm.TVMError in Python).
#include <cstdint>
#include <string>
#include <vector>

#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"
#include "polyffi/thread_pool.h"

namespace polyffi {
namespace {

/*! \brief TVM's name of a device type (DLDeviceType2Str), for messages. */
std::string DeviceName(int64_t type) {
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLOpenCL:
      return "opencl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLVPI:
      return "vpi";
    case kDLROCM:
      return "rocm";
    case kDLExtDev:
      return "ext_dev";
    case 15:
      return "webgpu";  // not in every dlpack.h release
    case 16:
      return "hexagon";
    default:
      return "device_type " + std::to_string(type);
  }
}

[[noreturn]] void DeviceNotEnabled(int64_t type) {
  Throw("InternalError", "Device API ", DeviceName(type), " is not enabled.");
}

/*!
 * \brief A dtype argument as TVM's frontend passes it: a DLDataType, or a string parsed the way
 *  TVM 0.18 parses it ("bool" is {kDLUInt, 1 bit}, not DLPack's kDLBool).
 */
DLDataType DataTypeArg(const Args& args, int i) {
  if (args.code(i) == kTVMDataType) return args.value(i).v_type;
  std::string s = args.Str(i);
  if (s == "bool") return DLDataType{kDLUInt, 1, 1};
  return ParseDataType(s);
}

std::vector<int64_t> ShapeArg(const Args& args, int i) {
  return args.ObjAs<ShapeTupleObj>(i)->ToVector();
}

DLDevice DeviceArg(const Args& args, int i) {
  if (args.code(i) != kDLDevice) args.Mismatch(i, "Device");
  return args.value(i).v_device;
}

RetValue ArgValue(const Args& args, int i) {
  RetValue v;
  v.SetFromC(args.value(i), args.code(i));
  return v;
}

}  // namespace

// ---- ShapeTuple ----

POLYFFI_CORE_GLOBAL("runtime.ShapeTuple", [](const Args& args, RetValue* rv) {
  std::vector<int64_t> dims(args.size());
  for (int i = 0; i < args.size(); ++i) dims[i] = args.Int(i);
  rv->SetObject(MakeObject<ShapeTupleObj>(dims));
});

POLYFFI_CORE_GLOBAL("runtime.GetShapeTupleSize", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetInt(static_cast<int64_t>(args.ObjAs<ShapeTupleObj>(0)->size()));
});

POLYFFI_CORE_GLOBAL("runtime.GetShapeTupleElem", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  auto st = args.ObjAs<ShapeTupleObj>(0);
  int64_t i = args.Int(1);
  int64_t n = st->ndim();
  if (i < 0 || i >= n)
    Throw("InternalError", "Check failed: idx < shape.size() (", i, " vs. ", n, ")");
  rv->SetInt(st->data()[i]);
});

// ---- ADT (runtime.Tuple is the ADT with tag 0) ----

POLYFFI_CORE_GLOBAL("runtime.ADT", [](const Args& args, RetValue* rv) {
  args.CheckMinArity(1);
  int64_t tag = args.Int(0);
  if (tag < INT32_MIN || tag > INT32_MAX)
    Throw("ValueError", "runtime.ADT: tag ", tag, " is out of range");
  auto adt = MakeObject<ADTObj>(static_cast<int32_t>(tag));
  for (int i = 1; i < args.size(); ++i) adt->fields.push_back(ArgValue(args, i));
  rv->SetObject(std::move(adt));
});

POLYFFI_CORE_GLOBAL("runtime.Tuple", [](const Args& args, RetValue* rv) {
  auto adt = MakeObject<ADTObj>(0);
  for (int i = 0; i < args.size(); ++i) adt->fields.push_back(ArgValue(args, i));
  rv->SetObject(std::move(adt));
});

POLYFFI_CORE_GLOBAL("runtime.GetADTTag", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetInt(args.ObjAs<ADTObj>(0)->tag);
});

POLYFFI_CORE_GLOBAL("runtime.GetADTSize", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetInt(static_cast<int64_t>(args.ObjAs<ADTObj>(0)->fields.size()));
});

POLYFFI_CORE_GLOBAL("runtime.GetADTFields", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  auto adt = args.ObjAs<ADTObj>(0);
  int64_t i = args.Int(1);
  int64_t n = static_cast<int64_t>(adt->fields.size());
  if (i < 0 || i >= n)
    Throw("InternalError", "Check failed: idx < adt.size() (", i, " vs. ", n, ")");
  rv->CopyFrom(adt->fields[i]);
});

// ---- Strings and object identity ----

POLYFFI_CORE_GLOBAL("runtime.GetFFIString", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetStr(args.Str(0));
});

POLYFFI_CORE_GLOBAL("runtime.ObjectPtrHash", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  // The address of the object (for an NDArray, of the object around its DLTensor), as TVM's.
  rv->SetInt(static_cast<int64_t>(reinterpret_cast<intptr_t>(args.Obj(0).get())));
});

// ---- Arrays ----

POLYFFI_CORE_GLOBAL("runtime.TVMArrayAllocWithScope", [](const Args& args, RetValue* rv) {
  args.CheckArity(4);
  std::vector<int64_t> shape = ShapeArg(args, 0);
  DLDataType dtype = DataTypeArg(args, 1);
  DLDevice dev = DeviceArg(args, 2);
  if (DeviceTypeOf(dev) != kDLCPU) DeviceNotEnabled(DeviceTypeOf(dev));
  if (args.code(3) != kTVMNullptr) {
    std::string scope = args.Str(3);
    if (!scope.empty() && scope != "global") {
      Throw("TVMError",
            "Device does not support allocate data space with specified memory scope: ", scope);
    }
  }
  rv->SetObject(NDArrayObj::Empty(shape, dtype, dev));
});

POLYFFI_CORE_GLOBAL("runtime.TVMArrayCreateView", [](const Args& args, RetValue* rv) {
  args.CheckArity(4);
  auto base = args.ObjAs<NDArrayObj>(0);
  std::vector<int64_t> shape = ShapeArg(args, 1);
  DLDataType dtype = DataTypeArg(args, 2);
  int64_t offset = args.Int(3);
  if (offset < 0) Throw("ValueError", "TVMArrayCreateView: negative byte offset ", offset);
  rv->SetObject(NDArrayObj::View(std::move(base), shape, dtype, static_cast<uint64_t>(offset)));
});

// ---- Devices and the runtime ----

POLYFFI_CORE_GLOBAL("runtime.GetDeviceAttr", [](const Args& args, RetValue* rv) {
  args.CheckArity(3);
  int64_t type = args.Int(0);
  args.Int(1);  // the device id: every CPU id is the same CPU
  int64_t kind = args.Int(2);
  if (type <= 0) Throw("TVMError", "unknown type = ", type);
  constexpr int64_t kExist = 0;
  if (type == kDLCPU) {
    // TVM's CPU device API answers kExist only; every other attribute is None.
    if (kind == kExist)
      rv->SetInt(1);
    else
      rv->SetNull();
    return;
  }
  // No device API for any other type: it does not exist, and has no attributes to ask.
  if (kind != kExist) DeviceNotEnabled(type);
  rv->SetInt(0);
});

POLYFFI_CORE_GLOBAL("runtime.RuntimeEnabled", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  std::string target = args.Str(0);
  std::string f_name;
  // TVM's rule: a runtime is enabled when its device API global is registered.
  if (target == "cpu") return rv->SetBool(true);
  if (target == "cuda" || target == "gpu" || target.rfind("nvptx", 0) == 0) {
    f_name = "device_api.cuda";
  } else if (target == "cl" || target == "opencl") {
    f_name = "device_api.opencl";
  } else if (target == "mtl" || target == "metal") {
    f_name = "device_api.metal";
  } else if (target == "tflite") {
    f_name = "target.runtime.tflite";
  } else if (target == "vulkan") {
    f_name = "device_api.vulkan";
  } else if (target == "rpc") {
    f_name = "device_api.rpc";
  } else if (target == "hexagon") {
    f_name = "device_api.hexagon";
  } else if (target.rfind("rocm", 0) == 0) {
    f_name = "device_api.rocm";
  } else if (target.rfind("llvm", 0) == 0) {
    f_name = "codegen.llvm_target_enabled";  // a compiler global: absent in a runtime
  } else {
    Throw("TVMError", "Unknown optional runtime ", target);
  }
  rv->SetBool(static_cast<bool>(Registry::Global()->Get(f_name)));
});

POLYFFI_CORE_GLOBAL("runtime.NumThreads", [](const Args& args, RetValue* rv) {
  args.CheckArity(0);
  rv->SetInt(ParallelNumThreads());
});

POLYFFI_CORE_GLOBAL("runtime.TVMSetStream", [](const Args& args, RetValue* rv) {
  args.CheckArity(3);
  int64_t type = args.Int(0);
  args.Int(1);
  if (type != kDLCPU) DeviceNotEnabled(type);
  rv->SetNull();  // the CPU has no streams: nothing to set, as in TVM's CPU device API
});

// Called by generated code before a kernel runs on a device: the CPU needs no switching.
POLYFFI_CORE_GLOBAL("__tvm_set_device", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  int64_t type = args.Int(0);
  args.Int(1);
  if (type != kDLCPU) DeviceNotEnabled(type);
  rv->SetNull();
});

// ---- Module queries ----

POLYFFI_CORE_GLOBAL("runtime.module.loadfile_so", [](const Args& args, RetValue* rv) {
  if (args.size() != 1) args.CheckArity(2);
  rv->SetObject(LoadModuleFromFile(args.Str(0), "so"));
});

POLYFFI_CORE_GLOBAL("runtime.ModuleImplementsFunction", [](const Args& args, RetValue* rv) {
  if (args.size() != 2) args.CheckArity(3);
  auto mod = args.ObjAs<ModuleObj>(0);
  bool query_imports = args.size() > 2 && args.Bool(2);
  rv->SetBool(static_cast<bool>(mod->GetFunction(args.Str(1), query_imports)));
});

POLYFFI_CORE_GLOBAL("runtime.ModuleGetPropertyMask", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  // TVM 0.18's masks (binary-serializable 1, runnable 2, DSO-exportable 4) for the module kinds
  // this runtime has, as its runtime reports them; other modules have TVM's default, 0.
  std::string key = args.ObjAs<ModuleObj>(0)->type_key();
  int64_t mask = 0;
  if (key == "library")
    mask = 0b011;
  else if (key == "GraphExecutorFactory")
    mask = 0b001;
  else if (key == "GraphExecutor")
    mask = 0b010;
  rv->SetInt(mask);
});

// Loaded modules carry no format, source or serialiser here, as in TVM's runtime for the same
// modules (its library and executor modules answer these with the same errors).
POLYFFI_CORE_GLOBAL("runtime.ModuleGetFormat", [](const Args& args, RetValue*) {
  args.CheckArity(1);
  Throw("TVMError", "Module[", args.ObjAs<ModuleObj>(0)->type_key(),
        "] does not support GetFormat");
});

POLYFFI_CORE_GLOBAL("runtime.ModuleGetSource", [](const Args& args, RetValue*) {
  if (args.size() != 1) args.CheckArity(2);
  Throw("TVMError", "Module[", args.ObjAs<ModuleObj>(0)->type_key(),
        "] does not support GetSource");
});

POLYFFI_CORE_GLOBAL("runtime.ModuleSaveToFile", [](const Args& args, RetValue*) {
  args.CheckArity(3);
  auto mod = args.ObjAs<ModuleObj>(0);
  args.Str(1);
  Throw("TVMError", "Module[", mod->type_key(), "] does not support SaveToFile");
});

POLYFFI_CORE_GLOBAL("runtime.ModuleClearImports", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  args.ObjAs<ModuleObj>(0)->ClearImports();
  rv->SetNull();
});

}  // namespace polyffi
