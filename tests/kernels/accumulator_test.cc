#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/conditional_accumulator.h"
#include "kernels/cpu/worker_clocks.h"
#include "kernels/framework/cancellation.h"
#include "kernels/framework/resource_mgr.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::KernelTester;
using ::rill::testing::MakeTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::TensorEq;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Started = KernelTester::PendingRun;

Tensor Floats(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return MakeTensor<float>({n}, std::move(values));
}

// One accumulator reached through the ops, with TensorFlow's reference
// handle or (`resource`) a resource handle.
class Accumulator {
 public:
  struct Options {
    PartialTensorShape shape = PartialTensorShape({2});
    DataType dtype = DT_FLOAT;
    std::string reduction = "MEAN";
    bool resource = false;
    std::string shared_name = "grad_accum";
  };

  explicit Accumulator(Options options,
                       std::shared_ptr<ResourceMgr> resources = std::make_shared<ResourceMgr>())
      : options_(std::move(options)), resources_(std::move(resources)) {}

  // Runs the creating op; every other call needs it to have succeeded.
  absl::Status Create() {
    KernelTester t(options_.resource ? "ResourceConditionalAccumulator" : "ConditionalAccumulator");
    t.WithResourceMgr(resources_)
        .Attr("dtype", options_.dtype)
        .Attr("shape", options_.shape)
        .Attr("reduction_type", options_.reduction)
        .Attr("shared_name", options_.shared_name);
    ASSIGN_OR_RETURN(std::vector<TensorValue> out, t.RunValues());
    handle_ = out[0];
    return absl::OkStatus();
  }

  const TensorValue& handle() const { return handle_; }

  absl::Status Apply(int64_t local_step, Tensor gradient) const {
    return Op("AccumulatorApplyGradient")
        .Input<int64_t>({}, {local_step})
        .Input(std::move(gradient))
        .Run()
        .status();
  }
  std::unique_ptr<Started> StartTake(int32_t num_required,
                                     StepCancellation* cancellation = nullptr) const {
    KernelTester t = Op("AccumulatorTakeGradient");
    t.Attr("dtype", options_.dtype).Input<int32_t>({}, {num_required});
    if (cancellation != nullptr) t.WithCancellation(cancellation);
    return t.Start();
  }
  absl::StatusOr<Tensor> Take(int32_t num_required) const {
    ASSIGN_OR_RETURN(std::vector<Tensor> out, StartTake(num_required)->Wait());
    return out[0];
  }
  absl::Status SetGlobalStep(int64_t step) const {
    return Op("AccumulatorSetGlobalStep").Input<int64_t>({}, {step}).Run().status();
  }
  absl::StatusOr<int32_t> NumAccumulated() const {
    ASSIGN_OR_RETURN(Tensor n, Op("AccumulatorNumAccumulated").RunOne());
    return n.scalar<int32_t>();
  }

 private:
  // A tester for `op` (the resource flavour's name when it has one) with
  // the handle as input 0.
  KernelTester Op(const std::string& op) const {
    KernelTester t(options_.resource ? "Resource" + op : op);
    t.WithResourceMgr(resources_);
    if (options_.resource) {
      t.Input(handle_.tensor);
    } else {
      t.RefInput(handle_, "grad_accum");
    }
    return t;
  }

  const Options options_;
  const std::shared_ptr<ResourceMgr> resources_;
  TensorValue handle_;
};

// An accumulator of float [2] gradients, created.
Accumulator MakeAccumulator(Accumulator::Options options = {}) {
  Accumulator accumulator(std::move(options));
  EXPECT_OK(accumulator.Create());
  return accumulator;
}

TEST(ConditionalAccumulator, TakeAveragesByTheNumberOfGradientsReceived) {
  Accumulator acc = MakeAccumulator();
  ASSERT_OK(acc.Apply(0, Floats({1, 2})));
  ASSERT_OK(acc.Apply(0, Floats({3, 4})));
  ASSERT_OK(acc.Apply(0, Floats({5, 9})));
  EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(3));
  // Three arrived though two were required: the mean is over three.
  EXPECT_THAT(acc.Take(2), IsOkAndHolds(TensorEq(Floats({3, 5}))));
  EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(0));
}

