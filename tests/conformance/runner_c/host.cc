#include "host.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>

namespace conformance {

namespace {

/*!
 * \brief The resource_handle of every host callable. Never freed during the run: the finalizer
 *  only counts, so a second (buggy) finalization is observed instead of being a use-after-free.
 */
struct HostResource {
  std::string name;
  int serial = 0;
  int64_t y = 0;  // host.adder closures: the captured addend
  std::atomic<int> finalized{0};
};

std::mutex g_mutex;
std::deque<HostResource> g_resources;  // deque: stable addresses as it grows
std::atomic<int> g_current_case{0};

int Fail(const std::string& message) {
  TVMAPISetLastError(message.c_str());
  return -1;
}

int SetInt(TVMRetValueHandle ret, int64_t x) {
  TVMValue v;
  v.v_int64 = x;
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

void Finalize(void* resource) { static_cast<HostResource*>(resource)->finalized.fetch_add(1); }

HostResource* NewResource(const std::string& name, int64_t y) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_resources.emplace_back();
  HostResource* r = &g_resources.back();
  r->name = name;
  r->serial = g_current_case.load();
  r->y = y;
  return r;
}

/*! \brief Read an int argument the way the ABI allows (int, uint, bool). */
bool ReadInt(const char* who, TVMValue* args, int* codes, int i, int64_t* out) {
  int c = codes[i];
  if (c != kTVMArgInt && c != kDLUInt && c != kTVMArgBool) {
    Fail(std::string("TypeError: ") + who + ": argument " + std::to_string(i) +
         " expected int but got " + TypeCodeName(c));
    return false;
  }
  *out = args[i].v_int64;
  return true;
}

int HostAdd(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    int64_t x;
    if (!ReadInt("host.add", args, codes, i, &x)) return -1;
    // Wrap like two's complement instead of overflowing (UB); the cases stay in range.
    total = static_cast<int64_t>(static_cast<uint64_t>(total) + static_cast<uint64_t>(x));
  }
  return SetInt(ret, total);
}

int HostConcat(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  std::string out;
  try {
    for (int i = 0; i < n; ++i) {
      if (codes[i] == kTVMStr) {
        out += args[i].v_str;
      } else if (codes[i] == kTVMBytes) {
        const auto* b = static_cast<const TVMByteArray*>(args[i].v_handle);
        out.append(b->data, b->size);
      } else if (codes[i] == kTVMObjectHandle && TypeKeyOf(args[i].v_handle) == "runtime.String") {
        out += StringObjectContents(args[i].v_handle);
      } else {
        return Fail("TypeError: host.concat: argument " + std::to_string(i) +
                    " expected str but got " + TypeCodeName(codes[i]));
      }
    }
    ValuePtr result = MakeString(out);
    TVMValue v = result->Packed();
    int code = result->code();
    return TVMCFuncSetReturn(ret, &v, &code, 1);
  } catch (const ApiError& e) {
    return Fail(e.text());
  } catch (const std::exception& e) {
    return Fail(std::string("RuntimeError: host.concat: ") + e.what());
  }
}

int HostIdentity(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n == 0) {
    TVMValue v;
    v.v_handle = nullptr;
    int code = kTVMNullptr;
    return TVMCFuncSetReturn(ret, &v, &code, 1);
  }
  if (n != 1)
    return Fail("TypeError: host.identity expected 1 argument but got " + std::to_string(n));
  // TVMCFuncSetReturn copies strings and retains objects, so the same handle goes back.
  return TVMCFuncSetReturn(ret, &args[0], &codes[0], 1);
}

int HostRaiseValueError(TVMValue*, int*, int, TVMRetValueHandle, void*) {
  return Fail("ValueError: host boom");
}

int HostReturnNone(TVMValue*, int*, int, TVMRetValueHandle ret, void*) {
  TVMValue v;
  v.v_handle = nullptr;
  int code = kTVMNullptr;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

int HostReturnUnsupported(TVMValue*, int*, int, TVMRetValueHandle ret, void*) {
  TVMValue v;
  v.v_int64 = 0;
  int code = 99;  // no type code: what a C callback has that the runtime cannot take
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

int AdderClosure(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* resource) {
  if (n != 1) {
    return Fail("TypeError: host.adder.<closure> expected 1 argument but got " + std::to_string(n));
  }
  int64_t x;
  if (!ReadInt("host.adder.<closure>", args, codes, 0, &x)) return -1;
  return SetInt(ret, x + static_cast<HostResource*>(resource)->y);
}

int HostAdder(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n != 1) return Fail("TypeError: host.adder expected 1 argument but got " + std::to_string(n));
  int64_t y;
  if (!ReadInt("host.adder", args, codes, 0, &y)) return -1;
  TVMFunctionHandle f = nullptr;
  if (TVMFuncCreateFromCFunc(AdderClosure, NewResource("host.adder.<closure>", y), Finalize, &f) !=
      0) {
    return -1;
  }
  TVMValue v;
  v.v_handle = f;
  int code = kTVMPackedFuncHandle;
  int status = TVMCFuncSetReturn(ret, &v, &code, 1);  // retains: our own reference goes next
  TVMFuncFree(f);
  return status;
}

int HostCallEcho(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  // Copy the borrowed slots: the inner callee may rewrite what it receives.
  std::vector<TVMValue> values(args, args + n);
  std::vector<int> inner_codes(codes, codes + n);
  TVMValue out;
  int out_code = kTVMNullptr;
  int status = TVMFuncCall(Globals::Get().echo->raw().v_handle, values.data(), inner_codes.data(),
                           n, &out, &out_code);
  if (status != 0) return status;  // the inner error is already this thread's last error
  // Own the result first: strings are thread-local and objects must be released after
  // TVMCFuncSetReturn took its own reference.
  ValuePtr result = Value::Adopt(out, out_code);
  TVMValue v = result->Packed();
  int code = result->code();
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

TVMPackedCFunc Lookup(const std::string& name) {
  if (name == "host.add") return HostAdd;
  if (name == "host.concat") return HostConcat;
  if (name == "host.identity") return HostIdentity;
  if (name == "host.raise_value_error") return HostRaiseValueError;
  if (name == "host.return_none") return HostReturnNone;
  if (name == "host.adder") return HostAdder;
  if (name == "host.call_echo") return HostCallEcho;
  if (name == "host.return_unsupported") return HostReturnUnsupported;
  return nullptr;
}

}  // namespace

bool IsHostFunction(const std::string& name) { return Lookup(name) != nullptr; }

ValuePtr MakeHostFunction(const std::string& name) {
  TVMPackedCFunc body = Lookup(name);
  if (body == nullptr) throw Failure("unknown host function " + name);
  TVMFunctionHandle f = nullptr;
  CheckCall(TVMFuncCreateFromCFunc(body, NewResource(name, 0), Finalize, &f));
  TVMValue v;
  v.v_handle = f;
  return Value::Adopt(v, kTVMPackedFuncHandle);
}

void SetCurrentCase(int serial) { g_current_case.store(serial); }

int HostLive(int serial) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int live = 0;
  for (const HostResource& r : g_resources) {
    if (r.serial == serial && r.finalized.load() == 0) ++live;
  }
  return live;
}

int HostFinalizedTwice(int serial) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int twice = 0;
  for (const HostResource& r : g_resources) {
    if (r.serial == serial && r.finalized.load() > 1) ++twice;
  }
  return twice;
}

}  // namespace conformance
