// SyncReplicasOptimizer on an in-process cluster of one ps and two or three
// workers, each worker with its own graph as between-graph training builds.
#include "runtime/training/sync_replicas_optimizer.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "placement/replica_device_setter.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/global_step.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::QuietLog;
using ::rill::testing::StatusIs;
using ::testing::_;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr float kLearningRate = 0.1f;

// y = x w + b on rows of two features, squared error, gradient descent.
struct Model {
  GraphDef def;
  std::string train_op;
  std::string init_op;
  std::string w;
  std::string b;
  SyncReplicasNames names;
  std::unique_ptr<SessionRunHook> hook;
};

// Elastic rounds: at least `min_replicas`, as many as `live_workers` says.
struct Elastic {
  int min_replicas = -1;
  std::function<int()> live_workers;
};

absl::StatusOr<Model> BuildWorker(int task, int workers, int replicas, int num_tokens,
                                  absl::Duration token_timeout, const Elastic& elastic) {
  const Scope root = ops::NewRootScope();
  const Variable global_step = CreateGlobalStep(root);
  const Output x =
      ops::Placeholder(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 2}));
  const Output y =
      ops::Placeholder(root.WithOpName("y"), DT_FLOAT, ops::Placeholder::Shape({-1, 1}));
  const Variable w(root, "w", Tensor::FromVector<float>({0.5f, -0.25f}, TensorShape({2, 1})));
  const Variable b(root, "b", Tensor::FromVector<float>({0.1f}, TensorShape({1, 1})));
  const Output error = ops::Sub(root, ops::Add(root, ops::MatMul(root, x, w), b), y);
  const Output loss = ops::Mean(root.WithOpName("loss"), ops::Square(root, error),
                                Tensor::FromVector<int32_t>({0, 1}, TensorShape({2})));
  GradientDescentOptimizer descent(kLearningRate);
  SyncReplicasOptions options;
  options.replicas_to_aggregate = replicas;
  options.total_num_replicas = workers;
  options.worker_index = task;
  options.local_device = absl::StrFormat("/job:worker/task:%d", task);
  options.token_timeout = token_timeout;
  options.min_replicas_to_aggregate = elastic.min_replicas;
  options.live_workers = elastic.live_workers;
  SyncReplicasOptimizer sync(&descent, options);
  Model model;
  ASSIGN_OR_RETURN(const Operation train, sync.Minimize(root, loss, {w, b}, global_step));
  model.init_op = GlobalVariablesInitializer(root).node()->name();
  model.train_op = train.node()->name();
  model.w = w.value().name();
  model.b = b.value().name();
  model.names = sync.names();
  ASSIGN_OR_RETURN(model.hook, sync.MakeSessionRunHook(task == 0, num_tokens));
  ASSIGN_OR_RETURN(model.def, root.ToGraphDef());
  ReplicaDeviceSetterOptions setter;
  setter.ps_devices = {"/job:ps/task:0"};
  setter.worker_device = absl::StrFormat("/job:worker/task:%d", task);
  RETURN_IF_ERROR(ApplyReplicaDeviceSetter(setter, &model.def));
  return model;
}

// A batch of `rows` rows starting at `first`: x = (i/10, 1 - i/20), y = 2 x0 - x1 + 1.
std::vector<std::pair<std::string, Tensor>> Batch(int first, int rows) {
  Tensor x(DT_FLOAT, TensorShape({rows, 2}));
  Tensor y(DT_FLOAT, TensorShape({rows, 1}));
  for (int r = 0; r < rows; ++r) {
    const float i = static_cast<float>(first + r);
    x.data<float>()[2 * r] = i / 10;
    x.data<float>()[2 * r + 1] = 1 - i / 20;
    y.data<float>()[r] = 2 * (i / 10) - (1 - i / 20) + 1;
  }
  return {{"x", x}, {"y", y}};
}