TEST(ConditionalAccumulator, HandleIsTheContainerAndNameVector) {
  Accumulator acc = MakeAccumulator();
  ASSERT_TRUE(acc.handle().is_ref());
  EXPECT_THAT(acc.handle().Value(),
              TensorEq(MakeTensor<std::string>({2}, {"localhost", "grad_accum"})));
}

TEST(ConditionalAccumulator, TakeWaitsUntilEnoughGradientsArrive) {
  Accumulator acc = MakeAccumulator();
  std::unique_ptr<Started> take = acc.StartTake(2);
  EXPECT_FALSE(take->finished());
  ASSERT_OK(acc.Apply(0, Floats({1, 2})));
  EXPECT_FALSE(take->finished());
  ASSERT_OK(acc.Apply(0, Floats({3, 6})));
  // The apply that completes the round serves the take before it returns.
  EXPECT_TRUE(take->finished());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, take->Wait());
  EXPECT_THAT(out[0], TensorEq(Floats({2, 4})));
}

TEST(ConditionalAccumulator, DropsGradientsOlderThanTheGlobalStep) {
  Accumulator acc = MakeAccumulator();
  ASSERT_OK(acc.Apply(0, Floats({1, 1})));
  ASSERT_OK(acc.Take(1).status());              // The global step is now 1.
  ASSERT_OK(acc.Apply(0, Floats({100, 100})));  // Stale: dropped, still OK.
  EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(0));
  ASSERT_OK(acc.Apply(1, Floats({2, 4})));
  ASSERT_OK(acc.Apply(7, Floats({4, 6})));  // Ahead of the step: counted.
  EXPECT_THAT(acc.Take(2), IsOkAndHolds(TensorEq(Floats({3, 5}))));
}

TEST(ConditionalAccumulator, SetGlobalStepForwardDiscardsTheSum) {
  Accumulator acc = MakeAccumulator();
  ASSERT_OK(acc.Apply(0, Floats({100, 100})));
  ASSERT_OK(acc.Apply(0, Floats({100, 100})));
  ASSERT_OK(acc.SetGlobalStep(5));
  EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(0));
  ASSERT_OK(acc.Apply(4, Floats({100, 100})));  // Stale now.
  ASSERT_OK(acc.Apply(5, Floats({1, 2})));
  // Moving back keeps what was accumulated.
  ASSERT_OK(acc.SetGlobalStep(3));
  EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(1));
  ASSERT_OK(acc.Apply(3, Floats({3, 4})));
  EXPECT_THAT(acc.Take(2), IsOkAndHolds(TensorEq(Floats({2, 3}))));
}

TEST(ConditionalAccumulator, RejectsAGradientOfTheWrongShape) {
  Accumulator acc = MakeAccumulator();
  EXPECT_THAT(acc.Apply(0, Floats({1, 2, 3})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("grad_accum"), HasSubstr("[2]"), HasSubstr("[3]"))));
  EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(0));
}

TEST(ConditionalAccumulator, GradientsOfARoundMustAgreeWhenTheShapeIsPartial) {
  Accumulator acc = MakeAccumulator({.shape = PartialTensorShape({-1})});
  ASSERT_OK(acc.Apply(0, Floats({1, 2})));
  EXPECT_THAT(
      acc.Apply(0, Floats({1, 2, 3})),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("grad_accum"), HasSubstr("[?]"),
                                                         HasSubstr("[2]"), HasSubstr("[3]"))));
  // A new round may have another shape.
  ASSERT_OK(acc.Take(1).status());
  ASSERT_OK(acc.Apply(1, Floats({1, 2, 3})));
}

