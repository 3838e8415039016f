// The between-graph training program (examples/distributed_mnist, RILL_BIN
// here) as users run it: one process per task on 127.0.0.1. A worker that
// starts before the chief waits; a killed chief or ps comes back and
// training goes on from the last checkpoint.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "graph/proto/event.pb.h"
#include "io/bundle_reader.h"
#include "io/histogram.h"
#include "io/record_reader.h"
#include "runtime/distributed/remote_session.h"
#include "runtime/training/checkpoint_state.h"
#include "tests/cluster/server_process.h"
#include "tests/test_util.h"
#include "transport/curve.h"

namespace rill {
namespace {

using ::testing::HasSubstr;

// How distributed_mnist tags a gradient's histogram: "<variable>/gradient".
constexpr std::string_view kGradientSuffix = "/gradient";

// The elements of the MLP's variables, the counts of their histograms and
// of their gradients'.
const std::map<std::string, double, std::less<>>& MlpVariableSizes() {
  static const auto* const sizes = new std::map<std::string, double, std::less<>>{
      {"hidden/weights", 784 * 128},
      {"hidden/biases", 128},
      {"logits/weights", 128 * 10},
      {"logits/biases", 10},
  };
  return *sizes;
}

// Checks that `histo` counts `num` values and is encoded as TensorFlow
// writes a histogram (Histogram::EncodeToProto): each non-empty bucket as
// its own default limit and count, each run of empty buckets as one entry
// (the run's last limit, count 0), the entries covering every default
// bucket in order up to DBL_MAX; min and max lie in the first and last
// non-empty buckets.
void ExpectTensorFlowHistogram(const std::string& tag, const HistogramProto& histo, double num) {
  const std::vector<double>& limits = Histogram::DefaultBucketLimits();
  ASSERT_EQ(histo.bucket_size(), histo.bucket_limit_size()) << tag;
  size_t next = 0;  // The first default bucket no entry has covered yet.
  bool after_empty_run = false;
  double counted = 0;
  std::optional<size_t> first_nonempty;
  size_t last_nonempty = 0;
  for (int i = 0; i < histo.bucket_size(); ++i) {
    const double limit = histo.bucket_limit(i);
    const auto found = std::lower_bound(limits.begin() + next, limits.end(), limit);
    ASSERT_TRUE(found != limits.end() && *found == limit)
        << tag << ": bucket_limit[" << i << "] = " << limit
        << " is not the next of TensorFlow's default limits";
    const size_t index = found - limits.begin();
    if (histo.bucket(i) > 0) {
      EXPECT_EQ(index, next) << tag << ": non-empty bucket " << i << " stands for several";
      if (!first_nonempty.has_value()) first_nonempty = index;
      last_nonempty = index;
      after_empty_run = false;
    } else {
      EXPECT_EQ(histo.bucket(i), 0) << tag;
      EXPECT_FALSE(after_empty_run) << tag << ": a run of empty buckets split at " << i;
      after_empty_run = true;
    }
    counted += histo.bucket(i);
    next = index + 1;
  }
  EXPECT_EQ(next, limits.size()) << tag << ": the buckets stop short of DBL_MAX";
  EXPECT_EQ(counted, num) << tag;
  EXPECT_EQ(histo.num(), num) << tag;
  ASSERT_TRUE(first_nonempty.has_value()) << tag;
  // Bucket i holds limits[i-1] <= v < limits[i]; bucket 0 (below -DBL_MAX)
  // stays empty.
  ASSERT_GT(*first_nonempty, 0u) << tag;
  EXPECT_LT(histo.min(), limits[*first_nonempty]) << tag;
  EXPECT_GE(histo.min(), limits[*first_nonempty - 1]) << tag;
  EXPECT_LT(histo.max(), limits[last_nonempty]) << tag;
  EXPECT_GE(histo.max(), limits[last_nonempty - 1]) << tag;
}

class DistributedMnist : public ::testing::Test {
 protected:
  DistributedMnist() {
    for (int i = 0; i < 5; ++i)
      hosts_.push_back(absl::StrFormat("127.0.0.1:%d", testing::FreePort()));
  }

  std::unique_ptr<testing::ServerProcess> Task(const std::string& job, int index,
                                               std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--ps_hosts=" + PsHosts(),
                                     "--worker_hosts=" + WorkerHosts(),
                                     "--job_name=" + job,
                                     "--task_index=" + std::to_string(index),
                                     "--issync=0",
                                     "--logdir=" + logdir_,
                                     "--log_every=50",
                                     "--validate_every=100000"};
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<std::unique_ptr<testing::ServerProcess>> process =
        testing::ServerProcess::Spawn(args);
    EXPECT_OK(process);
    return process.ok() ? *std::move(process) : nullptr;
  }

