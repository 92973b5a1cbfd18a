#include "harness.h"

#include <cstring>
#include <string>
#include <vector>

namespace bench {

std::vector<CaseInfo>& Cases() {
  static std::vector<CaseInfo> cases;
  return cases;
}

void Fail(const std::string& what) {
  std::fprintf(stderr, "bench: %s\n", what.c_str());
  std::exit(2);
}

namespace {

bool TakeFlag(const char* arg, const char* name, std::string* value) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0) return false;
  if (arg[n] == '\0') {
    *value = "";
    return true;
  }
  if (arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

int64_t ParseCount(const std::string& text) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0) {
    Fail("--iterations expects a count >= 0, got '" + text + "'");
  }
  return v;
}

}  // namespace

int Main(int argc, char** argv, const std::function<void()>& setup) {
  std::string case_name, iterations = "100000", value;
  bool list = false, single = false;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && TakeFlag(argv[i], "--case", &value)) {
      case_name = value;
      single = true;
    } else if (i > 0 && TakeFlag(argv[i], "--iterations", &value)) {
      iterations = value;
    } else if (i > 0 && TakeFlag(argv[i], "--list_cases", &value)) {
      list = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (!AllocCounterActive()) {
    Fail(
        "the malloc interposer is not in use; allocation counts would be wrong "
        "(was the executable linked without ENABLE_EXPORTS?)");
  }
  setup();
  if (list) {
    for (const CaseInfo& c : Cases())
      std::printf("%s %lld\n", c.name.c_str(), static_cast<long long>(c.calls_per_iter));
    return 0;
  }
  if (single) {
    int64_t n = ParseCount(iterations);
    for (const CaseInfo& c : Cases()) {
      if (c.name != case_name) continue;
      c.run_n(1);  // lazy symbol binding and first-call caches, so total(N) - total(0) is steady
      c.run_n(n);
      return 0;
    }
    Fail("no case named '" + case_name + "' (see --list_cases)");
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace bench
