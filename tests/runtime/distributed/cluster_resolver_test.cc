#include "runtime/distributed/cluster_resolver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "runtime/distributed/slurm_env.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kPrecondition = absl::StatusCode::kFailedPrecondition;
constexpr auto kDeadline = absl::StatusCode::kDeadlineExceeded;

using Env = std::map<std::string, std::string>;

EnvLookup LookupIn(Env env) {
  return [env = std::move(env)](const std::string& name) -> std::optional<std::string> {
    const auto found = env.find(name);
    if (found == env.end()) return std::nullopt;
    return found->second;
  };
}

ClusterResolverOptions WithEnv(Env env) {
  ClusterResolverOptions options;
  options.env = LookupIn(std::move(env));
  return options;
}

std::vector<std::string> Hosts(std::string_view text) {
  absl::StatusOr<std::vector<std::string>> hosts = ExpandSlurmHostList(text, "SLURM_JOB_NODELIST");
  EXPECT_OK(hosts);
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

absl::Status HostListError(std::string_view text) {
  return ExpandSlurmHostList(text, "SLURM_STEP_NODELIST").status();
}

TEST(SlurmHostList, ExpandsRangesAndListsKeepingZeroPadding) {
  EXPECT_THAT(Hosts("node[01-03,07]"), ElementsAre("node01", "node02", "node03", "node07"));
  EXPECT_THAT(Hosts("tux[0-3]"), ElementsAre("tux0", "tux1", "tux2", "tux3"));
  EXPECT_THAT(Hosts("n[9-11]"), ElementsAre("n9", "n10", "n11"));
  EXPECT_THAT(Hosts("n[008-010]"), ElementsAre("n008", "n009", "n010"));
  EXPECT_THAT(Hosts("login1"), ElementsAre("login1"));
  EXPECT_THAT(Hosts("a.example.org,b_2"), ElementsAre("a.example.org", "b_2"));
}

TEST(SlurmHostList, ExpandsSeveralEntriesInOrder) {
  EXPECT_THAT(Hosts("gpu-[1-2],login1"), ElementsAre("gpu-1", "gpu-2", "login1"));
  EXPECT_THAT(Hosts("cpu[1,3],gpu[2-3]x"), ElementsAre("cpu1", "cpu3", "gpu2x", "gpu3x"));
}

TEST(SlurmHostList, SeveralBracketGroupsAreACartesianProductFirstSlowest) {
  EXPECT_THAT(Hosts("c[1-2]-[1-2]"), ElementsAre("c1-1", "c1-2", "c2-1", "c2-2"));
  EXPECT_THAT(Hosts("rack[1-2]n[01,03]"),
              ElementsAre("rack1n01", "rack1n03", "rack2n01", "rack2n03"));
}

TEST(SlurmHostList, ErrorsNameTheVariableTheTextAndTheByte) {
  EXPECT_THAT(HostListError("node[01-"),
              StatusIs(kInvalid, "SLURM_STEP_NODELIST 'node[01-': unclosed '[' at byte 5"));
  EXPECT_THAT(HostListError("node[01"), StatusIs(kInvalid, HasSubstr("unclosed '[' at byte 5")));
  EXPECT_THAT(HostListError("node01]"),
              StatusIs(kInvalid, HasSubstr("'node01]': unexpected ']' at byte 7")));
  EXPECT_THAT(HostListError("a,,b"), StatusIs(kInvalid, HasSubstr("empty host name at byte 3")));
  EXPECT_THAT(HostListError("a,"), StatusIs(kInvalid, HasSubstr("trailing ',' at byte 2")));
  EXPECT_THAT(HostListError(",a"), StatusIs(kInvalid, HasSubstr("empty host name at byte 1")));
  EXPECT_THAT(HostListError("n[3-1]"),
              StatusIs(kInvalid, HasSubstr("range '3-1' runs backwards at byte 3")));
  EXPECT_THAT(HostListError("n[a-b]"),
              StatusIs(kInvalid, HasSubstr("expected a number or a range, found 'a' at byte 3")));
  EXPECT_THAT(HostListError("n[]"), StatusIs(kInvalid, HasSubstr("found ']' at byte 3")));
  EXPECT_THAT(HostListError("n[1-x]"),
              StatusIs(kInvalid, HasSubstr("expected the end of the range, found 'x' at byte 5")));
  EXPECT_THAT(HostListError("n[1[2]]"), StatusIs(kInvalid, HasSubstr("found '[' at byte 4")));
  EXPECT_THAT(HostListError("n 1"), StatusIs(kInvalid, HasSubstr("unexpected character ' '")));
  EXPECT_THAT(HostListError(""), StatusIs(kInvalid, HasSubstr("empty host list")));
  EXPECT_THAT(HostListError("n[1234567890]"), StatusIs(kInvalid, HasSubstr("too long")));
}

TEST(SlurmHostList, AHugeExpansionIsAnErrorNotAnAllocation) {
  EXPECT_THAT(HostListError("n[0-999999999]"), StatusIs(kInvalid, HasSubstr("more than")));
  EXPECT_THAT(HostListError("n[0-9999]-[0-9999]"), StatusIs(kInvalid, HasSubstr("more than")));
}

TEST(SlurmTasksPerNode, ExpandsRepeats) {
  const std::string_view var = "SLURM_TASKS_PER_NODE";
  EXPECT_THAT(ExpandSlurmTasksPerNode("2(x3),1", var), IsOkAndHolds(ElementsAre(2, 2, 2, 1)));
  EXPECT_THAT(ExpandSlurmTasksPerNode("4", var), IsOkAndHolds(ElementsAre(4)));
  EXPECT_THAT(ExpandSlurmTasksPerNode("1(x2)", var), IsOkAndHolds(ElementsAre(1, 1)));
  EXPECT_THAT(ExpandSlurmTasksPerNode("3,1(x2),2", var), IsOkAndHolds(ElementsAre(3, 1, 1, 2)));
}

TEST(SlurmTasksPerNode, ErrorsNameTheVariableAndTheByte) {
  const std::string_view var = "SLURM_STEP_TASKS_PER_NODE";
  EXPECT_THAT(ExpandSlurmTasksPerNode("2(x3", var),
              StatusIs(kInvalid,
                       "SLURM_STEP_TASKS_PER_NODE '2(x3': expected ')', found the end "
                       "at byte 5"));
  EXPECT_THAT(ExpandSlurmTasksPerNode("2(3)", var),
              StatusIs(kInvalid, HasSubstr("expected 'x' after '(', found '3' at byte 3")));
  EXPECT_THAT(ExpandSlurmTasksPerNode("0", var),
              StatusIs(kInvalid, HasSubstr("a node runs no tasks at byte 1")));
  EXPECT_THAT(ExpandSlurmTasksPerNode("2(x0)", var),
              StatusIs(kInvalid, HasSubstr("a repeat of no nodes at byte 4")));
  EXPECT_THAT(ExpandSlurmTasksPerNode("2,", var),
              StatusIs(kInvalid, HasSubstr("expected a task count, found the end at byte 3")));
  EXPECT_THAT(ExpandSlurmTasksPerNode("x", var),
              StatusIs(kInvalid, HasSubstr("expected a task count, found 'x' at byte 1")));
  EXPECT_THAT(ExpandSlurmTasksPerNode("2;1", var),
              StatusIs(kInvalid, HasSubstr("expected ',' or '(', found ';' at byte 2")));
  EXPECT_THAT(ExpandSlurmTasksPerNode("", var), StatusIs(kInvalid, HasSubstr("empty list")));
  EXPECT_THAT(ExpandSlurmTasksPerNode("1(x999999999)", var),
              StatusIs(kInvalid, HasSubstr("more than")));
}

TEST(SlurmGpus, SplitEvenlyByLocalIndexAsTensorFlowDoes) {
  const std::vector<std::string> four = {"0", "1", "2", "3"};
  EXPECT_THAT(GpusOfTask(four, 2, 0), ElementsAre("0", "1"));
  EXPECT_THAT(GpusOfTask(four, 2, 1), ElementsAre("2", "3"));
  EXPECT_THAT(GpusOfTask(four, 3, 2), ElementsAre("2"));  // GPU 3 goes unused.
  EXPECT_THAT(GpusOfTask({"0"}, 3, 1), IsEmpty());
  EXPECT_THAT(SplitDeviceList("4,5", "SLURM_STEP_GPUS"), IsOkAndHolds(ElementsAre("4", "5")));
  EXPECT_THAT(SplitDeviceList("", "SLURM_STEP_GPUS"), IsOkAndHolds(IsEmpty()));
  EXPECT_THAT(SplitDeviceList("0,,1", "CUDA_VISIBLE_DEVICES"),
              StatusIs(kInvalid, "CUDA_VISIBLE_DEVICES '0,,1': empty device at byte 3"));
}

// Four tasks on two nodes, two each, as `srun -N 2 -n 4` starts them.
Env SlurmStep(int procid) {
  return {{"SLURM_PROCID", std::to_string(procid)}, {"SLURM_NTASKS", "4"},
          {"SLURM_STEP_NODELIST", "node[01-02]"},   {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_JOB_NODELIST", "node[01-09]"},    {"SLURM_TASKS_PER_NODE", "9"}};
}

TEST(SlurmResolver, RanksFillNodesInOrderWithAPortPerLocalTask) {
  const std::string cluster = "ps=node01:8888;worker=node01:8889,node02:8888,node02:8889";
  const std::pair<std::string, int> tasks[] = {
      {"ps", 0}, {"worker", 0}, {"worker", 1}, {"worker", 2}};
  for (int rank = 0; rank < 4; ++rank) {
    ClusterResolverOptions options = WithEnv(SlurmStep(rank));
    options.source = ClusterSource::kSlurm;
    ASSERT_OK_AND_ASSIGN(const ResolvedCluster resolved, ResolveCluster(options));
    EXPECT_EQ(resolved.source, ClusterSource::kSlurm);
    EXPECT_EQ(resolved.config.cluster.ToString(), cluster);
    EXPECT_EQ(resolved.config.task.job, tasks[rank].first) << rank;
    EXPECT_EQ(resolved.config.task.index, tasks[rank].second) << rank;
    EXPECT_EQ(resolved.cuda_visible_devices, std::nullopt);
  }
}

TEST(SlurmResolver, NumPsAndPortBaseShapeTheCluster) {
  ClusterResolverOptions options = WithEnv(SlurmStep(1));
  options.num_ps = 2;
  options.port_base = 2222;
  ASSERT_OK_AND_ASSIGN(const ResolvedCluster resolved, ResolveCluster(options));
  EXPECT_EQ(resolved.config.cluster.ToString(),
            "ps=node01:2222,node01:2223;worker=node02:2222,node02:2223");
  EXPECT_EQ(resolved.config.task.job, "ps");
  EXPECT_EQ(resolved.config.task.index, 1);
}

TEST(SlurmResolver, FallsBackToTheJobsVariablesAndUnevenNodes) {
  ClusterResolverOptions options = WithEnv({{"SLURM_PROCID", "4"},
                                            {"SLURM_NTASKS", "5"},
                                            {"SLURM_JOB_NODELIST", "gpu-[1-2],login1"},
                                            {"SLURM_TASKS_PER_NODE", "2(x2),1"}});
  ASSERT_OK_AND_ASSIGN(const ResolvedCluster resolved, ResolveCluster(options));
  EXPECT_EQ(resolved.config.cluster.ToString(),
            "ps=gpu-1:8888;worker=gpu-1:8889,gpu-2:8888,gpu-2:8889,login1:8888");
  EXPECT_EQ(resolved.config.task.index, 3);
}

TEST(SlurmResolver, SplitsTheNodesGpusBetweenItsTasks) {
  Env env = SlurmStep(3);  // The second task of node02.
  env["SLURM_STEP_GPUS"] = "4,5,6,7";
  ClusterResolverOptions options = WithEnv(env);
  ASSERT_OK_AND_ASSIGN(ResolvedCluster resolved, ResolveCluster(options));
  EXPECT_THAT(resolved.cuda_visible_devices, Optional(std::string("6,7")));
  // CUDA_VISIBLE_DEVICES numbers the GPUs as this process sees them.
  env["CUDA_VISIBLE_DEVICES"] = "0,1";
  options = WithEnv(env);
  ASSERT_OK_AND_ASSIGN(resolved, ResolveCluster(options));
  EXPECT_THAT(resolved.cuda_visible_devices, Optional(std::string("1")));
  env["CUDA_VISIBLE_DEVICES"] = "0";
  options = WithEnv(env);
  ASSERT_OK_AND_ASSIGN(resolved, ResolveCluster(options));
  EXPECT_THAT(resolved.cuda_visible_devices, Optional(std::string("")));
}

TEST(SlurmResolver, InconsistentCountsSayWhichDisagree) {
  Env env = SlurmStep(0);
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)";
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kPrecondition,
                       "Slurm: SLURM_STEP_NODELIST 'node[01-02]' names 2 nodes but "
                       "SLURM_STEP_TASKS_PER_NODE '2(x3)' gives tasks for 3"));
  env = SlurmStep(0);
  env["SLURM_NTASKS"] = "5";
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kPrecondition,
                       "Slurm: SLURM_STEP_TASKS_PER_NODE '2(x2)' adds up to 4 "
                       "tasks but SLURM_NTASKS is 5"));
  env = SlurmStep(4);
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kPrecondition, HasSubstr("SLURM_PROCID 4 is out of range")));
  env = SlurmStep(1);
  env["SLURM_LOCALID"] = "0";  // srun -m cyclic: rank 1 is node02's first task.
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kPrecondition, HasSubstr("--distribution=block")));
  env["SLURM_LOCALID"] = "1";
  env["SLURM_NODEID"] = "0";
  EXPECT_OK(ResolveCluster(WithEnv(env)));
}

