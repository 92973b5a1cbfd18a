// Error text parsing and the thread-local last error.
#include "polyffi/error.h"

#include <new>

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
  RaisedMark raised = RaisedMark::kNone;
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
  s.raised = RaisedMark::kNone;
  if (s.host && text == s.text) return;  // the same error propagating: keep its host object
  // Released last: dropping a host object may run host code that sets errors itself.
  HostObjectRef old = std::move(s.host);  // leaves s.host empty
  s.text = text;
}

const std::string& GetLastError() { return Slot().text; }

void SetLastHostError(HostObjectRef ref) {
  LastErrorSlot& s = Slot();
  s.env_error = false;
  s.raised = RaisedMark::kNone;
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
  HostObjectRef old = std::move(s.host);  // leaves s.host empty
  s.text.clear();
  s.env_error = false;
  s.raised = RaisedMark::kNone;
}

LastErrorState TakeLastErrorState() {
  LastErrorSlot& s = Slot();
  RaisedMark raised = s.raised;
  s.raised = RaisedMark::kNone;
  return LastErrorState{s.text, std::move(s.host), raised};  // moving leaves s.host empty
}

void RestoreLastErrorState(LastErrorState state) {
  LastErrorSlot& s = Slot();
  s.env_error = false;
  s.raised = state.raised;
  s.host.swap(state.host);
  s.text = std::move(state.text);
}

void SetRaisedError(const char* kind, const std::string& message) {
  SetLastError(std::string(kind != nullptr && *kind != '\0' ? kind : "RuntimeError") + ": " +
               message);
  Slot().raised = RaisedMark::kError;
}

void MarkLastErrorRaised(RaisedMark mark) { Slot().raised = mark; }

RaisedMark TakeRaisedMark() {
  LastErrorSlot& s = Slot();
  RaisedMark mark = s.raised;
  s.raised = RaisedMark::kNone;
  return mark;
}

void SetEnvError(const std::string& text) {
  SetLastError(text);
  Slot().env_error = true;
}

bool LastErrorIsEnvError() { return Slot().env_error; }

int SetLastErrorFromCurrentException() {
  try {
    throw;
  } catch (const EnvErrorAlreadySet& e) {
    SetEnvError(e.text.empty() ? "EnvErrorAlreadySet: the host language has a pending error"
                               : e.text);
    return -2;
  } catch (const Error& e) {
    SetLastError(e.Full());
  } catch (const std::bad_alloc&) {
    SetLastError("RuntimeError: out of memory");
  } catch (const std::exception& e) {
    SetLastError(std::string("RuntimeError: ") + e.what());
  } catch (...) {
    SetLastError("InternalError: unknown exception");
  }
  return -1;
}

}  // namespace polyffi
