// Fuzz target: a relax VM executable (TVM 0.27's `relax.VMExecutable` blob: header, function
// table, memory scopes, constant pool with tensors, bytecode), fed to the loader
// `ffi.Module.load_from_bytes.relax.VMExecutable` as the library_bin reader does. An accepted
// executable is printed (as_text, stats), made into a VM and initialised; when every function
// it calls is a vm.builtin.* and no bytecode function calls another (so it cannot recurse for
// long), each bytecode function is also run on a few arguments. Every failure must be a clean
// "Kind: message" error.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

bool Call(TVMFunctionHandle f, TVMValue* v, int* c, int n, TVMValue* rv, int* rc) {
  int r = TVMFuncCall(f, v, c, n, rv, rc);
  if (r != 0) {
    fuzz::CheckFailure(r);
    return false;
  }
  return true;
}

TVMFunctionHandle ModFunc(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = nullptr;
  FUZZ_CHECK(TVMModGetFunction(m, name, 0, &f) == 0);
  return f;
}

std::string CallStr(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = ModFunc(m, name);
  FUZZ_CHECK(f != nullptr);
  TVMValue rv;
  int rc = 0;
  FUZZ_CHECK(Call(f, nullptr, nullptr, 0, &rv, &rc) && rc == kTVMStr);
  std::string s = rv.v_str;
  TVMFuncFree(f);
  return s;
}

// Whether, in every section of text that starts with open and ends at close, the product of
// the magnitudes of the integers ("i12" immediates, or shape elements) stays below 2^28.
bool SmallProducts(const std::string& text, const char* open, char close) {
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    size_t end = text.find(close, at);
    std::string section = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    double product = 1;
    for (size_t i = 0; i < section.size(); ++i) {
      bool imm =
          section[i] == 'i' && i + 1 < section.size() &&
          (std::isdigit(static_cast<unsigned char>(section[i + 1])) || section[i + 1] == '-');
      bool elem = open[0] == 's' &&
                  (std::isdigit(static_cast<unsigned char>(section[i])) || section[i] == '-') &&
                  (i == 0 || !std::isdigit(static_cast<unsigned char>(section[i - 1])));
      if (!imm && !elem) continue;
      size_t start = imm ? i + 1 : i;
      double v = std::fabs(std::strtod(section.c_str() + start, nullptr));
      if (v > 1) product *= v;
      while (i + 1 < section.size() &&
             (std::isdigit(static_cast<unsigned char>(section[i + 1])) || section[i + 1] == '-')) {
        ++i;
      }
    }
    if (product > static_cast<double>(1 << 28)) return false;
  }
  return true;
}

void RunVM(TVMModuleHandle exec) {
  std::string text = CallStr(exec, "as_text");
  std::string stats = CallStr(exec, "stats");
  // Running allocates what the program asks for; libFuzzer counts an allocation beyond
  // -malloc_limit_mb as a crash, so programs whose shapes (constants, or the immediates of one
  // instruction, e.g. make_shape's) could ask for more than 2^28 elements are only loaded.
  bool small = SmallProducts(stats, "shapetuple[", ']') && SmallProducts(text, "in: ", '\n');
  // Names of bytecode functions ("@name:") and packed ones ("@name packed_func;").
  std::vector<std::string> vm_funcs;
  bool only_builtins = true;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '@') continue;
    if (line.size() > 1 && line.back() == ':') {
      vm_funcs.push_back(line.substr(1, line.size() - 2));
    } else if (line.find(" packed_func;") != std::string::npos &&
               line.rfind("@vm.builtin.", 0) != 0) {
      only_builtins = false;
    }
  }
  for (const std::string& name : vm_funcs) {
    if (text.find("call  " + name + " ") != std::string::npos) only_builtins = false;
  }
  TVMFunctionHandle load = ModFunc(exec, "vm_load_executable");
  TVMValue rv;
  int rc = 0;
  FUZZ_CHECK(Call(load, nullptr, nullptr, 0, &rv, &rc) && rc == kTVMModuleHandle);
  TVMFuncFree(load);
  TVMModuleHandle vm = rv.v_handle;
  TVMFunctionHandle init = ModFunc(vm, "vm_initialization");
  TVMValue iv[3];
  int ic[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
  iv[0].v_int64 = 1, iv[1].v_int64 = 0, iv[2].v_int64 = 2;
  bool ok = Call(init, iv, ic, 3, &rv, &rc);
  TVMFuncFree(init);
  if (ok && only_builtins && small) {
    int64_t shape[2] = {2, 3};
    TVMArrayHandle arr = nullptr;
    FUZZ_CHECK(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &arr) == 0);
    for (const std::string& name : vm_funcs) {
      TVMFunctionHandle f = ModFunc(vm, name.c_str());
      if (f == nullptr) continue;  // a name repeated in the table
      TVMValue v[2];
      int c[2] = {kTVMNDArrayHandle, kTVMArgInt};
      v[0].v_handle = arr, v[1].v_int64 = 3;
      for (int n = 0; n <= 2; ++n) {
        if (Call(f, v, c, n, &rv, &rc)) fuzz::ReleaseReturn(rv, rc);
      }
      TVMFuncFree(f);
    }
    TVMArrayFree(arr);
  }
  TVMModFree(vm);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TVMFunctionHandle load = fuzz::Global("ffi.Module.load_from_bytes.relax.VMExecutable");
  std::vector<char> blob(data, data + size);  // exactly size bytes: reads past are reports
  TVMByteArray bytes{blob.data(), blob.size()};
  TVMValue v, rv;
  int c = kTVMBytes, rc = 0;
  v.v_handle = &bytes;
  if (!Call(load, &v, &c, 1, &rv, &rc)) return 0;
  FUZZ_CHECK(rc == kTVMModuleHandle);
  RunVM(rv.v_handle);
  TVMModFree(rv.v_handle);
  return 0;
}
