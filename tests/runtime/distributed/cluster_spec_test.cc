#include "runtime/distributed/cluster_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "placement/device_set.h"
#include "runtime/distributed/tf_config.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kNotFound = absl::StatusCode::kNotFound;

ClusterSpec PsAndWorkers() {
  auto spec = ClusterSpec::FromJobs(
      {{"ps", {"127.0.0.1:2222"}}, {"worker", {"127.0.0.1:2223", "127.0.0.1:2224"}}});
  EXPECT_OK(spec);
  return spec.ok() ? *spec : ClusterSpec();
}

TEST(ClusterSpec, DefaultIsEmpty) {
  const ClusterSpec spec;
  EXPECT_TRUE(spec.empty());
  EXPECT_THAT(spec.jobs(), IsEmpty());
  EXPECT_THAT(spec.TaskNames(), IsEmpty());
  EXPECT_EQ(spec.ToString(), "");
}

// What a master asks for devices: the tasks a node's request can land on,
// completed with the master's own job and task as the placer completes it.
TEST(ClusterSpec, TasksMatchingCompletesARequestWithTheHomeTask) {
  ASSERT_OK_AND_ASSIGN(ClusterSpec cluster,
                       ClusterSpec::FromJobs({{"ps", {"h:1", "h:2"}}, {"worker", {"h:3", "h:4"}}}));
  const TaskId home{"worker", 1};
  EXPECT_THAT(cluster.TasksMatching("", home), ElementsAre("/job:worker/replica:0/task:1"));
  EXPECT_THAT(cluster.TasksMatching("/device:CPU:0", home),
              ElementsAre("/job:worker/replica:0/task:1"));
  EXPECT_THAT(cluster.TasksMatching("/job:worker", home),
              ElementsAre("/job:worker/replica:0/task:1"));
  EXPECT_THAT(cluster.TasksMatching("/job:worker/task:0/device:GPU:0", home),
              ElementsAre("/job:worker/replica:0/task:0"));
  EXPECT_THAT(cluster.TasksMatching("/job:ps", home),
              ElementsAre("/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"));
  EXPECT_THAT(cluster.TasksMatching("/job:ps/task:7", home), IsEmpty());
  EXPECT_THAT(cluster.TasksMatching("/job:chief", home), IsEmpty());
  EXPECT_THAT(cluster.TasksMatching("/job:ps/replica:1", home), IsEmpty());
  EXPECT_THAT(cluster.TasksMatching("not a device", home), IsEmpty());
}

TEST(ClusterSpec, DenseJobsNumberTasksFromZero) {
  const ClusterSpec spec = PsAndWorkers();
  EXPECT_FALSE(spec.empty());
  EXPECT_THAT(spec.jobs(), ElementsAre("ps", "worker"));
  EXPECT_TRUE(spec.HasJob("worker"));
  EXPECT_FALSE(spec.HasJob("chief"));
  EXPECT_THAT(spec.TaskIndices("worker"), ElementsAre(0, 1));
  EXPECT_THAT(spec.TaskIndices("chief"), IsEmpty());
  EXPECT_THAT(spec.TaskAddress("worker", 1), IsOkAndHolds("127.0.0.1:2224"));
  EXPECT_THAT(spec.TaskAddress("ps", 0), IsOkAndHolds("127.0.0.1:2222"));
}

TEST(ClusterSpec, SparseJobsKeepTheirIndices) {
  ASSERT_OK_AND_ASSIGN(const ClusterSpec spec,
                       ClusterSpec::FromSparseJobs({{"worker", {{1, "h:1"}, {3, "h:3"}}}}));
  EXPECT_THAT(spec.TaskIndices("worker"), ElementsAre(1, 3));
  EXPECT_THAT(spec.TaskAddress("worker", 3), IsOkAndHolds("h:3"));
  EXPECT_THAT(spec.TaskAddress("worker", 0),
              StatusIs(kNotFound,
                       AllOf(HasSubstr("task 0"), HasSubstr("'worker'"), HasSubstr("tasks 1, 3"))));
  EXPECT_THAT(spec.TasksPerJob(), ElementsAre(Pair("worker", 2)));
}