  std::string PsHosts() const { return num_ps_ == 1 ? hosts_[0] : hosts_[0] + "," + hosts_[4]; }

  std::string WorkerHosts() const {
    std::string hosts = hosts_[1];
    for (int w = 1; w < num_workers_; ++w) hosts += "," + hosts_[1 + w];
    return hosts;
  }

  // Waits (at most `timeout`) until `task`'s output matches `pattern`.
  static bool WaitForLog(testing::ServerProcess& task, const std::string& pattern,
                         absl::Duration timeout = absl::Seconds(60)) {
    const std::regex re(pattern);
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (std::regex_search(task.Log(), re)) return true;
      if (!task.Running()) return std::regex_search(task.Log(), re);
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  // The value after "key": on the task's result line.
  static std::optional<double> Result(const std::string& log, const std::string& key) {
    std::smatch match;
    if (!std::regex_search(log, match, std::regex("\"" + key + "\": ([-0-9.eE]+)"))) {
      return std::nullopt;
    }
    return std::stod(match[1].str());
  }

  // The global step of the newest checkpoint in the log directory.
  std::optional<int64_t> CheckpointStep() const {
    const std::optional<std::string> latest = LatestCheckpoint(logdir_);
    if (!latest.has_value()) return std::nullopt;
    return std::stoll(latest->substr(latest->rfind('-') + 1));
  }

  std::vector<std::string> hosts_;  // ps, worker 0, worker 1, worker 2, ps 1.
  int num_workers_ = 2;
  int num_ps_ = 1;
  const std::string logdir_ = testing::MakeTempDir() + "/logs";
};

// Asynchronous training of the MLP on 1 ps + 2 workers, the non-chief
// started first: it waits for the chief, then both train; checkpoints and
// events land in the log directory.
TEST_F(DistributedMnist, WorkerWaitsForTheChiefThenBothTrainToAccuracy) {
  auto ps = Task("ps", 0);
  auto worker1 = Task("worker", 1, {"--train_steps=2400"});
  ASSERT_TRUE(WaitForLog(*worker1, "Worker 1: Waiting for session to be initialized"))
      << worker1->Log();
  // Without a chief the model never becomes ready.
  absl::SleepFor(absl::Seconds(2));
  EXPECT_THAT(worker1->Log(), ::testing::Not(HasSubstr("initialization complete")));
  auto chief = Task("worker", 0, {"--train_steps=2400", "--trace_steps=1"});
  const testing::ExitStatus chief_exit = chief->WaitExit(absl::Seconds(240));
  const testing::ExitStatus worker_exit = worker1->WaitExit(absl::Seconds(60));
  ASSERT_EQ(chief_exit.code, 0) << chief->Log();
  ASSERT_EQ(worker_exit.code, 0) << worker1->Log();
  EXPECT_THAT(chief->Log(), HasSubstr("Worker 0: Initializing session..."));
  EXPECT_THAT(worker1->Log(), HasSubstr("Worker 1: Session initialization complete."));
  // Both did part of the work; together they reached the last step.
  const double chief_steps = Result(chief->Log(), "local_steps").value_or(0);
  const double worker_steps = Result(worker1->Log(), "local_steps").value_or(0);
  EXPECT_GT(chief_steps, 0);
  EXPECT_GT(worker_steps, 0);
  EXPECT_GE(Result(chief->Log(), "global_step").value_or(0), 2400);
  // How stale the asynchronous updates are depends on how the tasks
  // interleave on a loaded machine: 0.84 to 0.87 after 2400 steps.
  EXPECT_GE(Result(chief->Log(), "test_accuracy").value_or(0), 0.82) << chief->Log();
  EXPECT_GE(CheckpointStep().value_or(0), 2400);
  // The variables went to the workers through the ps's shared memory: the
  // tasks share this machine.
  std::ifstream maps(absl::StrFormat("/proc/%d/maps", ps->pid()));
  const std::string mapped((std::istreambuf_iterator<char>(maps)),
                           std::istreambuf_iterator<char>());
  EXPECT_THAT(mapped, HasSubstr("memfd:rill-tensors"));
  // The chief's summaries read back: the loss every 100 steps, the step
  // rate, a START and the checkpoints; with the loss, a histogram of each
  // variable and of its gradient, counting its elements.
  std::set<std::string> tags;
  std::set<int> session_logs;
  std::map<std::string, int> histograms;  // Tag -> how many.
  int loss_summaries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(logdir_)) {
    if (!entry.path().filename().string().starts_with("events.out.tfevents.")) continue;
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> records, ReadAllRecords(entry.path().string()));
    for (const std::string& record : records) {
      Event event;
      ASSERT_TRUE(event.ParseFromString(record));
      for (const Summary::Value& value : event.summary().value()) {
        tags.insert(value.tag());
        loss_summaries += value.tag() == "loss";
        if (!value.has_histo()) continue;
        ++histograms[value.tag()];
        std::string_view variable = value.tag();
        if (variable.ends_with(kGradientSuffix)) variable.remove_suffix(kGradientSuffix.size());
        const auto size = MlpVariableSizes().find(variable);
        if (size == MlpVariableSizes().end()) {
          ADD_FAILURE() << "a histogram of no variable: " << value.tag();
        } else {
          ExpectTensorFlowHistogram(value.tag(), value.histo(), size->second);
        }
      }
      if (event.has_session_log()) session_logs.insert(event.session_log().status());
    }
  }
  EXPECT_THAT(tags, ::testing::IsSupersetOf({"loss", "accuracy", "global_step/sec"}));
  EXPECT_THAT(session_logs, ::testing::IsSupersetOf({SessionLog::START, SessionLog::CHECKPOINT}));
  EXPECT_GT(loss_summaries, 0);
  for (const auto& [variable, size] : MlpVariableSizes()) {
    EXPECT_EQ(histograms[variable], loss_summaries) << variable;
    EXPECT_EQ(histograms[variable + std::string(kGradientSuffix)], loss_summaries) << variable;
  }
  // The run as a person sees it: `rill report` of its log directory (the
  // chief's curves, histograms and traced step), drawn by headless
  // Chromium, which must show the plots and more than a blank page.
  const testing::ProgramResult render = testing::RunProgram(
      {"/usr/bin/env", "python3",
       std::string(std::getenv("RILL_SOURCE_ROOT")) + "/tests/cli/report_render_test.py",
       "--logdir", logdir_, "--rill", std::getenv("RILL_CLI")});
  std::printf("%s", render.out.c_str());  // The screenshot's path, for a person to open.
  if (render.exit_code != 77) {
    EXPECT_EQ(render.exit_code, 0) << render.out << render.err;
  }
}

