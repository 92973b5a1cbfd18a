// Errors: runtime error text <-> FFIError, and JS exceptions thrown by callbacks -> error text.
#include <cstring>

#include "common.h"

namespace polyffi_node {

bool CheckStatus(napi_env env, napi_status status) {
  if (POLYFFI_LIKELY(status == napi_ok)) return true;
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) {
    const napi_extended_error_info* info = nullptr;
    napi_get_last_error_info(env, &info);
    std::string msg = "polyffi: Node-API call failed: ";
    msg += (info != nullptr && info->error_message != nullptr) ? info->error_message : "unknown";
    napi_throw_error(env, nullptr, msg.c_str());
  }
  return false;
}

// Splits "Kind: message" (first line) into kind and message; no kind means TVMError.
static void SplitError(const std::string& text, std::string* kind, std::string* message) {
  size_t colon = text.find(": ");
  size_t eol = text.find('\n');
  bool ok = colon != std::string::npos && colon > 0 && (eol == std::string::npos || colon < eol);
  for (size_t i = 0; ok && i < colon; ++i) {
    char c = text[i];
    ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
  }
  if (ok) {
    *kind = text.substr(0, colon);
    *message = text.substr(colon + 2);
  } else {
    *kind = "TVMError";
    *message = text;
  }
}

napi_value MakeFFIError(napi_env env, Instance* inst, const std::string& text) {
  std::string kind, message;
  SplitError(text, &kind, &message);
  napi_value argv[2], err = nullptr;
  napi_create_string_utf8(env, message.data(), message.size(), &argv[0]);
  napi_create_string_utf8(env, kind.data(), kind.size(), &argv[1]);
  napi_new_instance(env, Get(env, inst->ffi_error), 2, argv, &err);
  return err;
}

static std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// The stashed exception when `text` is the error it became; otherwise an FFIError.
static napi_value ErrorFor(napi_env env, Instance* inst, const std::string& text) {
  if (inst->stash != nullptr) {
    napi_value stashed = Get(env, inst->stash);
    bool same = FirstLine(text) == FirstLine(inst->stash_text);
    if (same) {
      napi_delete_reference(env, inst->stash);
      inst->stash = nullptr;
      inst->stash_text.clear();
      return stashed;
    }
  }
  return MakeFFIError(env, inst, text);
}

napi_value ThrowLastError(napi_env env, Instance* inst) {
  std::string text = TVMGetLastError();
  napi_value err = ErrorFor(env, inst, text);
  if (err != nullptr) napi_throw(env, err);
  return nullptr;
}

void RejectOrThrowText(napi_env env, Instance* inst, const std::string& text,
                       napi_value* out_error) {
  *out_error = ErrorFor(env, inst, text);
}

napi_value ThrowFFIError(napi_env env, Instance* inst, const char* kind, const std::string& msg) {
  napi_value err = MakeFFIError(env, inst, std::string(kind) + ": " + msg);
  if (err != nullptr) napi_throw(env, err);
  return nullptr;
}

napi_value ThrowType(napi_env env, const std::string& msg) {
  napi_throw_type_error(env, nullptr, msg.c_str());
  return nullptr;
}

napi_value ThrowRange(napi_env env, const std::string& msg) {
  napi_throw_range_error(env, nullptr, msg.c_str());
  return nullptr;
}

static bool StringProperty(napi_env env, napi_value obj, const char* name, std::string* out) {
  napi_value v;
  napi_valuetype t;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok) {
    napi_value ignored;
    napi_get_and_clear_last_exception(env, &ignored);
    return false;
  }
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_string) return false;
  size_t len = 0;
  napi_get_value_string_utf8(env, v, nullptr, 0, &len);
  out->resize(len);
  napi_get_value_string_utf8(env, v, &(*out)[0], len + 1, &len);
  return true;
}

std::string ExceptionText(napi_env env, napi_value exc) {
  napi_valuetype t = napi_undefined;
  napi_typeof(env, exc, &t);
  std::string kind = "Error", message;
  if (t == napi_object || t == napi_function) {
    // FFIError and anything else with a string `kind` keep it; other errors use their name.
    if (!StringProperty(env, exc, "kind", &kind)) StringProperty(env, exc, "name", &kind);
    StringProperty(env, exc, "message", &message);
  } else {
    napi_value s;
    if (napi_coerce_to_string(env, exc, &s) == napi_ok) {
      size_t len = 0;
      napi_get_value_string_utf8(env, s, nullptr, 0, &len);
      message.resize(len);
      napi_get_value_string_utf8(env, s, &message[0], len + 1, &len);
    } else {
      napi_value ignored;
      napi_get_and_clear_last_exception(env, &ignored);
    }
  }
  // A kind must be [A-Za-z0-9_.]+; anything else is reported under Error.
  bool valid = !kind.empty();
  for (char c : kind) {
    valid = valid && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.');
  }
  if (!valid) kind = "Error";
  return kind + ": " + message;
}

void StashException(Instance* inst, napi_value exc, const std::string& text) {
  napi_env env = inst->env;
  if (inst->stash != nullptr) napi_delete_reference(env, inst->stash);
  inst->stash = nullptr;
  napi_create_reference(env, exc, 1, &inst->stash);
  inst->stash_text = text;
}

}  // namespace polyffi_node
