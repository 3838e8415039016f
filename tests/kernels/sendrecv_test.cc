// _Send and _Recv on a device with memory of its own: what goes into the
// step's rendezvous is a host copy, and what a _Recv outputs is a copy in
// the device's memory, both made through the device's context. A fake
// device context stands for a GPU's: its copies complete on another thread.
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/framework/device_context.h"
#include "kernels/framework/rendezvous.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::KernelTester;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kCpu[] = "/job:w/replica:0/task:0/device:CPU:0";
constexpr char kGpu[] = "/job:w/replica:0/task:0/device:GPU:0";

// Values by key; a Recv before its Send waits.
class TestRendezvous final : public Rendezvous {
 public:
  absl::Status Send(const PreparedRendezvousKey& key, const Tensor& value) override {
    DoneCallback waiting;
    {
      absl::MutexLock lock(&mu_);
      auto it = waiting_.find(key.text);
      if (it == waiting_.end()) {
        sent_[key.text] = value;
        return absl::OkStatus();
      }
      waiting = std::move(it->second);
      waiting_.erase(it);
    }
    waiting(absl::OkStatus(), value);
    return absl::OkStatus();
  }
  void RecvAsync(const PreparedRendezvousKey& key, DoneCallback done) override {
    Tensor value;
    {
      absl::MutexLock lock(&mu_);
      auto it = sent_.find(key.text);
      if (it == sent_.end()) {
        waiting_[key.text] = std::move(done);
        return;
      }
      value = it->second;
    }
    done(absl::OkStatus(), value);
  }
  void StartAbort(const absl::Status& status) override { static_cast<void>(status); }

