#include "kernels/framework/timer.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rill {
namespace {

TEST(Timer, RunsCallbacksInDeadlineOrder) {
  Timer timer;
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification last;
  const absl::Time now = absl::Now();
  timer.Schedule(now + absl::Milliseconds(60), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(3);
    last.Notify();
  });
  timer.Schedule(now + absl::Milliseconds(20), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(2);
  });
  timer.Schedule(now - absl::Seconds(1), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(1);
  });
  ASSERT_TRUE(last.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::MutexLock lock(&mu);
  EXPECT_THAT(order, ::testing::ElementsAre(1, 2, 3));
}

TEST(Timer, ACancelledCallbackNeverRuns) {
  Timer timer;
  std::atomic<bool> ran{false};
  const Timer::Id id = timer.Schedule(absl::Now() + absl::Milliseconds(50), [&] { ran = true; });
  EXPECT_TRUE(timer.Cancel(id));
  absl::Notification later;
  timer.Schedule(absl::Now() + absl::Milliseconds(100), [&] { later.Notify(); });
  ASSERT_TRUE(later.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(ran.load());
  EXPECT_FALSE(timer.Cancel(id));
}

TEST(Timer, CancellingARunningCallbackWaitsForIt) {
  Timer timer;
  absl::Notification started;
  absl::Notification release;
  std::atomic<bool> finished{false};
  const Timer::Id id = timer.Schedule(absl::Now(), [&] {
    started.Notify();
    release.WaitForNotification();
    finished = true;
  });
  started.WaitForNotification();
  // The callback is held a while, so that a call that did not wait for it
  // would return before it finished.
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    release.Notify();
  });
  EXPECT_FALSE(timer.Cancel(id));
  EXPECT_TRUE(finished.load());
  releaser.join();
}

TEST(Timer, ACallbackMayCancelItself) {
  Timer timer;
  absl::Notification done;
  Timer::Id id = 0;
  absl::Mutex mu;
  {
    absl::MutexLock lock(&mu);
    id = timer.Schedule(absl::Now(), [&] {
      absl::MutexLock lock(&mu);
      EXPECT_FALSE(timer.Cancel(id));
      done.Notify();
    });
  }
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

}  // namespace
}  // namespace rill