TEST(ClusterSpec, AcceptsNamesIpv4AndBracketedIpv6) {
  EXPECT_OK(ClusterSpec::FromJobs({{"worker",
                                    {"localhost:1", "node-3.example.com:65535", "10.0.0.7:2222",
                                     "[::1]:2222", "[fe80::1:2]:80"}}}));
}

TEST(ClusterSpec, UnknownJobIsNotFoundListingTheJobs) {
  EXPECT_THAT(PsAndWorkers().TaskAddress("chief", 0),
              StatusIs(kNotFound, HasSubstr("no job 'chief' in the cluster; jobs: ps, worker")));
}

TEST(ClusterSpec, TaskOutOfRangeIsNotFoundWithTheRange) {
  EXPECT_THAT(
      PsAndWorkers().TaskAddress("worker", 3),
      StatusIs(kNotFound, HasSubstr("task 3 is out of range for job 'worker' (tasks 0..1)")));
  EXPECT_THAT(PsAndWorkers().TaskAddress("worker", -1),
              StatusIs(kNotFound, HasSubstr("task -1 is out of range")));
}

TEST(ClusterSpec, TaskNamesAreOrderedByJobThenIndex) {
  ASSERT_OK_AND_ASSIGN(
      const ClusterSpec spec,
      ClusterSpec::FromSparseJobs({{"worker", {{10, "h:10"}, {2, "h:2"}}}, {"ps", {{0, "h:1"}}}}));
  EXPECT_THAT(spec.TaskNames(),
              ElementsAre("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:2",
                          "/job:worker/replica:0/task:10"));
}

TEST(ClusterSpec, TasksPerJobCountsTasks) {
  EXPECT_THAT(PsAndWorkers().TasksPerJob(), ElementsAre(Pair("ps", 1), Pair("worker", 2)));
}

TEST(ClusterSpec, DenseTaskCountsGiveADeviceSetWithTheSameTasks) {
  const ClusterSpec spec = PsAndWorkers();
  ASSERT_OK_AND_ASSIGN(const DeviceSet devices, DeviceSet::ForCluster(spec.TasksPerJob()));
  std::vector<std::string> expected;
  for (const std::string& task : spec.TaskNames()) expected.push_back(task + "/device:CPU:0");
  EXPECT_EQ(devices.names(), expected);
}

TEST(ClusterSpec, RejectsJobNamesOutsideTensorFlowsRule) {
  for (const std::string job : {"Worker", "1ps", "", "p s", "ps-0", "_ps"}) {
    EXPECT_THAT(ClusterSpec::FromJobs({{job, {"h:1"}}}),
                StatusIs(kInvalid, AllOf(HasSubstr("bad job name '" + job + "'"),
                                         HasSubstr("[a-z][a-z0-9_]*"))))
        << job;
  }
  EXPECT_OK(ClusterSpec::FromJobs({{"ps_2", {"h:1"}}}));
}

TEST(ClusterSpec, RejectsAJobWithoutTasks) {
  EXPECT_THAT(ClusterSpec::FromJobs({{"ps", {}}}),
              StatusIs(kInvalid, HasSubstr("job 'ps' has no tasks")));
  EXPECT_THAT(ClusterSpec::FromSparseJobs({{"worker", {}}}),
              StatusIs(kInvalid, HasSubstr("job 'worker' has no tasks")));
}

