// Accumulators and worker clocks through a Session: TensorFlow's reference
// handle reaching its consumers, a take waiting without a thread while
// other runs apply gradients, and waits that end with the step.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

Tensor Floats(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::FromVector<float>(absl::MakeConstSpan(values), TensorShape({n}));
}

std::unique_ptr<Session> MakeSession(const Scope& scope) {
  absl::StatusOr<GraphDef> def = scope.ToGraphDef();
  EXPECT_OK(def);
  if (!def.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions(), *def);
  EXPECT_OK(session);
  return session.ok() ? *std::move(session) : nullptr;
}

// One accumulator of float [2] gradients with an apply fed "grad" and
// "local_step", a take of two and a count.
std::unique_ptr<Session> AccumulatorSession() {
  Scope scope = ops::NewRootScope();
  ops::ConditionalAccumulator acc(scope.WithOpName("acc"), DT_FLOAT, PartialTensorShape({2}),
                                  ops::ConditionalAccumulator::SharedName("grad_accum"));
  ops::Placeholder grad(scope.WithOpName("grad"), DT_FLOAT);
  ops::Placeholder local_step(scope.WithOpName("local_step"), DT_INT64);
  ops::AccumulatorApplyGradient(scope.WithOpName("apply"), acc, local_step, grad);
  ops::Const required(scope.WithOpName("required"), Tensor::Scalar<int32_t>(2), DT_INT32);
  ops::AccumulatorTakeGradient(scope.WithOpName("take"), acc, required, DT_FLOAT);
  ops::AccumulatorNumAccumulated(scope.WithOpName("num"), acc);
  return MakeSession(scope);
}

absl::Status Apply(Session& session, int64_t step, std::vector<float> grad) {
  return session
      .Run({{"grad", Floats(std::move(grad))}, {"local_step", Tensor::Scalar<int64_t>(step)}}, {},
           {"apply"})
      .status();
}

TEST(Accumulators, ATakeWaitsForGradientsThatOtherRunsApply) {
  std::unique_ptr<Session> session = AccumulatorSession();
  ASSERT_NE(session, nullptr);
  absl::StatusOr<std::vector<Tensor>> taken;
  std::thread chief([&] { taken = session->Run({}, {"take"}); });
  ASSERT_OK(Apply(*session, 0, {1, 2}));
  ASSERT_OK(Apply(*session, 0, {3, 6}));
  chief.join();
  ASSERT_OK(taken.status());
  EXPECT_TRUE(TensorsEqual((*taken)[0], Floats({2, 4}))) << (*taken)[0].DebugString();
  // The round advanced the global step: a gradient of step 0 is stale.
  ASSERT_OK(Apply(*session, 0, {1, 1}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> num, session->Run({}, {"num"}));
  EXPECT_EQ(num[0].scalar<int32_t>(), 0);
}

TEST(Accumulators, AWaitingTakeEndsAtTheRunDeadline) {
  std::unique_ptr<Session> session = AccumulatorSession();
  ASSERT_NE(session, nullptr);
  RunOptions options;
  options.timeout_in_ms = 20;
  EXPECT_THAT(session->Run(options, {}, {"take"}, {}, nullptr),
              StatusIs(absl::StatusCode::kDeadlineExceeded, ::testing::_));
  // The abandoned take consumed nothing and holds no place in the queue.
  ASSERT_OK(Apply(*session, 0, {1, 2}));
  ASSERT_OK(Apply(*session, 0, {3, 4}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> taken, session->Run({}, {"take"}));
  EXPECT_TRUE(TensorsEqual(taken[0], Floats({2, 3}))) << taken[0].DebugString();
}

TEST(WorkerClocks, ATickThatTimesOutIsAbortedAndNamesTheLateWorker) {
  Scope scope = ops::NewRootScope();
  ops::WorkerClocks clocks(scope.WithOpName("clocks"), 2);
  ops::Placeholder worker(scope.WithOpName("worker"), DT_INT32);
  ops::WorkerClocksTick(scope.WithOpName("tick"), clocks, worker,
                        ops::WorkerClocksTick::Staleness(0).TimeoutMs(20));
  ops::WorkerClocksState(scope.WithOpName("state"), clocks);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(
      session->Run({{"worker", Tensor::Scalar<int32_t>(0)}}, {"tick:0"}),
      StatusIs(absl::StatusCode::kAborted, AllOf(HasSubstr("worker 0 finished step 1"),
                                                 HasSubstr("worker 1 is at step 0, never heard"))));
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> tick,
      session->Run({{"worker", Tensor::Scalar<int32_t>(1)}}, {"tick:0", "tick:1"}));
  EXPECT_EQ(tick[0].scalar<int64_t>(), 1);
  EXPECT_EQ(tick[1].scalar<int64_t>(), 1);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> state, session->Run({}, {"state:0"}));
  EXPECT_TRUE(TensorsEqual(state[0], Tensor::FromVector<int64_t>({1, 1}, TensorShape({2}))))
      << state[0].DebugString();
}

}  // namespace
}  // namespace rill