TEST(ConditionalAccumulator, RejectsANonPositiveNumRequired) {
  Accumulator acc = MakeAccumulator();
  for (int32_t n : {0, -1}) {
    EXPECT_THAT(acc.Take(n), StatusIs(absl::StatusCode::kInvalidArgument,
                                      AllOf(HasSubstr("grad_accum"), HasSubstr("positive"))));
  }
}

TEST(ConditionalAccumulator, CancellingTheStepEndsAWaitingTake) {
  Accumulator acc = MakeAccumulator();
  StepCancellation step;
  std::unique_ptr<Started> take = acc.StartTake(1, &step);
  EXPECT_FALSE(take->finished());
  step.Cancel(absl::CancelledError("the step was stopped"));
  EXPECT_TRUE(take->finished());
  EXPECT_THAT(take->Wait(), StatusIs(absl::StatusCode::kCancelled,
                                     AllOf(HasSubstr("grad_accum"), HasSubstr("was cancelled"))));
  // The cancelled take consumed nothing.
  ASSERT_OK(acc.Apply(0, Floats({1, 2})));
  EXPECT_THAT(acc.Take(1), IsOkAndHolds(TensorEq(Floats({1, 2}))));
}

TEST(ConditionalAccumulator, TakeInACancelledStepFailsAtOnce) {
  Accumulator acc = MakeAccumulator();
  StepCancellation step;
  step.Cancel(absl::CancelledError("the step was stopped"));
  EXPECT_THAT(acc.StartTake(1, &step)->Wait(),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("was cancelled")));
}

TEST(ConditionalAccumulator, ServedTakeIsNotCancelledLater) {
  Accumulator acc = MakeAccumulator();
  StepCancellation step;
  std::unique_ptr<Started> take = acc.StartTake(1, &step);
  ASSERT_OK(acc.Apply(0, Floats({1, 2})));
  step.Cancel(absl::CancelledError("the step ended with an error elsewhere"));
  EXPECT_THAT(take->Wait(), IsOkAndHolds(ElementsAre(TensorEq(Floats({1, 2})))));
}

// Whichever of the apply and the cancellation wins, the take finishes once
// and the gradient is either taken or still there.
TEST(ConditionalAccumulator, ApplyRacingACancellationFinishesTheTakeOnce) {
  for (int i = 0; i < 200; ++i) {
    Accumulator acc = MakeAccumulator();
    StepCancellation step;
    std::unique_ptr<Started> take = acc.StartTake(1, &step);
    std::thread canceller([&] { step.Cancel(absl::CancelledError("stopped")); });
    ASSERT_OK(acc.Apply(0, Floats({1, 2})));
    canceller.join();
    const absl::StatusOr<std::vector<Tensor>> taken = take->Wait();
    if (taken.ok()) {
      EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(0));
    } else {
      EXPECT_THAT(taken, StatusIs(absl::StatusCode::kCancelled, HasSubstr("was cancelled")));
      EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(1));
    }
  }
}

TEST(ConditionalAccumulator, ServesTakesInTheOrderTheyArrive) {
  Accumulator acc = MakeAccumulator();
  std::unique_ptr<Started> first = acc.StartTake(2);
  std::unique_ptr<Started> second = acc.StartTake(1);
  ASSERT_OK(acc.Apply(0, Floats({1, 1})));
  // Enough for the second, but the first came first.
  EXPECT_FALSE(first->finished());
  EXPECT_FALSE(second->finished());
  ASSERT_OK(acc.Apply(0, Floats({3, 3})));
  EXPECT_TRUE(first->finished());
  EXPECT_FALSE(second->finished());
  ASSERT_OK(acc.Apply(1, Floats({5, 6})));
  EXPECT_THAT(first->Wait(), IsOkAndHolds(ElementsAre(TensorEq(Floats({2, 2})))));
  EXPECT_THAT(second->Wait(), IsOkAndHolds(ElementsAre(TensorEq(Floats({5, 6})))));
}

