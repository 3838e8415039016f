#include "kernels/framework/kernel_registry.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "graph/node_def_util.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "ops/registry.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// A kernel that only says which registration built it.
class TaggedKernel final : public OpKernel {
 public:
  TaggedKernel(const OpKernelConstruction& c, std::string tag)
      : OpKernel(c), tag_(std::move(tag)) {}
  absl::Status Compute(KernelContext&) const override { return absl::OkStatus(); }
  const std::string& tag() const { return tag_; }

 private:
  const std::string tag_;
};

KernelFactory Tagged(std::string tag) {
  return [tag](const OpKernelConstruction& c) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(std::make_unique<TaggedKernel>(c, tag));
  };
}

NodeDef NegNode(DataType type) {
  NodeDef node;
  node.set_name("neg");
  node.set_op("Neg");
  (*node.mutable_attr())["T"] = MakeAttr(type);
  return node;
}

absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelRegistry& registry,
                                                 const NodeDef& node, std::string_view device) {
  const OpDef& op_def = StandardOps().LookUp(node.op()).value()->op_def;
  const NodeSignature signature = ComputeNodeSignature(node, op_def).value();
  return registry.CreateKernel(node, op_def, signature, device);
}

std::string TagOf(const std::unique_ptr<OpKernel>& kernel) {
  return static_cast<const TaggedKernel&>(*kernel).tag();
}

TEST(KernelRegistry, TypeConstraintSelectsTheKernel) {
  KernelRegistry registry;
  registry.Register(KernelDef("Neg").TypeConstraint<float>("T"), Tagged("float"));
  registry.Register(KernelDef("Neg").TypeConstraint("T", {DT_INT32, DT_INT64}), Tagged("int"));
  registry.Register(KernelDef("Neg").Device(kDeviceGpu).TypeConstraint<float>("T"),
                    Tagged("gpu float"));
  ASSERT_OK_AND_ASSIGN(auto f, Create(registry, NegNode(DT_FLOAT), kDeviceCpu));
  EXPECT_EQ(TagOf(f), "float");
  ASSERT_OK_AND_ASSIGN(auto i, Create(registry, NegNode(DT_INT64), kDeviceCpu));
  EXPECT_EQ(TagOf(i), "int");
  ASSERT_OK_AND_ASSIGN(auto g, Create(registry, NegNode(DT_FLOAT), kDeviceGpu));
  EXPECT_EQ(TagOf(g), "gpu float");
  EXPECT_EQ(g->name(), "neg");
  EXPECT_EQ(g->op(), "Neg");
}

TEST(KernelRegistry, NotFoundNamesOpDeviceAndTypes) {
  KernelRegistry registry;
  registry.Register(KernelDef("Neg").TypeConstraint<float>("T"), Tagged("float"));
  EXPECT_THAT(Create(registry, NegNode(DT_DOUBLE), kDeviceCpu),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("Neg"), HasSubstr("CPU"), HasSubstr("T=double"))));
  EXPECT_THAT(Create(registry, NegNode(DT_FLOAT), kDeviceGpu),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("GPU")));
}

TEST(KernelRegistry, NotFoundForAnOpWithoutKernelsSaysNoneAreRegistered) {
  NodeDef node;
  node.set_name("save/SaveV2");
  node.set_op("SaveV2");
  (*node.mutable_attr())["dtypes"] = MakeAttr(DataTypeVector{DT_FLOAT, DT_INT64});
  const KernelRegistry empty;
  EXPECT_THAT(Create(empty, node, kDeviceCpu),
              StatusIs(absl::StatusCode::kNotFound,
                       "no CPU kernel for op 'SaveV2' with "
                       "dtypes=[float, int64]; registered kernels: none"));
}

TEST(KernelRegistry, NotFoundListsTheDeviceTypesThatHaveKernels) {
  KernelRegistry registry;
  registry.Register(KernelDef("Neg").Device(kDeviceGpu).TypeConstraint<float>("T"), Tagged("f"));
  registry.Register(KernelDef("Neg").Device(kDeviceGpu).TypeConstraint("T", DT_HALF), Tagged("h"));
  EXPECT_THAT(Create(registry, NegNode(DT_FLOAT), kDeviceCpu),
              StatusIs(absl::StatusCode::kNotFound,
                       "no CPU kernel for op 'Neg' with T=float; registered "
                       "kernels: GPU (T in {float, half})"));
}

