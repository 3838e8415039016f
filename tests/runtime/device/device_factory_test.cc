#include "runtime/device/device_factory.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(DeviceFactory, ParsesDeviceCountFlags) {
  EXPECT_THAT(ParseDeviceCount("CPU=2"), IsOkAndHolds(ElementsAre(Pair("CPU", 2))));
  EXPECT_THAT(ParseDeviceCount("CPU=1,GPU=0"),
              IsOkAndHolds(ElementsAre(Pair("CPU", 1), Pair("GPU", 0))));
}

TEST(DeviceFactory, BadDeviceCountsNameTheProblem) {
  EXPECT_THAT(ParseDeviceCount("CPU"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'CPU' has no '='")));
  EXPECT_THAT(ParseDeviceCount("CPU=x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'x' is not a count")));
  EXPECT_THAT(ParseDeviceCount("CPU=65"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0..64")));
  EXPECT_THAT(ParseDeviceCount("TPU=1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'TPU'")));
  EXPECT_THAT(ParseDeviceCount("CPU=1,CPU=2"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("CPU is given twice")));
  EXPECT_THAT(ParseDeviceCount("CPU=0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one CPU")));
  EXPECT_THAT(ValidateDeviceCount({{"CPU", -1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-1")));
}

TEST(DeviceFactory, MakesTheTasksCpusWithFullNames) {
  ASSERT_OK_AND_ASSIGN(auto devices,
                       CreateDevices("/job:worker/replica:0/task:1", {{"CPU", 2}, {"GPU", 0}},
                                     /*intra_op_threads=*/1));
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]->name(), "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(devices[1]->name(), "/job:worker/replica:0/task:1/device:CPU:1");
  EXPECT_EQ(devices[1]->device_type(), "CPU");
  // Distinct state, shared threads.
  EXPECT_NE(devices[0]->resource_manager(), devices[1]->resource_manager());
  EXPECT_EQ(devices[0]->eigen_cpu()->numThreads(), devices[1]->eigen_cpu()->numThreads());
  ASSERT_OK_AND_ASSIGN(auto one, CreateDevices("/job:localhost/replica:0/task:0", {{"GPU", 0}}, 1));
  EXPECT_EQ(one.size(), 1u);
}

TEST(DeviceFactory, CpuCopiesShareTheBuffer) {
  ASSERT_OK_AND_ASSIGN(auto devices, CreateDevices("/job:a/replica:0/task:0", {}, 1));
  const Tensor host = Tensor::FromVector<float>({1, 2}, TensorShape({2}));
  Tensor on_device;
  absl::Status status = absl::UnknownError("not called");
  devices[0]->CopyFromHost(host, &on_device, [&](absl::Status s) { status = s; });
  ASSERT_OK(status);
  EXPECT_TRUE(on_device.SharesBufferWith(host));
  Tensor back;
  devices[0]->CopyToHost(on_device, &back, [&](absl::Status s) { status = s; });
  ASSERT_OK(status);
  EXPECT_TRUE(back.SharesBufferWith(host));
  EXPECT_EQ(devices[0]->device_context(), nullptr);
  EXPECT_FALSE(devices[0]->RunsKernelsInline());
}

}  // namespace
}  // namespace rill
