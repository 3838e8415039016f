#include "runtime/worker_step_table.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kWorker0[] = "/job:worker/replica:0/task:0";

PreparedRendezvousKey FromPs(const std::string& edge) {
  return *PreparedRendezvousKey::Prepare(RendezvousKey{
      "/job:ps/replica:0/task:0/device:CPU:0", 1, std::string(kWorker0) + "/device:CPU:0", edge});
}

TEST(WorkerStepTable, APushBeforeTheStepStartsCreatesIt) {
  WorkerStepTable table(kWorker0, nullptr);
  std::shared_ptr<RemoteRendezvous> first = table.Rendezvous(11);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(table.Begin(11, std::make_shared<StepCancellation>()), first);
  EXPECT_NE(table.Rendezvous(12), first);
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
  EXPECT_EQ(table.Rendezvous(11), nullptr);
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
  EXPECT_EQ(table.Rendezvous(3), nullptr);  // A late push is dropped.
}

TEST(WorkerStepTable, RemembersOnlyTheLastEndedSteps) {
  WorkerStepTable table(kWorker0, nullptr);
  for (uint64_t step = 0; step <= WorkerStepTable::kRememberEnded; ++step) table.End(step);
  EXPECT_NE(table.Rendezvous(0), nullptr);  // Forgotten: a new step.
  EXPECT_EQ(table.Rendezvous(1), nullptr);
}

}  // namespace
}  // namespace rill