class SyncReplicasTest : public ::testing::Test {
 protected:
  // One ps and `workers` workers; a session and a model for each worker.
  void StartCluster(int workers, int replicas, int num_tokens,
                    absl::Duration token_timeout = absl::Seconds(30)) {
    ASSERT_OK_AND_ASSIGN(servers_,
                         Server::CreateLocalCluster({{"ps", 1}, {"worker", workers}}, QuietLog()));
    for (int task = 0; task < workers; ++task) {
      ASSERT_OK_AND_ASSIGN(
          Model model, BuildWorker(task, workers, replicas, num_tokens, token_timeout, elastic_));
      SessionOptions options;
      options.target = servers_[1 + task]->target();
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(options, model.def));
      models_.push_back(std::move(model));
      sessions_.push_back(std::move(session));
    }
    ASSERT_OK(sessions_[0]->Run({}, {}, {models_[0].init_op}).status());
    for (int task = 0; task < workers; ++task) {
      ASSERT_OK(models_[task].hook->AfterCreateSession(*sessions_[task]));
    }
  }

  void TearDown() override {
    for (size_t task = 0; task < sessions_.size(); ++task) {
      ASSERT_OK(sessions_[task]->Close());
      models_[task].hook->AfterCloseSession(*sessions_[task]);
    }
  }

  absl::StatusOr<std::vector<Tensor>> Variables(int task) {
    return sessions_[task]->Run({}, {models_[task].w, models_[task].b});
  }

  // One step of each of `tasks` at once, on batches of four rows.
  void StepTogether(const std::vector<int>& tasks, int first_row) {
    std::vector<absl::Status> results(tasks.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < tasks.size(); ++i) {
      threads.emplace_back([&, i] {
        const int task = tasks[i];
        results[i] = sessions_[task]
                         ->Run(Batch(first_row + 4 * task, 4), {}, {models_[task].train_op})
                         .status();
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const absl::Status& result : results) ASSERT_OK(result);
  }

  // The chief's reading of a name of the graph, as a number.
  int64_t Read(const std::string& name) {
    absl::StatusOr<std::vector<Tensor>> value = sessions_[0]->Run({}, {name});
    EXPECT_OK(value);
    if (!value.ok()) return -1;
    const Tensor& t = (*value)[0];
    return t.dtype() == DT_INT32 ? t.data<int32_t>()[0] : t.data<int64_t>()[0];
  }

  Elastic elastic_;
  std::atomic<int> live_{0};  // The live workers an elastic test's chief sees.
  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<Model> models_;
  std::vector<std::unique_ptr<Session>> sessions_;
};

// One process, gradient descent on both workers' batches together: the
// mean of their gradients, since the halves have equal size.
TEST_F(SyncReplicasTest, TwoWorkersTakeTheStepsOfOneProcessOnTheirBatchesTogether) {
  StartCluster(/*workers=*/2, /*replicas=*/2, /*num_tokens=*/0);
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  const Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT);
  const Variable w(root.WithOpName("w"), "w",
                   Tensor::FromVector<float>({0.5f, -0.25f}, TensorShape({2, 1})));
  const Variable b(root, "b", Tensor::FromVector<float>({0.1f}, TensorShape({1, 1})));
  const Output error = ops::Sub(root, ops::Add(root, ops::MatMul(root, x, w), b), y);
  const Output loss = ops::Mean(root, ops::Square(root, error),
                                Tensor::FromVector<int32_t>({0, 1}, TensorShape({2})));
  GradientDescentOptimizer descent(kLearningRate);
  ASSERT_OK_AND_ASSIGN(const Operation train, descent.Minimize(root, loss, {w, b}));
  const Operation init = GlobalVariablesInitializer(root);
  ASSERT_OK_AND_ASSIGN(const GraphDef one_def, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> one, NewSession(SessionOptions(), one_def));
  ASSERT_OK(one->Run({}, {}, {init.node()->name()}).status());

  constexpr int kRows = 4;
  for (int step = 0; step < 5; ++step) {
    const int first = step * 2 * kRows;
    std::vector<absl::Status> results(2);
    std::vector<std::thread> workers;
    for (int task = 0; task < 2; ++task) {
      workers.emplace_back([&, task] {
        results[task] = sessions_[task]
                            ->Run(Batch(first + task * kRows, kRows), {}, {models_[task].train_op})
                            .status();
      });
    }
    for (std::thread& worker : workers) worker.join();
    ASSERT_OK(results[0]);
    ASSERT_OK(results[1]);
    ASSERT_OK(one->Run(Batch(first, 2 * kRows), {}, {train.node()->name()}).status());

    ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> synced, Variables(0));
    ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> expected,
                         one->Run({}, {w.value().name(), b.value().name()}));
    for (int v = 0; v < 2; ++v) {
      for (int64_t i = 0; i < expected[v].NumElements(); ++i) {
        EXPECT_NEAR(synced[v].data<float>()[i], expected[v].data<float>()[i], 1e-5)
            << "step " << step << " variable " << v << " element " << i;
      }
    }
    ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> global,
                         sessions_[1]->Run({}, {models_[1].names.global_step}));
    EXPECT_EQ(global[0].scalar<int64_t>(), step + 1);
  }
}

