// Synchronous rounds that follow a job's membership (JobMembership::Counted
// and Contributed) on an in-process cluster of one ps and three workers: a
// member that joined and never sends a gradient holds no round up, and a
// worker that starts late counts from its first gradient without a stall.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "placement/replica_device_setter.h"
#include "runtime/distributed/job_membership.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/global_step.h"
#include "runtime/training/sync_replicas_optimizer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::QuietLog;
using ::testing::ElementsAre;

constexpr int kWorkers = 3;
// Clocks for the three workers and one joiner.
constexpr int kMostWorkers = 4;

struct Model {
  GraphDef def;
  std::string init_op;
  std::string train_op;
  SyncReplicasNames names;
  std::unique_ptr<SessionRunHook> hook;
};

// y = x w on rows of two features; rounds of 1 to 4 gradients that follow
// `membership`, and never go without a gradient they wait for (no patience),
// so that a round waiting for a member that sends none would hang until the
// token timeout fails the step.
absl::StatusOr<Model> BuildWorker(int task, JobMembership* membership) {
  const Scope root = ops::NewRootScope();
  const Variable global_step = CreateGlobalStep(root);
  const Output x =
      ops::Placeholder(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 2}));
  const Variable w(root, "w", Tensor::FromVector<float>({0.5f, -0.25f}, TensorShape({2, 1})));
  const Output loss = ops::Mean(root.WithOpName("loss"), ops::Square(root, ops::MatMul(root, x, w)),
                                Tensor::FromVector<int32_t>({0, 1}, TensorShape({2})));
  GradientDescentOptimizer descent(0.01f);
  SyncReplicasOptions options;
  options.replicas_to_aggregate = kMostWorkers;
  options.total_num_replicas = kMostWorkers;
  options.min_replicas_to_aggregate = 1;
  options.worker_index = task;
  options.local_device = absl::StrFormat("/job:worker/task:%d", task);
  options.token_timeout = absl::Seconds(20);
  options.round_patience = absl::InfiniteDuration();
  options.live_workers = [membership] {
    return static_cast<int>(membership->Counted(absl::Now()).size());
  };
  options.contributed = [membership](int worker, absl::Time since) {
    return membership->Contributed(worker, since, absl::Now());
  };
  SyncReplicasOptimizer sync(&descent, options);
  Model model;
  ASSIGN_OR_RETURN(const Operation train, sync.Minimize(root, loss, {w}, global_step));
  model.init_op = GlobalVariablesInitializer(root).node()->name();
  model.train_op = train.node()->name();
  model.names = sync.names();
  ASSIGN_OR_RETURN(model.hook, sync.MakeSessionRunHook(task == 0, /*num_tokens=*/0));
  ASSIGN_OR_RETURN(model.def, root.ToGraphDef());
  ReplicaDeviceSetterOptions setter;
  setter.ps_devices = {"/job:ps/task:0"};
  setter.worker_device = absl::StrFormat("/job:worker/task:%d", task);
  RETURN_IF_ERROR(ApplyReplicaDeviceSetter(setter, &model.def));
  return model;
}

ClusterSpec Spec() {
  absl::StatusOr<ClusterSpec> cluster =
      ClusterSpec::FromJobs({{"ps", {"127.0.0.1:2222"}},
                             {"worker", {"127.0.0.1:2223", "127.0.0.1:2224", "127.0.0.1:2225"}}});
  EXPECT_OK(cluster);
  return cluster.ok() ? *cluster : ClusterSpec();
}

class MembershipRoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(servers_,
                         Server::CreateLocalCluster({{"ps", 1}, {"worker", kWorkers}}, QuietLog()));
    for (int task = 0; task < kWorkers; ++task) {
      ASSERT_OK_AND_ASSIGN(Model model, BuildWorker(task, &membership_));
      SessionOptions options;
      options.target = servers_[1 + task]->target();
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(options, model.def));
      models_.push_back(std::move(model));
      sessions_.push_back(std::move(session));
    }
    ASSERT_OK(sessions_[0]->Run({}, {}, {models_[0].init_op}).status());
  }

  void TearDown() override {
    stop_.store(true, std::memory_order_relaxed);
    // The chief's last tokens end the steps that still wait for a round.
    if (!sessions_.empty()) {
      EXPECT_OK(models_[0].hook->End(*sessions_[0]));
    }
    for (std::thread& thread : threads_) thread.join();
    for (size_t task = 0; task < sessions_.size(); ++task) {
      EXPECT_OK(sessions_[task]->Close());
      models_[task].hook->AfterCloseSession(*sessions_[task]);
    }
  }

  // Worker `task` steps until the test ends (its first step after its
  // session's hook ran).
  void Train(int task) {
    ASSERT_OK(models_[task].hook->AfterCreateSession(*sessions_[task]));
    threads_.emplace_back([this, task] {
      Tensor x(DT_FLOAT, TensorShape({2, 2}));
      for (int i = 0; i < 4; ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i + task);
      while (!stop_.load(std::memory_order_relaxed)) {
        const absl::Status step =
            sessions_[task]->Run({{"x", x}}, {}, {models_[task].train_op}).status();
        if (stop_.load(std::memory_order_relaxed)) return;
        if (!step.ok()) {
          ADD_FAILURE() << "worker " << task << ": " << step;
          return;
        }
      }
    });
  }

  int64_t Read(const std::string& name) {
    absl::StatusOr<std::vector<Tensor>> value = sessions_[0]->Run({}, {name});
    EXPECT_OK(value);
    if (!value.ok()) return -1;
    const Tensor& t = (*value)[0];
    return t.dtype() == DT_INT32 ? t.data<int32_t>()[0] : t.data<int64_t>()[0];
  }

  // Until `done` holds, or a step failed (the test has failed then), or a
  // minute has passed (a hang would fail the test rather than time out).
  template <typename Done>
  void Await(Done done) {
    const absl::Time give_up = absl::Now() + absl::Minutes(1);
    while (!HasFailure() && !done()) {
      ASSERT_LT(absl::Now(), give_up) << "the rounds stopped";
      absl::SleepFor(absl::Milliseconds(5));
    }
  }

  // Until the members listed count, then 20 rounds more.
  void AwaitRoundsCounting(const std::vector<int>& counted) {
    Await([&] { return membership_.Counted(absl::Now()) == counted; });
    const int64_t step = Read(models_[0].names.global_step);
    Await([&] { return Read(models_[0].names.global_step) >= step + 20; });
  }

  JobMembership membership_{
      {.cluster = Spec(), .self = {"worker", 0}, .max_members = 16, .log = QuietLog()}};
  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<Model> models_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Finding: one joiner that heartbeats and never sends a gradient slowed a
// synchronous job from 171 to 36 global steps a second.
TEST_F(MembershipRoundsTest, AMemberThatSendsNoGradientHoldsNoRoundUp) {
  const absl::Time now = absl::Now();
  for (int task = 1; task < kWorkers; ++task) {
    HeartbeatRequest beat;
    beat.set_job("worker");
    beat.set_task_index(task);
    beat.set_address(absl::StrFormat("127.0.0.1:%d", 2223 + task));
    ASSERT_OK(membership_.Heartbeat(beat, now).status());
  }
  JoinJobRequest stranger;
  stranger.set_job("worker");
  stranger.set_assign_index(true);
  stranger.set_address("127.0.0.1:6666");
  ASSERT_OK_AND_ASSIGN(const JoinJobReply joined, membership_.Join(stranger, now));
  ASSERT_EQ(joined.task_index(), 3);
  EXPECT_EQ(membership_.Members().size(), 4u);

  Train(0);
  Train(1);
  AwaitRoundsCounting({0, 1});
  ASSERT_FALSE(HasFailure());
  EXPECT_THAT(membership_.Counted(absl::Now()), ElementsAre(0, 1));
  EXPECT_EQ(Read(models_[0].names.replicas_now), 2);

  // Worker 2 starts late: it counts from its first gradient, and the
  // token its first round did not hand it comes from the sync loop.
  Train(2);
  AwaitRoundsCounting({0, 1, 2});
  ASSERT_FALSE(HasFailure());
  EXPECT_THAT(membership_.Counted(absl::Now()), ElementsAre(0, 1, 2));
  EXPECT_EQ(Read(models_[0].names.replicas_now), 3);
}

}  // namespace
}  // namespace rill