TEST(ClusterSpec, RejectsMalformedAddressesNamingJobAndTask) {
  for (const std::string address : {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "host:port",
                                    ":2222", "", "h:", "h:+1", "h:-1", "h:1 ", "a b:1", "::1:2222",
                                    "[::1]", "[::1]2222", "[zz::1]:1", "[]:1", "h:99999999999"}) {
    EXPECT_THAT(ClusterSpec::FromJobs({{"worker", {"h:1", address}}}),
                StatusIs(kInvalid,
                         AllOf(HasSubstr("job 'worker' task 1"),
                               HasSubstr("bad address '" + address + "'"), HasSubstr("HOST:PORT"))))
        << address;
  }
}

// Host names of 130,000 characters were accepted.
TEST(ClusterSpec, HostNamesAreAsLongAsDnsAllows) {
  const std::string label(63, 'a');
  const std::string longest = label + "." + label + "." + label + "." + std::string(61, 'b');
  ASSERT_EQ(longest.size(), 253u);
  EXPECT_OK(ClusterSpec::FromJobs({{"worker", {longest + ":1"}}}).status());
  for (const std::string& host : {longest + "b", std::string(64, 'a') + ".example",
                                 std::string(130'000, 'h')}) {
    EXPECT_THAT(ClusterSpec::FromJobs({{"worker", {host + ":1"}}}),
                StatusIs(kInvalid, HasSubstr("HOST:PORT")))
        << host.size();
  }
}

TEST(ClusterSpec, RejectsTwoTasksAtOneAddressNamingBoth) {
  EXPECT_THAT(ClusterSpec::FromJobs({{"worker", {"h:1", "h:2", "h:1"}}}),
              StatusIs(kInvalid, HasSubstr("job 'worker' task 0 and job 'worker' task 2 share the "
                                           "address 'h:1'")));
  // Host names compare without case.
  EXPECT_THAT(ClusterSpec::FromJobs({{"ps", {"Node-1:2222"}}, {"worker", {"node-1:2222"}}}),
              StatusIs(kInvalid, HasSubstr("job 'ps' task 0 and job 'worker' task 0 share the "
                                           "address 'node-1:2222'")));
  EXPECT_THAT(ClusterSpec::Parse("ps=h:1;worker=3:h:1"),
              StatusIs(kInvalid, HasSubstr("job 'ps' task 0 and job 'worker' task 3 share")));
  EXPECT_OK(ClusterSpec::FromJobs({{"ps", {"h:1"}}, {"worker", {"h:2", "g:1"}}}));
}

TEST(ClusterSpec, RejectsNegativeSparseIndices) {
  EXPECT_THAT(ClusterSpec::FromSparseJobs({{"worker", {{-1, "h:1"}}}}),
              StatusIs(kInvalid, HasSubstr("job 'worker': task index -1 is negative")));
}

TEST(ClusterSpec, ParsesTheClusterFlagFormat) {
  ASSERT_OK_AND_ASSIGN(
      const ClusterSpec spec,
      ClusterSpec::Parse("ps=127.0.0.1:2222,127.0.0.1:2223;worker=127.0.0.1:2224"));
  EXPECT_THAT(spec.TasksPerJob(), ElementsAre(Pair("ps", 2), Pair("worker", 1)));
  EXPECT_THAT(spec.TaskAddress("ps", 1), IsOkAndHolds("127.0.0.1:2223"));
  EXPECT_THAT(spec.TaskAddress("worker", 0), IsOkAndHolds("127.0.0.1:2224"));
}

TEST(ClusterSpec, ParsesSparseJobs) {
  ASSERT_OK_AND_ASSIGN(const ClusterSpec spec,
                       ClusterSpec::Parse("worker=1:h:2223,3:[::1]:2225;ps=[::1]:2222"));
  EXPECT_THAT(spec.TaskIndices("worker"), ElementsAre(1, 3));
  EXPECT_THAT(spec.TaskAddress("worker", 3), IsOkAndHolds("[::1]:2225"));
  EXPECT_THAT(spec.TaskAddress("ps", 0), IsOkAndHolds("[::1]:2222"));
}

TEST(ClusterSpec, DenseSpecRoundTripsThroughParse) {
  const ClusterSpec spec = PsAndWorkers();
  EXPECT_EQ(spec.ToString(), "ps=127.0.0.1:2222;worker=127.0.0.1:2223,127.0.0.1:2224");
  ASSERT_OK_AND_ASSIGN(const ClusterSpec parsed, ClusterSpec::Parse(spec.ToString()));
  EXPECT_EQ(parsed.ToString(), spec.ToString());
  EXPECT_EQ(parsed.TaskNames(), spec.TaskNames());
}

TEST(ClusterSpec, SparseSpecRoundTripsThroughParse) {
  ASSERT_OK_AND_ASSIGN(const ClusterSpec spec,
                       ClusterSpec::FromSparseJobs({{"worker", {{1, "h:1"}, {3, "h:3"}}}}));
  EXPECT_EQ(spec.ToString(), "worker=1:h:1,3:h:3");
  ASSERT_OK_AND_ASSIGN(const ClusterSpec parsed, ClusterSpec::Parse(spec.ToString()));
  EXPECT_THAT(parsed.TaskIndices("worker"), ElementsAre(1, 3));
  EXPECT_THAT(parsed.TaskAddress("worker", 1), IsOkAndHolds("h:1"));
}

TEST(ClusterSpec, ParseErrorsNameTheOffendingPart) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ps=127.0.0.1", "bad address '127.0.0.1'"},
      {"ps=h:1,,h:2", "job 'ps' task 1: bad address ''"},
      {"ps127.0.0.1:2222", "job entry 'ps127.0.0.1:2222' is not JOB=HOST:PORT"},
      {"=h:1", "bad job name ''"},
      {"Worker=h:1", "bad job name 'Worker'"},
      {"ps=h:1;ps=h:2", "job 'ps' is given twice"},
      {"ps=h:1;", "job entry ''"},
      {"", "job entry ''"},
      {"ps=", "job 'ps' task 0: bad address ''"},
      {"worker=h:1,2:h:3", "job 'worker' mixes HOST:PORT and INDEX:HOST:PORT tasks at '2:h:3'"},
      {"worker=1:h:1,1:h:2", "job 'worker': task 1 is given twice"},
      {"worker=1:h:1,3:h", "job 'worker' task 3: bad address 'h'"},
  };
  for (const auto& [text, named] : cases) {
    EXPECT_THAT(ClusterSpec::Parse(text), StatusIs(kInvalid, HasSubstr(named))) << text;
  }
}

