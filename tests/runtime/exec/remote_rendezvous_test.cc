#include "runtime/exec/remote_rendezvous.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kWorker0[] = "/job:worker/replica:0/task:0";

PreparedRendezvousKey Key(const std::string& src_task, const std::string& dst_task,
                          const std::string& edge) {
  RendezvousKey key;
  key.src_device = src_task + "/device:CPU:0";
  key.src_incarnation = 1;
  key.dst_device = dst_task + "/device:CPU:0";
  key.tensor_name = edge;
  return *PreparedRendezvousKey::Prepare(key);
}

// Records pushes instead of sending them; `result` is what each reports.
struct Pushes {
  struct Push {
    std::string dst_task;
    uint64_t step_id;
    std::string key;
    Tensor value;
  };
  absl::Mutex mu;
  std::vector<Push> sent;
  absl::Status result;

  PushTensorFn Fn() {
    return [this](const std::string& dst_task, uint64_t step_id, std::string key, Tensor value,
                  std::function<void(absl::Status)> done) {
      {
        absl::MutexLock lock(&mu);
        sent.push_back(Push{dst_task, step_id, std::move(key), std::move(value)});
      }
      done(result);
    };
  }
};

TEST(RemoteRendezvous, KeysForThisTaskStayHere) {
  Pushes pushes;
  auto rendezvous = std::make_shared<RemoteRendezvous>(kWorker0, 7, pushes.Fn());
  const PreparedRendezvousKey key = Key(kWorker0, kWorker0, "edge_1_a");
  ASSERT_OK(rendezvous->Send(key, Tensor::Scalar<float>(3)));
  float got = 0;
  rendezvous->RecvAsync(key, [&](const absl::Status& status, const Tensor& value) {
    ASSERT_OK(status);
    got = value.scalar<float>();
  });
  EXPECT_EQ(got, 3);
  EXPECT_TRUE(pushes.sent.empty());
}

TEST(RemoteRendezvous, KeysForAnotherTaskArePushedThere) {
  Pushes pushes;
  auto rendezvous = std::make_shared<RemoteRendezvous>(kWorker0, 7, pushes.Fn());
  const PreparedRendezvousKey key = Key(kWorker0, "/job:ps/replica:0/task:0", "edge_2_w");
  const Tensor value = Tensor::Scalar<float>(5);
  ASSERT_OK(rendezvous->Send(key, value));
  ASSERT_EQ(pushes.sent.size(), 1u);
  EXPECT_EQ(pushes.sent[0].dst_task, "/job:ps/replica:0/task:0");
  EXPECT_EQ(pushes.sent[0].step_id, 7u);
  EXPECT_EQ(pushes.sent[0].key, key.text);
  EXPECT_TRUE(pushes.sent[0].value.SharesBufferWith(value));  // No copy.
}

TEST(RemoteRendezvous, AFailedPushAbortsTheStepHere) {
  Pushes pushes;
  pushes.result = absl::UnavailableError("peer 127.0.0.1:1 stopped answering");
  auto rendezvous = std::make_shared<RemoteRendezvous>(kWorker0, 7, pushes.Fn());
  ASSERT_OK(
      rendezvous->Send(Key(kWorker0, "/job:ps/replica:0/task:0", "e"), Tensor::Scalar<float>(1)));
  absl::Status received;
  rendezvous->RecvAsync(Key("/job:ps/replica:0/task:0", kWorker0, "back"),
                        [&](const absl::Status& status, const Tensor&) { received = status; });
  EXPECT_THAT(received,
              StatusIs(absl::StatusCode::kUnavailable, AllOf(HasSubstr("/job:ps/replica:0/task:0"),
                                                             HasSubstr("stopped answering"))));
}

TEST(RemoteRendezvous, DeliveredValuesReachTheirReceiver) {
  Pushes pushes;
  auto rendezvous = std::make_shared<RemoteRendezvous>(kWorker0, 7, pushes.Fn());
  const PreparedRendezvousKey key = Key("/job:ps/replica:0/task:0", kWorker0, "edge_2_w");
  float got = 0;
  rendezvous->RecvAsync(key, [&](const absl::Status& status, const Tensor& value) {
    ASSERT_OK(status);
    got = value.scalar<float>();
  });
  ASSERT_OK(rendezvous->Deliver(key.text, Tensor::Scalar<float>(9)));
  EXPECT_EQ(got, 9);
  EXPECT_THAT(rendezvous->Deliver(key.text, Tensor::Scalar<float>(9)),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("edge_2_w")));
}

TEST(RemoteRendezvous, ATaskAloneCannotSendElsewhere) {
  auto rendezvous = std::make_shared<RemoteRendezvous>(kWorker0, 7, nullptr);
  EXPECT_THAT(
      rendezvous->Send(Key(kWorker0, "/job:ps/replica:0/task:0", "e"), Tensor::Scalar<float>(1)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("talks to no other task")));
}

}  // namespace
}  // namespace rill
