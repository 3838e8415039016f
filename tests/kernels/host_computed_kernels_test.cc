#include "kernels/host_computed_kernels.h"

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/registry.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::KernelTester;
using ::testing::ElementsAre;

// A device whose memory is the host's but reached only through copies,
// which it counts; `fail` makes reads fail.
class CountingDeviceContext final : public DeviceContext {
 public:
  Allocator* host_allocator() override { return CpuAllocator(); }
  absl::Status CopyWithinDevice(const void* src, void* dst, size_t bytes) override {
    std::memmove(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyHostBytesToDevice(const void* src, void* dst, size_t bytes) override {
    ++bytes_to_device;
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  void CopyToHost(const Tensor& src, Tensor* dst, CopyDone done) override {
    ++to_host;
    if (fail) {
      done(absl::InternalError("the copy engine failed"));
      return;
    }
    // From another thread, as a device's callback comes.
    std::thread([src, dst, done = std::move(done)] {
      *dst = src.DeepCopy();
      done(absl::OkStatus());
    }).join();
  }
  void CopyFromHost(const Tensor& src, Tensor* dst, CopyDone done) override {
    *dst = src.DeepCopy();
    done(absl::OkStatus());
  }

  std::atomic<int> to_host = 0;
  std::atomic<int> bytes_to_device = 0;
  bool fail = false;
};

TEST(HostComputedKernels, WhereReadsItsInputToTheHostAndWritesTheIndicesToTheDevice) {
  CountingDeviceContext gpu;
  KernelTester t("Where", kDeviceGpu);
  t.Attr("T", DT_FLOAT).Input<float>({2, 2}, {0, 1.5f, -2, 0}).WithDeviceContext(&gpu);
  ASSERT_OK_AND_ASSIGN(const Tensor out, t.RunOne());
  EXPECT_EQ(out.shape(), TensorShape({2, 2}));
  EXPECT_THAT(absl::MakeConstSpan(out.data<int64_t>(), 4), ElementsAre(0, 1, 1, 0));
  EXPECT_EQ(gpu.to_host, 1);
  EXPECT_EQ(gpu.bytes_to_device, 1);
}

TEST(HostComputedKernels, AFailedReadFailsTheKernel) {
  CountingDeviceContext gpu;
  gpu.fail = true;
  KernelTester t("Where", kDeviceGpu);
  t.Attr("T", DT_FLOAT).Input<float>({2}, {0, 1}).WithDeviceContext(&gpu);
  EXPECT_THAT(t.RunOne().status().message(), ::testing::HasSubstr("the copy engine failed"));
}

TEST(HostComputedKernels, IsVariableInitializedReadsNoElementOfTheVariable) {
  CountingDeviceContext gpu;
  Var var(DT_FLOAT);
  KernelTester check("IsVariableInitialized", kDeviceGpu);
  check.RefInput(&var).WithDeviceContext(&gpu);
  ASSERT_OK_AND_ASSIGN(Tensor before, check.RunOne());
  EXPECT_FALSE(before.scalar<bool>());
  KernelTester assign("Assign");
  assign.RefInput(&var).Input<float>({2}, {1, 2});
  ASSERT_OK(assign.Run());
  ASSERT_OK_AND_ASSIGN(Tensor after, check.RunOne());
  EXPECT_TRUE(after.scalar<bool>());
  EXPECT_EQ(gpu.to_host, 0);
}

TEST(HostComputedKernels, VarIsInitializedOpTakesItsHandleFromTheHost) {
  CountingDeviceContext gpu;
  KernelTester make("VarHandleOp");
  make.Attr("dtype", DT_FLOAT).Attr("shape", PartialTensorShape({2})).Attr("shared_name", "v");
  ASSERT_OK_AND_ASSIGN(const Tensor handle, make.RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  KernelTester check("VarIsInitializedOp", kDeviceGpu);
  check.WithResourceMgr(resources).Input(handle).WithDeviceContext(&gpu);
  ASSERT_OK_AND_ASSIGN(Tensor before, check.RunOne());
  EXPECT_FALSE(before.scalar<bool>());
  KernelTester assign("AssignVariableOp");
  assign.WithResourceMgr(resources).Input(handle).Input<float>({2}, {1, 2});
  ASSERT_OK(assign.Run());
  ASSERT_OK_AND_ASSIGN(Tensor after, check.RunOne());
  EXPECT_TRUE(after.scalar<bool>());
  EXPECT_EQ(gpu.to_host, 0);
  EXPECT_EQ(gpu.bytes_to_device, 2);
}

// With an int64 shape (which the CUDA kernels do not take) the draws are
// the CPU's, so a GPU initializer gives the CPU's weights.
TEST(HostComputedKernels, RandomOpsWithInt64ShapesDrawWhatTheCpuDraws) {
  CountingDeviceContext gpu;
  for (const char* op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    SCOPED_TRACE(op);
    const auto sample = [&](const std::string& device) {
      KernelTester t(op, device);
      t.Attr("dtype", DT_FLOAT).Attr("seed", int64_t{7}).Attr("seed2", int64_t{3});
      t.Input<int64_t>({2}, {3, 5});
      if (device == kDeviceGpu) t.WithDeviceContext(&gpu);
      return t.RunOne();
    };
    ASSERT_OK_AND_ASSIGN(const Tensor cpu, sample(kDeviceCpu));
    ASSERT_OK_AND_ASSIGN(const Tensor on_gpu, sample(kDeviceGpu));
    EXPECT_THAT(on_gpu, ::rill::testing::TensorEq(cpu));
  }
}

TEST(HostComputedKernels, TakeOnlyWhatNoDeviceKernelTakes) {
  KernelRegistry registry;
  RegisterCpuKernels(registry);
  NodeDef node;
  node.set_name("r");
  node.set_op("RandomUniform");
  (*node.mutable_attr())["dtype"] = MakeAttr(DT_HALF);
  (*node.mutable_attr())["T"] = MakeAttr(DT_INT64);
  EXPECT_FALSE(registry.HasKernel(node, kDeviceGpu));
  RegisterHostComputedKernels(registry, kDeviceGpu);
  EXPECT_TRUE(registry.HasKernel(node, kDeviceGpu));
  node.set_op("MatMul");
  EXPECT_FALSE(registry.HasKernel(node, kDeviceGpu));
}

}  // namespace
}  // namespace rill
