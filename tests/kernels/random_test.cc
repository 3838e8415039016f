#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"
#include "ops/registry.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kSamples = 100000;

absl::StatusOr<Tensor> Sample(const std::string& op, DataType dtype, int64_t seed, int64_t seed2,
                              int64_t n = kSamples) {
  KernelTester t(op);
  t.Attr("dtype", dtype).Attr("seed", seed).Attr("seed2", seed2).Input<int64_t>({1}, {n});
  return t.RunOne();
}

template <typename T>
void MeanAndStd(const Tensor& t, double* mean, double* stddev) {
  double sum = 0, sq = 0;
  const int64_t n = t.NumElements();
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(t.data<T>()[i]);
  *mean = sum / n;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(t.data<T>()[i]) - *mean;
    sq += d * d;
  }
  *stddev = std::sqrt(sq / n);
}

TEST(RandomUniform, InUnitIntervalWithUniformMoments) {
  ASSERT_OK_AND_ASSIGN(Tensor t, Sample("RandomUniform", DT_FLOAT, 1, 2));
  EXPECT_EQ(t.shape(), TensorShape({kSamples}));
  for (int64_t i = 0; i < kSamples; ++i) {
    ASSERT_GE(t.data<float>()[i], 0.0f);
    ASSERT_LT(t.data<float>()[i], 1.0f);
  }
  double mean, stddev;
  MeanAndStd<float>(t, &mean, &stddev);
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_NEAR(stddev, std::sqrt(1.0 / 12), 0.01);
}

TEST(RandomUniform, HalfStaysBelowOne) {
  ASSERT_OK_AND_ASSIGN(Tensor t, Sample("RandomUniform", DT_HALF, 3, 0, 10000));
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    ASSERT_LT(static_cast<float>(t.data<half>()[i]), 1.0f);
    ASSERT_GE(static_cast<float>(t.data<half>()[i]), 0.0f);
  }
}

TEST(RandomStandardNormal, HasZeroMeanUnitStd) {
  ASSERT_OK_AND_ASSIGN(Tensor t, Sample("RandomStandardNormal", DT_DOUBLE, 7, 0));
  double mean, stddev;
  MeanAndStd<double>(t, &mean, &stddev);
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(stddev, 1.0, 0.02);
}

TEST(TruncatedNormal, StaysWithinTwoStddevs) {
  ASSERT_OK_AND_ASSIGN(Tensor t, Sample("TruncatedNormal", DT_FLOAT, 0, 9));
  for (int64_t i = 0; i < kSamples; ++i) ASSERT_LE(std::abs(t.data<float>()[i]), 2.0f);
  double mean, stddev;
  MeanAndStd<float>(t, &mean, &stddev);
  EXPECT_NEAR(mean, 0.0, 0.02);
  // The standard normal truncated to [-2, 2] has std 0.8796.
  EXPECT_NEAR(stddev, 0.8796, 0.02);
}

TEST(RandomOps, SeededOpsRepeatAcrossKernelsAndDifferAcrossSeeds) {
  for (const char* op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    ASSERT_OK_AND_ASSIGN(Tensor a, Sample(op, DT_FLOAT, 5, 6, 100));
    ASSERT_OK_AND_ASSIGN(Tensor b, Sample(op, DT_FLOAT, 5, 6, 100));
    ASSERT_OK_AND_ASSIGN(Tensor c, Sample(op, DT_FLOAT, 5, 7, 100));
    EXPECT_THAT(b, TensorEq(a)) << op;
    EXPECT_FALSE(TensorsEqual(a, c)) << op;
  }
}

TEST(RandomOps, RejectShapesWhoseElementCountOverflows) {
  for (const char* op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    KernelTester t(op);
    constexpr int64_t k2To32 = int64_t{1} << 32;
    t.Attr("dtype", DT_FLOAT).Input<int64_t>({3}, {k2To32, k2To32, k2To32});
    EXPECT_THAT(t.RunOne(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")))
        << op;
  }
}

TEST(RandomOps, UnseededOpsDiffer) {
  ASSERT_OK_AND_ASSIGN(Tensor a, Sample("RandomUniform", DT_DOUBLE, 0, 0, 100));
  ASSERT_OK_AND_ASSIGN(Tensor b, Sample("RandomUniform", DT_DOUBLE, 0, 0, 100));
  EXPECT_FALSE(TensorsEqual(a, b));
}

// Runs one kernel built from `node` twice: a seeded kernel continues its
// sequence, and a second kernel with the same attrs replays it.
TEST(RandomOps, SeededKernelProducesRepeatableSequence) {
  NodeDef node;
  node.set_name("r");
  node.set_op("RandomUniform");
  (*node.mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
  (*node.mutable_attr())["T"] = MakeAttr(DT_INT32);
  (*node.mutable_attr())["seed"] = MakeAttr(int64_t{42});
  ASSERT_OK_AND_ASSIGN(const OpRegistration* op, StandardOps().LookUp("RandomUniform"));
  AddDefaultsToNodeDef(op->op_def, &node);
  ASSERT_OK_AND_ASSIGN(NodeSignature sig, ComputeNodeSignature(node, op->op_def));
  const CpuThreads threads(1);
  const Tensor shape = MakeTensor<int32_t>({1}, {50});
  auto run = [&](const OpKernel& kernel) -> Tensor {
    KernelContext::Params params;
    params.node = &node;
    params.inputs.push_back(TensorValue{shape});
    params.output_types = sig.output_types;
    params.eigen_cpu = &threads.device();
    params.allocator = CpuAllocator();
    KernelContext ctx(std::move(params));
    EXPECT_OK(kernel.Compute(ctx));
    return ctx.output(0).tensor;
  };
  std::vector<Tensor> first, second;
  for (auto* out : {&first, &second}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpKernel> kernel,
                         StandardKernels().CreateKernel(node, op->op_def, sig, kDeviceCpu));
    out->push_back(run(*kernel));
    out->push_back(run(*kernel));
  }
  EXPECT_FALSE(TensorsEqual(first[0], first[1]));
  EXPECT_THAT(second[0], TensorEq(first[0]));
  EXPECT_THAT(second[1], TensorEq(first[1]));
}

TEST(RandomOps, RejectsNegativeShape) {
  KernelTester t("RandomUniform");
  t.Attr("dtype", DT_FLOAT).Input<int32_t>({2}, {3, -1});
  EXPECT_FALSE(t.RunOne().ok());
}

}  // namespace
}  // namespace rill::testing