TEST(ServerConfigFromFlags, ReadsTheSeedScriptsFlags) {
  ASSERT_OK_AND_ASSIGN(const ServerConfig config,
                       ServerConfigFromFlags({{"ps_hosts", "localhost:2222"},
                                              {"worker_hosts", "localhost:2223,localhost:2224"},
                                              {"job_name", "worker"},
                                              {"task_index", "1"}}));
  EXPECT_EQ(config.cluster.ToString(), "ps=localhost:2222;worker=localhost:2223,localhost:2224");
  EXPECT_EQ(config.task.job, "worker");
  EXPECT_EQ(config.task.index, 1);
  EXPECT_FALSE(config.sync_replicas);
}

TEST(ServerConfigFromFlags, RejectsAHostListingOneAddressTwice) {
  EXPECT_THAT(ServerConfigFromFlags({{"ps_hosts", "localhost:2222"},
                                     {"worker_hosts", "localhost:2223,localhost:2222"},
                                     {"job_name", "worker"},
                                     {"task_index", "0"}}),
              StatusIs(kInvalid, HasSubstr("job 'ps' task 0 and job 'worker' task 1 share the "
                                           "address 'localhost:2222'")));
}

TEST(ServerConfigFromFlags, EitherHostListMayBeAbsent) {
  ASSERT_OK_AND_ASSIGN(
      const ServerConfig config,
      ServerConfigFromFlags(
          {{"ps_hosts", "localhost:2222"}, {"job_name", "ps"}, {"task_index", "0"}}));
  EXPECT_THAT(config.cluster.jobs(), ElementsAre("ps"));
  EXPECT_THAT(ServerConfigFromFlags({{"job_name", "ps"}, {"task_index", "0"}}),
              StatusIs(kInvalid, HasSubstr("neither --ps_hosts nor --worker_hosts")));
}

