// A TensorFlow-style synchronous training graph (SyncReplicasOptimizer,
// between-graph: one graph per worker) built with the C++ API and run on a
// cluster of `rill server` processes; a killed worker or chief makes the
// others fail in bounded time with an error that names it, and training
// goes on once it is back.
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "placement/replica_device_setter.h"
#include "runtime/session.h"
#include "runtime/training/global_step.h"
#include "runtime/training/sync_replicas_optimizer.h"
#include "tests/cluster/server_process.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::LineXs;
using ::rill::testing::LineYs;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int kWorkers = 2;

// One worker's graph: y = w x + b on the seed scripts' line, squared error,
// gradient descent, synchronous over both workers.
struct WorkerGraph {
  GraphDef def;
  std::string init_op;
  std::string train_op;  // Its output is the worker's next token.
  std::string loss;
  SyncReplicasNames names;
  std::unique_ptr<SyncReplicasOptimizer> sync;
  std::unique_ptr<GradientDescentOptimizer> descent;
};

absl::StatusOr<WorkerGraph> BuildWorkerGraph(int task, absl::Duration token_timeout) {
  const Scope root = ops::NewRootScope();
  const Variable global_step = CreateGlobalStep(root);
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  const Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT);
  const Variable w(root, "w", Tensor::Scalar<float>(0));
  const Variable b(root, "b", Tensor::Scalar<float>(0));
  const Output predicted = ops::Add(root, ops::Mul(root, x, w.value()), b.value());
  const Output loss =
      ops::Mean(root.WithOpName("loss"), ops::Square(root, ops::Sub(root, predicted, y)),
                Tensor::Scalar<int32_t>(0));
  WorkerGraph graph;
  graph.descent = std::make_unique<GradientDescentOptimizer>(0.02);
  SyncReplicasOptions options;
  options.replicas_to_aggregate = kWorkers;
  options.total_num_replicas = kWorkers;
  options.worker_index = task;
  options.local_device = absl::StrFormat("/job:worker/task:%d", task);
  options.token_timeout = token_timeout;
  graph.sync = std::make_unique<SyncReplicasOptimizer>(graph.descent.get(), options);
  ASSIGN_OR_RETURN(const Operation train, graph.sync->Minimize(root, loss, {w, b}, global_step));
  graph.init_op = GlobalVariablesInitializer(root).node()->name();
  graph.train_op = train.node()->name() + ":0";
  graph.loss = loss.name();
  graph.names = graph.sync->names();
  ASSIGN_OR_RETURN(graph.def, root.ToGraphDef());
  ReplicaDeviceSetterOptions setter;
  setter.ps_devices = {"/job:ps/task:0"};
  setter.worker_device = options.local_device;
  RETURN_IF_ERROR(ApplyReplicaDeviceSetter(setter, &graph.def));
  return graph;
}

// A worker as its training program runs it: a session on its own server
// and the optimizer's hook around it.
class Worker {
 public:
  Worker(int task, absl::Duration token_timeout) : task_(task) {
    absl::StatusOr<WorkerGraph> graph = BuildWorkerGraph(task, token_timeout);
    EXPECT_OK(graph.status());
    if (graph.ok()) graph_ = *std::move(graph);
  }

  ~Worker() { Disconnect(); }

  // A session on `target` and the hook's start (the chief initializes the
  // variables first when they are not yet).
  absl::Status Connect(const std::string& target, bool initialize) {
    SessionOptions options;
    options.target = target;
    ASSIGN_OR_RETURN(session_, NewSession(options, graph_.def));
    if (initialize) RETURN_IF_ERROR(session_->Run({}, {}, {graph_.init_op}).status());
    ASSIGN_OR_RETURN(hook_, graph_.sync->MakeSessionRunHook(/*is_chief=*/task_ == 0));
    return hook_->AfterCreateSession(*session_);
  }

  // Closes the session (its server may be dead) and joins the chief's
  // queue runner.
  void Disconnect() {
    if (session_ == nullptr) return;
    static_cast<void>(session_->Close());
    hook_->AfterCloseSession(*session_);
    hook_.reset();
    session_.reset();
  }

  // One training step on the whole line; returns the token (the global
  // step the next step starts at), or the error as the hook explains it.
  absl::StatusOr<int64_t> Step() {
    absl::StatusOr<std::vector<Tensor>> out =
        session_->Run({{"x", LineXs()}, {"y", LineYs()}}, {graph_.train_op});
    if (!out.ok()) return hook_->AfterRunError(*session_, out.status());
    return (*out)[0].scalar<int64_t>();
  }

  // Steps until a token reaches `last`; the first error ends it.
  absl::Status StepUntil(int64_t last) {
    while (true) {
      ASSIGN_OR_RETURN(const int64_t token, Step());
      if (token >= last) return absl::OkStatus();
    }
  }

  absl::StatusOr<int64_t> GlobalStep() {
    ASSIGN_OR_RETURN(std::vector<Tensor> step, session_->Run({}, {graph_.names.global_step}));
    return step[0].scalar<int64_t>();
  }

