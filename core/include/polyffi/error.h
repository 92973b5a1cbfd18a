// Errors inside the core: exceptions with a kind; at the ABI they become "Kind: message".
#ifndef POLYFFI_CORE_ERROR_H_
#define POLYFFI_CORE_ERROR_H_

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace polyffi {

/*! \brief A runtime error with a kind (ValueError, TypeError, ...) and a message. */
class Error : public std::exception {
 public:
  Error(std::string kind, std::string message)
      : kind_(std::move(kind)), message_(std::move(message)) {}
  const std::string& kind() const { return kind_; }
  const std::string& message() const { return message_; }
  const char* what() const noexcept override { return message_.c_str(); }
  /*! \brief "Kind: message" (message may carry a traceback after a newline). */
  std::string Full() const { return kind_ + ": " + message_; }
  /*! \brief Parse text in the "Kind: message" form; without a valid kind, the kind is TVMError. */
  static Error Parse(const std::string& text);

 private:
  std::string kind_;
  std::string message_;
};

/*!
 * \brief A callback returned -2, or the host's signal check reported an error: the host already
 *  has an error pending; propagate -2. text is the last error to report ("" for the default).
 */
struct EnvErrorAlreadySet {
  std::string text;
};

/*!
 * \brief What TVMThrowLastError throws: the last error as an Error whose what() is the whole
 *  "Kind: message" text, so a C++ caller that reports e.what() unchanged (TVMAPISetLastError)
 *  keeps the error, and any host exception attached to it, intact.
 */
class RethrownError : public Error {
 public:
  explicit RethrownError(const std::string& text) : Error(Parse(text)), text_(text) {}
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  std::string text_;
};

/*! \brief Build an error message from stream pieces. */
template <typename... T>
[[noreturn]] void Throw(const char* kind, const T&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(kind, os.str());
}

// ---- Thread-local error state (the C API's last error) ----
//
// The last error is a text and, optionally, a host-language exception object attached to it
// (TVMAPISetLastPythonError). Setting the same text again keeps the attachment: that is how the
// object crosses C frames, since every layer that propagates an error re-sets the text it got
// from TVMGetLastError. Any other text releases the object.

/*! \brief A host object held through the host's reference hooks (see env_api.h). */
using HostObjectRef = std::shared_ptr<void>;

void SetLastError(const std::string& text);
const std::string& GetLastError();

/*! \brief The text of an error that carries a host exception object. */
extern const char kHostErrorText[];
/*!
 * \brief Make a host object this thread's last error. The caller retains it (env_api.h's
 *  RetainHostObject), so the error state needs nothing from the host hooks.
 */
void SetLastHostError(HostObjectRef obj);
/*! \brief The host object attached to the last error (borrowed), or NULL. */
void* GetLastHostError();
/*! \brief Release the attached host object, if any, and clear the last error. */
void DropLastHostError();

/*! \brief A last error in transit between threads (the thread pool moves a task's error). */
/*!
 * \brief How a tvm-ffi kernel's error stands in the last error. A kernel reports an error by
 *  raising it (TVMFFIErrorSetRaisedFromCStrParts) and returning nonzero: the raised error is the
 *  last error with this mark, so it moves between threads like any other error.
 */
enum class RaisedMark : unsigned char {
  kNone,
  kError,     // the last error text is what a kernel (or a host function it called) raised
  kEnvError,  // a host function a kernel called returned -2: the host holds the error
};

struct LastErrorState {
  std::string text;
  HostObjectRef host;
  RaisedMark raised = RaisedMark::kNone;
};
/*! \brief Move the last error out of this thread (the text stays, the host object goes). */
LastErrorState TakeLastErrorState();
void RestoreLastErrorState(LastErrorState state);

/*! \brief Set the last error to "kind: message" (kind NULL or empty: RuntimeError), marked raised.
 */
void SetRaisedError(const char* kind, const std::string& message);
/*! \brief Mark the last error as raised (kError) or as a host error a kernel passes on (-2). */
void MarkLastErrorRaised(RaisedMark mark);
/*! \brief The last error's raised mark, cleared (the text stays the last error). */
RaisedMark TakeRaisedMark();

/*! \brief Set the last error of a -2 return; LastErrorIsEnvError() then holds until reset. */
void SetEnvError(const std::string& text);
bool LastErrorIsEnvError();

/*!
 * \brief The one exception barrier, called inside a catch handler: the exception in flight
 *  becomes the last error. Returns -2 for EnvErrorAlreadySet (the host holds the error), else
 *  -1. The C API's API_END and the tvm-ffi callbacks both end in it.
 */
int SetLastErrorFromCurrentException();

/*! \brief Whether this thread is destroying its thread-locals (its host may be gone). */
bool ThreadIsExiting();

}  // namespace polyffi
#endif  // POLYFFI_CORE_ERROR_H_
