// Runs the real `rill` binary (RILL_BIN) as a user would.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/graph_io.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "runtime/training/meta_graph.h"
#include "runtime/training/saver.h"
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

// Saves a checkpoint of TensorFlow's regression graph through its own saver
// nodes, as a training program does, and returns the .meta file the Saver
// writes beside it.
absl::StatusOr<std::string> SaveWithMetaGraph(const std::string& dir) {
  ASSIGN_OR_RETURN(const GraphDef def, ReadGraphDef(GraphPath("rust_regression_ckpt.pb")));
  ASSIGN_OR_RETURN(const SaverDef saver_def, FindSaverDef(def));
  const std::unique_ptr<Saver> saver = Saver::FromSaverDef(saver_def);
  ASSIGN_OR_RETURN(const std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  RETURN_IF_ERROR(session->Run({}, {}, {"init"}).status());
  const MetaGraphDef meta = MakeMetaGraph(def, &saver_def);
  ASSIGN_OR_RETURN(const std::string prefix, saver->Save(*session, dir + "/model.ckpt", 7, &meta));
  RETURN_IF_ERROR(session->Close());
  return prefix + ".meta";
}

// The output after its first line, which names the file.
std::string AfterFirstLine(const std::string& out) { return out.substr(out.find('\n') + 1); }

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
  RunResult r = RunRill({"graph", GraphPath("rust_regression_ckpt.pb"), "--to_text", text});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(testing::ReadFileOrDie(text), HasSubstr("op: \"VariableV2\""));
  r = RunRill({"graph", text, "--to_binary=" + binary});
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

// A .meta file (the Saver's) and a SavedModel (TensorFlow's) are read for
// the graph they hold, and --to_text writes that graph.
TEST(RillGraph, ReadsTheGraphOfAMetaFileAndOfASavedModel) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_OK_AND_ASSIGN(const std::string meta, SaveWithMetaGraph(dir));
  ASSERT_EQ(meta, dir + "/model.ckpt-7.meta");
  const RunResult from_graph = RunRill({"graph", GraphPath("rust_regression_ckpt.pb")});
  ASSERT_EQ(from_graph.exit_code, 0) << from_graph.err;
  RunResult r = RunRill({"graph", meta});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith(meta + ": valid GraphDef\n"));
  EXPECT_EQ(AfterFirstLine(r.out), AfterFirstLine(from_graph.out));

  const std::string text = dir + "/graph.pbtxt";
  r = RunRill({"graph", meta, "--to_text", text});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunRill({"graph", text});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(AfterFirstLine(r.out), AfterFirstLine(from_graph.out));

  const std::string saved_model =
      testing::TestDataDir() + "/tf_checkpoints/regression-model/saved_model.pb";
  r = RunRill({"graph", saved_model});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("variables: 2"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\n  w +VariableV2 +float"));
}

TEST(RillGraph, RejectsADamagedMetaFileNamingIt) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_OK_AND_ASSIGN(const std::string meta, SaveWithMetaGraph(dir));
  const std::string bytes = testing::ReadFileOrDie(meta);
  const std::string truncated = WriteTemp("truncated.meta", bytes.substr(0, bytes.size() / 2));
  const RunResult r = RunRill({"graph", truncated});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("truncated.meta"));
  EXPECT_THAT(r.err, HasSubstr("is not a binary MetaGraphDef"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(RillGraph, UsageErrorsExitTwo) {
  EXPECT_EQ(RunRill({"graph"}).exit_code, 2);
  EXPECT_EQ(RunRill({"graph", "a.pb", "--bogus"}).exit_code, 2);
  EXPECT_EQ(RunRill({"graph", "a.pb", "--to_text"}).exit_code, 2);
  EXPECT_EQ(RunRill({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunRill({}).exit_code, 2);
}

// Every command, and rill itself, prints its usage on stdout for --help
// and -h and exits 0, whatever else is on the command line.
TEST(RillHelp, EveryCommandPrintsItsUsageForHelpAndH) {
  for (const char* command :
       {"run", "graph", "place", "server", "checkpoint", "devices", "keygen"}) {
    for (const char* flag : {"--help", "-h"}) {
      const RunResult r = RunRill({command, flag});
      EXPECT_TRUE(r.exited) << command << " " << flag;
      EXPECT_EQ(r.exit_code, 0) << command << " " << flag << ": " << r.err;
      EXPECT_THAT(r.out, ::testing::StartsWith(std::string("usage: rill ") + command))
          << command << " " << flag;
      EXPECT_EQ(r.err, "") << command << " " << flag;
    }
    const RunResult r = RunRill({"help", command});
    EXPECT_EQ(r.exit_code, 0) << "help " << command << ": " << r.err;
    EXPECT_THAT(r.out, ::testing::StartsWith(std::string("usage: rill ") + command));
    EXPECT_EQ(RunRill({command, "--bogus", "--help"}).exit_code, 0) << command;
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"-h"}, {"help"}, {"help", "--help"}, {"help", "-h"}}) {
    const RunResult r = RunRill(args);
    EXPECT_EQ(r.exit_code, 0) << ::testing::PrintToString(args) << ": " << r.err;
    EXPECT_THAT(r.out, ::testing::StartsWith("usage: rill <command>"));
    EXPECT_EQ(r.err, "");
  }
}

// `rill help` is every command's usage: no flag is left out.
TEST(RillHelp, HelpShowsEveryCommandsFlags) {
  const RunResult r = RunRill({"help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* command :
       {"run", "graph", "place", "server", "checkpoint", "devices", "keygen"}) {
    EXPECT_THAT(r.out, HasSubstr(RunRill({command, "--help"}).out)) << command;
  }
  for (const char* flag : {"--restore", "--save", "--max_tensor_bytes", "--device_count",
                           "--max_connections", "--session_idle_timeout", "--dot"}) {
    EXPECT_THAT(r.out, HasSubstr(flag));
  }
}

TEST(RillHelp, AnUnknownFlagExitsTwoNamingIt) {
  for (const char* command :
       {"run", "graph", "place", "server", "checkpoint", "devices", "keygen", "help"}) {
    for (const char* flag : {"--no-such-flag", "-q"}) {
      const RunResult r = RunRill({command, "x", flag});
      EXPECT_TRUE(r.exited) << command;
      EXPECT_EQ(r.exit_code, 2) << command << " " << flag << ": " << r.err;
      EXPECT_THAT(r.err, HasSubstr(std::string("unknown option '") + flag + "'")) << command;
      EXPECT_EQ(r.out, "") << command;
    }
  }
  const RunResult r = RunRill({"--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command '--no-such-flag'"));
  EXPECT_EQ(RunRill({"help", "frobnicate"}).exit_code, 2);
}

TEST(RillDevices, ListsCpuAndReportsGpus) {
  const RunResult r = RunRill({"devices"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("/job:localhost/replica:0/task:0/device:CPU:0"));
  EXPECT_THAT(r.out, ::testing::AnyOf(HasSubstr("device:GPU:0"), HasSubstr("no CUDA device")));
}

}  // namespace
}  // namespace rill
