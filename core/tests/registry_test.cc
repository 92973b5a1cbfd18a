#include "polyffi/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace polyffi {
namespace {

ObjectPtr<FunctionObj> Returning(int64_t x) {
  return MakeFunction([x](const Args&, RetValue* rv) { rv->SetInt(x); }, "ret");
}

int64_t CallInt(const ObjectPtr<FunctionObj>& f) {
  RetValue rv;
  f->Call(nullptr, nullptr, 0, &rv);
  return rv.value().v_int64;
}

TEST(RegistryTest, RegisterGetOverrideRemove) {
  Registry* r = Registry::Global();
  r->Register("test.reg.a", Returning(1), false);
  EXPECT_EQ(CallInt(r->Get("test.reg.a")), 1);
  try {
    r->Register("test.reg.a", Returning(2), false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_NE(e.message().find("already registered"), std::string::npos);
  }
  r->Register("test.reg.a", Returning(3), true);
  EXPECT_EQ(CallInt(r->Get("test.reg.a")), 3);
  auto names = r->ListNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "test.reg.a"), names.end());
  EXPECT_TRUE(r->Remove("test.reg.a"));
  EXPECT_FALSE(r->Get("test.reg.a"));
  EXPECT_FALSE(r->Remove("test.reg.a"));
}

TEST(RegistryTest, OverriddenFunctionStaysAliveForItsHolders) {
  Registry* r = Registry::Global();
  r->Register("test.reg.b", Returning(10), true);
  auto held = r->Get("test.reg.b");
  r->Register("test.reg.b", Returning(11), true);
  EXPECT_EQ(CallInt(held), 10);
  EXPECT_EQ(CallInt(r->Get("test.reg.b")), 11);
  r->Remove("test.reg.b");
}

TEST(RegistryTest, ManyThreadsRegisterLookUpAndCallAtOnce) {
  Registry* r = Registry::Global();
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, r, &bad] {
      std::string own = "test.reg.thread" + std::to_string(t);
      for (int i = 0; i < 500; ++i) {
        r->Register(own, Returning(t), true);
        auto f = r->Get(own);
        if (!f || CallInt(f) != t) ++bad;
        if (r->ListNames().empty()) ++bad;
        if (i % 3 == 0) r->Remove(own);
      }
      r->Remove(own);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace polyffi
