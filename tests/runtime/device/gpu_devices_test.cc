// The process's GPUs as Devices: names, virtual devices, copies between
// host and GPU memory, the memory limit, NVTX op ranges. Without a GPU
// only the option checks run; the rest skip, saying why.
#include "runtime/device/gpu_devices.h"

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "graph/proto/node_def.pb.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "runtime/device/device.h"
#include "runtime/device/device_query.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::RandomTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kTask[] = "/job:worker/replica:0/task:3";
constexpr int64_t kMemoryLimit = int64_t{256} << 20;

// Every test of this process asks for the same GPUs: the first call makes
// them for the whole process.
GpuOptions Options() {
  GpuOptions options;
  options.memory_limit_bytes = kMemoryLimit;
  options.virtual_devices_per_gpu = 2;
  return options;
}

std::shared_ptr<CpuThreads> Threads() { return std::make_shared<CpuThreads>(2); }

// The GPUs' devices, or why the test cannot run.
class GpuDevicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuQuery query = QueryGpuDevices();
    if (query.devices.empty()) GTEST_SKIP() << "no GPU to test on: " << query.reason;
    physical_ = static_cast<int>(query.devices.size());
    ASSERT_OK_AND_ASSIGN(devices_, CreateGpuDevices(kTask, 64, Threads(), Options()));
  }

  // Copies `host` to `device` and back.
  static absl::StatusOr<Tensor> RoundTrip(Device& device, const Tensor& host) {
    Tensor on_device;
    RETURN_IF_ERROR(Await([&](Device::StatusCallback done) {
      device.CopyFromHost(host, &on_device, std::move(done));
    }));
    Tensor back;
    RETURN_IF_ERROR(Await([&](Device::StatusCallback done) {
      device.CopyToHost(on_device, &back, std::move(done));
    }));
    return back;
  }

  // Starts a copy and waits for its callback.
  static absl::Status Await(const std::function<void(Device::StatusCallback)>& copy) {
    absl::Status status;
    absl::Notification copied;
    copy([&](absl::Status s) {
      status = std::move(s);
      copied.Notify();
    });
    copied.WaitForNotification();
    return status;
  }

  int physical_ = 0;
  std::vector<std::unique_ptr<Device>> devices_;
};

TEST(GpuOptions, BadValuesNameTheField) {
  GpuOptions options;
  options.memory_limit_bytes = -1;
  EXPECT_THAT(ValidateGpuOptions(1, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("memory_limit_bytes")));
  options = GpuOptions();
  options.virtual_devices_per_gpu = 0;
  EXPECT_THAT(ValidateGpuOptions(1, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("virtual_devices_per_gpu")));
  EXPECT_THAT(ValidateGpuOptions(-1, GpuOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot be negative")));
  EXPECT_THAT(CreateGpuDevices(kTask, 1, Threads(), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("virtual_devices_per_gpu")));
}

TEST(GpuDevices, NoneWithoutAGpuAndNoneAskedFor) {
  ASSERT_OK_AND_ASSIGN(auto none, CreateGpuDevices(kTask, 0, Threads(), Options()));
  EXPECT_TRUE(none.empty());
  if (!QueryGpuDevices().devices.empty()) GTEST_SKIP() << "this machine has a GPU";
  ASSERT_OK_AND_ASSIGN(auto devices, CreateGpuDevices(kTask, 64, Threads(), Options()));
  EXPECT_TRUE(devices.empty());
}

TEST_F(GpuDevicesTest, EachGpuIsSplitIntoVirtualDevicesNamedAfterTheTask) {
  ASSERT_EQ(static_cast<int>(devices_.size()), 2 * physical_);
  for (size_t i = 0; i < devices_.size(); ++i) {
    EXPECT_EQ(devices_[i]->name(), std::string(kTask) + "/device:GPU:" + std::to_string(i));
    EXPECT_EQ(devices_[i]->device_type(), "GPU");
    EXPECT_NE(devices_[i]->device_context(), nullptr);
    EXPECT_TRUE(devices_[i]->RunsKernelsInline());
  }
  // Virtual devices have their own streams and memory.
  EXPECT_NE(devices_[0]->device_context(), devices_[1]->device_context());
  EXPECT_NE(devices_[0]->allocator(), devices_[1]->allocator());
  ASSERT_OK_AND_ASSIGN(auto one, CreateGpuDevices(kTask, 1, Threads(), Options()));
  EXPECT_EQ(one.size(), 1u);
}

TEST_F(GpuDevicesTest, CopiesToTheGpuAndBackKeepEveryByte) {
  for (const Tensor& host : {RandomTensor(TensorShape({257, 33}), 7),
                             Tensor::FromVector<int64_t>({-3, 1LL << 40, 5}, TensorShape({3})),
                             Tensor(DT_FLOAT, TensorShape({0, 4}))}) {
    ASSERT_OK_AND_ASSIGN(const Tensor back, RoundTrip(*devices_[1], host));
    EXPECT_EQ(back.dtype(), host.dtype());
    EXPECT_EQ(back.shape(), host.shape());
    ASSERT_EQ(back.TotalBytes(), host.TotalBytes());
    EXPECT_EQ(std::memcmp(back.raw_data(), host.raw_data(), host.TotalBytes()), 0);
  }
}

TEST_F(GpuDevicesTest, HostMemoryTypesArePassedOnWithoutACopy) {
  Tensor strings(DT_STRING, TensorShape({2}));
  const Tensor sizes = Tensor::FromVector<int32_t>({3, 4}, TensorShape({2}));
  for (const Tensor& host : {strings, sizes}) {
    ASSERT_OK_AND_ASSIGN(const Tensor back, RoundTrip(*devices_[0], host));
    EXPECT_EQ(back.raw_data(), host.raw_data());
  }
}

TEST_F(GpuDevicesTest, TheMemoryLimitIsHonoured) {
  // Each virtual device has half the limit.
  const int64_t floats = kMemoryLimit / 2 / 4 + 1024;
  const Tensor big(DT_FLOAT, TensorShape({floats}));
  EXPECT_THAT(RoundTrip(*devices_[0], big),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("GPU:0"), HasSubstr("out of memory"))));
  // What fits still does afterwards.
  ASSERT_OK(RoundTrip(*devices_[0], Tensor(DT_FLOAT, TensorShape({1024}))).status());
}

// Each op's work shows in Nsight under its node's name: an NVTX range,
// which nests and leaves the device's work as it was.
TEST_F(GpuDevicesTest, OpsRunInsideNvtxRangesNamedAfterTheirNodes) {
  NodeDef node;
  node.set_name("dense/MatMul");
  node.set_op("MatMul");
  for (const std::unique_ptr<Device>& device : devices_) {
    EXPECT_TRUE(device->annotates_ops()) << device->name();
    const ScopedOpRange outer(*device, node);
    {
      const ScopedOpRange inner(*device, node);
      ASSERT_OK(RoundTrip(*device, RandomTensor(TensorShape({8, 8}), 3)).status());
    }
  }
}

TEST_F(GpuDevicesTest, ALaterSessionCannotChangeTheOptions) {
  GpuOptions other = Options();
  other.virtual_devices_per_gpu = 1;
  EXPECT_THAT(CreateGpuDevices(kTask, 64, Threads(), other),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("virtual devices per GPU")));
}

}  // namespace
}  // namespace rill
