// The FIFO queue kernels, run as the executor runs them: blocking requests
// are started without waiting (KernelTester::Start) and finished by later
// kernels, timeouts or the step's cancellation.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/fifo_queue.h"
#include "kernels/framework/cancellation.h"
#include "kernels/framework/resource_mgr.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::KernelTester;
using ::rill::testing::MakeTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::TensorEq;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Kernels that share one device's resource manager, as the nodes of
// several steps and sessions do.
class QueueTest : public ::testing::Test {
 protected:
  struct QueueSpec {
    DataTypeVector types = {};
    std::vector<PartialTensorShape> shapes = {};
    int64_t capacity = -1;
    std::string shared_name = "q";
  };

  KernelTester Op(const char* op) const {
    KernelTester t(op);
    t.WithResourceMgr(resources_);
    return t;
  }

  // Runs FIFOQueueV2 and returns its handle.
  Tensor NewQueue(const QueueSpec& spec) const {
    KernelTester t = Op("FIFOQueueV2");
    t.Attr("component_types", spec.types)
        .Attr("shapes", spec.shapes)
        .Attr("capacity", spec.capacity)
        .Attr("shared_name", spec.shared_name);
    absl::StatusOr<Tensor> handle = t.RunOne();
    EXPECT_OK(handle);
    return handle.ok() ? *handle : Tensor();
  }

  KernelTester Enqueue(const Tensor& queue, std::vector<Tensor> components,
                       int64_t timeout_ms = -1) const {
    KernelTester t = Op("QueueEnqueueV2");
    t.Input(queue).InputList(std::move(components)).Attr("timeout_ms", timeout_ms);
    return t;
  }

  KernelTester EnqueueMany(const Tensor& queue, std::vector<Tensor> components) const {
    KernelTester t = Op("QueueEnqueueManyV2");
    t.Input(queue).InputList(std::move(components));
    return t;
  }

  KernelTester Dequeue(const Tensor& queue, DataTypeVector types, int64_t timeout_ms = -1) const {
    KernelTester t = Op("QueueDequeueV2");
    t.Input(queue).Attr("component_types", types).Attr("timeout_ms", timeout_ms);
    return t;
  }

  // QueueDequeueManyV2, or with `up_to` QueueDequeueUpToV2.
  KernelTester DequeueMany(const Tensor& queue, int32_t n, DataTypeVector types,
                           int64_t timeout_ms = -1, bool up_to = false) const {
    KernelTester t = Op(up_to ? "QueueDequeueUpToV2" : "QueueDequeueManyV2");
    t.Input(queue)
        .Input(Tensor::Scalar<int32_t>(n))
        .Attr("component_types", types)
        .Attr("timeout_ms", timeout_ms);
    return t;
  }

  absl::Status Close(const Tensor& queue, bool cancel_pending_enqueues = false) const {
    KernelTester t = Op("QueueCloseV2");
    t.Input(queue).Attr("cancel_pending_enqueues", cancel_pending_enqueues);
    return t.Run().status();
  }

  int32_t Size(const Tensor& queue) const {
    KernelTester t = Op("QueueSizeV2");
    t.Input(queue);
    absl::StatusOr<Tensor> size = t.RunOne();
    EXPECT_OK(size);
    return size.ok() ? size->scalar<int32_t>() : -1;
  }

  // The single int32 element dequeued now, or -1 (and a failure).
  int32_t DequeueInt(const Tensor& queue) const {
    absl::StatusOr<Tensor> out = Dequeue(queue, {DT_INT32}).RunOne();
    EXPECT_OK(out);
    return out.ok() ? out->scalar<int32_t>() : -1;
  }

  std::shared_ptr<ResourceMgr> resources_ = std::make_shared<ResourceMgr>();
};

Tensor Int(int32_t v) { return Tensor::Scalar<int32_t>(v); }

// A known scalar shape ({} would be an unknown one).
const PartialTensorShape kScalar = TensorShape();

TEST_F(QueueTest, DequeuesInEnqueueOrder) {
  const Tensor q = NewQueue({.types = {DT_INT32}});
  for (int32_t v : {3, 1, 2}) ASSERT_OK(Enqueue(q, {Int(v)}).Run());
  EXPECT_EQ(Size(q), 3);
  EXPECT_EQ(DequeueInt(q), 3);
  EXPECT_EQ(DequeueInt(q), 1);
  EXPECT_EQ(DequeueInt(q), 2);
  EXPECT_EQ(Size(q), 0);
}

