// Runs the real `rill` binary (RILL_BIN) as a user would.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;

using RunResult = testing::ProgramResult;

RunResult RunRill(std::vector<std::string> args) {
  args.insert(args.begin(), std::getenv("RILL_BIN"));
  return testing::RunProgram(args);
}

std::string GraphPath(const std::string& name) {
  return testing::TestDataDir() + "/tf_graphs/" + name;
}

std::vector<std::string> AllTfGraphs() {
  std::vector<std::string> paths;
  for (const auto& entry :
       std::filesystem::directory_iterator(testing::TestDataDir() + "/tf_graphs")) {
    const auto ext = entry.path().extension();
    if (ext == ".pb" || ext == ".pbtxt") paths.push_back(entry.path().string());
  }
  return paths;
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = testing::MakeTempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(RillGraph, AcceptsEveryTensorFlowGraph) {
  const auto paths = AllTfGraphs();
  ASSERT_EQ(paths.size(), 8u);
  for (const std::string& path : paths) {
    const RunResult r = RunRill({"graph", path});
    EXPECT_TRUE(r.exited) << path;
    EXPECT_EQ(r.exit_code, 0) << path << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("valid GraphDef")) << path;
  }
}

TEST(RillGraph, SummarizesRegressionGraph) {
  const RunResult r = RunRill({"graph", GraphPath("rust_regression.pb")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("placeholders: 2"));
  EXPECT_THAT(r.out, HasSubstr("variables: 2"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\n  w +Variable +float"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\n  x +Placeholder +float"));
}

TEST(RillGraph, RejectsRandomBytesWithOneLineReason) {
  std::mt19937 rng(7);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  const std::string path = WriteTemp("garbage.pb", bytes);
  const RunResult r = RunRill({"graph", path});
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("garbage.pb"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(RillGraph, RejectsTruncatedBinaryGraph) {
  const std::string bytes = testing::ReadFileOrDie(GraphPath("rust_regression.pb"));
  const std::string path = WriteTemp("truncated.pb", bytes.substr(0, bytes.size() / 2));
  const RunResult r = RunRill({"graph", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("truncated.pb"));
  EXPECT_THAT(r.err, HasSubstr("byte offset"));
}

TEST(RillGraph, RejectsBadTextWithLineAndColumn) {
  const std::string path = WriteTemp("bad.pbtxt", "node {\n  name: \"a\"\n  op: Const\n  }}\n");
  const RunResult r = RunRill({"graph", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::ContainsRegex("bad.pbtxt:[0-9]+:[0-9]+"));
}

TEST(RillGraph, RejectsInvalidGraphNamingTheNode) {
  const std::string path = WriteTemp("invalid.pbtxt",
                                     "node { name: \"sum\" op: \"AddV2\" input: \"a\" input: \"b\" "
                                     "attr { key: \"T\" value { type: DT_FLOAT } } }\n");
  const RunResult r = RunRill({"graph", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("'sum'"));
}

TEST(RillGraph, RejectsMissingAndEmptyFiles) {
  RunResult r = RunRill({"graph", "/nonexistent/model.pb"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/model.pb"));
  r = RunRill({"graph", WriteTemp("empty.pb", "")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("empty"));
}

TEST(RillGraph, ConvertsBetweenBinaryAndText) {
  const std::string dir = testing::MakeTempDir();
  const std::string text = dir + "/regression.pbtxt", binary = dir + "/regression.pb";
  RunResult r = RunRill({"graph", GraphPath("rust_regression_ckpt.pb"), "--to-text", text});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(testing::ReadFileOrDie(text), HasSubstr("op: \"VariableV2\""));
  r = RunRill({"graph", text, "--to-binary=" + binary});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunResult original = RunRill({"graph", GraphPath("rust_regression_ckpt.pb")});
  const RunResult converted = RunRill({"graph", binary});
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  // Identical summaries apart from the file name on the first line.
  EXPECT_EQ(original.out.substr(original.out.find('\n')),
            converted.out.substr(converted.out.find('\n')));
}

TEST(RillGraph, MaxTensorBytesIsCheckedAndApplied) {
  // The regression graph's constants are 4-byte scalars.
  const std::string regression = testing::TestDataDir() + "/tf_graphs/rust_regression.pb";
  const RunResult none = RunRill({"graph", regression, "--max_tensor_bytes=none"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("--max_tensor_bytes must be a positive number of bytes"));
  const RunResult ok = RunRill({"graph", regression, "--max_tensor_bytes=4"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const RunResult refused = RunRill({"graph", regression, "--max_tensor_bytes=3"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("4 bytes"));
}

TEST(RillGraph, UsageErrorsExitTwo) {
  EXPECT_EQ(RunRill({"graph"}).exit_code, 2);
  EXPECT_EQ(RunRill({"graph", "a.pb", "--bogus"}).exit_code, 2);
  EXPECT_EQ(RunRill({"graph", "a.pb", "--to-text"}).exit_code, 2);
  EXPECT_EQ(RunRill({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunRill({}).exit_code, 2);
}

TEST(RillDevices, ListsCpuAndReportsGpus) {
  const RunResult r = RunRill({"devices"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("/job:localhost/replica:0/task:0/device:CPU:0"));
  EXPECT_THAT(r.out, ::testing::AnyOf(HasSubstr("device:GPU:0"), HasSubstr("no CUDA device")));
}

}  // namespace
}  // namespace rill
