// Error text parsing and the thread-local last error.
#include "polyffi/error.h"

namespace polyffi {

Error Error::Parse(const std::string& text) {
  size_t line_end = text.find('\n');
  size_t colon = text.find(": ");
  if (colon != std::string::npos && colon > 0 && colon < line_end) {
    bool valid = true;
    for (size_t i = 0; i < colon && valid; ++i) {
      char c = text[i];
      valid = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.';
    }
    if (valid) return Error(text.substr(0, colon), text.substr(colon + 2));
  }
  return Error("TVMError", text);
}

namespace {
std::string& LastErrorSlot() {
  thread_local std::string last_error;
  return last_error;
}
}  // namespace

void SetLastError(const std::string& text) { LastErrorSlot() = text; }
const std::string& GetLastError() { return LastErrorSlot(); }

}  // namespace polyffi
