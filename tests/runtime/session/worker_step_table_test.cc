#include "runtime/session/worker_step_table.h"

#include <memory>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::CapturedLog;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kWorker0[] = "/job:worker/replica:0/task:0";

PreparedRendezvousKey FromPs(const std::string& edge) {
  return *PreparedRendezvousKey::Prepare(RendezvousKey{
      "/job:ps/replica:0/task:0/device:CPU:0", 1, std::string(kWorker0) + "/device:CPU:0", edge});
}

// What a push under a one-letter edge holds beyond its tensor's bytes.
int64_t Overhead() {
  return static_cast<int64_t>(FromPs("e").text.size()) + WorkerStepTable::kPushOverheadBytes;
}

// Pushes `value` to step `step_id` under edge `edge`.
absl::Status Push(WorkerStepTable& table, uint64_t step_id, const std::string& edge,
                  const Tensor& value = Tensor::Scalar<float>(1)) {
  return table.Deliver(step_id, FromPs(edge).text, value);
}

TEST(WorkerStepTable, APushBeforeTheStepStartsCreatesIt) {
  WorkerStepTable table(kWorker0, nullptr);
  ASSERT_OK(Push(table, 11, "e", Tensor::Scalar<float>(3)));
  EXPECT_EQ(table.pending(), std::make_pair(1, 4 + Overhead()));
  std::shared_ptr<RemoteRendezvous> step = table.Begin(11, std::make_shared<StepCancellation>());
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(table.pending(), std::make_pair(0, int64_t{0}));
  float received = 0;
  step->RecvAsync(FromPs("e"), [&](const absl::Status& status, const Tensor& value) {
    ASSERT_OK(status);
    received = value.scalar<float>();
  });
  EXPECT_EQ(received, 3);
  EXPECT_NE(table.Begin(12, std::make_shared<StepCancellation>()), step);
}

TEST(WorkerStepTable, AbortFailsReceiversCancelsKernelsAndRefusesTheStep) {
  WorkerStepTable table(kWorker0, nullptr);
  auto cancellation = std::make_shared<StepCancellation>();
  std::shared_ptr<RemoteRendezvous> step = table.Begin(11, cancellation);
  absl::Status received;
  step->RecvAsync(FromPs("e"),
                  [&](const absl::Status& status, const Tensor&) { received = status; });
  table.Abort(11, absl::UnavailableError("/job:worker/replica:0/task:1 died"));
  EXPECT_THAT(received, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("task:1 died")));
  EXPECT_THAT(cancellation->status(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("task:1 died")));
  EXPECT_OK(Push(table, 11, "late"));  // Dropped.
  EXPECT_EQ(table.pending().first, 0);
  EXPECT_EQ(table.Begin(11, cancellation), nullptr);
}

TEST(WorkerStepTable, AnAbortBeforeTheStepStartsRefusesIt) {
  WorkerStepTable table(kWorker0, nullptr);
  table.Abort(5, absl::DeadlineExceededError("late"));
  EXPECT_EQ(table.Begin(5, std::make_shared<StepCancellation>()), nullptr);
}

TEST(WorkerStepTable, AFinishedStepIsNotCancelledByALateAbort) {
  WorkerStepTable table(kWorker0, nullptr);
  auto cancellation = std::make_shared<StepCancellation>();
  ASSERT_NE(table.Begin(3, cancellation), nullptr);
  table.End(3);
  table.Abort(3, absl::AbortedError("too late"));
  EXPECT_FALSE(cancellation->cancelled());
  EXPECT_OK(Push(table, 3, "late"));  // Dropped.
  EXPECT_EQ(table.pending().first, 0);
}

TEST(WorkerStepTable, RemembersOnlyTheLastEndedSteps) {
  WorkerStepTable table(kWorker0, nullptr);
  for (uint64_t step = 0; step <= WorkerStepTable::kRememberEnded; ++step) table.End(step);
  EXPECT_OK(Push(table, 0, "e"));  // Forgotten: a new step.
  EXPECT_EQ(table.pending().first, 1);
  EXPECT_OK(Push(table, 1, "e"));  // Dropped.
  EXPECT_EQ(table.pending().first, 1);
}

TEST(WorkerStepTable, PushesForStepsNotBegunAreBoundedInStepsAndBytes) {
  CapturedLog log;
  const int64_t push = 16 + Overhead();
  WorkerStepTable table(kWorker0, nullptr, {.max_steps = 2, .max_bytes = 2 * push + 30},
                        log.sink());
  const Tensor sixteen_bytes(DT_FLOAT, TensorShape({4}));
  ASSERT_OK(Push(table, 1, "a", sixteen_bytes));
  ASSERT_OK(Push(table, 2, "a", sixteen_bytes));
  EXPECT_THAT(Push(table, 3, "a", sixteen_bytes),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr(absl::StrFormat("2 steps that have not begun hold %d pushed bytes",
                                                 2 * push))));
  EXPECT_THAT(Push(table, 1, "b", Tensor(DT_FLOAT, TensorShape({10}))),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr(absl::StrFormat("a push of %d bytes", 40 + Overhead()))));
  ASSERT_NE(table.Begin(1, std::make_shared<StepCancellation>()), nullptr);
  // A step that has begun takes what is pushed for it.
  EXPECT_OK(Push(table, 1, "b", Tensor(DT_FLOAT, TensorShape({100}))));
  EXPECT_OK(Push(table, 3, "a", sixteen_bytes));
  EXPECT_EQ(table.pending(), std::make_pair(2, 2 * push));
  EXPECT_THAT(log.Read(), HasSubstr("refusing pushes for steps not begun"));
  EXPECT_THAT(log.Read(), HasSubstr("room for pushes again (2 refused)"));
}

TEST(WorkerStepTable, PushesForStepsThatNeverBeginExpire) {
  CapturedLog log;
  WorkerStepTable table(kWorker0, nullptr, {.deadline = absl::Seconds(10)}, log.sink());
  ASSERT_OK(Push(table, 7, "e"));
  ASSERT_OK(Push(table, 8, "e"));
  ASSERT_NE(table.Begin(8, std::make_shared<StepCancellation>()), nullptr);
  EXPECT_EQ(table.ExpirePending(absl::Now() + absl::Seconds(5)), 0);
  EXPECT_EQ(table.ExpirePending(absl::Now() + absl::Seconds(11)), 1);
  EXPECT_EQ(table.pending(), std::make_pair(0, int64_t{0}));
  // Its RunGraph, had it come, is refused: its tensors are gone.
  EXPECT_EQ(table.Begin(7, std::make_shared<StepCancellation>()), nullptr);
  EXPECT_THAT(log.Read(),
              HasSubstr(absl::StrFormat("dropped %d bytes pushed for 1 steps that did not begin",
                                        4 + Overhead())));
}

}  // namespace
}  // namespace rill