// Workers come and go: each round aggregates the gradients of the live
// workers (at least one, at most three). A round that waits for a worker
// that left is counted again and goes on without it.
TEST_F(SyncReplicasTest, AnElasticRoundAggregatesTheLiveWorkers) {
  // The chief's sync loop reads it until TearDown closes the sessions.
  live_ = 3;
  elastic_ = {.min_replicas = 1, .live_workers = [this] { return live_.load(); }};
  StartCluster(/*workers=*/3, /*replicas=*/3, /*num_tokens=*/0);
  const SyncReplicasNames& names = models_[0].names;
  EXPECT_EQ(Read(names.replicas_now), 3);
  for (int step = 0; step < 2; ++step) StepTogether({0, 1, 2}, 12 * step);
  EXPECT_EQ(Read(names.global_step), 2);

  live_ = 2;  // Worker 2 left.
  for (int step = 2; step < 5; ++step) StepTogether({0, 1}, 12 * step);
  EXPECT_EQ(Read(names.global_step), 5);
  EXPECT_EQ(Read(names.replicas_now), 2);

  // It comes back: a new session of its starts from the global step.
  live_ = 3;
  ASSERT_OK(models_[2].hook->AfterCreateSession(*sessions_[2]));
  for (int step = 5; step < 7; ++step) StepTogether({0, 1, 2}, 12 * step);
  EXPECT_EQ(Read(names.global_step), 7);
  EXPECT_EQ(Read(names.replicas_now), 3);
}

// Three workers aggregating two: rounds complete without the third, whose
// late gradient (computed at an old step) is dropped.
TEST_F(SyncReplicasTest, ABackupWorkersLateGradientIsDropped) {
  StartCluster(/*workers=*/3, /*replicas=*/2, /*num_tokens=*/-1);
  for (int step = 0; step < 4; ++step) {
    std::vector<absl::Status> results(2);
    std::vector<std::thread> workers;
    for (int task = 0; task < 2; ++task) {
      workers.emplace_back([&, task] {
        results[task] = sessions_[task]
                            ->Run(Batch(8 * step + 4 * task, 4), {}, {models_[task].train_op})
                            .status();
      });
    }
    for (std::thread& worker : workers) worker.join();
    ASSERT_OK(results[0]);
    ASSERT_OK(results[1]);
  }
  // The rounds go on without the third worker; wait until they settle.
  const std::vector<std::string> state = {models_[0].names.global_step,
                                          models_[0].names.num_accumulated};
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> settled, sessions_[0]->Run({}, state));
  for (int i = 0; i < 50; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> now, sessions_[0]->Run({}, state));
    const bool same = now[0].scalar<int64_t>() == settled[0].scalar<int64_t>() &&
                      now[1].scalar<int32_t>() == settled[1].scalar<int32_t>();
    settled = std::move(now);
    if (same && i >= 4) break;
  }
  ASSERT_GE(settled[0].scalar<int64_t>(), 2);
  // The straggler's local step is still the first one: its gradient is
  // dropped, and its step ends with a leftover token or its timeout.
  RunOptions options;
  options.timeout_in_ms = 1000;
  const absl::Status straggler =
      sessions_[2]->Run(options, Batch(100, 4), {}, {models_[2].train_op}, nullptr).status();
  EXPECT_TRUE(straggler.ok() || absl::IsDeadlineExceeded(straggler)) << straggler;
  ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> after, sessions_[0]->Run({}, state));
  EXPECT_EQ(after[0].scalar<int64_t>(), settled[0].scalar<int64_t>());
  EXPECT_EQ(after[1].scalar<int32_t>(), settled[1].scalar<int32_t>());
}

