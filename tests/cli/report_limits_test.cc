// Runs `rill report` (the real binary, RILL_BIN) on log directories that
// are too big or too hostile to draw whole: the page stays bounded and says
// what it left out, and a file nested too deeply is skipped with a warning.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/training/summary_writer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using ::testing::Lt;

testing::ProgramResult RunReport(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {std::getenv("RILL_BIN"), "report", "--quiet"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProgram(argv);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ReportLimits : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(logdir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void WriteScalars(int tags) {
    auto writer = SummaryWriter::Create(logdir_ + "/worker0");
    ASSERT_OK(writer.status());
    // One event with every tag: a queued event apiece would take seconds.
    Summary summary;
    for (int tag = 0; tag < tags; ++tag) {
      Summary::Value* value = summary.add_value();
      value->set_tag(fmt::format("layer{:05d}/loss", tag));
      value->set_simple_value(1.0f / (1 + tag));
    }
    ASSERT_OK((*writer)->AddSummary(summary, 1));
    ASSERT_OK((*writer)->Close());
  }

  const std::string dir_ = testing::MakeTempDir();
  const std::string logdir_ = dir_ + "/logs";
  const std::string out_ = dir_ + "/report.html";
};

// 40,000 levels took the old parser seconds; now the file is refused as
// soon as it passes 64 levels, and the rest of the directory is drawn.
TEST_F(ReportLimits, SkipsADeeplyNestedTraceNamingItAndTheDepth) {
  WriteScalars(1);
  const std::string trace = logdir_ + "/deep.trace.json";
  std::ofstream(trace) << R"({"traceEvents": [{"ph": "X", "args": )" << std::string(40000, '[')
                       << std::string(40000, ']') << "}]}";
  const testing::ProgramResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: skipped trace '" + trace +
                               "': not read: JSON nested deeper than 64 levels"));
  EXPECT_THAT(ReadAll(out_), HasSubstr("No trace file could be read"));
}

// 200,000 slices on 400 threads, with flows and a long counter: the page
// draws the longest slices, the first threads, a thinned counter, and says so.
TEST_F(ReportLimits, DrawsABoundedPartOfAHugeTraceAndSaysWhatItLeftOut) {
  {
    std::ofstream trace(logdir_ + "/big.trace.json");
    trace << "{\"traceEvents\": [";
    for (int i = 0; i < 200000; ++i) {
      trace << (i == 0 ? "" : ",\n")
            << fmt::format(R"({{"ph": "X", "pid": 1, "tid": {}, "ts": {}, "dur": {}, )"
                           R"("name": "op{}", "args": {{"shape": "[64,{}]"}}}})",
                           i % 400, i, 1 + i % 97, i % 50, i);
      if (i % 4 == 0) {
        trace << fmt::format(R"(, {{"ph": "C", "pid": 1, "ts": {}, "name": "memory", )"
                             R"("args": {{"CPU:0": {}}}}})",
                             i, i % 1000);
      }
    }
    trace << "]}";
  }
  const testing::ProgramResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadAll(out_);
  EXPECT_THAT(html.size(), Lt(4u << 20));
  EXPECT_THAT(html, HasSubstr("Left out of this timeline of 250000 events: the 4000 longest of "
                              "200000 slices are drawn"));
  EXPECT_THAT(html, HasSubstr("counters are thinned evenly"));
  EXPECT_THAT(html, HasSubstr("Left out: 200 more threads"));
  EXPECT_THAT(html, HasSubstr("<table class=\"ops\">"));
}

TEST_F(ReportLimits, PlotsTheFirstTagsAndListsTheRestByName) {
  WriteScalars(20000);
  const testing::ProgramResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadAll(out_);
  EXPECT_THAT(html.size(), Lt(3u << 20));
  EXPECT_THAT(html, HasSubstr("Left out: 19900 more scalar tags not drawn (the page draws at "
                              "most 100)"));
  EXPECT_THAT(html, HasSubstr("<code>layer00100/loss</code>"));
  EXPECT_THAT(html, HasSubstr(" and 18900 more"));
  EXPECT_THAT(html, HasSubstr("data-tag=\"layer00099/loss\""));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("data-tag=\"layer00100/loss\"")));
}

}  // namespace
}  // namespace rill
