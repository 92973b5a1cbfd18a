#include "ffi.h"

#include <polyffi/c_async_api.h>
#include <polyffi/type_code_name.h>

#include <cctype>
#include <condition_variable>
#include <mutex>

namespace conformance {

namespace {

bool IsKindChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

/*! \brief Split "Kind: message" (first line only); without a kind it is TVMError
 *  (docs/spec/abi.md section 5, errors). */
void SplitFirstLine(const std::string& text, std::string* kind, std::string* message) {
  std::string line = text.substr(0, text.find('\n'));
  size_t colon = line.find(": ");
  bool has_kind = colon != std::string::npos && colon > 0;
  for (size_t i = 0; has_kind && i < colon; ++i) has_kind = IsKindChar(line[i]);
  if (has_kind) {
    *kind = line.substr(0, colon);
    *message = line.substr(colon + 2);
  } else {
    *kind = "TVMError";
    *message = line;
  }
}

}  // namespace

std::string ApiError::kind() const {
  std::string kind, message;
  SplitFirstLine(text_, &kind, &message);
  return kind;
}

std::string ApiError::message() const {
  std::string kind, message;
  SplitFirstLine(text_, &kind, &message);
  return message;
}

void CheckCall(int status) {
  if (status != 0) throw ApiError(status, TVMGetLastError());
}

const char* TypeCodeName(int code) { return PolyffiTypeCodeName(code); }

Value::~Value() {
  // Errors from *Free are not actionable in a destructor; the leak check catches real misses.
  switch (code_) {
    case kTVMPackedFuncHandle:
      TVMFuncFree(v_.v_handle);
      break;
    case kTVMModuleHandle:
      TVMModFree(v_.v_handle);
      break;
    case kTVMNDArrayHandle:
      TVMArrayFree(static_cast<TVMArrayHandle>(v_.v_handle));
      break;
    case kTVMObjectHandle:
      TVMObjectFree(v_.v_handle);
      break;
    default:
      break;
  }
}

ValuePtr Value::Int(int64_t x, int code) {
  auto v = std::make_shared<Value>();
  v->code_ = code;
  v->v_.v_int64 = x;
  return v;
}

ValuePtr Value::Float(double x) {
  auto v = std::make_shared<Value>();
  v->code_ = kTVMArgFloat;
  v->v_.v_float64 = x;
  return v;
}

ValuePtr Value::Null() { return std::make_shared<Value>(); }

ValuePtr Value::Str(std::string s) {
  auto v = std::make_shared<Value>();
  v->code_ = kTVMStr;
  v->s_ = std::move(s);
  return v;
}

ValuePtr Value::Bytes(std::string b) {
  auto v = std::make_shared<Value>();
  v->code_ = kTVMBytes;
  v->s_ = std::move(b);
  return v;
}

ValuePtr Value::Device(DLDevice d) {
  auto v = std::make_shared<Value>();
  v->code_ = kDLDevice;
  v->v_.v_device = d;
  return v;
}

ValuePtr Value::DType(DLDataType t) {
  auto v = std::make_shared<Value>();
  v->code_ = kTVMDataType;
  v->v_.v_type = t;
  return v;
}

ValuePtr Value::Adopt(TVMValue raw, int code) {
  auto v = std::make_shared<Value>();
  v->code_ = code;
  v->v_ = raw;
  if (code == kTVMStr) {
    v->s_ = raw.v_str != nullptr ? raw.v_str : "";
  } else if (code == kTVMBytes) {
    const auto* b = static_cast<const TVMByteArray*>(raw.v_handle);
    v->s_ = b != nullptr ? std::string(b->data, b->size) : std::string();
  }
  return v;
}

TVMValue Value::Packed() {
  if (code_ == kTVMStr) {
    v_.v_str = s_.c_str();
  } else if (code_ == kTVMBytes) {
    bytes_.data = s_.data();
    bytes_.size = s_.size();
    v_.v_handle = &bytes_;
  }
  return v_;
}

bool Value::IsObject() const {
  return code_ == kTVMObjectHandle || code_ == kTVMModuleHandle || code_ == kTVMPackedFuncHandle ||
         code_ == kTVMNDArrayHandle;
}

ValuePtr CallFunction(TVMFunctionHandle f, const Args& args) {
  // Fresh arrays per call: a callee may rewrite its borrowed slots (TVMCbArgToReturn).
  std::vector<TVMValue> values(args.size());
  std::vector<int> codes(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    values[i] = args[i]->Packed();
    codes[i] = args[i]->code();
  }
  TVMValue ret;
  ret.v_handle = nullptr;
  int ret_code = kTVMNullptr;
  CheckCall(
      TVMFuncCall(f, values.data(), codes.data(), static_cast<int>(args.size()), &ret, &ret_code));
  return Value::Adopt(ret, ret_code);
}

namespace {

struct AsyncOutcome {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int status = 0;
  std::string error;
  ValuePtr result;