TEST(SlurmResolver, BadVariablesAreNamed) {
  Env env = SlurmStep(0);
  env["SLURM_STEP_NODELIST"] = "node[01-";
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kInvalid, "SLURM_STEP_NODELIST 'node[01-': unclosed '[' at byte 5"));
  env = SlurmStep(0);
  env["SLURM_PROCID"] = "-1";
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kInvalid, "SLURM_PROCID '-1' is not a non-negative integer"));
  env = SlurmStep(0);
  env.erase("SLURM_NTASKS");
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kInvalid, HasSubstr("SLURM_STEP_NUM_TASKS or SLURM_NTASKS is not set")));
  env = SlurmStep(0);
  env["CUDA_VISIBLE_DEVICES"] = ",";
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kInvalid, HasSubstr("CUDA_VISIBLE_DEVICES ',': empty device at byte 1")));
  ClusterResolverOptions options = WithEnv(SlurmStep(0));
  options.num_ps = 4;
  EXPECT_THAT(ResolveCluster(options),
              StatusIs(kInvalid, HasSubstr("--num_ps 4 leaves no worker")));
  options = WithEnv(SlurmStep(0));
  options.port_base = 65535;
  EXPECT_THAT(ResolveCluster(options), StatusIs(kInvalid, HasSubstr("past 65535")));
}