// A cluster spec of 4,000 workers, all but the chief down (as a big job
// before its workers start): the chief connects only to the tasks its
// graph names, with the threads it always has, and trains.
TEST_F(DistributedMnist, AChiefAmongFourThousandListedWorkersTrains) {
  std::string workers = hosts_[1];
  for (int i = 0; i < 3999; ++i) {
    workers += absl::StrFormat(",127.0.%d.%d:1", 1 + i / 250, 1 + i % 250);
  }
  const auto start = [&](const std::string& job) {
    absl::StatusOr<std::unique_ptr<testing::ServerProcess>> process = testing::ServerProcess::Spawn(
        {"--ps_hosts=" + hosts_[0], "--worker_hosts=" + workers, "--job_name=" + job,
         "--task_index=0", "--issync=0", "--logdir=" + logdir_, "--train_steps=300",
         "--log_every=100", "--validate_every=100000"});
    EXPECT_OK(process);
    return process.ok() ? *std::move(process) : nullptr;
  };
  auto ps = start("ps");
  auto chief = start("worker");
  ASSERT_NE(chief, nullptr);
  const testing::ExitStatus exit = chief->WaitExit(absl::Seconds(120));
  ASSERT_TRUE(exit.exited) << chief->Log();
  EXPECT_EQ(exit.code, 0) << chief->Log();
  EXPECT_GE(Result(chief->Log(), "global_step").value_or(0), 300) << chief->Log();
}

