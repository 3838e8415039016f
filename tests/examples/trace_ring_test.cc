#include "examples/trace_ring.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "fmt/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill::examples {
namespace {

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

TEST(TraceRing, KeepsOnlyTheNewestFiles) {
  const std::string dir = testing::MakeTempDir();
  TraceRing ring(3);
  for (int i = 1; i <= 10; ++i) {
    const std::string path = fmt::format("{}/worker0-traced-{}.trace.json", dir, i);
    std::ofstream(path) << "[]";
    ASSERT_OK(ring.Add(path));
  }
  EXPECT_EQ(Names(dir),
            (std::set<std::string>{"worker0-traced-8.trace.json", "worker0-traced-9.trace.json",
                                   "worker0-traced-10.trace.json"}));
  EXPECT_EQ(ring.deleted(), 7u);
  std::filesystem::remove_all(dir);
}

TEST(TraceRing, ZeroKeepsEveryFile) {
  const std::string dir = testing::MakeTempDir();
  TraceRing ring(0);
  for (int i = 1; i <= 5; ++i) {
    const std::string path = fmt::format("{}/t{}.trace.json", dir, i);
    std::ofstream(path) << "[]";
    ASSERT_OK(ring.Add(path));
  }
  EXPECT_EQ(Names(dir).size(), 5u);
  std::filesystem::remove_all(dir);
}

// A file removed by someone else is not an error; one rewritten under a
// kept name is not deleted while it is still among the newest.
TEST(TraceRing, ToleratesVanishedAndRewrittenFiles) {
  const std::string dir = testing::MakeTempDir();
  TraceRing ring(2);
  const std::string a = dir + "/a.trace.json", b = dir + "/b.trace.json";
  std::ofstream(a) << "[]";
  ASSERT_OK(ring.Add(a));
  std::filesystem::remove(a);
  std::ofstream(b) << "[]";
  ASSERT_OK(ring.Add(b));
  std::ofstream(b) << "[]";
  ASSERT_OK(ring.Add(b));
  EXPECT_EQ(Names(dir), (std::set<std::string>{"b.trace.json"}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rill::examples
