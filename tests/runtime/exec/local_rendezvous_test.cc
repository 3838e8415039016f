#include "runtime/exec/local_rendezvous.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "graph/tensor.h"
#include "kernels/framework/rendezvous.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// What one RecvAsync delivered.
struct Received {
  absl::Notification done;
  absl::Status status;
  Tensor value;
  std::thread::id thread;

  Rendezvous::DoneCallback Callback() {
    return [this](const absl::Status& s, const Tensor& v) {
      status = s;
      value = v;
      thread = std::this_thread::get_id();
      done.Notify();
    };
  }
};

PreparedRendezvousKey Key(const std::string& edge) {
  return *PreparedRendezvousKey::Prepare(RendezvousKey{
      "/job:a/replica:0/task:0/device:CPU:0", 1, "/job:a/replica:0/task:0/device:CPU:1", edge});
}

const PreparedRendezvousKey kKey = Key("edge_1_x");

TEST(LocalRendezvous, RecvAfterSendGetsTheValueAtOnce) {
  LocalRendezvous rendezvous;
  ASSERT_OK(rendezvous.Send(kKey, Tensor::Scalar<float>(3)));
  Received received;
  rendezvous.RecvAsync(kKey, received.Callback());
  ASSERT_TRUE(received.done.HasBeenNotified());
  ASSERT_OK(received.status);
  EXPECT_EQ(received.value.scalar<float>(), 3);
}

TEST(LocalRendezvous, RecvBeforeSendIsCalledOnTheSendersThread) {
  LocalRendezvous rendezvous;
  Received received;
  rendezvous.RecvAsync(kKey, received.Callback());
  EXPECT_FALSE(received.done.HasBeenNotified());
  std::thread::id sender;
  std::thread thread([&] {
    sender = std::this_thread::get_id();
    EXPECT_OK(rendezvous.Send(kKey, Tensor::Scalar<int32_t>(7)));
  });
  thread.join();
  received.done.WaitForNotification();
  ASSERT_OK(received.status);
  EXPECT_EQ(received.value.scalar<int32_t>(), 7);
  EXPECT_EQ(received.thread, sender);
}

TEST(LocalRendezvous, KeysAreIndependent) {
  LocalRendezvous rendezvous;
  const PreparedRendezvousKey other = Key("edge_2_y");
  ASSERT_OK(rendezvous.Send(kKey, Tensor::Scalar<float>(1)));
  ASSERT_OK(rendezvous.Send(other, Tensor::Scalar<float>(2)));
  Received first, second;
  rendezvous.RecvAsync(other, second.Callback());
  rendezvous.RecvAsync(kKey, first.Callback());
  EXPECT_EQ(first.value.scalar<float>(), 1);
  EXPECT_EQ(second.value.scalar<float>(), 2);
}

TEST(LocalRendezvous, SendingAKeyTwiceFails) {
  LocalRendezvous rendezvous;
  ASSERT_OK(rendezvous.Send(kKey, Tensor::Scalar<float>(1)));
  EXPECT_THAT(rendezvous.Send(kKey, Tensor::Scalar<float>(2)),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("edge_1_x")));
}

TEST(LocalRendezvous, AbortFailsWaitingAndLaterCallsWithTheFirstStatus) {
  LocalRendezvous rendezvous;
  Received waiting;
  rendezvous.RecvAsync(kKey, waiting.Callback());
  rendezvous.StartAbort(absl::DataLossError("first"));
  rendezvous.StartAbort(absl::InternalError("second"));
  ASSERT_TRUE(waiting.done.HasBeenNotified());
  EXPECT_THAT(waiting.status, StatusIs(absl::StatusCode::kDataLoss, "first"));
  EXPECT_THAT(rendezvous.Send(kKey, Tensor::Scalar<float>(1)),
              StatusIs(absl::StatusCode::kDataLoss, "first"));
  Received later;
  rendezvous.RecvAsync(Key("another"), later.Callback());
  EXPECT_THAT(later.status, StatusIs(absl::StatusCode::kDataLoss, "first"));
}

TEST(LocalRendezvous, DestroyingItCancelsWaitingReceivers) {
  Received waiting;
  {
    LocalRendezvous rendezvous;
    rendezvous.RecvAsync(kKey, waiting.Callback());
  }
  ASSERT_TRUE(waiting.done.HasBeenNotified());
  EXPECT_THAT(waiting.status, StatusIs(absl::StatusCode::kCancelled, HasSubstr("destroyed")));
}

TEST(RendezvousKey, PrintsAndParsesTensorFlowsFormat) {
  const RendezvousKey key{"/job:ps/replica:0/task:0/device:CPU:0",
                          0xabc,
                          "/job:worker/replica:0/task:1/device:CPU:0",
                          "edge_5_w",
                          0,
                          0};
  EXPECT_EQ(key.ToString(),
            "/job:ps/replica:0/task:0/device:CPU:0;0000000000000abc;"
            "/job:worker/replica:0/task:1/device:CPU:0;edge_5_w;0:0");
  ASSERT_OK_AND_ASSIGN(const RendezvousKey parsed, RendezvousKey::Parse(key.ToString()));
  EXPECT_EQ(parsed.src_device, key.src_device);
  EXPECT_EQ(parsed.src_incarnation, key.src_incarnation);
  EXPECT_EQ(parsed.dst_device, key.dst_device);
  EXPECT_EQ(parsed.tensor_name, key.tensor_name);
}

TEST(RendezvousKey, MalformedKeysNameThePart) {
  EXPECT_THAT(RendezvousKey::Parse("a;b;c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("5 parts")));
  EXPECT_THAT(RendezvousKey::Parse("a;xyz;c;t;0:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("incarnation")));
  EXPECT_THAT(RendezvousKey::Parse("a;1;c;t;0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("frame:iter")));
  EXPECT_THAT(RendezvousKey::Parse("a;1;;t;0:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
}

TEST(PreparedRendezvousKey, KeepsTheTextAndTheDestinationTask) {
  ASSERT_OK_AND_ASSIGN(const PreparedRendezvousKey key,
                       PreparedRendezvousKey::Parse("/job:ps/replica:0/task:0/device:CPU:0;"
                                                    "0000000000000001;"
                                                    "/job:worker/replica:0/task:1/device:CPU:2;"
                                                    "edge_5_w;0:0"));
  EXPECT_EQ(key.dst_task, "/job:worker/replica:0/task:1");
  EXPECT_THAT(key.text, HasSubstr("edge_5_w"));
  EXPECT_THAT(PreparedRendezvousKey::Parse("/cpu:0;1;/cpu:1;edge;0:0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("edge"), HasSubstr("job, replica and task"))));
}

}  // namespace
}  // namespace rill