TEST(ClusterResolver, DetectsFlagsThenTfConfigThenSlurmThenMpi) {
  const std::string tf_config =
      R"({"cluster": {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]},
          "task": {"type": "worker", "index": 0}})";
  Env env = SlurmStep(0);
  env["OMPI_COMM_WORLD_RANK"] = "0";
  env["TF_CONFIG"] = tf_config;
  ClusterResolverOptions options = WithEnv(env);
  options.flags = {{"job_name", "ps"}};
  EXPECT_THAT(SelectClusterSource(options), IsOkAndHolds(ClusterSource::kFlags));
  options.flags = {{"issync", "1"}};  // Qualifies a cluster but names none.
  EXPECT_THAT(SelectClusterSource(options), IsOkAndHolds(ClusterSource::kTfConfig));
  env.erase("TF_CONFIG");
  options.env = LookupIn(env);
  // mpirun in a Slurm batch script: the ranks inherit its SLURM_PROCID.
  EXPECT_THAT(SelectClusterSource(options), IsOkAndHolds(ClusterSource::kMpi));
  env.erase("OMPI_COMM_WORLD_RANK");
  options.env = LookupIn(env);
  EXPECT_THAT(SelectClusterSource(options), IsOkAndHolds(ClusterSource::kSlurm));
  options.env = LookupIn({{"PMI_RANK", "1"}});
  EXPECT_THAT(SelectClusterSource(options), IsOkAndHolds(ClusterSource::kMpi));
  options.env = LookupIn({});
  EXPECT_THAT(SelectClusterSource(options),
              StatusIs(kInvalid, AllOf(HasSubstr("no cluster"), HasSubstr("--cluster_from"))));
  options.source = ClusterSource::kSlurm;
  EXPECT_THAT(SelectClusterSource(options), IsOkAndHolds(ClusterSource::kSlurm));
}