TEST_F(QueueTest, EnqueueManySplitsAndDequeueManyStacksEveryComponent) {
  const Tensor q = NewQueue({.types = {DT_INT64, DT_FLOAT}, .shapes = {kScalar, {2}}});
  ASSERT_OK(EnqueueMany(q, {MakeTensor<int64_t>({3}, {10, 20, 30}),
                            MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6})})
                .Run());
  EXPECT_EQ(Size(q), 3);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> two, DequeueMany(q, 2, {DT_INT64, DT_FLOAT}).Run());
  EXPECT_THAT(two[0], TensorEq(MakeTensor<int64_t>({2}, {10, 20})));
  EXPECT_THAT(two[1], TensorEq(MakeTensor<float>({2, 2}, {1, 2, 3, 4})));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> one, Dequeue(q, {DT_INT64, DT_FLOAT}).Run());
  EXPECT_THAT(one[0], TensorEq(Tensor::Scalar<int64_t>(30)));
  EXPECT_THAT(one[1], TensorEq(MakeTensor<float>({2}, {5, 6})));
}

TEST_F(QueueTest, HoldsStrings) {
  const Tensor q = NewQueue({.types = {DT_STRING}, .shapes = {{2}}});
  Tensor batch(DT_STRING, TensorShape({2, 2}));
  const std::vector<std::string> words = {"a", "bb", "ccc", "dddd"};
  for (int i = 0; i < 4; ++i) batch.data<std::string>()[i] = words[i];
  ASSERT_OK(EnqueueMany(q, {batch}).Run());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, DequeueMany(q, 2, {DT_STRING}).Run());
  EXPECT_THAT(out[0], TensorEq(batch));
}

TEST_F(QueueTest, TheQueueKeepsACopyOfWhatWasEnqueued) {
  const Tensor q = NewQueue({.types = {DT_FLOAT}});
  Tensor value = MakeTensor<float>({2}, {1, 2});
  ASSERT_OK(Enqueue(q, {value}).Run());
  value.data<float>()[0] = 9;  // As a variable updated in place after the enqueue.
  ASSERT_OK_AND_ASSIGN(Tensor out, Dequeue(q, {DT_FLOAT}).RunOne());
  EXPECT_THAT(out, TensorEq(MakeTensor<float>({2}, {1, 2})));
}

TEST_F(QueueTest, DequeueManyOfZeroGivesEmptyBatches) {
  const Tensor q = NewQueue({.types = {DT_FLOAT}, .shapes = {{3}}});
  ASSERT_OK_AND_ASSIGN(Tensor out, DequeueMany(q, 0, {DT_FLOAT}).RunOne());
  EXPECT_EQ(out.shape(), TensorShape({0, 3}));
}

TEST_F(QueueTest, ADequeueWaitsWithoutAThreadAndFinishesOnTheNextEnqueue) {
  const Tensor q = NewQueue({.types = {DT_INT32}});
  std::unique_ptr<KernelTester::PendingRun> dequeue = Dequeue(q, {DT_INT32}).Start();
  // Start returned: the dequeue is parked in the queue, not on a thread.
  EXPECT_FALSE(dequeue->finished());
  ASSERT_OK(Enqueue(q, {Int(7)}).Run());
  ASSERT_TRUE(dequeue->finished());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, dequeue->Wait());
  EXPECT_THAT(out[0], TensorEq(Int(7)));
  EXPECT_EQ(Size(q), 0);
}

TEST_F(QueueTest, WaitingDequeuesAreServedInArrivalOrder) {
  const Tensor q = NewQueue({.types = {DT_INT32}});
  auto first = Dequeue(q, {DT_INT32}).Start();
  auto second = Dequeue(q, {DT_INT32}).Start();
  ASSERT_OK(Enqueue(q, {Int(1)}).Run());
  EXPECT_TRUE(first->finished());
  EXPECT_FALSE(second->finished());
  ASSERT_OK(Enqueue(q, {Int(2)}).Run());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> a, first->Wait());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> b, second->Wait());
  EXPECT_THAT(a[0], TensorEq(Int(1)));
  EXPECT_THAT(b[0], TensorEq(Int(2)));
}

TEST_F(QueueTest, AFullQueueHoldsAnEnqueueUntilADequeueMakesRoom) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .capacity = 1});
  ASSERT_OK(Enqueue(q, {Int(1)}).Run());
  auto blocked = Enqueue(q, {Int(2)}).Start();
  EXPECT_FALSE(blocked->finished());
  EXPECT_EQ(Size(q), 1);
  EXPECT_EQ(DequeueInt(q), 1);
  ASSERT_TRUE(blocked->finished());
  EXPECT_OK(blocked->Wait());
  EXPECT_EQ(DequeueInt(q), 2);
}

