// The streaming JSON reader behind `rill report`'s traces, and the limits
// that keep a trace of any size to a bounded timeline.
#include "cli/report_trace.h"

#include <fstream>
#include <string>
#include <vector>

#include "cli/json_pull_reader.h"
#include "fmt/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill::cli {
namespace {

using ::testing::HasSubstr;

std::vector<JsonToken> Tokens(std::string_view json, std::vector<std::string>* texts = nullptr) {
  JsonPullReader reader(json, {});
  std::vector<JsonToken> tokens;
  while (true) {
    absl::StatusOr<JsonToken> token = reader.Next();
    EXPECT_OK(token.status());
    if (!token.ok() || *token == JsonToken::kEnd) break;
    tokens.push_back(*token);
    if (texts != nullptr) texts->push_back(reader.text());
  }
  return tokens;
}

absl::Status ErrorOf(std::string_view json, JsonReaderLimits limits = {}) {
  JsonPullReader reader(json, limits);
  while (true) {
    absl::StatusOr<JsonToken> token = reader.Next();
    if (!token.ok()) return token.status();
    if (*token == JsonToken::kEnd) return absl::OkStatus();
  }
}

TEST(JsonPullReader, ReadsTokensAndUnescapesStrings) {
  std::vector<std::string> texts;
  EXPECT_EQ(
      Tokens(R"({"a": [1, -2.5e3, "x\"\u00e9\ud83d\ude00", true, false, null], "b": {}})", &texts),
      (std::vector<JsonToken>{JsonToken::kBeginObject, JsonToken::kKey, JsonToken::kBeginArray,
                              JsonToken::kNumber, JsonToken::kNumber, JsonToken::kString,
                              JsonToken::kTrue, JsonToken::kFalse, JsonToken::kNull,
                              JsonToken::kEndArray, JsonToken::kKey, JsonToken::kBeginObject,
                              JsonToken::kEndObject, JsonToken::kEndObject}));
  EXPECT_EQ(texts[1 + 1 + 1], "1");
  EXPECT_EQ(texts[5], "x\"\u00e9\U0001F600");
}

TEST(JsonPullReader, NamesTheByteWhereTheInputGoesWrong) {
  EXPECT_THAT(ErrorOf("[1, 2").message(), HasSubstr("ends early at byte 5"));
  EXPECT_THAT(ErrorOf("[1 2]").message(), HasSubstr("expected ',' or ']', got '2' at byte 3"));
  EXPECT_THAT(ErrorOf("{\"a\" 1}").message(), HasSubstr("expected ':'"));
  EXPECT_THAT(ErrorOf("[01]").message(), HasSubstr("at byte 2"));
  EXPECT_THAT(ErrorOf("[1] x").message(), HasSubstr("'x' after the JSON value at byte 4"));
  EXPECT_THAT(ErrorOf("[\"\\q\"]").message(), HasSubstr("unknown escape"));
  EXPECT_THAT(ErrorOf("[\"\\ud800\"]").message(), HasSubstr("surrogate"));
  EXPECT_THAT(ErrorOf("").message(), HasSubstr("ends early at byte 0"));
}

// Deep nesting stops at the limit with a depth counter, not recursion: the
// reader has read no further than the limit's brackets when it refuses.
TEST(JsonPullReader, RefusesNestingPastItsLimitWhereItStarts) {
  const std::string deep = std::string(40000, '[') + std::string(40000, ']');
  JsonPullReader reader(deep, {.max_depth = 64});
  absl::Status status;
  int tokens = 0;
  while (true) {
    absl::StatusOr<JsonToken> token = reader.Next();
    if (!token.ok()) {
      status = token.status();
      break;
    }
    ++tokens;
  }
  EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("JSON nested deeper than 64 levels at byte 64"));
  EXPECT_EQ(tokens, 64);
  EXPECT_EQ(reader.offset(), 64u);
  EXPECT_OK(ErrorOf(std::string(64, '[') + std::string(64, ']'), {.max_depth = 64}));
}

TEST(JsonPullReader, KeepsThePrefixOfALongStringAndReadsOnPastIt) {
  const std::string json = "[\"" + std::string(100000, 'a') + "\", 7]";
  JsonPullReader reader(json, {.max_string_bytes = 10});
  ASSERT_OK(reader.Next().status());
  ASSERT_OK_AND_ASSIGN(JsonToken token, reader.Next());
  ASSERT_EQ(token, JsonToken::kString);
  EXPECT_EQ(reader.text(), "aaaaaaaaaa");
  EXPECT_TRUE(reader.truncated());
  ASSERT_OK_AND_ASSIGN(token, reader.Next());
  ASSERT_EQ(token, JsonToken::kNumber);
  EXPECT_EQ(reader.number(), 7);
}

