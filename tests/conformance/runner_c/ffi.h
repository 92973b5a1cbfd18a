// The conformance runner's only view of polyffi: the raw C ABI of c_runtime_api.h, wrapped in
// just enough RAII to free every handle it receives. Deliberately not polyffi.hpp: the runner
// proves that a binding needs nothing beyond the C header.
#ifndef POLYFFI_TESTS_CONFORMANCE_RUNNER_C_FFI_H_
#define POLYFFI_TESTS_CONFORMANCE_RUNNER_C_FFI_H_

#include <polyffi/c_runtime_api.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace conformance {

/*! \brief A failed expectation or a broken case; the message says what and where. */
class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/*! \brief A C API call that returned non-zero, with TVMGetLastError() captured at once. */
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string text)
      : std::runtime_error(text), status_(status), text_(std::move(text)) {}
  int status() const { return status_; }
  const std::string& text() const { return text_; }
  /*! \brief Kind of the first line "Kind: message"; TVMError when the line names none. */
  std::string kind() const;
  /*! \brief The message part of the first line. */
  std::string message() const;

 private:
  int status_;
  std::string text_;
};

/*! \brief Throw ApiError when status is non-zero. */
void CheckCall(int status);

/*! \brief Name of a type code, as testing.return_type spells it ("int", "Function", ...). */
const char* TypeCodeName(int code);

/*!
 * \brief One owned value. Strings and bytes are copied in (so thread-local results survive the
 *  next call); object-like handles are released on destruction with the matching *Free.
 */
class Value {
 public:
  Value() { v_.v_handle = nullptr; }
  ~Value();
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  static std::shared_ptr<Value> Int(int64_t x, int code = kTVMArgInt);
  static std::shared_ptr<Value> Float(double x);
  static std::shared_ptr<Value> Null();
  static std::shared_ptr<Value> Str(std::string s);
  static std::shared_ptr<Value> Bytes(std::string b);
  static std::shared_ptr<Value> Device(DLDevice d);
  static std::shared_ptr<Value> DType(DLDataType t);
  /*! \brief Adopt an owned result of TVMFuncCall: copies strings/bytes, owns object handles. */
  static std::shared_ptr<Value> Adopt(TVMValue v, int code);

  int code() const { return code_; }
  /*! \brief The packed form; bytes point into this value, so it must outlive the call. */
  TVMValue Packed();
  TVMValue raw() const { return v_; }
  /*! \brief Contents of a str or bytes value. */
  const std::string& text() const { return s_; }
  bool IsObject() const;

 private:
  TVMValue v_;
  int code_ = kTVMNullptr;
  std::string s_;
  TVMByteArray bytes_{nullptr, 0};
};

using ValuePtr = std::shared_ptr<Value>;
using Args = std::vector<ValuePtr>;

/*! \brief Call f with args; throws ApiError on failure. The result is owned. */
ValuePtr CallFunction(TVMFunctionHandle f, const Args& args);
/*!
 * \brief The same call through the core's async pool (TVMAsyncSubmit), waited for: the result is
 *  adopted, or the error thrown as ApiError, on the worker thread's terms (c_async_api.h).
 */
ValuePtr CallFunctionAsync(TVMFunctionHandle f, const Args& args);

/*! \brief An owned global function; throws Failure when it is not registered. */
ValuePtr GetGlobal(const std::string& name);

/*! \brief Core/fixture globals the runner uses, looked up once. */
struct Globals {
  ValuePtr string_make, string_bytes;
  ValuePtr array_make, array_size, array_get;
  ValuePtr map_make, map_size, map_get;
  ValuePtr shape_make, shape_size, shape_get;
  ValuePtr echo, live_objects, join_release_threads;
  static Globals& Get();
  void Load();
  void Release();
};

/*! \brief Type key of an object handle ("Array", "runtime.String", ...). */
std::string TypeKeyOf(void* handle);

/*! \brief A string value the way polyffi carries it: kTVMStr, or runtime.String with a NUL. */
ValuePtr MakeString(const std::string& s);

/*! \brief Contents of a runtime.String object. */
std::string StringObjectContents(void* handle);

}  // namespace conformance

#endif  // POLYFFI_TESTS_CONFORMANCE_RUNNER_C_FFI_H_
