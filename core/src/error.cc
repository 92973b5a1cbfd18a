// Error text parsing and the thread-local last error.
#include "polyffi/error.h"

#include "polyffi/env_api.h"

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

thread_local bool tls_exiting = false;

struct LastErrorSlot {
  std::string text;
  HostObjectRef host;
  bool env_error = false;
  // Members are destroyed after this body runs: a host object still held is then released
  // with tls_exiting set, and the release skips the host's hooks (see env_api.cc).
  ~LastErrorSlot() { tls_exiting = true; }
};

LastErrorSlot& Slot() {
  thread_local LastErrorSlot slot;
  return slot;
}

}  // namespace

const char kHostErrorText[] =
    "TVMError: a host-language exception was raised (TVMGetLastPythonError returns it)";

bool ThreadIsExiting() { return tls_exiting; }

void SetLastError(const std::string& text) {
  LastErrorSlot& s = Slot();
  s.env_error = false;
  if (s.host && text == s.text) return;  // the same error propagating: keep its host object
  // Released last: dropping a host object may run host code that sets errors itself.
  HostObjectRef old = std::move(s.host);
  s.host.reset();
  s.text = text;
}

const std::string& GetLastError() { return Slot().text; }

void SetLastHostError(void* obj) {
  HostObjectRef ref = RetainHostObject(obj);
  LastErrorSlot& s = Slot();
  s.env_error = false;
  s.host.swap(ref);  // the previous object, if any, is released when ref goes
  s.text = kHostErrorText;
}

void* GetLastHostError() {
  LastErrorSlot& s = Slot();
  return s.host ? s.host.get() : nullptr;
}

void DropLastHostError() {
  LastErrorSlot& s = Slot();
  if (!s.host) return;
  HostObjectRef old = std::move(s.host);
  s.host.reset();
  s.text.clear();
  s.env_error = false;
}

LastErrorState TakeLastErrorState() {
  LastErrorSlot& s = Slot();
  LastErrorState state{s.text, std::move(s.host)};
  s.host.reset();
  return state;
}

void RestoreLastErrorState(LastErrorState state) {
  LastErrorSlot& s = Slot();
  s.env_error = false;
  s.host.swap(state.host);
  s.text = std::move(state.text);
}

void SetEnvError(const std::string& text) {
  SetLastError(text);
  Slot().env_error = true;
}

bool LastErrorIsEnvError() { return Slot().env_error; }

}  // namespace polyffi
