// Runs the example programs as a user would and checks the numbers on
// their closing `result: {json}` line.
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

testing::ProgramResult RunExample(const std::string& name, std::vector<std::string> args = {}) {
  args.insert(args.begin(), std::string(std::getenv("RILL_EXAMPLES_DIR")) + "/" + name);
  return testing::RunProgram(args);
}

// The number after "key": on the output's result line; NaN when absent.
double ResultValue(const std::string& out, const std::string& key) {
  const size_t line = out.rfind("result: {");
  if (line == std::string::npos) return std::nan("");
  std::smatch match;
  const std::string result = out.substr(line);
  if (!std::regex_search(result, match,
                         std::regex("\"" + key + "\": (-?[0-9.eE+-]+|\"[^\"]*\")"))) {
    return std::nan("");
  }
  return std::strtod(match[1].str().c_str(), nullptr);
}

constexpr const char* kExamples[] = {
    "linear_regression", "fashion_mnist_mlp", "matmul_devices",   "in_graph_replication",
    "cluster_devices",   "distributed_mnist", "mnist_model_graph"};

// --help and -h print the usage on stdout and exit 0, and do nothing else
// (no training, no server), whatever else is on the command line.
TEST(Examples, EveryExamplePrintsItsUsageForHelpAndH) {
  for (const char* name : kExamples) {
    for (const char* flag : {"--help", "-h"}) {
      const auto run = RunExample(name, {flag});
      EXPECT_TRUE(run.exited) << name << " " << flag;
      EXPECT_EQ(run.exit_code, 0) << name << " " << flag << ": " << run.err;
      EXPECT_THAT(run.out, ::testing::StartsWith(std::string("usage: ") + name))
          << name << " " << flag;
      EXPECT_EQ(run.err, "") << name << " " << flag;
    }
    EXPECT_EQ(RunExample(name, {"--bogus", "-h"}).exit_code, 0) << name;
  }
}

TEST(Examples, AnUnknownFlagExitsTwoNamingIt) {
  for (const char* name : kExamples) {
    for (const char* flag : {"--no-such-flag", "-q"}) {
      const auto run = RunExample(name, {flag});
      EXPECT_TRUE(run.exited) << name << " " << flag;
      EXPECT_EQ(run.exit_code, 2) << name << " " << flag << ": " << run.err;
      EXPECT_THAT(run.err, HasSubstr(std::string("unknown option '") + flag + "'")) << name;
      EXPECT_THAT(run.err, HasSubstr(std::string("usage: ") + name)) << name;
    }
  }
}

TEST(LinearRegression, RecoversSlopeAndIntercept) {
  const auto run = RunExample("linear_regression");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NEAR(ResultValue(run.out, "w"), 2.0, 1e-2) << run.out;
  EXPECT_NEAR(ResultValue(run.out, "b"), 10.0, 1e-2) << run.out;
}

// With a log directory: the newest two checkpoints and an event file,
// and the last checkpoint restores to the trained weights.
TEST(LinearRegression, WritesCheckpointsAndEventsToTheLogdir) {
  const std::string logdir = testing::MakeTempDir() + "/logs";
  const auto run = RunExample("linear_regression", {"--logdir", logdir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("restored " + logdir + "/model.ckpt-300: w 2.0000  b 10.0000"));
  EXPECT_THAT(testing::ReadFileOrDie(logdir + "/checkpoint"),
              HasSubstr("all_model_checkpoint_paths: \"" + logdir +
                        "/model.ckpt-200\"\n"
                        "all_model_checkpoint_paths: \"" +
                        logdir + "/model.ckpt-300\""));
  EXPECT_FALSE(std::filesystem::exists(logdir + "/model.ckpt-100.index"));
  for (const char* file :
       {"/model.ckpt-300.index", "/model.ckpt-300.meta", "/model.ckpt-300.data-00000-of-00001"}) {
    EXPECT_TRUE(std::filesystem::exists(logdir + file)) << file;
  }
  int event_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(logdir)) {
    event_files += entry.path().filename().string().starts_with("events.out.tfevents.");
  }
  EXPECT_EQ(event_files, 1);
}

TEST(ClusterDevices, TrainsTheSameOnALocalSessionAndOnACluster) {
  const auto run = RunExample("cluster_devices");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NEAR(ResultValue(run.out, "w"), 2.0, 2e-2) << run.out;
  EXPECT_NEAR(ResultValue(run.out, "b"), 10.0, 2e-2) << run.out;
  EXPECT_EQ(ResultValue(run.out, "w"), ResultValue(run.out, "local_w")) << run.out;
  EXPECT_EQ(ResultValue(run.out, "b"), ResultValue(run.out, "local_b")) << run.out;
  EXPECT_THAT(run.out, HasSubstr("nodes on /job:ps/replica:0/task:0/device:CPU:1"));
  EXPECT_THAT(run.out, HasSubstr("nodes on /job:worker/replica:0/task:1/device:CPU:1"));
  EXPECT_THAT(run.out, HasSubstr("w: (VariableV2): /job:ps/replica:0/task:0/device:CPU:1"));
}

