// Runs lstm_fashion_mnist's short mode on a slice of Fashion-MNIST: the
// loss goes down, and the while loop trains exactly as the unrolled cell.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;

testing::ProgramResult RunLstm(std::vector<std::string> args) {
  args.insert(args.begin(), std::string(std::getenv("RILL_EXAMPLES_DIR")) + "/lstm_fashion_mnist");
  return testing::RunProgram(args);
}

// The number after "key": on the output's result line; NaN when absent.
double ResultValue(const std::string& out, const std::string& key) {
  const size_t line = out.rfind("result: {");
  if (line == std::string::npos) return std::nan("");
  std::smatch match;
  const std::string result = out.substr(line);
  if (!std::regex_search(result, match, std::regex("\"" + key + "\": (-?[0-9.eE+-]+)"))) {
    return std::nan("");
  }
  return std::strtod(match[1].str().c_str(), nullptr);
}

bool HaveFashionMnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

// 40 steps of 64 on the first 1280 images (two passes), tested on 500.
const std::vector<std::string> kShortRun = {"--steps",     "40",  "--train_rows", "1280",
                                            "--test_rows", "500", "--log_every",  "10",
                                            "--threads",   "2",   "--quiet"};

TEST(LstmFashionMnist, ShortRunLowersTheLoss) {
  if (!HaveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const auto run = RunLstm(kShortRun);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("step 40  loss "));
  const double first = ResultValue(run.out, "first_loss");
  const double last = ResultValue(run.out, "last_loss");
  // Ten classes: the untrained loss is near ln 10.
  EXPECT_NEAR(first, std::log(10.0), 0.3) << run.out;
  EXPECT_LT(last, first - 0.2) << run.out;
  EXPECT_EQ(ResultValue(run.out, "steps"), 40) << run.out;
  EXPECT_GT(ResultValue(run.out, "test_accuracy"), 0.2) << run.out;
}

// The loop and its gradient loop compute what 28 copies of the cell do.
// On one thread: with two, how a kernel splits its work follows measured
// times, so sums round differently from run to run, and over 40 training
// steps that drifts past the tolerance on a busy machine.
TEST(LstmFashionMnist, WhileLoopTrainsAsTheUnrolledCell) {
  if (!HaveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::vector<std::string> one_thread = {"--steps",     "40",  "--train_rows", "1280",
                                               "--test_rows", "500", "--log_every",  "10",
                                               "--threads",   "1",   "--quiet"};
  const auto loop = RunLstm(one_thread);
  std::vector<std::string> unrolled_args = one_thread;
  unrolled_args.push_back("--unrolled");
  const auto unrolled = RunLstm(unrolled_args);
  ASSERT_EQ(loop.exit_code, 0) << loop.err;
  ASSERT_EQ(unrolled.exit_code, 0) << unrolled.err;
  for (const char* key : {"first_loss", "last_loss", "test_accuracy"}) {
    EXPECT_NEAR(ResultValue(loop.out, key), ResultValue(unrolled.out, key), 2e-3)
        << key << "\n"
        << loop.out << "\n"
        << unrolled.out;
  }
}

TEST(LstmFashionMnist, PrintsItsUsageAndRejectsBadFlags) {
  const auto help = RunLstm({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, ::testing::StartsWith("usage: lstm_fashion_mnist"));
  const auto unknown = RunLstm({"--no-such-flag"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown option '--no-such-flag'"));
  const auto steps = RunLstm({"--steps", "0"});
  EXPECT_EQ(steps.exit_code, 2);
  EXPECT_THAT(steps.err, HasSubstr("--steps '0'"));
}

TEST(LstmFashionMnist, NamesTheMissingDataDirectory) {
  const auto run = RunLstm({"--data", "/nonexistent/fashion"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("/nonexistent/fashion"));
  EXPECT_THAT(run.err, HasSubstr("dataset-fashion-mnist"));
}

}  // namespace
}  // namespace rill
