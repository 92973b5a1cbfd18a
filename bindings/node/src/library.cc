// Library: the handshake with the loaded libpolyffi (found through the addon's RPATH, set at
// build time to the repository's build/lib or POLYFFI_LIB_DIR).
#include <cstring>
#include <string>

#include "common.h"

namespace polyffi_node {

static std::string RuntimeVersion() {
  int major = 0, minor = 0, patch = 0;
  TVMAPIGetVersion(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

void InitLibrary(Napi::Env env, Napi::Object exports) {
  int major = -1;
  TVMAPIGetVersion(&major, nullptr, nullptr);
  if (major != POLYFFI_VERSION_MAJOR) {
    Napi::Error::New(env, "polyffi: the loaded libpolyffi is version " + RuntimeVersion() +
                              " but this addon was built for " POLYFFI_VERSION
                              " (major versions differ)")
        .ThrowAsJavaScriptException();
    return;
  }
  // The ABI digest: same declarations and struct layouts on both sides, or no addon.
  const char* digest = nullptr;
  if (TVMAPIGetAbiDigest(&digest) != 0 || digest == nullptr ||
      std::strcmp(digest, POLYFFI_ABI_DIGEST) != 0) {
    Napi::Error err = Napi::Error::New(
        env, "polyffi: ABI mismatch: this addon was built against libpolyffi " POLYFFI_VERSION
             " with ABI digest " POLYFFI_ABI_DIGEST ", but the loaded libpolyffi " +
                 RuntimeVersion() + " has ABI digest " + (digest != nullptr ? digest : "(none)"));
    err.Set("code", Napi::String::New(env, "POLYFFI_ABI_MISMATCH"));
    err.ThrowAsJavaScriptException();
    return;
  }
  exports.Set("addonVersion", Napi::String::New(env, POLYFFI_VERSION));
  exports.Set("abiDigest", Napi::String::New(env, POLYFFI_ABI_DIGEST));
  exports.Set("runtimeVersion", Napi::Function::New(
                                    env,
                                    [](const Napi::CallbackInfo& info) -> Napi::Value {
                                      return Napi::String::New(info.Env(), RuntimeVersion());
                                    },
                                    "runtimeVersion"));
}

}  // namespace polyffi_node