// --model cnn trains the convolutional model the same way; --trace_steps
// says where a step's time went on each task.
TEST_F(DistributedMnist, TrainsTheConvolutionalModel) {
  auto ps = Task("ps", 0);
  auto chief = Task("worker", 0, {"--model=cnn", "--train_steps=150", "--trace_steps=2"});
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  EXPECT_THAT(chief->Log(), HasSubstr("Worker 0: 2 traced steps"));
  EXPECT_THAT(chief->Log(), ::testing::ContainsRegex(
                                "/job:ps/replica:0/task:0/device:CPU:0: compute [0-9.]+ ms per "
                                "step \\(not counting _Recv\\); top: .*ApplyAdam"));
  EXPECT_GE(Result(chief->Log(), "global_step").value_or(0), 150);
  // Well above chance (0.1) after 150 steps.
  EXPECT_GE(Result(chief->Log(), "test_accuracy").value_or(0), 0.6) << chief->Log();
  // Each traced step's timeline is in the log directory: the ps's nodes and
  // the chief's, the ps's clock placed against the chief's.
  for (int traced = 1; traced <= 2; ++traced) {
    const std::string path = absl::StrFormat("%s/worker0-traced-%d.trace.json", logdir_, traced);
    EXPECT_THAT(chief->Log(),
                HasSubstr(absl::StrFormat("traced step %d as a timeline: %s", traced, path)));
    std::ifstream in(path);
    const std::string trace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(trace, HasSubstr("\"name\":\"/job:ps/replica:0/task:0 (clock "));
    EXPECT_THAT(trace,
                HasSubstr("\"name\":\"/job:worker/replica:0/task:0 (the clock of this trace)"));
    EXPECT_THAT(trace, HasSubstr("\"cat\":\"ApplyAdam\""));
    EXPECT_THAT(trace, HasSubstr("\"ph\":\"s\""));
  }
}

// --curve_keys: the tasks share a key directory, train as without it, and
// a client without the keys is refused by every task.
TEST_F(DistributedMnist, TrainsWithCurveKeysAndRefusesAKeylessClient) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq was built without CURVE";
  const std::string keys = testing::MakeTempDir() + "/keys";
  ASSERT_OK(WriteCurveKeys(keys, "").status());
  auto ps = Task("ps", 0, {"--curve_keys=" + keys});
  auto chief = Task("worker", 0, {"--train_steps=300", "--curve_keys=" + keys});
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  EXPECT_GE(Result(chief->Log(), "test_accuracy").value_or(0), 0.6) << chief->Log();
  ASSERT_OK_AND_ASSIGN(const CurveKeys loaded, LoadCurveKeys(keys));
  const std::string ps_target = "zmq://" + hosts_[0];
  EXPECT_OK(
      ListRemoteDevices(ps_target, absl::Seconds(20), std::make_shared<const CurveKeys>(loaded))
          .status());
  EXPECT_FALSE(ListRemoteDevices(ps_target, absl::Seconds(1)).ok());
  EXPECT_TRUE(ps->Running());
}

// --device gpu: each worker of 1 ps + 2 computes on its GPU (the trace
// shows the chief's compute on /device:GPU:0) with its variables on the
// ps, every op of the step there, and reaches the CPU run's accuracy.
TEST_F(DistributedMnist, WorkersTrainOnTheirGpu) {
  auto ps = Task("ps", 0);
  auto chief = Task("worker", 0, {"--device=gpu", "--train_steps=1200", "--trace_steps=2"});
  auto worker = Task("worker", 1, {"--device=gpu", "--train_steps=1200"});
  const testing::ExitStatus exit = chief->WaitExit(absl::Seconds(240));
  if (exit.code != 0 && chief->Log().find("this machine has no GPU") != std::string::npos) {
    GTEST_SKIP() << chief->Log();
  }
  ASSERT_EQ(exit.code, 0) << chief->Log();
  EXPECT_EQ(worker->WaitExit(absl::Seconds(120)).code, 0) << worker->Log();
  EXPECT_THAT(chief->Log(),
              ::testing::ContainsRegex("/job:worker/replica:0/task:0/device:GPU:0: compute"));
  EXPECT_GE(Result(chief->Log(), "global_step").value_or(0), 1200);
  EXPECT_GE(Result(chief->Log(), "test_accuracy").value_or(0), 0.8) << chief->Log();
}

