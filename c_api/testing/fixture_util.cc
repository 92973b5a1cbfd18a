#include "fixture_util.h"

#include <atomic>
#include <cstdio>
#include <new>

namespace polyffi_testing {
namespace {

std::atomic<int64_t> g_live_objects{0};

/*! \brief Release an owned reference returned with the given code. */
void ReleaseOwned(TVMValue v, int code) {
  switch (code) {
    case kTVMPackedFuncHandle:
      TVMFuncFree(v.v_handle);
      break;
    case kTVMModuleHandle:
      TVMModFree(v.v_handle);
      break;
    case kTVMNDArrayHandle:
      TVMArrayFree(static_cast<TVMArrayHandle>(v.v_handle));
      break;
    case kTVMObjectHandle:
      TVMObjectFree(v.v_handle);
      break;
    default:
      break;  // numbers, strings (copied), views and None own nothing
  }
}

}  // namespace

void RegisterOrReport(const char* name, const polyffi::Function& f) noexcept {
  if (TVMFuncRegisterGlobal(name, f.get(), 0) != 0) {
    std::fprintf(stderr, "polyffi_testing: cannot register %s: %s\n", name, TVMGetLastError());
  }
}

Registrar::Registrar(const char* name, TVMDirectCFunc fn) noexcept {
  TVMFunctionHandle h = nullptr;
  if (TVMFuncCreateDirectEx(fn, nullptr, nullptr, TVM_DIRECT_CLASSIC_RESULTS, &h) != 0 ||
      TVMFuncRegisterGlobal(name, h, 0) != 0) {
    std::fprintf(stderr, "polyffi_testing: cannot register %s: %s\n", name, TVMGetLastError());
  }
  TVMFuncFree(h);
}

TVMFunctionHandle CoreGlobal(const char* name) {
  TVMFunctionHandle h = nullptr;
  polyffi::CheckCall(TVMFuncGetGlobal(name, &h));
  if (h == nullptr) {
    throw polyffi::Error("ValueError", std::string("Cannot find global function ") + name);
  }
  return h;
}

OwnedValue::OwnedValue(TVMValue v, int code) : value_(v), code_(code) {
  if (code == kTVMStr) {
    bytes_ = v.v_str;
  } else if (code == kTVMBytes) {
    auto* b = static_cast<TVMByteArray*>(v.v_handle);
    bytes_.assign(b->data, b->size);
  }
}

OwnedValue::OwnedValue(OwnedValue&& o) noexcept
    : value_(o.value_), code_(o.code_), bytes_(std::move(o.bytes_)) {
  o.code_ = kTVMNullptr;
  o.value_.v_handle = nullptr;
}

OwnedValue& OwnedValue::operator=(OwnedValue&& o) noexcept {
  if (this != &o) {
    Reset();
    value_ = o.value_;
    code_ = o.code_;
    bytes_ = std::move(o.bytes_);
    o.code_ = kTVMNullptr;
    o.value_.v_handle = nullptr;
  }
  return *this;
}

void OwnedValue::Reset() {
  ReleaseOwned(value_, code_);
  code_ = kTVMNullptr;
  value_.v_handle = nullptr;
}

void OwnedValue::SetTo(RetValue* rv) const {
  TVMValue v = value_;
  TVMByteArray arr{bytes_.data(), bytes_.size()};
  if (code_ == kTVMStr) {
    v.v_str = bytes_.c_str();
  } else if (code_ == kTVMBytes) {
    v.v_handle = &arr;
  }
  // TVMCFuncSetReturn copies strings and retains objects; our own reference is released later.
  rv->SetRaw(v, code_);
}

OwnedValue CallRaw(TVMFunctionHandle f, TVMValue* values, int* codes, int n) {
  TVMValue rv;
  int rc = kTVMNullptr;
  polyffi::CheckCall(TVMFuncCall(f, values, codes, n, &rv, &rc));
  return OwnedValue(rv, rc);
}

void CheckArity(const char* name, const PackedArgs& args, int n) {
  if (args.size != n) {
    throw polyffi::Error("TypeError", std::string(name) + " expected " + std::to_string(n) +
                                          (n == 1 ? " argument" : " arguments") + " but got " +
                                          std::to_string(args.size));
  }
}

int64_t LiveObjects() { return g_live_objects.load(); }

LiveToken::LiveToken() { g_live_objects.fetch_add(1); }
LiveToken::LiveToken(const LiveToken&) { g_live_objects.fetch_add(1); }
LiveToken::~LiveToken() { g_live_objects.fetch_sub(1); }

}  // namespace polyffi_testing