TEST(JsonPullReader, ReadsFromASourceInChunks) {
  const std::string json = R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}]})";
  size_t at = 0;
  JsonPullReader reader(
      [&](char* dst, size_t n) -> absl::StatusOr<size_t> {
        const size_t take = std::min<size_t>({n, 3, json.size() - at});  // Tiny chunks.
        json.copy(dst, take, at);
        at += take;
        return take;
      },
      {});
  std::vector<std::string> keys;
  int tokens = 0;
  while (true) {
    absl::StatusOr<JsonToken> token = reader.Next();
    ASSERT_OK(token.status());
    if (*token == JsonToken::kEnd) break;
    if (*token == JsonToken::kKey) keys.push_back(reader.text());
    ++tokens;
  }
  EXPECT_EQ(tokens, 13);
  EXPECT_EQ(keys, (std::vector<std::string>{"traceEvents", "ph", "ts", "dur"}));
}

std::string Slices(int n) {
  std::string json = "[";
  for (int i = 0; i < n; ++i) {
    json +=
        fmt::format(R"({}{{"ph": "X", "pid": 1, "tid": {}, "ts": {}, "dur": {}, "name": "op{}"}})",
                    i == 0 ? "" : ",", i % 3, i * 10, i % 7 == 0 ? 1000 + i : i % 5, i % 4);
  }
  return json + "]";
}

TEST(ChromeTrace, KeepsTheLongestSlicesAndCountsAllOfThem) {
  ASSERT_OK_AND_ASSIGN(const Trace trace,
                       ParseChromeTrace(Slices(1000), "t.json", {.max_slices = 10}));
  EXPECT_EQ(trace.events, 1000);
  EXPECT_EQ(trace.total_slices, 1000);
  ASSERT_EQ(trace.slices.size(), 10u);
  for (const TraceSlice& slice : trace.slices) EXPECT_GE(slice.dur, 1000);
  for (size_t i = 1; i < trace.slices.size(); ++i) {
    EXPECT_LE(trace.slices[i - 1].ts, trace.slices[i].ts);
  }
  int64_t counted = 0;
  for (const TraceOpTotal& op : trace.op_totals) counted += op.count;
  EXPECT_EQ(counted, 1000);
  ASSERT_EQ(trace.op_totals.size(), 4u);
  EXPECT_GE(trace.op_totals[0].total_dur, trace.op_totals[1].total_dur);
}

TEST(ChromeTrace, ThinsALongCounterEvenly) {
  std::string json = "[";
  for (int i = 0; i < 10000; ++i) {
    json +=
        fmt::format(R"({}{{"ph": "C", "pid": 1, "ts": {}, "name": "mem", "args": {{"a": {}}}}})",
                    i == 0 ? "" : ",", i, i);
  }
  json += "]";
  ASSERT_OK_AND_ASSIGN(const Trace trace,
                       ParseChromeTrace(json, "t.json", {.max_counter_points = 100}));
  ASSERT_EQ(trace.counters.size(), 1u);
  const auto& points = trace.counters[0].series.at("a");
  EXPECT_LE(points.size(), 100u);
  EXPECT_GE(points.size(), 50u);
  EXPECT_EQ(static_cast<int64_t>(points.size()) + trace.thinned_points, 10000);
  EXPECT_EQ(points.front().first, 0);
}

TEST(ChromeTrace, CountsFlowsPastItsLimit) {
  std::string json = "[";
  for (int i = 0; i < 50; ++i) {
    json += fmt::format(
        R"({}{{"ph": "s", "id": {}, "ts": {}, "tid": 1}}, {{"ph": "f", "id": {}, "ts": {}}})",
        i == 0 ? "" : ",", i, i, i, i + 1);
  }
  json += "]";
  ASSERT_OK_AND_ASSIGN(const Trace trace, ParseChromeTrace(json, "t.json", {.max_flows = 5}));
  EXPECT_EQ(trace.flows.size(), 5u);
  EXPECT_EQ(trace.omitted_flows, 45);
  EXPECT_EQ(trace.skipped_events, 0);
}

TEST(ChromeTrace, RefusesADeepFileNamingItAndTheDepth) {
  const std::string deep = R"({"traceEvents": [{"ph": "X", "args": )" + std::string(40000, '[') +
                           std::string(40000, ']') + "}]}";
  const absl::StatusOr<Trace> trace = ParseChromeTrace(deep, "deep.trace.json");
  EXPECT_TRUE(absl::IsResourceExhausted(trace.status())) << trace.status();
  EXPECT_THAT(trace.status().message(),
              HasSubstr("'deep.trace.json': not read: JSON nested deeper than 64 levels"));
}

TEST(ChromeTrace, StreamsAFileWithManyEvents) {
  const std::string path = testing::MakeTempDir() + "/big.trace.json";
  std::ofstream(path) << "{\"traceEvents\": " << Slices(50000) << ", \"displayTimeUnit\": \"ms\"}";
  ASSERT_OK_AND_ASSIGN(const Trace trace, ReadChromeTrace(path));
  EXPECT_EQ(trace.total_slices, 50000);
  EXPECT_EQ(trace.slices.size(), TraceLimits().max_slices);
}

}  // namespace
}  // namespace rill::cli
