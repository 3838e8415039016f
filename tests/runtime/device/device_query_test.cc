#include "runtime/device/device_query.h"

#include "gtest/gtest.h"

namespace rill {
namespace {

TEST(DeviceQuery, ReportsDevicesOrSaysWhyNot) {
  const GpuQuery query = QueryGpuDevices();
  if (query.devices.empty()) {
    EXPECT_NE(query.reason.find("no CUDA device"), std::string::npos) << query.reason;
    return;
  }
  EXPECT_TRUE(query.cuda_compiled);
  for (size_t i = 0; i < query.devices.size(); ++i) {
    const GpuDeviceInfo& gpu = query.devices[i];
    EXPECT_EQ(gpu.ordinal, static_cast<int>(i));
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_GT(gpu.total_memory_bytes, 0);
    EXPECT_GT(gpu.multiprocessor_count, 0);
    EXPECT_GE(gpu.compute_capability_major, 7);
  }
}

TEST(DeviceQuery, RepeatedQueriesAgree) {
  EXPECT_EQ(QueryGpuDevices().devices.size(), QueryGpuDevices().devices.size());
}

}  // namespace
}  // namespace rill