// The weights cut in two (--partitioner) on 2 ps tasks, spread by bytes
// (--ps_strategy greedy), trained synchronously on their gradients' largest
// quarter (--gradient_compression topk): training reaches accuracy; each
// worker zeroes its own residuals with its local step (the non-chief would
// otherwise wait for them forever); the checkpoint holds each weight
// matrix whole, under its name, as the two parts' slices, and no residual.
TEST_F(DistributedMnist, PartitionedWeightsOnTwoPsTasksTrainAndSaveWhole) {
  num_ps_ = 2;
  auto ps0 = Task("ps", 0);
  auto ps1 = Task("ps", 1);
  const std::vector<std::string> args = {"--issync=1", "--train_steps=600", "--partitioner=fixed:2",
                                         "--ps_strategy=greedy",
                                         "--gradient_compression=topk:0.25"};
  auto worker1 = Task("worker", 1, args);
  auto chief = Task("worker", 0, args);
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  ASSERT_EQ(worker1->WaitExit(absl::Seconds(60)).code, 0) << worker1->Log();
  EXPECT_GT(Result(worker1->Log(), "local_steps").value_or(0), 0) << worker1->Log();
  EXPECT_GE(Result(chief->Log(), "test_accuracy").value_or(0), 0.75) << chief->Log();
  const std::optional<std::string> latest = LatestCheckpoint(logdir_);
  ASSERT_TRUE(latest.has_value());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<io::BundleReader> reader, io::BundleReader::Open(*latest));
  for (const std::string name : {"hidden/weights", "hidden/weights/Adam", "logits/weights"}) {
    ASSERT_OK_AND_ASSIGN(const BundleEntryProto entry, reader->Entry(name));
    EXPECT_EQ(entry.slices_size(), 2) << name;
  }
  ASSERT_OK_AND_ASSIGN(const Tensor weights, reader->Read("hidden/weights"));
  EXPECT_EQ(weights.shape(), TensorShape({784, 128}));
  EXPECT_FALSE(reader->Entry("hidden/weights/part_0").ok());
  EXPECT_FALSE(reader->Entry("hidden/weights/part_0/wire/residual").ok());
}

// The chief killed mid-training comes back, restores its last checkpoint
// (the global step goes on from there) and finishes.
TEST_F(DistributedMnist, KilledChiefResumesFromItsLastCheckpoint) {
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--train_steps=1500", "--save_checkpoint_steps=200"};
  auto chief = Task("worker", 0, args);
  ASSERT_TRUE(WaitForLog(*chief, "global step ([4-9]\\d\\d|1\\d\\d\\d)")) << chief->Log();
  chief->Kill(SIGKILL);
  chief->WaitExit();
  const std::optional<int64_t> saved = CheckpointStep();
  ASSERT_TRUE(saved.has_value());
  EXPECT_GE(*saved, 200);

  auto restarted = Task("worker", 0, args);
  ASSERT_EQ(restarted->WaitExit(absl::Seconds(240)).code, 0) << restarted->Log();
  EXPECT_THAT(restarted->Log(),
              HasSubstr(absl::StrFormat("Worker 0: restoring %s/model.ckpt-%d", logdir_, *saved)));
  std::smatch first;
  const std::string log = restarted->Log();
  ASSERT_TRUE(std::regex_search(log, first, std::regex("global step (\\d+)"))) << log;
  EXPECT_GT(std::stoll(first[1].str()), *saved) << log;
  EXPECT_GE(Result(log, "global_step").value_or(0), 1500);
}

// The ps killed and restarted loses its variables: the workers' steps fail,
// their sessions are re-created, the chief restores the last checkpoint,
// and training finishes having lost at most one checkpoint interval.
TEST_F(DistributedMnist, RestartedPsContinuesFromTheLastCheckpoint) {
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--train_steps=1500", "--save_checkpoint_steps=200"};
  auto chief = Task("worker", 0, args);
  auto worker1 = Task("worker", 1, args);
  ASSERT_TRUE(WaitForLog(*chief, "global step ([4-9]\\d\\d|1\\d\\d\\d)")) << chief->Log();
  ps->Kill(SIGKILL);
  ps->WaitExit();
  const std::optional<int64_t> saved = CheckpointStep();
  ASSERT_TRUE(saved.has_value());
  ps = Task("ps", 0);
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  ASSERT_EQ(worker1->WaitExit(absl::Seconds(60)).code, 0) << worker1->Log();
  EXPECT_THAT(chief->Log(), HasSubstr("creating a new session"));
  EXPECT_GE(Result(chief->Log(), "global_step").value_or(0), 1500);
  EXPECT_GE(CheckpointStep().value_or(0), 1500);
}

