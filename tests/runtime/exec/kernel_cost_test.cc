#include "runtime/exec/kernel_cost.h"

#include <gtest/gtest.h>

namespace rill {
namespace {

// Records `nanos` for whichever way the cost chose, `times` times, and
// returns how many of those runs used the pool.
int RunMany(KernelCost& cost, int times, int64_t serial_nanos, int64_t parallel_nanos) {
  int parallel_runs = 0;
  for (int i = 0; i < times; ++i) {
    const bool parallel = cost.UseParallel();
    parallel_runs += parallel;
    cost.Record(parallel, parallel ? parallel_nanos : serial_nanos);
  }
  return parallel_runs;
}

TEST(KernelCost, EstimateIsZeroUntilARunIsRecorded) {
  KernelCost cost;
  EXPECT_EQ(cost.EstimateNanos(), 0);
  cost.Record(false, 700);
  EXPECT_EQ(cost.EstimateNanos(), 700);
}

TEST(KernelCost, TriesThePoolFirstThenAlternatesUntilBothAreMeasured) {
  KernelCost cost;
  for (const bool expected : {true, false, true, false}) {
    const bool parallel = cost.UseParallel();
    EXPECT_EQ(parallel, expected);
    cost.Record(parallel, 1000);
  }
}

TEST(KernelCost, KeepsTheFasterWayAndRetriesTheOtherNowAndThen) {
  // The other way takes 3x as long: one retry every 3 * kRetryEvery runs.
  constexpr int kRuns = 10 * 3 * KernelCost::kRetryEvery;
  KernelCost serial_wins;
  RunMany(serial_wins, 4, /*serial_nanos=*/1000, /*parallel_nanos=*/3000);
  EXPECT_EQ(RunMany(serial_wins, kRuns, 1000, 3000), 10);

  KernelCost parallel_wins;
  RunMany(parallel_wins, 4, /*serial_nanos=*/3000, /*parallel_nanos=*/1000);
  EXPECT_EQ(RunMany(parallel_wins, kRuns, 3000, 1000), kRuns - 10);
}

TEST(KernelCost, RetriesAMuchSlowerWayRarely) {
  KernelCost cost;
  RunMany(cost, 4, /*serial_nanos=*/1000, /*parallel_nanos=*/1'000'000);
  constexpr int kRuns = 2 * KernelCost::kRetryEvery * KernelCost::kMaxRetrySpacing;
  EXPECT_EQ(RunMany(cost, kRuns, 1000, 1'000'000), 2);
}

TEST(KernelCost, FirstRunOfAWayIsOnlyAWarmUp) {
  KernelCost cost;
  cost.Record(false, 1'000'000);  // Cold caches, fresh pages.
  cost.Record(false, 1000);
  EXPECT_EQ(cost.EstimateNanos(), 1000);
}

TEST(KernelCost, FollowsAKernelWhoseInputsGrow) {
  KernelCost cost;
  RunMany(cost, 4, /*serial_nanos=*/1000, /*parallel_nanos=*/3000);
  // Bigger inputs: now the pool halves the time. The retries notice.
  RunMany(cost, 20 * KernelCost::kRetryEvery, /*serial_nanos=*/100'000,
          /*parallel_nanos=*/50'000);
  EXPECT_GT(RunMany(cost, KernelCost::kRetryEvery, 100'000, 50'000), KernelCost::kRetryEvery / 2);
  EXPECT_LE(cost.EstimateNanos(), 100'000);
}

}  // namespace
}  // namespace rill