TEST(ConditionalAccumulator, SumReductionReturnsTheSum) {
  Accumulator acc = MakeAccumulator({.reduction = "SUM"});
  ASSERT_OK(acc.Apply(0, Floats({1, 2})));
  ASSERT_OK(acc.Apply(0, Floats({3, 4})));
  EXPECT_THAT(acc.Take(2), IsOkAndHolds(TensorEq(Floats({4, 6}))));
  // The next round starts from nothing.
  ASSERT_OK(acc.Apply(1, Floats({1, 1})));
  EXPECT_THAT(acc.Take(1), IsOkAndHolds(TensorEq(Floats({1, 1}))));
}

TEST(ConditionalAccumulator, AveragesDoublesAndIntegers) {
  Accumulator doubles = MakeAccumulator({.dtype = DT_DOUBLE});
  ASSERT_OK(doubles.Apply(0, MakeTensor<double>({2}, {1, 2})));
  ASSERT_OK(doubles.Apply(0, MakeTensor<double>({2}, {2, 2})));
  EXPECT_THAT(doubles.Take(2), IsOkAndHolds(TensorEq(MakeTensor<double>({2}, {1.5, 2}))));
  Accumulator ints = MakeAccumulator({.dtype = DT_INT32});
  ASSERT_OK(ints.Apply(0, MakeTensor<int32_t>({2}, {1, 9})));
  ASSERT_OK(ints.Apply(0, MakeTensor<int32_t>({2}, {4, 9})));
  EXPECT_THAT(ints.Take(2), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({2}, {2, 9}))));
}

TEST(ConditionalAccumulator, RejectsAGradientOfAnotherDtype) {
  Accumulator acc = MakeAccumulator();
  EXPECT_THAT(acc.Apply(0, MakeTensor<double>({2}, {1, 2})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("grad_accum"), HasSubstr("float"), HasSubstr("double"))));
}

TEST(ConditionalAccumulator, ResourceFlavourHasTheSameSemantics) {
  Accumulator acc = MakeAccumulator({.resource = true});
  ASSERT_EQ(acc.handle().tensor.dtype(), DT_RESOURCE);
  std::unique_ptr<Started> take = acc.StartTake(2);
  ASSERT_OK(acc.Apply(0, Floats({1, 2})));
  EXPECT_THAT(acc.NumAccumulated(), IsOkAndHolds(1));
  ASSERT_OK(acc.Apply(0, Floats({3, 4})));
  EXPECT_THAT(take->Wait(), IsOkAndHolds(ElementsAre(TensorEq(Floats({2, 3})))));
  ASSERT_OK(acc.Apply(0, Floats({9, 9})));  // Stale.
  ASSERT_OK(acc.SetGlobalStep(2));
  ASSERT_OK(acc.Apply(2, Floats({1, 1})));
  EXPECT_THAT(acc.Take(1), IsOkAndHolds(TensorEq(Floats({1, 1}))));
}

TEST(ConditionalAccumulator, NodesWithTheSameSharedNameShareIt) {
  auto resources = std::make_shared<ResourceMgr>();
  Accumulator a({}, resources);
  Accumulator b({}, resources);
  ASSERT_OK(a.Create());
  ASSERT_OK(b.Create());
  EXPECT_EQ(a.handle().ref, b.handle().ref);
  ASSERT_OK(a.Apply(0, Floats({1, 2})));
  EXPECT_THAT(b.NumAccumulated(), IsOkAndHolds(1));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ConditionalAccumulator> shared,
                       resources->Lookup<ConditionalAccumulator>(kDefaultContainer, "grad_accum"));
  EXPECT_EQ(shared->num_accumulated(), 1);

  Accumulator other({.shape = PartialTensorShape({3}), .dtype = DT_DOUBLE}, resources);
  EXPECT_THAT(other.Create(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       AllOf(HasSubstr("grad_accum"), HasSubstr("float [2]"),
                                             HasSubstr("double [3]"))));
}

TEST(ConditionalAccumulator, MissingAccumulatorIsNotFound) {
  Tensor handle = MakeTensor<std::string>({2}, {"localhost", "nowhere"});
  KernelTester t("AccumulatorNumAccumulated");
  t.RefInput(&handle);
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kNotFound, HasSubstr("nowhere")));
}