// Synchronous training (--issync 1): every step applies the mean of both
// workers' gradients once; both stop at the last step. The gradients
// travel as bfloat16 (--gradient_compression), which costs no accuracy.
TEST_F(DistributedMnist, SynchronousTrainingReachesAccuracy) {
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--issync=1", "--train_steps=1200",
                                         "--gradient_compression=bf16"};
  auto worker1 = Task("worker", 1, args);
  auto chief = Task("worker", 0, args);
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  ASSERT_EQ(worker1->WaitExit(absl::Seconds(60)).code, 0) << worker1->Log();
  EXPECT_THAT(chief->Log(), HasSubstr("\"mode\": \"sync 2 of 2\""));
  EXPECT_GE(Result(chief->Log(), "global_step").value_or(0), 1200);
  // Each round took two gradients, whoever computed them (as in
  // TensorFlow, a worker that is quicker to its token may give both), and
  // a worker's step past the last round is the only one wasted.
  const double chief_steps = Result(chief->Log(), "local_steps").value_or(0);
  const double worker1_steps = Result(worker1->Log(), "local_steps").value_or(0);
  EXPECT_GE(chief_steps + worker1_steps, 2 * 1200);
  EXPECT_LE(chief_steps + worker1_steps, 2 * 1200 + 2);
  EXPECT_GE(chief_steps, 100) << chief->Log();
  EXPECT_GE(worker1_steps, 100) << worker1->Log();
  EXPECT_GE(Result(chief->Log(), "test_accuracy").value_or(0), 0.8) << chief->Log();
}

// Three workers aggregating two: one killed mid-training is a backup's
// loss, and the others finish.
TEST_F(DistributedMnist, SynchronousTrainingGoesOnWithoutAKilledBackupWorker) {
  num_workers_ = 3;
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--issync=1", "--backup_workers=1", "--train_steps=600"};
  auto chief = Task("worker", 0, args);
  auto worker1 = Task("worker", 1, args);
  auto worker2 = Task("worker", 2, args);
  ASSERT_TRUE(WaitForLog(*worker2, "Worker 2: local step 100")) << worker2->Log();
  worker2->Kill(SIGKILL);
  worker2->WaitExit();
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  ASSERT_EQ(worker1->WaitExit(absl::Seconds(60)).code, 0) << worker1->Log();
  EXPECT_THAT(chief->Log(), HasSubstr("\"mode\": \"sync 2 of 3\""));
  EXPECT_GE(Result(chief->Log(), "global_step").value_or(0), 600);
}

// The global steps a task's log shows, in order ("global step N").
std::vector<int64_t> GlobalSteps(const std::string& log) {
  std::vector<int64_t> steps;
  const std::regex re("global step ([0-9]+)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
       ++it) {
    steps.push_back(std::stoll((*it)[1].str()));
  }
  return steps;
}

// Workers come and go in a live asynchronous job: a third joins through
// the chief's server (which gives it an index, and the ps learns its
// address), a worker is killed and dropped, and comes back. Training goes
// on, the global step only grows, and each worker's examples/s lands in
// its own event file.
TEST_F(DistributedMnist, WorkersJoinAndLeaveALiveJob) {
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--train_steps=4000", "--step_delay_ms=8"};
  auto chief = Task("worker", 0, args);
  auto worker1 = Task("worker", 1, args);
  ASSERT_TRUE(WaitForLog(*chief, "global step [0-9]{3,}")) << chief->Log();
  absl::StatusOr<std::unique_ptr<testing::ServerProcess>> joiner = testing::ServerProcess::Spawn(
      {"--join=" + hosts_[1], "--logdir=" + logdir_, "--log_every=50", "--validate_every=100000",
       "--train_steps=4000", "--step_delay_ms=8"});
  ASSERT_OK(joiner);
  ASSERT_TRUE(WaitForLog(**joiner, "Worker 2: local step 50, global step")) << (*joiner)->Log();
  EXPECT_THAT(chief->Log(), HasSubstr("membership: worker 2 joined at "));
  EXPECT_THAT(chief->Log(), HasSubstr("(3 live workers: 0, 1, 2)"));

  worker1->Kill(SIGKILL);
  worker1->WaitExit();
  ASSERT_TRUE(WaitForLog(*chief, "membership: dropped worker 1 at [0-9.:]+: not heard for 5s"))
      << chief->Log();
  const int64_t step_at_return = GlobalSteps(chief->Log()).back();
  auto returned = Task("worker", 1, args);
  ASSERT_TRUE(WaitForLog(*returned, "Worker 1: local step 50, global step")) << returned->Log();

  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  ASSERT_EQ((*joiner)->WaitExit(absl::Seconds(60)).code, 0) << (*joiner)->Log();
  ASSERT_EQ(returned->WaitExit(absl::Seconds(60)).code, 0) << returned->Log();
  const std::string chief_log = chief->Log();
  // Worker 1 joined when it started and again when it came back.
  size_t joins = 0;
  for (size_t at = chief_log.find("membership: worker 1 joined at "); at != std::string::npos;
       at = chief_log.find("membership: worker 1 joined at ", at + 1)) {
    ++joins;
  }
  EXPECT_EQ(joins, 2u) << chief_log;
  // Each task's global steps only grow; the joiner and the returned worker
  // started from the job's, not from 0.
  for (const std::string& log : {chief_log, (*joiner)->Log(), returned->Log()}) {
    const std::vector<int64_t> steps = GlobalSteps(log);
    ASSERT_FALSE(steps.empty()) << log;
    EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end())) << log;
  }
  EXPECT_GT(GlobalSteps((*joiner)->Log()).front(), 100);
  EXPECT_GE(GlobalSteps(returned->Log()).front(), step_at_return);
  EXPECT_GE(Result(chief_log, "global_step").value_or(0), 4000);
  EXPECT_GE(Result(chief_log, "test_accuracy").value_or(0), 0.82) << chief_log;
  // Every worker's rate, in its own event file.
  for (int task : {0, 1, 2}) {
    int rates = 0;
    const std::string dir = absl::StrFormat("%s/worker%d", logdir_, task);
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      ASSERT_OK_AND_ASSIGN(std::vector<std::string> records, ReadAllRecords(entry.path().string()));
      for (const std::string& record : records) {
        Event event;
        ASSERT_TRUE(event.ParseFromString(record));
        for (const Summary::Value& value : event.summary().value()) {
          rates += value.tag() == "examples/sec" && value.simple_value() > 0;
        }
      }
    }
    EXPECT_GT(rates, 0) << dir;
  }
}

