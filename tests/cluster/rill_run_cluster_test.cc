// `rill run --target zmq://...`: a saved TensorFlow graph trained on a
// cluster of `rill server` processes, variables on the ps task.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/npy.h"
#include "graph/tensor.h"
#include "tests/cluster/server_process.h"
#include "tests/test_util.h"
#include "transport/curve.h"

namespace rill {
namespace {

using ::rill::testing::BoundedRun;
using ::rill::testing::RegressionXs;
using ::rill::testing::RegressionYs;
using ::testing::AnyOf;
using ::testing::HasSubstr;

// The single value printed for `name` by --json.
std::optional<float> JsonScalar(const std::string& out, const std::string& name) {
  const std::regex entry("\"" + name + R"re(": \{[^}]*"values": \[([-+0-9.eE]+)\]\})re");
  std::smatch match;
  if (!std::regex_search(out, match, entry)) return std::nullopt;
  return std::strtof(match[1].str().c_str(), nullptr);
}

class RillRunCluster : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> TrainArgs() {
    const std::string x = dir_ + "/x.npy";
    const std::string y = dir_ + "/y.npy";
    EXPECT_OK(WriteNpy(x, RegressionXs()));
    EXPECT_OK(WriteNpy(y, RegressionYs()));
    return {"run",      testing::TestDataDir() + "/tf_graphs/rust_regression.pb",
            "--feed",   "x=" + x,
            "--feed",   "y=" + y,
            "--init",   "init",
            "--target", "train",
            "--steps",  "201",
            "--fetch",  "w",
            "--fetch",  "b",
            "--json"};
  }

  const std::string dir_ = testing::MakeTempDir();
};

TEST_F(RillRunCluster, TrainsWithVariablesOnThePsTask) {
  ASSERT_OK_AND_ASSIGN(testing::Cluster cluster, testing::StartCluster(1, 2));
  std::vector<std::string> args = TrainArgs();
  args.insert(args.end(), {"--target", cluster.Target("worker", 0), "--replica_device_setter",
                           "--log_device_placement"});
  const BoundedRun run = testing::RunRill(args);
  ASSERT_FALSE(run.exit.timed_out) << run.err;
  ASSERT_EQ(run.exit.code, 0) << run.err << "\nmaster log:\n" << cluster.Task("worker", 0).Log();
  const std::optional<float> w = JsonScalar(run.out, "w");
  const std::optional<float> b = JsonScalar(run.out, "b");
  ASSERT_TRUE(w.has_value() && b.has_value()) << run.out;
  EXPECT_NEAR(*w, 0.1, 1e-3) << run.out;
  EXPECT_NEAR(*b, 0.3, 1e-3) << run.out;

  const std::string master_log = cluster.Task("worker", 0).Log();
  EXPECT_THAT(master_log, HasSubstr("\nw: (Variable): /job:ps/replica:0/task:0/device:CPU:0\n"));
  EXPECT_THAT(master_log, HasSubstr("\nb: (Variable): /job:ps/replica:0/task:0/device:CPU:0\n"));
  EXPECT_THAT(master_log, HasSubstr("\nMean: (Mean): /job:worker/replica:0/task:0/device:CPU:0\n"));
}

// `rill server --curve_keys`: `rill run` trains there with the cluster's
// keys, or a client's authorized in it; without keys it is refused.
TEST_F(RillRunCluster, ACurveClusterServesOnlyItsKeyHolders) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq was built without CURVE";
  const std::string keys = dir_ + "/cluster_keys";
  const std::string client = dir_ + "/client_keys";
  ASSERT_OK(WriteCurveKeys(keys, "").status());
  ASSERT_OK(WriteCurveKeys(client, keys).status());
  ASSERT_OK_AND_ASSIGN(testing::Cluster cluster,
                       testing::StartCluster(1, 1, {"--curve_keys", keys}));
  for (const std::string& dir : {keys, client}) {
    std::vector<std::string> args = TrainArgs();
    args.insert(args.end(), {"--target", cluster.Target("worker", 0), "--replica_device_setter",
                             "--curve_keys", dir});
    const BoundedRun run = testing::RunRill(args);
    ASSERT_EQ(run.exit.code, 0) << run.err;
    EXPECT_NEAR(JsonScalar(run.out, "w").value_or(0), 0.1, 1e-3) << run.out;
  }
  std::vector<std::string> keyless = TrainArgs();
  keyless.insert(keyless.end(), {"--target", cluster.Target("worker", 0)});
  const BoundedRun refused = testing::RunRill(keyless);
  EXPECT_EQ(refused.exit.code, 1) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("accepts only CURVE clients and this client has no keys"));
}