TEST(MatMulDevices, SumsRandomMatrixTimesItsTransposeOnCpu) {
  const auto run = RunExample("matmul_devices", {"cpu", "64"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Entries of M M^T are sums of 64 products of U(0,1) values: 16 on
  // average, so the sum of 64*64 of them is near 65536.
  EXPECT_NEAR(ResultValue(run.out, "sum"), 65536.0, 6000.0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("\"device\": \"/cpu:0\""));
  EXPECT_THAT(run.err, HasSubstr("dot: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0"));
}

TEST(MatMulDevices, RunsOnTheGpuBesideTheCpu) {
  const auto run = RunExample("matmul_devices", {"gpu", "64"});
  if (run.exit_code == 1 && run.err.find("no GPU to run on") != std::string::npos) {
    GTEST_SKIP() << run.err;
  }
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NEAR(ResultValue(run.out, "sum"), 65536.0, 6000.0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("\"device\": \"/gpu:0\""));
  EXPECT_THAT(run.out, HasSubstr("beside CPU"));
  EXPECT_THAT(run.err, HasSubstr("dot: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0"));
}

TEST(MatMulDevices, RejectsBadArguments) {
  EXPECT_EQ(RunExample("matmul_devices", {"tpu"}).exit_code, 2);
  EXPECT_EQ(RunExample("matmul_devices", {"cpu", "-3"}).exit_code, 2);
}

// The equivalence rule on the example: the graph spread over /cpu:0 and
// /cpu:1 (and the towers with averaged gradients) equals one device.
TEST(InGraphReplication, TwoDevicesAgreeWithOne) {
  const auto run = RunExample("in_graph_replication", {"--size", "96", "--power", "4"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(ResultValue(run.out, "devices"), 2.0) << run.out;
  EXPECT_LE(ResultValue(run.out, "matpow_rel_diff"), 1e-5) << run.out;
  EXPECT_LE(ResultValue(run.out, "predictions_rel_diff"), 1e-5) << run.out;
  EXPECT_LE(ResultValue(run.out, "grads_rel_diff"), 1e-5) << run.out;
}

TEST(InGraphReplication, TwoGpusAgreeWithOne) {
  const auto run =
      RunExample("in_graph_replication", {"--size", "96", "--power", "4", "--device", "gpu"});
  if (run.exit_code == 1 && run.err.find("no GPU") != std::string::npos) GTEST_SKIP() << run.err;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("two devices (/gpu:0, /gpu:1)"));
  EXPECT_LE(ResultValue(run.out, "matpow_rel_diff"), 1e-5) << run.out;
  EXPECT_LE(ResultValue(run.out, "predictions_rel_diff"), 1e-5) << run.out;
  EXPECT_LE(ResultValue(run.out, "grads_rel_diff"), 1e-5) << run.out;
}

TEST(InGraphReplication, RejectsBadArguments) {
  EXPECT_EQ(RunExample("in_graph_replication", {"--device", "tpu"}).exit_code, 2);
  EXPECT_EQ(RunExample("in_graph_replication", {"--size", "0"}).exit_code, 2);
  EXPECT_EQ(RunExample("in_graph_replication", {"--power"}).exit_code, 2);
  EXPECT_EQ(RunExample("in_graph_replication", {"--bogus", "3"}).exit_code, 2);
}

TEST(FashionMnistMlp, ReachesTestAccuracyAfterFiveEpochs) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  const auto run = RunExample("fashion_mnist_mlp");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_GE(ResultValue(run.out, "test_accuracy"), 0.86) << run.out;
  EXPECT_EQ(ResultValue(run.out, "epochs"), 5.0) << run.out;
}

// Without a GPU the run stops at once, saying so; with one, both models
// train there.
TEST(FashionMnistMlp, TrainsOnTheGpuOrSaysThereIsNone) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  bool trained = false;
  for (const char* model : {"mlp", "cnn"}) {
    const auto run =
        RunExample("fashion_mnist_mlp", {"--device", "gpu", "--model", model, "--steps", "400"});
    if (run.err.find("this machine has no GPU") != std::string::npos) {
      EXPECT_EQ(run.exit_code, 1);
      continue;
    }
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_GE(ResultValue(run.out, "test_accuracy"), 0.75) << run.out;
    trained = true;
  }
  if (!trained) GTEST_SKIP() << "no GPU: fashion_mnist_mlp --device gpu refused, as it should";
}

TEST(FashionMnistMlp, RejectsAnUnknownDevice) {
  const auto run = RunExample("fashion_mnist_mlp", {"--device", "tpu"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--device 'tpu'"));
}

TEST(FashionMnistMlp, NamesTheMissingDataDirectory) {
  const auto run = RunExample("fashion_mnist_mlp", {"--data", "/nonexistent/fashion"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("/nonexistent/fashion"));
  EXPECT_THAT(run.err, HasSubstr("dataset-fashion-mnist"));
}

}  // namespace
}  // namespace rill