// Synchronous rounds follow the live workers: each aggregates the gradients
// of those there (1 to 3 of them), so a worker that joins adds to the
// rounds and one that dies holds them up only until it is dropped.
TEST_F(DistributedMnist, SynchronousRoundsFollowTheLiveWorkers) {
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--issync=1", "--replicas_to_aggregate=3",
                                         "--min_replicas_to_aggregate=1", "--train_steps=800",
                                         "--step_delay_ms=5"};
  auto chief = Task("worker", 0, args);
  auto worker1 = Task("worker", 1, args);
  ASSERT_TRUE(WaitForLog(*chief, "2 live workers; each round aggregates 2 gradients"))
      << chief->Log();
  std::vector<std::string> join = {"--join=" + hosts_[1], "--log_every=50",
                                   "--validate_every=100000"};
  join.insert(join.end(), args.begin(), args.end());
  absl::StatusOr<std::unique_ptr<testing::ServerProcess>> joiner =
      testing::ServerProcess::Spawn(join);
  ASSERT_OK(joiner);
  ASSERT_TRUE(WaitForLog(*chief, "3 live workers; each round aggregates 3 gradients"))
      << chief->Log();
  ASSERT_TRUE(WaitForLog(**joiner, "Worker 2: local step 50, global step")) << (*joiner)->Log();
  worker1->Kill(SIGKILL);
  worker1->WaitExit();
  ASSERT_TRUE(WaitForLog(*chief, "dropped worker 1[^]*2 live workers; each round aggregates 2"))
      << chief->Log();
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  ASSERT_EQ((*joiner)->WaitExit(absl::Seconds(60)).code, 0) << (*joiner)->Log();
  const std::string chief_log = chief->Log();
  EXPECT_THAT(chief_log, HasSubstr("\"mode\": \"sync 1 to 3 of the live workers\""));
  const std::vector<int64_t> steps = GlobalSteps(chief_log);
  EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end())) << chief_log;
  EXPECT_GE(Result(chief_log, "global_step").value_or(0), 800);
  EXPECT_GE(Result(chief_log, "test_accuracy").value_or(0), 0.8) << chief_log;
}

// Without a backup, a killed worker stops the rounds: the chief's step fails
// in bounded time saying who it waits for, its session recovers, and once
// the worker is back, training finishes.
TEST_F(DistributedMnist, SynchronousTrainingWaitsBoundedlyForAKilledWorkerThenResumes) {
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--issync=1", "--train_steps=500",
                                         "--sync_timeout_secs=2"};
  auto chief = Task("worker", 0, args);
  auto worker1 = Task("worker", 1, args);
  ASSERT_TRUE(WaitForLog(*worker1, "Worker 1: local step 100")) << worker1->Log();
  worker1->Kill(SIGKILL);
  worker1->WaitExit();
  ASSERT_TRUE(WaitForLog(*chief,
                         "waited 2s for the token of its next step: round \\d+: [01] of 2 "
                         "gradients; worker 1 last heard [0-9.]+ s ago"))
      << chief->Log();
  EXPECT_THAT(chief->Log(), HasSubstr("creating a new session"));
  worker1 = Task("worker", 1, args);
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  ASSERT_EQ(worker1->WaitExit(absl::Seconds(60)).code, 0) << worker1->Log();
  EXPECT_GE(Result(chief->Log(), "global_step").value_or(0), 500);
}