TEST_F(QueueTest, ABatchLargerThanTheCapacityGetsThroughAsItIsDequeued) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .shapes = {kScalar}, .capacity = 2});
  auto dequeue = DequeueMany(q, 3, {DT_INT32}).Start();
  ASSERT_OK(EnqueueMany(q, {MakeTensor<int32_t>({3}, {1, 2, 3})}).Run());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, dequeue->Wait());
  EXPECT_THAT(out[0], TensorEq(MakeTensor<int32_t>({3}, {1, 2, 3})));
}

TEST_F(QueueTest, TimeoutFailsWithDeadlineExceededAndRemovesNothing) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .shapes = {kScalar}, .capacity = 2});
  ASSERT_OK(Enqueue(q, {Int(5)}).Run());
  // It takes the one element while it waits, and must give it back.
  EXPECT_THAT(DequeueMany(q, 2, {DT_INT32}, /*timeout_ms=*/20).Run(),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("Timed out waiting for notification")));
  EXPECT_EQ(Size(q), 1);
  ASSERT_OK(Enqueue(q, {Int(6)}).Run());
  EXPECT_THAT(Enqueue(q, {Int(7)}, /*timeout_ms=*/20).Run(),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("Timed out")));
  EXPECT_EQ(DequeueInt(q), 5);
  EXPECT_EQ(DequeueInt(q), 6);
}

TEST_F(QueueTest, ZeroTimeoutFailsAtOnceUnlessTheRequestCompletesNow) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .capacity = 1});
  auto empty = Dequeue(q, {DT_INT32}, /*timeout_ms=*/0).Start();
  ASSERT_TRUE(empty->finished());
  EXPECT_THAT(empty->Wait(), StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("Timed")));
  ASSERT_OK(Enqueue(q, {Int(1)}, /*timeout_ms=*/0).Run());
  auto full = Enqueue(q, {Int(2)}, /*timeout_ms=*/0).Start();
  ASSERT_TRUE(full->finished());
  EXPECT_THAT(full->Wait(), StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("Timed")));
  ASSERT_OK_AND_ASSIGN(Tensor out, Dequeue(q, {DT_INT32}, /*timeout_ms=*/0).RunOne());
  EXPECT_THAT(out, TensorEq(Int(1)));
}

TEST_F(QueueTest, CancellingTheStepEndsAWaitingDequeue) {
  const Tensor q = NewQueue({.types = {DT_INT32}});
  StepCancellation step;
  KernelTester dequeue = Dequeue(q, {DT_INT32});
  dequeue.WithCancellation(&step);
  auto pending = dequeue.Start();
  EXPECT_FALSE(pending->finished());
  step.Cancel(absl::AbortedError("a task of the step failed"));
  ASSERT_TRUE(pending->finished());
  EXPECT_THAT(pending->Wait(),
              StatusIs(absl::StatusCode::kCancelled, "Dequeue operation was cancelled"));
  // The queue carries on without it.
  ASSERT_OK(Enqueue(q, {Int(4)}).Run());
  EXPECT_EQ(DequeueInt(q), 4);
}

TEST_F(QueueTest, CancellingTheStepEndsAWaitingEnqueue) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .capacity = 1});
  ASSERT_OK(Enqueue(q, {Int(1)}).Run());
  StepCancellation step;
  KernelTester enqueue = Enqueue(q, {Int(2)});
  enqueue.WithCancellation(&step);
  auto pending = enqueue.Start();
  step.Cancel(absl::CancelledError("step cancelled"));
  EXPECT_THAT(pending->Wait(),
              StatusIs(absl::StatusCode::kCancelled, "Enqueue operation was cancelled"));
  EXPECT_EQ(DequeueInt(q), 1);
  EXPECT_EQ(Size(q), 0);
}

TEST_F(QueueTest, ACancelledDequeueManyPutsWhatItTookBackInOrder) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .shapes = {kScalar}});
  ASSERT_OK(EnqueueMany(q, {MakeTensor<int32_t>({2}, {1, 2})}).Run());
  StepCancellation step;
  KernelTester dequeue = DequeueMany(q, 3, {DT_INT32});
  dequeue.WithCancellation(&step);
  auto pending = dequeue.Start();
  EXPECT_FALSE(pending->finished());
  step.Cancel(absl::CancelledError("stop"));
  EXPECT_THAT(pending->Wait(), StatusIs(absl::StatusCode::kCancelled, HasSubstr("Dequeue")));
  EXPECT_EQ(Size(q), 2);
  EXPECT_EQ(DequeueInt(q), 1);
  EXPECT_EQ(DequeueInt(q), 2);
}

