// FIFO queues through a Session: elements outlive the run that enqueued
// them, a dequeue run waits for another run's enqueue, and a run's timeout
// frees a waiting dequeue.
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
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A queue of floats fed through "x", with its enqueue, dequeue, size and
// close nodes, in a session.
class QueuesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Scope scope = ops::NewRootScope();
    const ops::FIFOQueueV2 queue(scope.WithOpName("q"), {DT_FLOAT},
                                 ops::FIFOQueueV2::Capacity(2));
    const ops::Placeholder x(scope.WithOpName("x"), DT_FLOAT);
    ops::QueueEnqueueV2(scope.WithOpName("enqueue"), queue, {x});
    ops::QueueDequeueV2(scope.WithOpName("dequeue"), queue, {DT_FLOAT});
    ops::QueueSizeV2(scope.WithOpName("size"), queue);
    ops::QueueCloseV2(scope.WithOpName("close"), queue);
    absl::StatusOr<GraphDef> def = scope.ToGraphDef();
    ASSERT_OK(def);
    absl::StatusOr<std::unique_ptr<Session>> session = NewSession({}, *def);
    ASSERT_OK(session);
    session_ = *std::move(session);
  }

  absl::Status Enqueue(float value) {
    return session_->Run({{"x", Tensor::Scalar(value)}}, {}, {"enqueue"}).status();
  }

  absl::StatusOr<float> Dequeue(const RunOptions& options = {}) {
    absl::StatusOr<std::vector<Tensor>> out =
        session_->Run(options, {}, {"dequeue"}, {}, nullptr);
    if (!out.ok()) return out.status();
    return (*out)[0].scalar<float>();
  }

  std::unique_ptr<Session> session_;
};

TEST_F(QueuesTest, ElementsOutliveTheRunThatEnqueuedThem) {
  ASSERT_OK(Enqueue(1));
  ASSERT_OK(Enqueue(2));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> size, session_->Run({}, {"size"}));
  EXPECT_THAT(Values<int32_t>(size[0]), ElementsAre(2));
  EXPECT_THAT(Dequeue(), ::rill::testing::IsOkAndHolds(1.0f));
  EXPECT_THAT(Dequeue(), ::rill::testing::IsOkAndHolds(2.0f));
}

TEST_F(QueuesTest, ADequeueRunGetsAnotherRunsEnqueueWhicheverStartsFirst) {
  absl::StatusOr<float> got;
  std::thread consumer([&] { got = Dequeue(); });
  ASSERT_OK(Enqueue(5));
  consumer.join();
  EXPECT_THAT(got, ::rill::testing::IsOkAndHolds(5.0f));
}

TEST_F(QueuesTest, ARunTimeoutFreesAWaitingDequeueAndRemovesNothing) {
  RunOptions options;
  options.timeout_in_ms = 20;
  EXPECT_THAT(Dequeue(options), StatusIs(absl::StatusCode::kDeadlineExceeded, ::testing::_));
  // The abandoned dequeue does not take the next element.
  ASSERT_OK(Enqueue(3));
  EXPECT_THAT(Dequeue(), ::rill::testing::IsOkAndHolds(3.0f));
}

TEST_F(QueuesTest, ClosingEndsAWaitingDequeueRun) {
  absl::StatusOr<float> got;
  std::thread consumer([&] { got = Dequeue(); });
  // The dequeue may start before or after the close: it fails either way.
  ASSERT_OK(session_->Run({}, {}, {"close"}).status());
  consumer.join();
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("is closed")));
  EXPECT_THAT(Enqueue(1), StatusIs(absl::StatusCode::kCancelled, HasSubstr("is closed")));
}

}  // namespace
}  // namespace rill