  absl::StatusOr<float> Loss() {
    ASSIGN_OR_RETURN(std::vector<Tensor> loss,
                     session_->Run({{"x", LineXs()}, {"y", LineYs()}}, {graph_.loss}));
    return loss[0].scalar<float>();
  }

 private:
  const int task_;
  WorkerGraph graph_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<SessionRunHook> hook_;
};

class SyncReplicasCluster : public ::testing::Test {
 protected:
  void Start(absl::Duration token_timeout) {
    ASSERT_OK_AND_ASSIGN(cluster_, testing::StartCluster(1, kWorkers));
    for (int task = 0; task < kWorkers; ++task) {
      workers_.push_back(std::make_unique<Worker>(task, token_timeout));
    }
    ASSERT_OK(workers_[0]->Connect(cluster_.Target("worker", 0), /*initialize=*/true));
    ASSERT_OK(workers_[1]->Connect(cluster_.Target("worker", 1), /*initialize=*/false));
  }

  // Both workers step, each on its own thread, until a token reaches `last`.
  void TrainBoth(int64_t last) {
    std::vector<absl::Status> results(kWorkers);
    std::vector<std::thread> threads;
    for (int task = 0; task < kWorkers; ++task) {
      threads.emplace_back([&, task] { results[task] = workers_[task]->StepUntil(last); });
    }
    // The round that reaches `last` hands out a token to each.
    for (std::thread& thread : threads) thread.join();
    EXPECT_OK(results[0]);
    EXPECT_OK(results[1]);
  }

  // Kills `task`'s server and restarts it on the same port.
  void RestartServer(int task) {
    cluster_.workers[task]->Kill(SIGKILL);
    cluster_.workers[task]->WaitExit();
    ASSERT_OK_AND_ASSIGN(cluster_.workers[task],
                         testing::ServerProcess::Start(cluster_.Flags("worker", task)));
  }

  testing::Cluster cluster_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

TEST_F(SyncReplicasCluster, TrainsOnRillServers) {
  Start(absl::Seconds(30));
  ASSERT_OK_AND_ASSIGN(const float first_loss, workers_[0]->Loss());
  TrainBoth(40);
  ASSERT_OK_AND_ASSIGN(const int64_t global_step, workers_[1]->GlobalStep());
  EXPECT_GE(global_step, 40);
  ASSERT_OK_AND_ASSIGN(const float loss, workers_[1]->Loss());
  EXPECT_LT(loss, first_loss / 2);
}

// Without a backup, the rounds stop while a worker is dead: the chief's
// step fails after the token timeout naming it, and once it is back (a new
// server, a new session) the rounds go on.
TEST_F(SyncReplicasCluster, AKilledWorkerIsNamedThenRejoins) {
  Start(absl::Seconds(1));
  TrainBoth(5);
  cluster_.workers[1]->Kill(SIGKILL);
  cluster_.workers[1]->WaitExit();
  workers_[1]->Disconnect();
  EXPECT_THAT(workers_[0]->Step(),
              StatusIs(absl::StatusCode::kAborted,
                       AllOf(HasSubstr("worker 0 waited 1s for the token of its next step"),
                             HasSubstr("1 of 2 gradients"), HasSubstr("worker 1 last heard"))));

  ASSERT_OK_AND_ASSIGN(cluster_.workers[1],
                       testing::ServerProcess::Start(cluster_.Flags("worker", 1)));
  ASSERT_OK(workers_[1]->Connect(cluster_.Target("worker", 1), /*initialize=*/false));
  ASSERT_OK_AND_ASSIGN(const int64_t before, workers_[0]->GlobalStep());
  TrainBoth(before + 10);
  ASSERT_OK_AND_ASSIGN(const int64_t after, workers_[1]->GlobalStep());
  EXPECT_GE(after, before + 10);
}

// The chief's server killed: the other worker's step fails after the token
// timeout naming the chief; a restarted chief resets the round from the
// global step on the ps and hands out tokens again, and both go on.
TEST_F(SyncReplicasCluster, AKilledChiefIsNamedThenResumesTheRounds) {
  Start(absl::Seconds(1));
  TrainBoth(5);
  ASSERT_OK_AND_ASSIGN(const int64_t before, workers_[1]->GlobalStep());
  RestartServer(0);
  workers_[0]->Disconnect();
  // The worker may first use a token the chief handed out before it died.
  absl::StatusOr<int64_t> step = workers_[1]->Step();
  if (step.ok()) step = workers_[1]->Step();
  EXPECT_THAT(step, StatusIs(absl::StatusCode::kAborted,
                             AllOf(HasSubstr("worker 1 waited 1s for the token of its next step"),
                                   HasSubstr("worker 0 last heard"))));

  ASSERT_OK(workers_[0]->Connect(cluster_.Target("worker", 0), /*initialize=*/false));
  ASSERT_OK_AND_ASSIGN(const int64_t restored, workers_[0]->GlobalStep());
  EXPECT_GE(restored, before);
  TrainBoth(restored + 10);
  ASSERT_OK_AND_ASSIGN(const int64_t after, workers_[1]->GlobalStep());
  EXPECT_GE(after, restored + 10);
}

}  // namespace
}  // namespace rill