TEST_F(QueueTest, ARequestOfAnAlreadyCancelledStepFailsIfItWouldWait) {
  const Tensor q = NewQueue({.types = {DT_INT32}});
  StepCancellation step;
  step.Cancel(absl::CancelledError("stop"));
  KernelTester dequeue = Dequeue(q, {DT_INT32});
  dequeue.WithCancellation(&step);
  EXPECT_THAT(dequeue.Run(), StatusIs(absl::StatusCode::kCancelled, HasSubstr("Dequeue")));
}

TEST_F(QueueTest, CloseFailsWaitingDequeuesAndLaterEnqueuesButKeepsTheElements) {
  const Tensor q = NewQueue({.types = {DT_INT32}});
  auto waiting = Dequeue(q, {DT_INT32}).Start();
  ASSERT_OK(Close(q));
  EXPECT_THAT(waiting->Wait(),
              StatusIs(absl::StatusCode::kOutOfRange,
                       "FIFOQueue 'q' is closed and has insufficient elements (requested 1, "
                       "current size 0)"));

  const Tensor r = NewQueue({.types = {DT_INT32}, .shapes = {kScalar}, .shared_name = "r"});
  ASSERT_OK(EnqueueMany(r, {MakeTensor<int32_t>({2}, {1, 2})}).Run());
  ASSERT_OK(Close(r));
  EXPECT_THAT(Enqueue(r, {Int(3)}).Run(),
              StatusIs(absl::StatusCode::kCancelled, "FIFOQueue 'r' is closed."));
  EXPECT_EQ(DequeueInt(r), 1);
  EXPECT_THAT(DequeueMany(r, 2, {DT_INT32}).Run(),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("(requested 2, current size 1)")));
  EXPECT_EQ(DequeueInt(r), 2);
  EXPECT_THAT(Dequeue(r, {DT_INT32}).Run(),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("r")));
}

TEST_F(QueueTest, IsClosedAndClosingTwice) {
  const Tensor q = NewQueue({.types = {DT_INT32}});
  KernelTester is_closed = Op("QueueIsClosedV2");
  is_closed.Input(q);
  EXPECT_THAT(is_closed.RunOne(), ::rill::testing::IsOkAndHolds(TensorEq(Tensor::Scalar(false))));
  ASSERT_OK(Close(q));
  EXPECT_THAT(is_closed.RunOne(), ::rill::testing::IsOkAndHolds(TensorEq(Tensor::Scalar(true))));
  // As in TensorFlow, unless the second close cancels pending enqueues.
  EXPECT_THAT(Close(q), StatusIs(absl::StatusCode::kCancelled, "Queue 'q' is already closed."));
  EXPECT_OK(Close(q, /*cancel_pending_enqueues=*/true));
}

TEST_F(QueueTest, EnqueuesWaitingAtCloseStillCompleteUnlessCancelled) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .capacity = 1, .shared_name = "kept"});
  ASSERT_OK(Enqueue(q, {Int(1)}).Run());
  auto kept = Enqueue(q, {Int(2)}).Start();
  ASSERT_OK(Close(q));
  EXPECT_FALSE(kept->finished());
  EXPECT_EQ(DequeueInt(q), 1);
  EXPECT_OK(kept->Wait());
  EXPECT_EQ(DequeueInt(q), 2);

  const Tensor r = NewQueue({.types = {DT_INT32}, .capacity = 1, .shared_name = "cancelled"});
  ASSERT_OK(Enqueue(r, {Int(1)}).Run());
  auto cancelled = Enqueue(r, {Int(2)}).Start();
  ASSERT_OK(Close(r, /*cancel_pending_enqueues=*/true));
  EXPECT_THAT(cancelled->Wait(),
              StatusIs(absl::StatusCode::kCancelled, "Enqueue operation was cancelled"));
  EXPECT_EQ(Size(r), 1);
}

TEST_F(QueueTest, DequeueUpToOnAClosedQueueGivesWhatIsLeft) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .shapes = {kScalar}});
  ASSERT_OK(EnqueueMany(q, {MakeTensor<int32_t>({2}, {1, 2})}).Run());
  // Open, it waits for all it asked for.
  auto waiting = DequeueMany(q, 3, {DT_INT32}, -1, /*up_to=*/true).Start();
  EXPECT_FALSE(waiting->finished());
  ASSERT_OK(Close(q));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, waiting->Wait());
  EXPECT_THAT(out[0], TensorEq(MakeTensor<int32_t>({2}, {1, 2})));
  EXPECT_THAT(DequeueMany(q, 3, {DT_INT32}, -1, /*up_to=*/true).Run(),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("(requested 3, current size 0)")));
}

