#include "runtime/remote_rendezvous.h"

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

std::string Key(const std::string& src_task, const std::string& dst_task, const std::string& edge) {
  RendezvousKey key;
  key.src_device = src_task + "/device:CPU:0";
  key.src_incarnation = 1;
  key.dst_device = dst_task + "/device:CPU:0";
  key.tensor_name = edge;
  return key.ToString();
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

TEST(TaskOfDevice, DropsTheDevicePart) {
  ASSERT_OK_AND_ASSIGN(const std::string task,
                       TaskOfDevice("/job:ps/replica:0/task:3/device:CPU:0"));
  EXPECT_EQ(task, "/job:ps/replica:0/task:3");
  EXPECT_THAT(TaskOfDevice("/device:CPU:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("job, replica and task")));
  EXPECT_FALSE(TaskOfDevice("/job:ps/task:x").ok());
}

TEST(RemoteRendezvous, KeysForThisTaskStayHere) {
  Pushes pushes;
  auto rendezvous = std::make_shared<RemoteRendezvous>(kWorker0, 7, pushes.Fn());
  const std::string key = Key(kWorker0, kWorker0, "edge_1_a");
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
  const std::string key = Key(kWorker0, "/job:ps/replica:0/task:0", "edge_2_w");
  const Tensor value = Tensor::Scalar<float>(5);
  ASSERT_OK(rendezvous->Send(key, value));
  ASSERT_EQ(pushes.sent.size(), 1u);
  EXPECT_EQ(pushes.sent[0].dst_task, "/job:ps/replica:0/task:0");
  EXPECT_EQ(pushes.sent[0].step_id, 7u);
  EXPECT_EQ(pushes.sent[0].key, key);
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
  const std::string key = Key("/job:ps/replica:0/task:0", kWorker0, "edge_2_w");
  float got = 0;
  rendezvous->RecvAsync(key, [&](const absl::Status& status, const Tensor& value) {
    ASSERT_OK(status);
    got = value.scalar<float>();
  });
  ASSERT_OK(rendezvous->Deliver(key, Tensor::Scalar<float>(9)));
  EXPECT_EQ(got, 9);
  EXPECT_THAT(rendezvous->Deliver(key, Tensor::Scalar<float>(9)),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("edge_2_w")));
}

TEST(RemoteRendezvous, MalformedKeysAreRejected) {
  Pushes pushes;
  auto rendezvous = std::make_shared<RemoteRendezvous>(kWorker0, 7, pushes.Fn());
  EXPECT_THAT(rendezvous->Send("not a key", Tensor::Scalar<float>(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a key")));
}

TEST(StepRendezvousTable, APushBeforeTheStepStartsCreatesIt) {
  Pushes pushes;
  StepRendezvousTable table(kWorker0, pushes.Fn());
  std::shared_ptr<RemoteRendezvous> first = table.FindOrCreate(11);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(table.FindOrCreate(11), first);
  EXPECT_NE(table.FindOrCreate(12), first);
}

TEST(StepRendezvousTable, EndedStepsAbortTheirReceiversAndRefuseLatePushes) {
  Pushes pushes;
  StepRendezvousTable table(kWorker0, pushes.Fn());
  std::shared_ptr<RemoteRendezvous> step = table.FindOrCreate(11);
  absl::Status received;
  step->RecvAsync(Key("/job:ps/replica:0/task:0", kWorker0, "e"),
                  [&](const absl::Status& status, const Tensor&) { received = status; });
  table.End(11, absl::UnavailableError("/job:worker/replica:0/task:1 died"));
  EXPECT_THAT(received, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("task:1 died")));
  EXPECT_EQ(table.FindOrCreate(11), nullptr);
}

TEST(StepRendezvousTable, RemembersOnlyTheLastEndedSteps) {
  Pushes pushes;
  StepRendezvousTable table(kWorker0, pushes.Fn());
  for (uint64_t step = 0; step <= StepRendezvousTable::kRememberEnded; ++step) {
    table.End(step, absl::OkStatus());
  }
  EXPECT_NE(table.FindOrCreate(0), nullptr);  // Forgotten: a new step.
  EXPECT_EQ(table.FindOrCreate(1), nullptr);
}

}  // namespace
}  // namespace rill