// w starts random (an unseeded RandomUniform); fed a fixed start, the
// cluster computes exactly what one process does.
TEST_F(RillRunCluster, FromTheSameStartTrainsExactlyAsLocally) {
  ASSERT_OK_AND_ASSIGN(testing::Cluster cluster, testing::StartCluster(1, 2));
  std::vector<std::string> args = TrainArgs();
  args.insert(args.end(), {"--feed", "random_uniform=[0.5]"});
  const BoundedRun local = testing::RunRill(args);
  ASSERT_EQ(local.exit.code, 0) << local.err;
  args.insert(args.end(), {"--target", cluster.Target("worker", 1), "--replica_device_setter"});
  const BoundedRun remote = testing::RunRill(args);
  ASSERT_FALSE(remote.exit.timed_out) << remote.err;
  ASSERT_EQ(remote.exit.code, 0) << remote.err;
  EXPECT_EQ(remote.out, local.out);
  const std::optional<float> w = JsonScalar(remote.out, "w");
  ASSERT_TRUE(w.has_value()) << remote.out;
  EXPECT_NEAR(*w, 0.1, 1e-3);
}

TEST_F(RillRunCluster, ServesAGraphOnASecondCpuOfAWorker) {
  ASSERT_OK_AND_ASSIGN(testing::Cluster cluster,
                       testing::StartCluster(1, 1, {"--device_count", "CPU=2"}));
  EXPECT_THAT(cluster.Task("worker", 0).Log(),
              HasSubstr("/job:worker/replica:0/task:0/device:CPU:1"));
  const std::string graph = dir_ + "/graph.pbtxt";
  {
    std::FILE* file = std::fopen(graph.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs(R"pb(
                 node {
                   name: "a"
                   op: "Const"
                   device: "/job:worker/task:0/device:CPU:1"
                   attr {
                     key: "dtype"
                     value { type: DT_FLOAT }
                   }
                   attr {
                     key: "value"
                     value {
                       tensor {
                         dtype: DT_FLOAT
                         tensor_shape { dim { size: 2 } }
                         float_val: 1
                         float_val: 2
                       }
                     }
                   }
                 }
                 node {
                   name: "b"
                   op: "Neg"
                   input: "a"
                   device: "/job:worker/task:0/device:CPU:1"
                   attr {
                     key: "T"
                     value { type: DT_FLOAT }
                   }
                 }
                 node {
                   name: "c"
                   op: "Square"
                   input: "b"
                   device: "/job:ps/task:0"
                   attr {
                     key: "T"
                     value { type: DT_FLOAT }
                   }
                 }
               )pb",
               file);
    std::fclose(file);
  }
  const BoundedRun run = testing::RunRill({"run", graph, "--fetch", "b", "--fetch", "c", "--target",
                                           cluster.Target("worker", 0), "--log_device_placement"});
  ASSERT_FALSE(run.exit.timed_out) << run.err;
  ASSERT_EQ(run.exit.code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("b: float32 [2] = [-1, -2]"));
  EXPECT_THAT(run.out, HasSubstr("c: float32 [2] = [1, 4]"));
  // The client sees where its nodes ran.
  EXPECT_THAT(run.err, HasSubstr("b: (Neg): /job:worker/replica:0/task:0/device:CPU:1"));
  EXPECT_THAT(run.err, HasSubstr("c: (Square): /job:ps/replica:0/task:0/device:CPU:0"));
}

TEST_F(RillRunCluster, NothingListeningAtTheTargetFails) {
  std::vector<std::string> args = TrainArgs();
  const std::string target = absl::StrFormat("zmq://127.0.0.1:%d", testing::FreePort());
  args.insert(args.end(), {"--target", target});
  const BoundedRun run = testing::RunRill(args, {}, absl::Seconds(40));
  ASSERT_FALSE(run.exit.timed_out) << "rill run still waits for " << target << ":\n" << run.err;
  EXPECT_EQ(run.exit.code, 1) << run.err;
  EXPECT_THAT(run.err, HasSubstr(target.substr(6)));
}

TEST_F(RillRunCluster, TargetWithAnotherSchemeIsRefused) {
  std::vector<std::string> args = TrainArgs();
  args.insert(args.end(), {"--target", "http://x"});
  const BoundedRun run = testing::RunRill(args, {}, absl::Seconds(40));
  ASSERT_FALSE(run.exit.timed_out);
  EXPECT_THAT(run.exit.code, AnyOf(1, 2)) << run.err;
  EXPECT_THAT(run.err, HasSubstr("http://x"));
}

}  // namespace
}  // namespace rill
