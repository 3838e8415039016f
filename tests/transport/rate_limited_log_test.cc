// What a peer's text and a peer's flood of log lines cost: a line cut to a
// few hundred bytes, and a few lines a second with the rest counted.
#include "transport/rate_limited_log.h"

#include <cstdio>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;

class Lines final : public LogSink {
 public:
  void WriteLine(std::string_view line) override { lines.emplace_back(line); }
  std::vector<std::string> lines;
};

TEST(RateLimitedLog, WritesAFewLinesASecondAndCountsTheRest) {
  Lines sink;
  RateLimitedLog log(&sink, 5);
  for (int i = 0; i < 10'000; ++i) log.Log("line %d", i);
  // Within one second, or across the turn of one: at most two seconds'
  // worth. Every line is written or counted.
  EXPECT_GE(sink.lines.size(), 5u);
  EXPECT_LE(sink.lines.size(), 10u);
  int64_t counted = log.held_back();
  for (const std::string& line : sink.lines) {
    int64_t held = 0;
    if (sscanf(line.c_str(), "line %*d (%ld similar", &held) == 1) counted += held;
  }
  EXPECT_EQ(counted + static_cast<int64_t>(sink.lines.size()), 10'000);
}

TEST(RateLimitedLog, TheNextLineThatPassesCountsWhatWasHeldBack) {
  Lines sink;
  RateLimitedLog log(&sink, 1);
  log.Log("first");
  log.Log("held");
  log.Log("held");
  while (sink.lines.size() < 2) log.Log("later");  // Passes once the second turns.
  EXPECT_THAT(sink.lines[1], HasSubstr("similar lines were not logged, at most 1 a second"));
  EXPECT_EQ(log.held_back(), 0);
}

TEST(PeerText, IsCutEscapedAndSaysItsLength) {
  const std::string method = "RunGraph";
  EXPECT_EQ(PeerText(method), method);
  const std::string odd = "a\nb\xff";
  EXPECT_EQ(PeerText(odd), "a\\nb\\xff");
  const std::string text = PeerText(std::string(100'000, 'x'));
  std::string expected(128, 'x');
  expected.append("... (100000 bytes)");
  EXPECT_EQ(text, expected);
}

}  // namespace
}  // namespace rill
