// The C/C++ conformance runner: one gtest per case of tests/conformance/cases/*.json, run over
// the raw C ABI only. See tests/conformance/README.md.
//
// Environment: POLYFFI_LIB_DIR (libpolyffi_testing.so and module fixtures; default: the build's
// lib directory), POLYFFI_CONFORMANCE_DIR (cases/ and capabilities/; default: the source tree),
// POLYFFI_CONFORMANCE_OUT (where c.json is written; default: <build>/conformance),
// POLYFFI_CONFORMANCE_BINDING (default c: the name of the capabilities file read and of the results
// file written; c-aarch64 for the runner cross-built for aarch64, whose list differs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "case_runner.h"
#include "ffi.h"

namespace conformance {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return json::parse(in);
}

struct Suite {
  std::string lib_dir;
  std::string binding;                             // capabilities/<binding>.json, <binding>.json
  std::map<std::string, std::string> unsupported;  // case id -> reason (its capabilities file)
  std::map<std::string, std::string> results;      // case id -> pass | fail | skip
  std::set<std::string> case_ids;
  int64_t live_at_start = 0;
};

Suite& TheSuite() {
  static Suite suite;
  return suite;
}

int64_t LiveObjects() {
  ValuePtr n = CallFunction(Globals::Get().live_objects->raw().v_handle, {});
  if (n->code() != kTVMArgInt) throw Failure("testing.live_objects did not return an int");
  return n->raw().v_int64;
}

class CaseTest : public ::testing::Test {
 public:
  CaseTest(json c, int serial) : case_(std::move(c)), serial_(serial) {}

  void TestBody() override {
    Suite& suite = TheSuite();
    std::string id = case_["id"].get<std::string>();
    CaseResult r = RunCase(case_, suite.lib_dir, serial_);
    auto listed = suite.unsupported.find(id);
    if (listed == suite.unsupported.end()) {
      suite.results[id] = r.ok ? "pass" : "fail";
      if (!r.ok) ADD_FAILURE() << id << ": " << r.message;
    } else if (r.ok) {
      suite.results[id] = "fail";
      ADD_FAILURE() << id << " passes but capabilities/" << suite.binding
                    << ".json lists it as unsupported (" << listed->second
                    << "): remove it from the list";
    } else {
      suite.results[id] = "skip";
      GTEST_SKIP() << "unsupported: " << listed->second << " [" << r.message << "]";
    }
  }

 private:
  json case_;
  int serial_;
};

/*! \brief Every listed unsupported case must exist: a stale entry hides nothing, but lies. */
class CapabilitiesTest : public ::testing::Test {
 public:
  void TestBody() override {
    for (const auto& [id, reason] : TheSuite().unsupported) {
      EXPECT_TRUE(TheSuite().case_ids.count(id))
          << "capabilities/" << TheSuite().binding << ".json lists unknown case " << id;
    }
  }
};

/*! \brief After the whole suite, the fixtures' live objects are back where they started. */
class LeakCheckTest : public ::testing::Test {
 public:
  void TestBody() override {
    // Threads of testing.release_on_thread may still hold their last reference.
    CallFunction(Globals::Get().join_release_threads->raw().v_handle, {});
    EXPECT_EQ(LiveObjects(), TheSuite().live_at_start)
        << "testing.live_objects() did not return to its starting value: something leaked";
  }
};

void WriteResults(const fs::path& dir) {
  fs::create_directories(dir);
  json out = json::object();
  for (const auto& [id, status] : TheSuite().results) out[id] = status;
  fs::path file = dir / (TheSuite().binding + ".json");
  std::ofstream(file) << out.dump(2) << "\n";
  std::cout << "[conformance] wrote " << file.string() << " (" << TheSuite().results.size()
            << " cases)\n";
}

int Main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  Suite& suite = TheSuite();
  suite.lib_dir = EnvOr("POLYFFI_LIB_DIR", POLYFFI_CONFORMANCE_LIB_DIR);
  fs::path conf_dir = EnvOr("POLYFFI_CONFORMANCE_DIR", POLYFFI_CONFORMANCE_SOURCE_DIR);
  fs::path out_dir = EnvOr("POLYFFI_CONFORMANCE_OUT", POLYFFI_CONFORMANCE_OUT_DIR);
  suite.binding = EnvOr("POLYFFI_CONFORMANCE_BINDING", "c");

  // The fixtures register testing.* globals in their static initialisers when loaded.
  std::string fixture_path = suite.lib_dir + "/libpolyffi_testing.so";
  TVMModuleHandle fixtures = nullptr;
  if (TVMModLoadFromFile(fixture_path.c_str(), "", &fixtures) != 0) {
    std::cerr << "cannot load " << fixture_path << ": " << TVMGetLastError()
              << "\n(set POLYFFI_LIB_DIR to the directory holding libpolyffi_testing.so)\n";
    return 2;
  }

  int status = 0;
  try {
    Globals::Get().Load();
    std::string caps_name = "capabilities/" + suite.binding + ".json";
    json caps = ReadJson(conf_dir / caps_name);
    if (caps.value("binding", "") != suite.binding) {
      throw std::runtime_error(caps_name + ": \"binding\" is not \"" + suite.binding + "\"");
    }
    for (const auto& [id, reason] : caps.at("unsupported").items()) {
      suite.unsupported[id] = reason.get<std::string>();
    }

    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(conf_dir / "cases")) {
      if (entry.path().extension() == ".json") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    int serial = 0;
    for (const fs::path& file : files) {
      json doc = ReadJson(file);
      for (const json& c : doc.at("cases")) {
        std::string id = c.at("id").get<std::string>();
        if (!suite.case_ids.insert(id).second) throw std::runtime_error("duplicate id " + id);
        ++serial;
        auto factory = [c, serial]() -> ::testing::Test* { return new CaseTest(c, serial); };
        ::testing::RegisterTest("conformance", id.c_str(), nullptr, nullptr, file.c_str(), 0,
                                factory);
      }
    }
    ::testing::RegisterTest("conformance_final", "capabilities_known", nullptr, nullptr, __FILE__,
                            __LINE__, []() -> ::testing::Test* { return new CapabilitiesTest(); });
    ::testing::RegisterTest("conformance_final", "leak_check", nullptr, nullptr, __FILE__, __LINE__,
                            []() -> ::testing::Test* { return new LeakCheckTest(); });

    suite.live_at_start = LiveObjects();
    status = RUN_ALL_TESTS();
    if (!suite.results.empty()) WriteResults(out_dir);
  } catch (const std::exception& e) {
    std::cerr << "conformance runner: " << e.what() << "\n";
    status = 2;
  }
  Globals::Get().Release();
  TVMModFree(fixtures);
  return status;
}

}  // namespace
}  // namespace conformance

int main(int argc, char** argv) { return conformance::Main(argc, argv); }