TEST(ConditionalAccumulator, DeletingItAbortsAWaitingTake) {
  auto resources = std::make_shared<ResourceMgr>();
  Accumulator acc({}, resources);
  ASSERT_OK(acc.Create());
  std::unique_ptr<Started> take = acc.StartTake(1);
  ASSERT_OK(resources->Delete(kDefaultContainer, "grad_accum"));
  EXPECT_THAT(take->Wait(), StatusIs(absl::StatusCode::kAborted, HasSubstr("deleted")));
}

// WorkerClocks reached through the ops.
class Clocks {
 public:
  explicit Clocks(int num_workers) {
    KernelTester t("WorkerClocks");
    t.WithResourceMgr(resources_)
        .Attr("num_workers", int64_t{num_workers})
        .Attr("shared_name", "clocks");
    absl::StatusOr<Tensor> handle = t.RunOne();
    EXPECT_OK(handle.status());
    if (handle.ok()) handle_ = *std::move(handle);
  }

  const std::shared_ptr<ResourceMgr>& resources() const { return resources_; }

  std::unique_ptr<Started> StartTick(int32_t worker, int64_t staleness = -1,
                                     int64_t timeout_ms = -1,
                                     StepCancellation* cancellation = nullptr) const {
    KernelTester t("WorkerClocksTick");
    t.WithResourceMgr(resources_)
        .Attr("staleness", staleness)
        .Attr("timeout_ms", timeout_ms)
        .Input(handle_)
        .Input<int32_t>({}, {worker});
    if (cancellation != nullptr) t.WithCancellation(cancellation);
    return t.Start();
  }
  // The tick's (clock, slowest), waiting for it.
  absl::StatusOr<std::pair<int64_t, int64_t>> Tick(int32_t worker, int64_t staleness = -1,
                                                   int64_t timeout_ms = -1) const {
    return Released(StartTick(worker, staleness, timeout_ms).get());
  }
  static absl::StatusOr<std::pair<int64_t, int64_t>> Released(Started* tick) {
    ASSIGN_OR_RETURN(std::vector<Tensor> out, tick->Wait());
    return std::make_pair(out[0].scalar<int64_t>(), out[1].scalar<int64_t>());
  }
  absl::Status Retire(int32_t worker) const {
    KernelTester t("WorkerClocksRetire");
    t.WithResourceMgr(resources_).Input(handle_).Input<int32_t>({}, {worker});
    return t.Run().status();
  }
  absl::StatusOr<std::vector<Tensor>> State() const {
    KernelTester t("WorkerClocksState");
    t.WithResourceMgr(resources_).Input(handle_);
    return t.Run();
  }

 private:
  std::shared_ptr<ResourceMgr> resources_ = std::make_shared<ResourceMgr>();
  Tensor handle_;
};

using Pair = std::pair<int64_t, int64_t>;

TEST(WorkerClocks, TickWithoutABoundReturnsAtOnce) {
  Clocks clocks(2);
  EXPECT_THAT(clocks.Tick(0), IsOkAndHolds(Pair(1, 0)));
  EXPECT_THAT(clocks.Tick(0), IsOkAndHolds(Pair(2, 0)));
  EXPECT_THAT(clocks.Tick(0), IsOkAndHolds(Pair(3, 0)));
}

TEST(WorkerClocks, AWorkerTooFarAheadWaitsForTheSlowest) {
  Clocks clocks(2);
  EXPECT_THAT(clocks.Tick(0, /*staleness=*/1), IsOkAndHolds(Pair(1, 0)));
  std::unique_ptr<Started> ahead = clocks.StartTick(0, /*staleness=*/1);
  EXPECT_FALSE(ahead->finished());
  EXPECT_THAT(clocks.Tick(1, /*staleness=*/1), IsOkAndHolds(Pair(1, 1)));
  EXPECT_TRUE(ahead->finished());
  EXPECT_THAT(Clocks::Released(ahead.get()), IsOkAndHolds(Pair(2, 1)));
}