  static void OnDone(int status, TVMValue* ret, int code, void* self) {
    auto* o = static_cast<AsyncOutcome*>(self);
    // Adopted here: strings and bytes are the worker's thread-local storage until we return.
    ValuePtr result = status == kTVMAsyncReturned ? Value::Adopt(*ret, code) : nullptr;
    std::lock_guard<std::mutex> lock(o->mu);
    o->status = status;
    if (status != kTVMAsyncReturned) o->error = TVMGetLastError();
    o->result = std::move(result);
    o->done = true;
    o->cv.notify_all();
  }
};

}  // namespace

ValuePtr CallFunctionAsync(TVMFunctionHandle f, const Args& args) {
  std::vector<TVMValue> values(args.size());
  std::vector<int> codes(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    values[i] = args[i]->Packed();
    codes[i] = args[i]->code();
  }
  AsyncOutcome outcome;
  CheckCall(TVMAsyncSubmit(f, values.data(), codes.data(), static_cast<int>(args.size()),
                           AsyncOutcome::OnDone, &outcome, nullptr));
  std::unique_lock<std::mutex> lock(outcome.mu);
  outcome.cv.wait(lock, [&] { return outcome.done; });
  if (outcome.status != kTVMAsyncReturned) throw ApiError(outcome.status, outcome.error);
  return outcome.result;
}

ValuePtr GetGlobal(const std::string& name) {
  TVMFunctionHandle f = nullptr;
  CheckCall(TVMFuncGetGlobal(name.c_str(), &f));
  if (f == nullptr) throw Failure("global function " + name + " is not registered");
  TVMValue v;
  v.v_handle = f;
  return Value::Adopt(v, kTVMPackedFuncHandle);
}

Globals& Globals::Get() {
  static Globals globals;
  return globals;
}

void Globals::Load() {
  string_make = GetGlobal("runtime.String");
  string_bytes = GetGlobal("runtime.StringBytes");
  array_make = GetGlobal("runtime.Array");
  array_size = GetGlobal("runtime.ArraySize");
  array_get = GetGlobal("runtime.ArrayGetItem");
  map_make = GetGlobal("runtime.Map");
  map_size = GetGlobal("runtime.MapSize");
  map_get = GetGlobal("runtime.MapGetItem");
  shape_make = GetGlobal("runtime.ShapeTuple");
  shape_size = GetGlobal("runtime.GetShapeTupleSize");
  shape_get = GetGlobal("runtime.GetShapeTupleElem");
  echo = GetGlobal("testing.echo");
  live_objects = GetGlobal("testing.live_objects");
  join_release_threads = GetGlobal("testing.join_release_threads");
}

void Globals::Release() { *this = Globals(); }

std::string TypeKeyOf(void* handle) {
  unsigned index = 0;
  CheckCall(TVMObjectGetTypeIndex(handle, &index));
  char* key = nullptr;
  CheckCall(TVMObjectTypeIndex2Key(index, &key));
  return key != nullptr ? std::string(key) : std::string();
}

ValuePtr MakeString(const std::string& s) {
  if (s.find('\0') == std::string::npos) return Value::Str(s);
  return CallFunction(Globals::Get().string_make->raw().v_handle, {Value::Bytes(s)});
}

std::string StringObjectContents(void* handle) {
  TVMValue arg;
  arg.v_handle = handle;
  TVMValue ret;
  int code = kTVMObjectHandle, ret_code = kTVMNullptr;
  CheckCall(
      TVMFuncCall(Globals::Get().string_bytes->raw().v_handle, &arg, &code, 1, &ret, &ret_code));
  ValuePtr result = Value::Adopt(ret, ret_code);
  if (result->code() != kTVMBytes) {
    throw Failure(std::string("runtime.StringBytes returned ") + TypeCodeName(result->code()));
  }
  return result->text();
}

}  // namespace conformance