TEST(ServerConfigFromFlags, ReadsIssync) {
  const std::map<std::string, std::string> base = {
      {"worker_hosts", "h:1"}, {"job_name", "worker"}, {"task_index", "0"}};
  for (const auto& [value, sync] : std::vector<std::pair<std::string, bool>>{
           {"1", true}, {"true", true}, {"0", false}, {"false", false}}) {
    auto flags = base;
    flags["issync"] = value;
    ASSERT_OK_AND_ASSIGN(const ServerConfig config, ServerConfigFromFlags(flags));
    EXPECT_EQ(config.sync_replicas, sync) << value;
  }
  auto flags = base;
  flags["issync"] = "yes";
  EXPECT_THAT(ServerConfigFromFlags(flags),
              StatusIs(kInvalid, HasSubstr("--issync: 'yes' is not 0, 1, true or false")));
}

TEST(ServerConfigFromFlags, ErrorsNameTheFlag) {
  const std::map<std::string, std::string> good = {{"ps_hosts", "localhost:2222"},
                                                   {"worker_hosts", "localhost:2223"},
                                                   {"job_name", "worker"},
                                                   {"task_index", "0"}};
  const std::vector<std::tuple<std::string, std::optional<std::string>, std::string>> cases = {
      {"worker_hosts", "", "--worker_hosts: empty host list"},
      {"ps_hosts", "", "--ps_hosts: empty host list"},
      {"worker_hosts", "h:1,,h:2", "--worker_hosts: bad address ''"},
      {"ps_hosts", "localhost", "--ps_hosts: bad address 'localhost'"},
      {"job_name", std::nullopt, "--job_name: missing"},
      {"job_name", "chief", "--job_name: no job 'chief' in the cluster; jobs: ps, worker"},
      {"task_index", std::nullopt, "--task_index: missing"},
      {"task_index", "-1", "--task_index: '-1' is not a non-negative integer"},
      {"task_index", "one", "--task_index: 'one' is not a non-negative integer"},
      {"task_index", "1", "--task_index: task 1 is out of range for job 'worker' (tasks 0..0)"},
  };
  for (const auto& [flag, value, message] : cases) {
    auto flags = good;
    if (value) {
      flags[flag] = *value;
    } else {
      flags.erase(flag);
    }
    EXPECT_THAT(ServerConfigFromFlags(flags), StatusIs(kInvalid, HasSubstr(message))) << message;
  }
}

TEST(ServerConfigFromTfConfig, ReadsDenseJobs) {
  ASSERT_OK_AND_ASSIGN(const ServerConfig config, ServerConfigFromTfConfig(R"({
      "cluster": {"chief": ["h:2220"], "ps": ["h:2222"], "worker": ["h:2223", "h:2224"]},
      "task": {"type": "worker", "index": 1},
      "environment": "cloud", "rpc_layer": "grpc"})"));
  EXPECT_EQ(config.cluster.ToString(), "chief=h:2220;ps=h:2222;worker=h:2223,h:2224");
  EXPECT_EQ(config.task.job, "worker");
  EXPECT_EQ(config.task.index, 1);
  EXPECT_FALSE(config.sync_replicas);
}

TEST(ServerConfigFromTfConfig, ReadsSparseJobs) {
  ASSERT_OK_AND_ASSIGN(const ServerConfig config, ServerConfigFromTfConfig(R"({
      "cluster": {"ps": ["h:2222"], "worker": {"1": "h:2224", "3": "h:2226"}},
      "task": {"type": "worker", "index": 3}})"));
  EXPECT_THAT(config.cluster.TaskIndices("worker"), ElementsAre(1, 3));
  EXPECT_THAT(config.cluster.TaskAddress("worker", 3), IsOkAndHolds("h:2226"));
  EXPECT_EQ(config.task.index, 3);
}