// The chief killed mid-training comes back: it restores, resets the round
// and hands out tokens again, and both workers finish.
TEST_F(DistributedMnist, SynchronousTrainingResumesAfterTheChiefRestarts) {
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--issync=1", "--train_steps=600",
                                         "--save_checkpoint_steps=100", "--sync_timeout_secs=5"};
  auto chief = Task("worker", 0, args);
  auto worker1 = Task("worker", 1, args);
  ASSERT_TRUE(WaitForLog(*chief, "Worker 0: local step 200")) << chief->Log();
  chief->Kill(SIGKILL);
  chief->WaitExit();
  auto restarted = Task("worker", 0, args);
  ASSERT_EQ(restarted->WaitExit(absl::Seconds(240)).code, 0) << restarted->Log();
  ASSERT_EQ(worker1->WaitExit(absl::Seconds(60)).code, 0) << worker1->Log();
  EXPECT_GE(Result(restarted->Log(), "global_step").value_or(0), 600);
}

// --staleness 1 with one worker slowed down: neither runs more than one
// step ahead of the other.
TEST_F(DistributedMnist, BoundedStalenessHoldsWithASlowWorker) {
  auto ps = Task("ps", 0);
  const std::vector<std::string> args = {"--staleness=1", "--train_steps=300"};
  auto chief = Task("worker", 0, args);
  std::vector<std::string> slow = args;
  slow.push_back("--step_delay_ms=20");
  auto worker1 = Task("worker", 1, slow);
  ASSERT_EQ(chief->WaitExit(absl::Seconds(240)).code, 0) << chief->Log();
  ASSERT_EQ(worker1->WaitExit(absl::Seconds(60)).code, 0) << worker1->Log();
  EXPECT_THAT(chief->Log(), HasSubstr("\"mode\": \"staleness 1\""));
  const double chief_lead = Result(chief->Log(), "max_lead").value_or(-1);
  EXPECT_GE(chief_lead, 0);
  EXPECT_LE(chief_lead, 1) << chief->Log();
  EXPECT_LE(Result(worker1->Log(), "max_lead").value_or(-1), 1) << worker1->Log();
}

// Settings that cannot work are refused up front, naming the flags.
TEST_F(DistributedMnist, RefusesSynchronousSettingsThatCannotWork) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--issync=1", "--replicas_to_aggregate=2", "--backup_workers=1"},
       "--replicas_to_aggregate 2 and --backup_workers 1 must add up to the 2 workers"},
      {{"--issync=1", "--backup_workers=2"},
       "--backup_workers 2 leaves none of the 2 workers of --worker_hosts"},
      {{"--issync=1", "--staleness=1"}, "--staleness bounds asynchronous training"},
      {{"--staleness=-1"}, "--staleness '-1': expected a whole number >= 0"},
      {{"--replicas_to_aggregate=0"}, "--replicas_to_aggregate"},
      {{"--issync=1", "--replicas_to_aggregate=99999999999"}, "at most 1048576 gradients"},
      {{"--device=tpu"}, "--device 'tpu': expected auto, cpu or gpu"},
      {{"--transport=udp"}, "--transport 'udp': expected shm"},
      {{"--gradient_compression=int8"}, "gradient compression 'int8': expected none"},
      {{"--partitioner=fixed:0"}, "--partitioner 'fixed:0': expected none, fixed:N or min_max"},
      {{"--partitioner=min_max:2:x"}, "--partitioner 'min_max:2:x'"},
      {{"--ps_strategy=random"}, "--ps_strategy: "},
  };
  for (const auto& [flags, message] : cases) {
    auto worker = Task("worker", 0, flags);
    const testing::ExitStatus exit = worker->WaitExit(absl::Seconds(30));
    EXPECT_TRUE(exit.exited) << worker->Log();
    EXPECT_NE(exit.code, 0) << worker->Log();
    EXPECT_THAT(worker->Log(), HasSubstr(message));
  }
}

}  // namespace
}  // namespace rill