// Without a backup, a worker alone waits for the round, then fails with an
// error that says what it waits for and who was not heard.
TEST_F(SyncReplicasTest, AWorkerAloneFailsInBoundedTimeNamingWhoIsLate) {
  StartCluster(/*workers=*/2, /*replicas=*/2, /*num_tokens=*/0, absl::Milliseconds(300));
  const absl::Status waited = sessions_[0]->Run(Batch(0, 4), {}, {models_[0].train_op}).status();
  ASSERT_THAT(waited, StatusIs(absl::StatusCode::kDeadlineExceeded, _));
  EXPECT_THAT(models_[0].hook->AfterRunError(*sessions_[0], waited),
              StatusIs(absl::StatusCode::kAborted, AllOf(HasSubstr("round 0: 1 of 2 gradients"),
                                                         HasSubstr("worker 1 never heard"))));
  // Another error is not the hook's to explain.
  EXPECT_THAT(models_[0].hook->AfterRunError(*sessions_[0], absl::InternalError("disk")),
              StatusIs(absl::StatusCode::kInternal, _));
}

// Closing a session cancels a step that waits for its token.
TEST_F(SyncReplicasTest, ClosingTheSessionEndsAStepWaitingForItsToken) {
  StartCluster(/*workers=*/2, /*replicas=*/2, /*num_tokens=*/0, absl::InfiniteDuration());
  absl::Status waited;
  std::thread worker(
      [&] { waited = sessions_[1]->Run(Batch(0, 4), {}, {models_[1].train_op}).status(); });
  absl::SleepFor(absl::Milliseconds(200));
  ASSERT_OK(sessions_[1]->Close());
  worker.join();
  EXPECT_THAT(waited, StatusIs(absl::StatusCode::kCancelled, _));
}

TEST(SyncReplicasOptimizer, RejectsBadSettings) {
  const Scope root = ops::NewRootScope();
  const Variable global_step = CreateGlobalStep(root);
  const Variable w(root, "w", Tensor::FromVector<float>({1.f}, TensorShape({1})));
  const Output loss =
      ops::Sum(root, ops::Square(root, w), Tensor::FromVector<int32_t>({0}, TensorShape({1})));
  GradientDescentOptimizer descent(0.1);
  SyncReplicasOptions options;
  options.replicas_to_aggregate = 0;
  SyncReplicasOptimizer zero(&descent, options);
  EXPECT_THAT(zero.Minimize(root, loss, {w}, global_step),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replicas_to_aggregate")));
  options.replicas_to_aggregate = 3;
  options.total_num_replicas = 2;
  SyncReplicasOptimizer sync(&descent, options);
  EXPECT_THAT(sync.MakeSessionRunHook(true),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("ApplyGradients")));
  ASSERT_OK(sync.Minimize(root, loss, {w}, global_step).status());
  EXPECT_THAT(sync.MakeSessionRunHook(true, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too few")));
  EXPECT_THAT(sync.Minimize(root, loss, {w}, global_step),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("called already")));
}

}  // namespace
}  // namespace rill