TEST_F(QueueTest, RejectsComponentsOfAnotherType) {
  const Tensor q = NewQueue({.types = {DT_INT32, DT_INT64}});
  EXPECT_THAT(
      Enqueue(q, {Int(1), Tensor::Scalar<float>(2)}).Run(),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("'q'"), HasSubstr("component 1"),
                                                         HasSubstr("int64"), HasSubstr("float"))));
  EXPECT_THAT(Enqueue(q, {Int(1)}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Expected 2, got 1")));
  EXPECT_THAT(
      Dequeue(q, {DT_INT32, DT_FLOAT}).Run(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("'q'"), HasSubstr("[int32, int64]"), HasSubstr("[int32, float]"))));
  EXPECT_EQ(Size(q), 0);
}

TEST_F(QueueTest, RejectsElementsOfAnotherShape) {
  const Tensor q = NewQueue({.types = {DT_FLOAT}, .shapes = {{2}}});
  EXPECT_THAT(Enqueue(q, {MakeTensor<float>({3}, {1, 2, 3})}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'q'"), HasSubstr("Expected [2], got [3]"))));
  EXPECT_THAT(EnqueueMany(q, {MakeTensor<float>({2}, {1, 2})}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Expected [2,2], got [2]")));

  const Tensor r = NewQueue({.types = {DT_FLOAT, DT_INT32}, .shared_name = "r"});
  EXPECT_THAT(EnqueueMany(r, {MakeTensor<float>({2}, {1, 2}), MakeTensor<int32_t>({1}, {1})}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Component 1 has 1")));
  // Unshaped elements might not stack.
  EXPECT_THAT(DequeueMany(r, 1, {DT_FLOAT, DT_INT32}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("specified shapes")));
}

TEST_F(QueueTest, FullyDefinedShapesAreRequired) {
  KernelTester t = Op("FIFOQueueV2");
  t.Attr("component_types", DataTypeVector{DT_FLOAT})
      .Attr("shapes", std::vector<PartialTensorShape>{{-1, 2}});
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[?,2]")));
}

TEST_F(QueueTest, NodesWithTheSameSharedNameShareTheQueue) {
  const Tensor a = NewQueue({.types = {DT_INT32}, .capacity = 5});
  const Tensor b = NewQueue({.types = {DT_INT32}, .capacity = 5});
  ASSERT_OK(Enqueue(a, {Int(8)}).Run());
  EXPECT_EQ(Size(b), 1);
  EXPECT_EQ(DequeueInt(b), 8);

  KernelTester other = Op("FIFOQueueV2");
  other.Attr("component_types", DataTypeVector{DT_INT32})
      .Attr("capacity", 3)
      .Attr("shared_name", "q");
  EXPECT_THAT(other.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr("'q'"), HasSubstr("capacity 5"),
                                          HasSubstr("capacity was 3"))));
  other.Attr("component_types", DataTypeVector{DT_FLOAT}).Attr("capacity", 5);
  EXPECT_THAT(other.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr("[int32]"), HasSubstr("[float]"))));
}

TEST_F(QueueTest, WithoutASharedNameTheQueueIsNamedAfterItsNode) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .shared_name = ""});
  ASSERT_OK(Enqueue(q, {Int(1)}).Run());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<FIFOQueue> queue,
                       resources_->Lookup<FIFOQueue>(kDefaultContainer, "kernel_under_test"));
  EXPECT_EQ(queue->size(), 1);
  // Another kernel of the same node (another executor) finds it.
  const Tensor again = NewQueue({.types = {DT_INT32}, .shared_name = ""});
  EXPECT_EQ(Size(again), 1);
}

// Producers and consumers on their own threads, each blocking in
// AsyncOpKernel::Compute, lose and repeat nothing.
TEST_F(QueueTest, ConcurrentProducersAndConsumersMoveEveryElementOnce) {
  const Tensor q = NewQueue({.types = {DT_INT32}, .capacity = 3});
  constexpr int kThreads = 3, kEach = 100;
  std::vector<std::vector<int32_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) ASSERT_OK(Enqueue(q, {Int(t * kEach + i)}).Run(1));
    });
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        absl::StatusOr<Tensor> out = Dequeue(q, {DT_INT32}).RunOne(1);
        ASSERT_OK(out);
        seen[t].push_back(out->scalar<int32_t>());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<int32_t> all;
  for (const auto& values : seen) all.insert(all.end(), values.begin(), values.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), size_t{kThreads * kEach});
  for (int i = 0; i < kThreads * kEach; ++i) EXPECT_EQ(all[i], i);
  EXPECT_EQ(Size(q), 0);
}

}  // namespace
}  // namespace rill
