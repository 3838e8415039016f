// Bounded staleness when workers come and go: the chief's membership hook
// retires the clocks of workers that are not live, so that nobody waits
// for them, and a worker that comes back counts in from the slowest step.
#include "runtime/training/bounded_staleness.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "runtime/training/global_step.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::ElementsAre;

class StalenessMembership : public ::testing::Test {
 protected:
  void SetUp() override {
    const Scope root = ops::NewRootScope();
    const Variable global_step = CreateGlobalStep(root);
    const Variable counter(root, "counter", Tensor::Scalar<float>(0));
    const ops::AssignAdd update(root.WithOpName("update"), counter.ref(),
                                ops::Const(root, Tensor::Scalar<float>(1), DT_FLOAT));
    BoundedStalenessOptions options;
    options.num_workers = 3;
    options.worker_index = 0;
    options.staleness = 1;
    options.timeout = absl::Seconds(20);
    ASSERT_OK_AND_ASSIGN(const BoundedStep step,
                         BoundStaleness(root, update.operation, global_step, options));
    // Names: the graph goes with `root`.
    worker_index_ = step.worker_index.name();
    clock_ = step.clock.name();
    slowest_ = step.slowest.name();
    train_op_ = step.train_op.node()->name();
    const Operation init = GlobalVariablesInitializer(root);
    ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
    ASSERT_OK_AND_ASSIGN(session_, NewSession(SessionOptions(), graph));
    ASSERT_OK(session_->Run({}, {}, {init.node()->name()}).status());
    hook_ = MakeStalenessMembershipHook(
        step, 3,
        [this] {
          std::lock_guard<std::mutex> lock(mu_);
          return live_;
        },
        absl::Milliseconds(20));
  }

  void TearDown() override {
    hook_->AfterCloseSession(*session_);
    ASSERT_OK(session_->Close());
  }

  void SetLive(std::vector<int> live) {
    std::lock_guard<std::mutex> lock(mu_);
    live_ = std::move(live);
  }

  // One step of `worker`: its tick's clock and the slowest clock then.
  std::vector<int64_t> Step(int worker) {
    RunOptions options;
    options.timeout_in_ms = 10000;  // A step that waits for a worker not live fails.
    absl::StatusOr<std::vector<Tensor>> out =
        session_->Run(options, {{worker_index_, Tensor::Scalar<int32_t>(worker)}},
                      {clock_, slowest_}, {train_op_}, nullptr);
    EXPECT_OK(out);
    if (!out.ok()) return {};
    return {(*out)[0].scalar<int64_t>(), (*out)[1].scalar<int64_t>()};
  }

  std::string worker_index_;
  std::string clock_;
  std::string slowest_;
  std::string train_op_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<SessionRunHook> hook_;
  std::mutex mu_;
  std::vector<int> live_ = {0};
};

TEST_F(StalenessMembership, NobodyWaitsForWorkersThatAreNotLive) {
  // Workers 1 and 2 never came: retired from the start, so worker 0 runs
  // on at most one step ahead of nobody.
  ASSERT_OK(hook_->AfterCreateSession(*session_));
  for (int64_t i = 1; i <= 3; ++i) EXPECT_THAT(Step(0), ElementsAre(i, i));
  // Worker 1 comes: it counts in from worker 0's step, not from 0.
  SetLive({0, 1});
  EXPECT_THAT(Step(1), ElementsAre(4, 3));
  EXPECT_THAT(Step(0), ElementsAre(4, 4));
  // It leaves again (at step 4): worker 0 may run one step past it, and
  // the next waits only until the hook has retired it.
  SetLive({0});
  EXPECT_THAT(Step(0), ::testing::ElementsAre(5, ::testing::AnyOf(4, 5)));
  EXPECT_THAT(Step(0), ElementsAre(6, 6));
}

}  // namespace
}  // namespace rill