TEST(WorkerClocks, ZeroStalenessIsLockstep) {
  Clocks clocks(3);
  std::unique_ptr<Started> first = clocks.StartTick(0, 0);
  std::unique_ptr<Started> second = clocks.StartTick(2, 0);
  EXPECT_FALSE(first->finished());
  EXPECT_FALSE(second->finished());
  // The last worker to finish the step releases everyone, itself included.
  EXPECT_THAT(clocks.Tick(1, 0), IsOkAndHolds(Pair(1, 1)));
  EXPECT_THAT(Clocks::Released(first.get()), IsOkAndHolds(Pair(1, 1)));
  EXPECT_THAT(Clocks::Released(second.get()), IsOkAndHolds(Pair(1, 1)));
}

// A worker that finished training holds nobody back, whether others
// already wait for it or tick later; if it comes back, it counts again,
// from the slowest live worker's step.
TEST(WorkerClocks, ARetiredWorkerHoldsNobodyBackUntilItTicksAgain) {
  Clocks clocks(3);
  ASSERT_OK(clocks.Tick(2).status());
  std::unique_ptr<Started> waiting = clocks.StartTick(0, /*staleness=*/0);
  EXPECT_FALSE(waiting->finished());
  ASSERT_OK(clocks.Retire(1));
  EXPECT_THAT(Clocks::Released(waiting.get()), IsOkAndHolds(Pair(1, 1)));
  EXPECT_THAT(clocks.Tick(2, /*staleness=*/1), IsOkAndHolds(Pair(2, 1)));

  // Back: it was at step 0, the slowest live worker at 1; it finishes 2.
  EXPECT_THAT(clocks.Tick(1), IsOkAndHolds(Pair(2, 1)));
  std::unique_ptr<Started> ahead = clocks.StartTick(2, /*staleness=*/1);
  EXPECT_FALSE(ahead->finished());
  ASSERT_OK(clocks.Tick(0).status());
  EXPECT_THAT(Clocks::Released(ahead.get()), IsOkAndHolds(Pair(3, 2)));
}

TEST(WorkerClocks, WhenAllHaveRetiredATickWaitsForNobody) {
  Clocks clocks(2);
  ASSERT_OK(clocks.Retire(0));
  ASSERT_OK(clocks.Retire(1));
  EXPECT_THAT(clocks.Tick(0, /*staleness=*/0), IsOkAndHolds(Pair(1, 1)));
}

TEST(WorkerClocks, TimeoutIsAbortedAndNamesAWorkerNeverHeard) {
  Clocks clocks(3);
  ASSERT_OK(clocks.Tick(2).status());
  EXPECT_THAT(clocks.Tick(0, /*staleness=*/0, /*timeout_ms=*/20),
              StatusIs(absl::StatusCode::kAborted,
                       AllOf(HasSubstr("clocks"), HasSubstr("worker 0 finished step 1"),
                             HasSubstr("at most 0 steps ahead"),
                             HasSubstr("worker 1 is at step 0, never heard"),
                             Not(HasSubstr("worker 2 is")), HasSubstr("waited"))));
}

TEST(WorkerClocks, TimeoutSaysWhenTheLateWorkerWasLastHeard) {
  Clocks clocks(2);
  ASSERT_OK(clocks.Tick(1).status());
  ASSERT_OK(clocks.Tick(0).status());
  EXPECT_THAT(clocks.Tick(0, /*staleness=*/0, /*timeout_ms=*/20),
              StatusIs(absl::StatusCode::kAborted,
                       AllOf(HasSubstr("worker 0 finished step 2"),
                             HasSubstr("worker 1 is at step 1, last heard"), HasSubstr("s ago"))));
}