  Tensor Sent(const std::string& key) {
    absl::MutexLock lock(&mu_);
    return sent_[key];
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, Tensor> sent_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, DoneCallback> waiting_ ABSL_GUARDED_BY(mu_);
};

// Copies are deep copies finished on a thread of their own; `fail` makes
// them fail instead.
class FakeDeviceContext final : public DeviceContext {
 public:
  ~FakeDeviceContext() override {
    for (std::thread& t : threads_) t.join();
  }
  Allocator* host_allocator() override { return CpuAllocator(); }
  absl::Status CopyWithinDevice(const void* src, void* dst, size_t bytes) override {
    std::memmove(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyHostBytesToDevice(const void* src, void* dst, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  void CopyToHost(const Tensor& src, Tensor* dst, CopyDone done) override {
    ++to_host;
    Finish(src, dst, std::move(done));
  }
  void CopyFromHost(const Tensor& src, Tensor* dst, CopyDone done) override {
    ++from_host;
    Finish(src, dst, std::move(done));
  }

  int to_host = 0;
  int from_host = 0;
  bool fail = false;

 private:
  void Finish(const Tensor& src, Tensor* dst, CopyDone done) {
    threads_.emplace_back([this, src, dst, done = std::move(done)] {
      if (fail) {
        done(absl::InternalError("the copy engine failed"));
        return;
      }
      *dst = src.DeepCopy();
      done(absl::OkStatus());
    });
  }
  std::vector<std::thread> threads_;
};

KernelTester SendRecv(const std::string& op, const std::string& device_type,
                      const std::string& send_device, const std::string& recv_device) {
  KernelTester t(op, device_type);
  t.Attr("tensor_name", "x:0")
      .Attr("send_device", send_device)
      .Attr("send_device_incarnation", int64_t{1})
      .Attr("recv_device", recv_device);
  return t;
}

std::string Key(const std::string& send_device, const std::string& recv_device) {
  RendezvousKey key;
  key.src_device = send_device;
  key.src_incarnation = 1;
  key.dst_device = recv_device;
  key.tensor_name = "x:0";
  return key.ToString();
}

absl::StatusOr<PreparedRendezvousKey> Prepared(const std::string& send_device,
                                               const std::string& recv_device) {
  return PreparedRendezvousKey::Parse(Key(send_device, recv_device));
}

TEST(DeviceSendRecv, SendOnTheGpuLeavesAHostCopy) {
  TestRendezvous rendezvous;
  FakeDeviceContext gpu;
  const Tensor x = Tensor::FromVector<float>({1.5f, -2.f, 3.f}, TensorShape({3}));
  KernelTester t = SendRecv("_Send", "GPU", kGpu, kCpu);
  t.Input(x).WithRendezvous(&rendezvous).WithDeviceContext(&gpu);
  ASSERT_OK(t.Start()->Wait().status());
  EXPECT_EQ(gpu.to_host, 1);
  const Tensor sent = rendezvous.Sent(Key(kGpu, kCpu));
  ASSERT_TRUE(sent.IsInitialized());
  EXPECT_FALSE(sent.SharesBufferWith(x));
  EXPECT_THAT(Values<float>(sent), ElementsAre(1.5f, -2.f, 3.f));
}

TEST(DeviceSendRecv, RecvOnTheGpuOutputsADeviceCopyOfWhatArrives) {
  TestRendezvous rendezvous;
  FakeDeviceContext gpu;
  KernelTester t = SendRecv("_Recv", "GPU", kCpu, kGpu);
  t.Attr("tensor_type", DT_INT32).WithRendezvous(&rendezvous).WithDeviceContext(&gpu);
  std::unique_ptr<KernelTester::PendingRun> recv = t.Start();
  EXPECT_FALSE(recv->finished());
  const Tensor x = Tensor::FromVector<int32_t>({7, 8}, TensorShape({2}));
  ASSERT_OK_AND_ASSIGN(const PreparedRendezvousKey key, Prepared(kCpu, kGpu));
  ASSERT_OK(rendezvous.Send(key, x));
  ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> out, recv->Wait());
  EXPECT_EQ(gpu.from_host, 1);
  EXPECT_FALSE(out[0].SharesBufferWith(x));
  EXPECT_THAT(Values<int32_t>(out[0]), ElementsAre(7, 8));
}

TEST(DeviceSendRecv, AFailedCopyFailsTheKernelNamingTheEdge) {
  TestRendezvous rendezvous;
  FakeDeviceContext gpu;
  gpu.fail = true;
  KernelTester send = SendRecv("_Send", "GPU", kGpu, kCpu);
  send.Input<float>({1}, {1.f}).WithRendezvous(&rendezvous).WithDeviceContext(&gpu);
  EXPECT_THAT(send.Start()->Wait(),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("copying"), HasSubstr("x:0"), HasSubstr("to the host"),
                             HasSubstr("the copy engine failed"))));
  EXPECT_FALSE(rendezvous.Sent(Key(kGpu, kCpu)).IsInitialized());

  KernelTester recv = SendRecv("_Recv", "GPU", kCpu, kGpu);
  recv.Attr("tensor_type", DT_FLOAT).WithRendezvous(&rendezvous).WithDeviceContext(&gpu);
  ASSERT_OK_AND_ASSIGN(const PreparedRendezvousKey key, Prepared(kCpu, kGpu));
  ASSERT_OK(rendezvous.Send(key, Tensor::Scalar<float>(2.f)));
  EXPECT_THAT(
      recv.Start()->Wait(),
      StatusIs(absl::StatusCode::kInternal, AllOf(HasSubstr("x:0"), HasSubstr("the copy engine"))));
}

// On the CPU, or on a device whose memory is the host's, nothing is copied.
TEST(DeviceSendRecv, TheCpuSharesTheBuffer) {
  TestRendezvous rendezvous;
  const Tensor x = Tensor::FromVector<float>({4.f}, TensorShape({1}));
  KernelTester send = SendRecv("_Send", "CPU", kCpu, kCpu);
  send.Input(x).WithRendezvous(&rendezvous);
  ASSERT_OK(send.Run().status());
  EXPECT_TRUE(rendezvous.Sent(Key(kCpu, kCpu)).SharesBufferWith(x));
  KernelTester recv = SendRecv("_Recv", "GPU", kCpu, kCpu);
  recv.Attr("tensor_type", DT_FLOAT).WithRendezvous(&rendezvous);
  ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> out, recv.Start()->Wait());
  EXPECT_TRUE(out[0].SharesBufferWith(x));
}

}  // namespace
}  // namespace rill