TEST(KernelRegistry, NotFoundForAnUnmatchedTypeListsTheTypesTheDeviceTakes) {
  KernelRegistry registry;
  registry.Register(KernelDef("MatMul").TypeConstraint<float>("T"), Tagged("float"));
  registry.Register(KernelDef("MatMul").TypeConstraint<double>("T"), Tagged("double"));
  registry.Register(KernelDef("MatMul").TypeConstraint("T", {DT_INT32, DT_INT64}), Tagged("int"));
  registry.Register(KernelDef("MatMul").Device(kDeviceGpu).TypeConstraint("T", DT_INT8),
                    Tagged("gpu"));
  NodeDef node;
  node.set_name("dense/MatMul");
  node.set_op("MatMul");
  (*node.mutable_attr())["T"] = MakeAttr(DT_INT8);
  (*node.mutable_attr())["transpose_a"] = MakeAttr(false);
  EXPECT_THAT(Create(registry, node, kDeviceCpu),
              StatusIs(absl::StatusCode::kNotFound,
                       "no CPU kernel for op 'MatMul' with T=int8; "
                       "registered CPU kernels take T in {float, double, int32, int64}"));
}

TEST(KernelRegistry, NotFoundForAnOpWithoutTypeAttrsSaysSo) {
  KernelRegistry registry;
  registry.Register(KernelDef("NoOp").Device(kDeviceGpu), Tagged("gpu"));
  NodeDef node;
  node.set_name("init");
  node.set_op("NoOp");
  EXPECT_THAT(Create(registry, node, kDeviceCpu),
              StatusIs(absl::StatusCode::kNotFound,
                       "no CPU kernel for op 'NoOp' with no type attrs; "
                       "registered kernels: GPU"));
}

TEST(KernelRegistry, FactoryErrorIsReturnedAsIs) {
  KernelRegistry registry;
  registry.Register(KernelDef("Neg"),
                    [](const OpKernelConstruction&) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
                      return absl::InvalidArgumentError("bad attr");
                    });
  EXPECT_THAT(Create(registry, NegNode(DT_FLOAT), kDeviceCpu),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad attr")));
}

TEST(KernelRegistry, HasKernelAndDeviceTypesFor) {
  KernelRegistry registry;
  registry.Register(KernelDef("Neg").TypeConstraint<float>("T"), Tagged("a"));
  registry.Register(KernelDef("Neg").TypeConstraint<double>("T"), Tagged("b"));
  registry.Register(KernelDef("Neg").Device(kDeviceGpu).TypeConstraint<float>("T"), Tagged("c"));
  EXPECT_TRUE(registry.HasKernel(NegNode(DT_FLOAT), kDeviceCpu));
  EXPECT_TRUE(registry.HasKernel(NegNode(DT_DOUBLE), kDeviceCpu));
  EXPECT_FALSE(registry.HasKernel(NegNode(DT_DOUBLE), kDeviceGpu));
  EXPECT_FALSE(registry.HasKernel(NegNode(DT_INT32), kDeviceCpu));
  EXPECT_THAT(registry.DeviceTypesFor("Neg"), UnorderedElementsAre("CPU", "GPU"));
  EXPECT_THAT(registry.DeviceTypesFor("Exp"), IsEmpty());
}

TEST(KernelRegistry, ConstraintOnMissingAttrDoesNotMatch) {
  KernelRegistry registry;
  registry.Register(KernelDef("Neg").TypeConstraint<float>("U"), Tagged("u"));
  EXPECT_FALSE(registry.HasKernel(NegNode(DT_FLOAT), kDeviceCpu));
}

TEST(StandardKernels, HaveCpuCwiseReductionAndLogicKernels) {
  EXPECT_TRUE(StandardKernels().HasKernel(NegNode(DT_INT32), kDeviceCpu));
  for (const char* op :
       {"AddV2", "Sum", "ArgMax", "Select", "Cast", "Equal", "AddN", "SigmoidGrad"}) {
    EXPECT_THAT(StandardKernels().DeviceTypesFor(op), Contains("CPU")) << op;
  }
}

}  // namespace
}  // namespace rill