TEST(ServerConfigFromTfConfig, TakesAMissingIndexAsZeroAndAStringIndex) {
  ASSERT_OK_AND_ASSIGN(
      const ServerConfig missing,
      ServerConfigFromTfConfig(R"({"cluster": {"ps": ["h:1", "h:2"]}, "task": {"type": "ps"}})"));
  EXPECT_EQ(missing.task.index, 0);
  ASSERT_OK_AND_ASSIGN(
      const ServerConfig text,
      ServerConfigFromTfConfig(
          R"({"cluster": {"ps": ["h:1", "h:2"]}, "task": {"type": "ps", "index": "1"}})"));
  EXPECT_EQ(text.task.index, 1);
}

TEST(ServerConfigFromTfConfig, ReadsTheCurveKeyDirectory) {
  ASSERT_OK_AND_ASSIGN(
      const ServerConfig config,
      ServerConfigFromTfConfig(R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps"},
                                                    "curve_keys": "/etc/rill/keys"})"));
  EXPECT_EQ(config.curve_keys, "/etc/rill/keys");
  EXPECT_THAT(ServerConfigFromTfConfig(
                  R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps"}, "curve_keys": 3})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("curve_keys")));
}

TEST(ServerConfigFromFlags, ReadsTheCurveKeyDirectory) {
  ASSERT_OK_AND_ASSIGN(const ServerConfig config,
                       ServerConfigFromFlags({{"ps_hosts", "localhost:2222"},
                                              {"job_name", "ps"},
                                              {"task_index", "0"},
                                              {"curve_keys", "keys"}}));
  EXPECT_EQ(config.curve_keys, "keys");
  EXPECT_TRUE(ServerConfigFromFlags(
                  {{"ps_hosts", "localhost:2222"}, {"job_name", "ps"}, {"task_index", "0"}})
                  ->curve_keys.empty());
}

TEST(ServerConfigFromTfConfig, MalformedJsonNamesTheProblemAndOffset) {
  EXPECT_THAT(ServerConfigFromTfConfig(R"({"cluster": x})"),
              StatusIs(kInvalid, AllOf(HasSubstr("TF_CONFIG: invalid JSON"),
                                       HasSubstr("at offset 12, before 'x}'"))));
  EXPECT_THAT(ServerConfigFromTfConfig(R"({"cluster": {"ps": ["h:1"])"),
              StatusIs(kInvalid, AllOf(HasSubstr("TF_CONFIG: invalid JSON"),
                                       HasSubstr("at offset 26 (the end)"))));
  const std::string long_json =
      R"({"cluster": {"ps": ["h:1" "h:2"]}, "task": {"type": "ps", "index": 0}})";
  EXPECT_THAT(ServerConfigFromTfConfig(long_json),
              StatusIs(kInvalid, HasSubstr(absl::StrFormat("at offset %d, before '\"h:2\"",
                                                           long_json.find("\"h:2\"")))));
  EXPECT_THAT(ServerConfigFromTfConfig(""),
              StatusIs(kInvalid, HasSubstr("TF_CONFIG: invalid JSON")));
  EXPECT_THAT(ServerConfigFromTfConfig("[1, 2]"),
              StatusIs(kInvalid, HasSubstr("TF_CONFIG: invalid JSON")));
}

TEST(ServerConfigFromTfConfig, MissingTaskOrClusterIsAnError) {
  EXPECT_THAT(ServerConfigFromTfConfig(R"({"cluster": {"ps": ["h:1"]}})"),
              StatusIs(kInvalid, HasSubstr("TF_CONFIG has no task")));
  EXPECT_THAT(ServerConfigFromTfConfig(R"({"task": {"type": "ps", "index": 0}})"),
              StatusIs(kInvalid, HasSubstr("TF_CONFIG has no cluster")));
  EXPECT_THAT(ServerConfigFromTfConfig(R"({"cluster": {"ps": ["h:1"]}, "task": {"index": 0}})"),
              StatusIs(kInvalid, HasSubstr("task has no type")));
}

TEST(ServerConfigFromTfConfig, WrongTypesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"cluster": ["h:1"], "task": {"type": "ps"}})", "cluster is a list, not an object"},
      {R"({"cluster": {"ps": "h:1"}, "task": {"type": "ps"}})",
       "cluster.ps is a string, not a list"},
      {R"({"cluster": {"ps": ["h:1", 2]}, "task": {"type": "ps"}})",
       "cluster.ps[1] is a number, not a \"HOST:PORT\" string"},
      {R"({"cluster": {"ps": {"0": true}}, "task": {"type": "ps"}})", "cluster.ps.0 is a boolean"},
      {R"({"cluster": {"ps": {"first": "h:1"}}, "task": {"type": "ps"}})",
       "cluster.ps: key 'first' is not a task index"},
      {R"({"cluster": {"ps": ["h:1"]}, "task": "ps"})", "task is a string, not an object"},
      {R"({"cluster": {"ps": ["h:1"]}, "task": {"type": 0}})", "task.type is a number"},
      {R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps", "index": 0.5}})",
       "task.index is 0.5, not a non-negative integer"},
      {R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps", "index": -1}})",
       "task.index is -1, not a non-negative integer"},
      {R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps", "index": null}})",
       "task.index is null"},
      {R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps", "index": "x"}})",
       "task.index 'x' is not a non-negative integer"},
  };
  for (const auto& [json, named] : cases) {
    EXPECT_THAT(ServerConfigFromTfConfig(json),
                StatusIs(kInvalid, AllOf(HasSubstr("TF_CONFIG"), HasSubstr(named))))
        << json;
  }
}

