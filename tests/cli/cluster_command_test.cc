// Runs `rill cluster` (the real binary, RILL_BIN) as a job script would, each
// time in an environment of its own: TF_CONFIG, the cluster flags, Slurm's
// variables, and three MPI ranks at once.
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// `rill cluster args...` with exactly `env` as its environment.
testing::ProgramResult RunCluster(const std::map<std::string, std::string>& env,
                                  const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {"/usr/bin/env", "-i"};
  for (const auto& [name, value] : env) argv.push_back(name + "=" + value);
  argv.push_back(std::getenv("RILL_BIN"));
  argv.push_back("cluster");
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProgram(argv);
}

TEST(ClusterCommand, PrintsTheClusterOfTfConfig) {
  const testing::ProgramResult run = RunCluster(
      {{"TF_CONFIG",
        R"({"cluster": {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]},
            "task": {"type": "worker", "index": 1}})"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "source: tf_config\n"
            "cluster: ps=127.0.0.1:2222;worker=127.0.0.1:2223,127.0.0.1:2224\n"
            "task: worker 1\n");
}

TEST(ClusterCommand, TheFlagsComeBeforeTfConfig) {
  const testing::ProgramResult run =
      RunCluster({{"TF_CONFIG", "not even JSON"}},
                 {"--ps_hosts=127.0.0.1:2222", "--worker_hosts=127.0.0.1:2223", "--job_name=ps",
                  "--task_index=0"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "source: flags\n"
            "cluster: ps=127.0.0.1:2222;worker=127.0.0.1:2223\n"
            "task: ps 0\n");
}

TEST(ClusterCommand, PrintsASlurmTasksPlaceAndGpus) {
  const testing::ProgramResult run = RunCluster({{"SLURM_PROCID", "3"},
                                                 {"SLURM_NTASKS", "4"},
                                                 {"SLURM_STEP_NODELIST", "node[01-02]"},
                                                 {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                                 {"SLURM_STEP_GPUS", "0,1,2,3"}},
                                                {"--port_base", "2222"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "source: slurm\n"
            "cluster: ps=node01:2222;worker=node01:2223,node02:2222,node02:2223\n"
            "task: worker 2\n"
            "cuda_visible_devices: 2,3\n");
}

TEST(ClusterCommand, ThreeMpiRanksAgreeOnTheCluster) {
  const std::string coordinator = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
  std::vector<testing::ProgramResult> runs(3);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 3; ++rank) {
    ranks.emplace_back([&, rank] {
      // The job's secret, which mpirun hands every rank.
      runs[rank] = RunCluster(
          {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
           {"OMPI_COMM_WORLD_SIZE", "3"},
           {"OMPI_MCA_orte_precondition_transports", "419cfe6bc8f7078a-af10be36259fa0df"},
           {"RILL_COORDINATOR", coordinator}});
    });
  }
  for (std::thread& rank : ranks) rank.join();
  const char* tasks[] = {"task: ps 0\n", "task: worker 0\n", "task: worker 1\n"};
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(runs[rank].exit_code, 0) << runs[rank].err;
    EXPECT_THAT(runs[rank].out, StartsWith("source: mpi\ncluster: ps=127.0.0.1:"));
    EXPECT_THAT(runs[rank].out, HasSubstr(tasks[rank]));
    // Everything but the task line is the same for every rank.
    EXPECT_EQ(runs[rank].out.substr(0, runs[rank].out.find("task:")),
              runs[0].out.substr(0, runs[0].out.find("task:")));
  }
}

TEST(ClusterCommand, BadInputIsAUsageErrorNamingIt) {
  testing::ProgramResult run = RunCluster({{"SLURM_PROCID", "0"},
                                           {"SLURM_NTASKS", "2"},
                                           {"SLURM_STEP_NODELIST", "node[01-"},
                                           {"SLURM_STEP_TASKS_PER_NODE", "2"}});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "rill cluster: SLURM_STEP_NODELIST 'node[01-': unclosed '[' at byte 5\n");
  EXPECT_EQ(run.out, "");
  run = RunCluster({});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("no cluster"));
  run = RunCluster({}, {"--cluster_from", "k8s"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--cluster_from 'k8s': expected slurm, mpi, tf_config or flags"));
  run = RunCluster({}, {"extra"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("unexpected argument 'extra'"));
}

}  // namespace
}  // namespace rill
