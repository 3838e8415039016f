#include "kernels/framework/cancellation.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;

TEST(StepCancellation, TheFirstStatusWinsAndCallbacksSeeIt) {
  StepCancellation cancellation;
  EXPECT_FALSE(cancellation.cancelled());
  EXPECT_OK(cancellation.status());
  absl::Status seen;
  StepCancellation::Token token;
  ASSERT_TRUE(cancellation.RegisterCallback([&](const absl::Status& s) { seen = s; }, &token));
  cancellation.Cancel(absl::DataLossError("first"));
  cancellation.Cancel(absl::InternalError("second"));
  EXPECT_TRUE(cancellation.cancelled());
  EXPECT_THAT(cancellation.status(), StatusIs(absl::StatusCode::kDataLoss, "first"));
  EXPECT_THAT(seen, StatusIs(absl::StatusCode::kDataLoss, "first"));
  EXPECT_FALSE(cancellation.DeregisterCallback(token));
}

TEST(StepCancellation, NoCallbackIsTakenOnceCancelled) {
  StepCancellation cancellation;
  cancellation.Cancel(absl::CancelledError("done"));
  StepCancellation::Token token;
  EXPECT_FALSE(cancellation.RegisterCallback([](const absl::Status&) { FAIL(); }, &token));
}

TEST(StepCancellation, ADeregisteredCallbackNeverRuns) {
  StepCancellation cancellation;
  StepCancellation::Token token;
  ASSERT_TRUE(cancellation.RegisterCallback([](const absl::Status&) { FAIL(); }, &token));
  EXPECT_TRUE(cancellation.DeregisterCallback(token));
  cancellation.Cancel(absl::CancelledError("done"));
}

TEST(StepCancellation, DeregisteringWaitsForACallbackRunningElsewhere) {
  StepCancellation cancellation;
  absl::Notification running;
  absl::Notification release;
  bool finished = false;
  StepCancellation::Token token;
  ASSERT_TRUE(cancellation.RegisterCallback(
      [&](const absl::Status&) {
        running.Notify();
        release.WaitForNotification();
        finished = true;
      },
      &token));
  std::thread canceller([&] { cancellation.Cancel(absl::CancelledError("stop")); });
  running.WaitForNotification();
  // The callback is held a while, so that a call that did not wait for it
  // would return before it finished.
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    release.Notify();
  });
  EXPECT_FALSE(cancellation.DeregisterCallback(token));
  EXPECT_TRUE(finished);
  canceller.join();
  releaser.join();
}

TEST(StepCancellation, TryDeregisterForgetsTheCallbackWhileNotCancelled) {
  StepCancellation cancellation;
  StepCancellation::Token token;
  ASSERT_TRUE(cancellation.RegisterCallback([](const absl::Status&) { FAIL(); }, &token));
  EXPECT_TRUE(cancellation.TryDeregisterCallback(token));
  cancellation.Cancel(absl::CancelledError("done"));
}

TEST(StepCancellation, TryDeregisterDoesNotWaitForACallbackRunningElsewhere) {
  StepCancellation cancellation;
  absl::Notification running;
  absl::Notification release;
  StepCancellation::Token token;
  ASSERT_TRUE(cancellation.RegisterCallback(
      [&](const absl::Status&) {
        running.Notify();
        release.WaitForNotification();
      },
      &token));
  std::thread canceller([&] { cancellation.Cancel(absl::CancelledError("stop")); });
  running.WaitForNotification();
  // The callback cannot finish before the call returns: it waits for this
  // thread's release.
  EXPECT_FALSE(cancellation.TryDeregisterCallback(token));
  release.Notify();
  canceller.join();
}

TEST(StepCancellation, ACallbackMayDeregisterItself) {
  StepCancellation cancellation;
  StepCancellation::Token token;
  ASSERT_TRUE(cancellation.RegisterCallback(
      [&](const absl::Status&) { EXPECT_FALSE(cancellation.DeregisterCallback(token)); }, &token));
  cancellation.Cancel(absl::CancelledError("stop"));
}

}  // namespace
}  // namespace rill