TEST(ClusterResolver, FlagsAndTfConfigReadAsBefore) {
  ClusterResolverOptions options = WithEnv({});
  options.flags = {{"ps_hosts", "127.0.0.1:2222"},
                   {"worker_hosts", "127.0.0.1:2223,127.0.0.1:2224"},
                   {"job_name", "worker"},
                   {"task_index", "1"},
                   {"issync", "1"}};
  ASSERT_OK_AND_ASSIGN(ResolvedCluster resolved, ResolveCluster(options));
  EXPECT_EQ(resolved.source, ClusterSource::kFlags);
  EXPECT_EQ(resolved.config.cluster.ToString(),
            "ps=127.0.0.1:2222;worker=127.0.0.1:2223,127.0.0.1:2224");
  EXPECT_TRUE(resolved.config.sync_replicas);
  options.flags["task_index"] = "2";
  EXPECT_THAT(ResolveCluster(options), StatusIs(kInvalid, HasSubstr("--task_index")));

  options = WithEnv({{"TF_CONFIG", R"({"cluster": {"worker": ["127.0.0.1:2223"]},
                                        "task": {"type": "worker"}})"}});
  options.flags = {{"issync", "true"}};
  ASSERT_OK_AND_ASSIGN(resolved, ResolveCluster(options));
  EXPECT_EQ(resolved.source, ClusterSource::kTfConfig);
  EXPECT_EQ(resolved.config.cluster.ToString(), "worker=127.0.0.1:2223");
  EXPECT_TRUE(resolved.config.sync_replicas);
  options = WithEnv({{"TF_CONFIG", "{"}});
  EXPECT_THAT(ResolveCluster(options), StatusIs(kInvalid, HasSubstr("TF_CONFIG: invalid JSON")));
  options = WithEnv({});
  options.source = ClusterSource::kTfConfig;
  EXPECT_THAT(ResolveCluster(options), StatusIs(kInvalid, HasSubstr("TF_CONFIG is not set")));
}

TEST(ClusterResolver, ClusterFlagsDoNotMixWithAnotherSource) {
  ClusterResolverOptions options = WithEnv(SlurmStep(0));
  options.source = ClusterSource::kSlurm;
  options.flags = {{"ps_hosts", "127.0.0.1:2222"}};
  EXPECT_THAT(ResolveCluster(options),
              StatusIs(kInvalid, HasSubstr("--ps_hosts names a cluster of its own; it cannot be "
                                           "used with --cluster_from slurm")));
  options.flags = {{"issync", "maybe"}};
  EXPECT_THAT(ResolveCluster(options), StatusIs(kInvalid, HasSubstr("--issync: 'maybe'")));
}

TEST(ClusterResolver, ReadsItsFlags) {
  ClusterResolverOptions options;
  ASSERT_OK(ApplyClusterResolverFlags({{"cluster_from", "mpi"},
                                       {"num_ps", "2"},
                                       {"port_base", "2222"},
                                       {"coordinator", "10.0.0.1:5000"},
                                       {"logdir", "ignored"}},
                                      options));
  EXPECT_EQ(options.source, ClusterSource::kMpi);
  EXPECT_EQ(options.num_ps, 2);
  EXPECT_EQ(options.port_base, 2222);
  EXPECT_EQ(options.coordinator, "10.0.0.1:5000");
  EXPECT_THAT(ApplyClusterResolverFlags({{"cluster_from", "k8s"}}, options),
              StatusIs(kInvalid, "--cluster_from 'k8s': expected slurm, mpi, tf_config or flags"));
  EXPECT_THAT(ApplyClusterResolverFlags({{"num_ps", "-1"}}, options),
              StatusIs(kInvalid, HasSubstr("--num_ps '-1'")));
  EXPECT_THAT(ApplyClusterResolverFlags({{"port_base", "70000"}}, options),
              StatusIs(kInvalid, HasSubstr("--port_base '70000': expected a port in 1..65535")));
}

// Every rank of an MPI job on a thread of its own, rank 0 serving the
// exchange; the others start first and wait for it.
TEST(MpiResolver, ThreeRanksExchangeAddressesThroughRankZero) {
  const std::string coordinator = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
  std::vector<absl::StatusOr<ResolvedCluster>> results(3, absl::UnknownError("not run"));
  std::vector<std::thread> ranks;
  for (int rank : {2, 1, 0}) {
    ranks.emplace_back([&, rank] {
      // The secret OpenMPI's mpirun hands every rank of a job.
      ClusterResolverOptions options =
          WithEnv({{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
                   {"OMPI_COMM_WORLD_SIZE", "3"},
                   {"OMPI_MCA_orte_precondition_transports", "5dc032404b41965c-4e3353b4b0065bb0"}});
      options.source = ClusterSource::kMpi;
      options.coordinator = coordinator;
      results[rank] = ResolveCluster(options);
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_OK(results[rank]) << rank;
    EXPECT_EQ(results[rank]->source, ClusterSource::kMpi);
    EXPECT_EQ(results[rank]->config.cluster.ToString(), results[0]->config.cluster.ToString());
  }
  const ClusterSpec& cluster = results[0]->config.cluster;
  EXPECT_EQ(cluster.TasksPerJob(), (std::map<std::string, int>{{"ps", 1}, {"worker", 2}}));
  EXPECT_THAT(cluster.TaskAddress("worker", 1), IsOkAndHolds(HasSubstr("127.0.0.1:")));
  EXPECT_EQ(results[0]->config.task.job, "ps");
  EXPECT_EQ(results[2]->config.task.job, "worker");
  EXPECT_EQ(results[2]->config.task.index, 1);
}

TEST(MpiResolver, ARankThatCannotReachTheCoordinatorFailsNamingIt) {
  const std::string coordinator = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
  ClusterResolverOptions options = WithEnv({{"PMI_RANK", "1"},
                                            {"PMI_SIZE", "2"},
                                            {"RILL_COORDINATOR", coordinator},
                                            {"RILL_EXCHANGE_TOKEN", "0123456789abcdef0123"}});
  options.exchange_deadline = absl::Seconds(1);
  EXPECT_THAT(ResolveCluster(options),
              StatusIs(kDeadline, AllOf(HasSubstr("MPI rank 1 of 2"), HasSubstr(coordinator))));
}

// Without a secret a stranger could join the exchange: refused before it
// starts, saying where a secret comes from.
TEST(MpiResolver, ASecretIsRequiredAndMustBeLongEnough) {
  const std::string coordinator = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
  Env env = {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"RILL_COORDINATOR", coordinator}};
  EXPECT_THAT(
      ResolveCluster(WithEnv(env)),
      StatusIs(kInvalid, AllOf(HasSubstr("nothing secret"), HasSubstr("RILL_EXCHANGE_TOKEN"),
                               HasSubstr("--curve_keys"))));
  env["RILL_EXCHANGE_TOKEN"] = "guessable";
  EXPECT_THAT(ResolveCluster(WithEnv(env)),
              StatusIs(kInvalid, HasSubstr("RILL_EXCHANGE_TOKEN: a secret of 9 bytes")));
  ClusterResolverOptions options = WithEnv(env);
  options.flags["curve_keys"] = testing::MakeTempDir() + "/none";
  const absl::Status no_keys = ResolveCluster(options).status();
  EXPECT_FALSE(no_keys.ok());
  EXPECT_THAT(std::string(no_keys.message()), HasSubstr("--curve_keys: "));
}

TEST(MpiResolver, MissingCoordinatorOrSizeIsNamed) {
  ClusterResolverOptions options =
      WithEnv({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_THAT(ResolveCluster(options), StatusIs(kInvalid, HasSubstr("--coordinator HOST:PORT")));
  options = WithEnv({{"PMI_RANK", "0"}});
  EXPECT_THAT(ResolveCluster(options), StatusIs(kInvalid, HasSubstr("PMI_SIZE is not set")));
  options = WithEnv({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}});
  EXPECT_THAT(ResolveCluster(options), StatusIs(kPrecondition, HasSubstr("PMI_RANK 2 is out")));
}

}  // namespace
}  // namespace rill