TEST(WorkerClocks, CancellingTheStepEndsTheWait) {
  Clocks clocks(2);
  StepCancellation step;
  std::unique_ptr<Started> tick = clocks.StartTick(0, 0, -1, &step);
  EXPECT_FALSE(tick->finished());
  step.Cancel(absl::CancelledError("the step was stopped"));
  EXPECT_THAT(tick->Wait(), StatusIs(absl::StatusCode::kCancelled,
                                     AllOf(HasSubstr("cancelled"), HasSubstr("worker 1"))));
  // A later tick of the slow worker releases no one twice.
  EXPECT_THAT(clocks.Tick(1, 0), IsOkAndHolds(Pair(1, 1)));
}

TEST(WorkerClocks, ReleasedTickIgnoresALaterTimeoutAndCancellation) {
  Clocks clocks(2);
  StepCancellation step;
  std::unique_ptr<Started> tick = clocks.StartTick(0, 0, /*timeout_ms=*/60000, &step);
  EXPECT_THAT(clocks.Tick(1, 0), IsOkAndHolds(Pair(1, 1)));
  step.Cancel(absl::CancelledError("the step ended"));
  EXPECT_THAT(Clocks::Released(tick.get()), IsOkAndHolds(Pair(1, 1)));
}

// A release, a timeout and a cancellation racing each other finish the
// tick once.
TEST(WorkerClocks, ReleaseRacingTimeoutAndCancellationFinishesTheTickOnce) {
  for (int i = 0; i < 200; ++i) {
    Clocks clocks(2);
    StepCancellation step;
    std::unique_ptr<Started> tick = clocks.StartTick(0, 0, /*timeout_ms=*/0, &step);
    std::thread canceller([&] { step.Cancel(absl::CancelledError("stopped")); });
    EXPECT_THAT(clocks.Tick(1, 0), IsOkAndHolds(Pair(1, 1)));
    canceller.join();
    const absl::StatusOr<Pair> released = Clocks::Released(tick.get());
    if (!released.ok()) {
      EXPECT_THAT(released.status().code(),
                  ::testing::AnyOf(absl::StatusCode::kAborted, absl::StatusCode::kCancelled));
    } else {
      EXPECT_EQ(*released, Pair(1, 1));
    }
  }
}

TEST(WorkerClocks, StateReportsClocksAndWhenWorkersWereHeard) {
  Clocks clocks(3);
  ASSERT_OK(clocks.Tick(0).status());
  ASSERT_OK(clocks.Tick(0).status());
  ASSERT_OK(clocks.Tick(2).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> state, clocks.State());
  EXPECT_THAT(state[0], TensorEq(MakeTensor<int64_t>({3}, {2, 0, 1})));
  ASSERT_EQ(state[1].NumElements(), 3);
  const double* seconds = state[1].data<double>();
  EXPECT_GE(seconds[0], 0.0);
  EXPECT_EQ(seconds[1], -1.0);
  EXPECT_GE(seconds[2], 0.0);
}

TEST(WorkerClocks, RejectsAWorkerOutOfRange) {
  Clocks clocks(2);
  for (int32_t worker : {2, -1}) {
    EXPECT_THAT(clocks.Tick(worker), StatusIs(absl::StatusCode::kInvalidArgument,
                                              AllOf(HasSubstr("clocks"), HasSubstr("worker"))));
    EXPECT_THAT(clocks.Retire(worker),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not one of them")));
  }
}

TEST(WorkerClocks, SharedNodesMustAgreeOnTheNumberOfWorkers) {
  Clocks clocks(2);
  KernelTester t("WorkerClocks");
  t.WithResourceMgr(clocks.resources())
      .Attr("num_workers", int64_t{3})
      .Attr("shared_name", "clocks");
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("clocks"), HasSubstr("2"), HasSubstr("3"))));
}

TEST(WorkerClocks, DeletingThemAbortsAWaitingTick) {
  Clocks clocks(2);
  std::unique_ptr<Started> tick = clocks.StartTick(0, 0);
  ASSERT_OK(clocks.resources()->Delete(kDefaultContainer, "clocks"));
  EXPECT_THAT(tick->Wait(), StatusIs(absl::StatusCode::kAborted, HasSubstr("deleted")));
}

}  // namespace
}  // namespace rill
