// Errors inside the core: exceptions with a kind; at the ABI they become "Kind: message".
#ifndef POLYFFI_CORE_ERROR_H_
#define POLYFFI_CORE_ERROR_H_

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

/*! \brief A callback returned -2: the host already has an error pending; propagate -2. */
struct EnvErrorAlreadySet {};

/*! \brief Build an error message from stream pieces. */
template <typename... T>
[[noreturn]] void Throw(const char* kind, const T&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(kind, os.str());
}

// ---- Thread-local error state (the C API's last error) ----
void SetLastError(const std::string& text);
const std::string& GetLastError();

}  // namespace polyffi
#endif  // POLYFFI_CORE_ERROR_H_
