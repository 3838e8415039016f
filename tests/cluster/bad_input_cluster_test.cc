// Hostile graphs sent to `rill server` tasks: each task answers with the
// clean error, naming the node, and still runs good steps after, whether
// the graph comes to its own master or runs there for another task's.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/cluster/server_process.h"
#include "tests/runtime/bad_input_graphs.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::BadInputCase;
using ::rill::testing::BadInputCases;
using ::rill::testing::Cluster;
using ::rill::testing::ExpectGoodStepRuns;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

// The servers refuse tensors past the cases' limit, so that no case needs
// the memory a real one would take.
absl::StatusOr<Cluster> StartLimitedCluster() {
  return testing::StartCluster(
      1, 1, {absl::StrCat("--max_tensor_bytes=", testing::kBadInputTensorLimit)});
}

SessionOptions OnTask(const Cluster& cluster, const std::string& job) {
  SessionOptions options;
  options.target = cluster.Target(job, 0);
  return options;
}

TEST(BadInputCluster, EachTaskAnswersItsOwnBadGraphsAndStaysUp) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster, StartLimitedCluster());
  for (const std::string job : {"worker", "ps"}) {
    const std::string device = absl::StrCat("/job:", job, "/task:0");
    const SessionOptions options = OnTask(cluster, job);
    for (const BadInputCase& c : BadInputCases(device)) {
      SCOPED_TRACE(absl::StrCat(job, ": ", c.name));
      EXPECT_THAT(RunBadInputCase(options, c), StatusIs(c.code, HasSubstr("'" + c.node + "'")));
      ExpectGoodStepRuns(options, device);
    }
    EXPECT_TRUE(cluster.Task(job, 0).Running()) << cluster.Task(job, 0).Log();
  }
}

TEST(BadInputCluster, ATaskRunningAnotherTasksBadGraphStaysUp) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster, StartLimitedCluster());
  // The worker's master places every node on the ps, which decodes the
  // constants and runs the kernels.
  const SessionOptions options = OnTask(cluster, "worker");
  const std::string ps = "/job:ps/task:0";
  for (const BadInputCase& c : BadInputCases(ps)) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(RunBadInputCase(options, c), StatusIs(c.code, HasSubstr("'" + c.node + "'")));
    ExpectGoodStepRuns(options, ps);
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                       NewSession(options, testing::MostNegativeOverMinusOneGraph(ps)));
  const std::vector<std::string> fetches = testing::MostNegativeOverMinusOneFetches();
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> values, session->Run({}, fetches));
  testing::ExpectWrappedQuotients(fetches, values);
  EXPECT_TRUE(cluster.Task("ps", 0).Running()) << cluster.Task("ps", 0).Log();
  ExpectGoodStepRuns(OnTask(cluster, "ps"), ps);
}

}  // namespace
}  // namespace rill
