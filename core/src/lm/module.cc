// The module functions of polyffi.LanguageModel and polyffi.Generation, and the global
// polyffi.lm.load(dir) -> Module (docs/lm.md).
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "language_model.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace lm {
namespace {

/*! \brief A CPU int32 tensor of one dimension at argument i, as a vector. */
std::vector<int32_t> TokenArg(const Args& args, int i, const char* what) {
  const int code = args.code(i);
  if ((code != kTVMNDArrayHandle && code != kTVMDLTensorHandle) || !args.value(i).v_handle) {
    args.Mismatch(i, "NDArray of int32 token ids");
  }
  const DLTensor& t = *static_cast<DLTensor*>(args.value(i).v_handle);
  if (DeviceTypeOf(t.device) != kDLCPU) {
    Throw("ValueError", args.fname(), ": the ", what, " must be on the CPU");
  }
  if (t.dtype.code != kDLInt || t.dtype.bits != 32 || t.dtype.lanes != 1) {
    Throw("ValueError", args.fname(), ": the ", what, " must be int32, got ",
          DataTypeName(t.dtype));
  }
  if (t.ndim != 1 || t.shape == nullptr) {
    Throw("ValueError", args.fname(), ": the ", what, " must have one dimension (n,), got ",
          t.ndim);
  }
  const int64_t n = t.shape[0];
  if (n < 0) Throw("ValueError", args.fname(), ": the ", what, " has a negative length");
  std::vector<int32_t> out(static_cast<size_t>(n));
  if (n == 0) return out;
  if (t.data == nullptr) Throw("ValueError", args.fname(), ": the ", what, " has no data");
  CopyToCompact(args.fname(), t, out.data());
  return out;
}

ObjectPtr<NDArrayObj> ToArray(const void* data, int64_t n, DLDataType t) {
  auto a = NDArrayObj::Empty({n}, t, DLDevice{kDLCPU, 0});
  if (n > 0) std::memcpy(a->tensor.data, data, static_cast<size_t>(n) * (t.bits / 8));
  return a;
}

template <typename Body>
ObjectPtr<FunctionObj> Fn(std::string fname, int arity, Body body) {
  return MakeFunction(
      [arity, body](const Args& args, RetValue* rv) {
        args.CheckArity(arity);
        body(args, rv);
      },
      std::move(fname));
}

}  // namespace

ObjectPtr<FunctionObj> LanguageModel::GetOwnFunction(const std::string& name) {
  auto self = ObjectPtr<LanguageModel>::Borrow(this);
  const std::string fname = "polyffi.LanguageModel." + name;
  if (name == "config") {
    return Fn(fname, 0, [self](const Args&, RetValue* rv) { rv->SetStr(self->cfg_.ToJson()); });
  }
  if (name == "encode") {
    return Fn(fname, 1, [self](const Args& args, RetValue* rv) {
      std::vector<int32_t> ids = self->tok_.Encode(args.Str(0));
      rv->SetObject(ToArray(ids.data(), static_cast<int64_t>(ids.size()), {kDLInt, 32, 1}));
    });
  }
  if (name == "decode") {
    return Fn(fname, 1, [self](const Args& args, RetValue* rv) {
      std::vector<int32_t> ids = TokenArg(args, 0, "tokens");
      rv->SetStr(self->tok_.Decode(ids.data(), static_cast<int64_t>(ids.size())));
    });
  }
  if (name == "token_text") {
    return Fn(fname, 1, [self](const Args& args, RetValue* rv) {
      rv->SetStr(self->tok_.TokenText(args.Int(0)));
    });
  }
  if (name == "generate") {
    return MakeFunction(
        [self](const Args& args, RetValue* rv) {
          if (args.size() < 1 || args.size() > 2) {
            Throw("TypeError", args.fname(), ": expected (prompt, options) but got ", args.size(),
                  " arguments");
          }
          std::vector<int32_t> prompt = args.code(0) == kTVMStr ? self->tok_.Encode(args.Str(0))
                                                                : TokenArg(args, 0, "prompt");
          std::string options;
          if (args.size() > 1 && args.code(1) != kTVMNullptr) options = args.Str(1);
          GenerationOptions opts = self->ParseOptions(options);
          rv->SetObject(MakeObject<Generation>(self, std::move(prompt), std::move(opts)));
        },
        fname);
  }
  return nullptr;
}

ObjectPtr<FunctionObj> Generation::GetOwnFunction(const std::string& name) {
  auto self = ObjectPtr<Generation>::Borrow(this);
  const std::string fname = "polyffi.Generation." + name;
  if (name == "next") {
    return Fn(fname, 0, [self](const Args&, RetValue* rv) { rv->SetInt(self->Next()); });
  }
  if (name == "finish_reason") {
    return Fn(fname, 0, [self](const Args&, RetValue* rv) { rv->SetStr(self->FinishReason()); });
  }
  if (name == "logits") {
    return Fn(fname, 0, [self](const Args&, RetValue* rv) {
      std::vector<float> l = self->Logits();
      rv->SetObject(ToArray(l.data(), static_cast<int64_t>(l.size()), {kDLFloat, 32, 1}));
    });
  }
  if (name == "prompt_tokens") {
    return Fn(fname, 0, [self](const Args&, RetValue* rv) { rv->SetInt(self->PromptTokens()); });
  }
  if (name == "completion_tokens") {
    return Fn(fname, 0,
              [self](const Args&, RetValue* rv) { rv->SetInt(self->CompletionTokens()); });
  }
  if (name == "close") {
    return Fn(fname, 0, [self](const Args&, RetValue*) { self->Close(); });
  }
  return nullptr;
}

// polyffi.lm.load(dir) -> Module (type_key polyffi.LanguageModel)
POLYFFI_CORE_GLOBAL("polyffi.lm.load", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetObject(MakeObject<LanguageModel>(args.Str(0)));
});

}  // namespace lm
}  // namespace polyffi