TEST(ServerConfigFromTfConfig, BadClusterContentsAreInvalid) {
  EXPECT_THAT(ServerConfigFromTfConfig(R"({"cluster": {"Ps": ["h:1"]}, "task": {"type": "Ps"}})"),
              StatusIs(kInvalid, AllOf(HasSubstr("TF_CONFIG"), HasSubstr("bad job name 'Ps'"))));
  EXPECT_THAT(ServerConfigFromTfConfig(R"({"cluster": {"ps": ["h"]}, "task": {"type": "ps"}})"),
              StatusIs(kInvalid, HasSubstr("job 'ps' task 0: bad address 'h'")));
  EXPECT_THAT(ServerConfigFromTfConfig(R"({"cluster": {"ps": []}, "task": {"type": "ps"}})"),
              StatusIs(kInvalid, HasSubstr("job 'ps' has no tasks")));
}

TEST(ServerConfigFromTfConfig, RejectsTwoTasksAtOneAddress) {
  EXPECT_THAT(
      ServerConfigFromTfConfig(
          R"({"cluster": {"chief": ["h:1"], "worker": ["h:2", "h:1"]}, "task": {"type": "chief"}})"),
      StatusIs(kInvalid, AllOf(HasSubstr("TF_CONFIG"),
                               HasSubstr("job 'chief' task 0 and job 'worker' task 1 share the "
                                         "address 'h:1'"))));
}

TEST(ServerConfigFromTfConfig, TaskMustBeInTheCluster) {
  EXPECT_THAT(
      ServerConfigFromTfConfig(
          R"({"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 2}})"),
      StatusIs(kInvalid, HasSubstr("task 2 is out of range for job 'worker' (tasks 0..1)")));
  EXPECT_THAT(ServerConfigFromTfConfig(
                  R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "evaluator", "index": 0}})"),
              StatusIs(kInvalid, HasSubstr("no job 'evaluator' in the cluster; jobs: worker")));
}

}  // namespace
}  // namespace rill
