// The stack kernels, run one at a time on a shared resource manager as the
// executor runs a step's nodes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/framework/step_resources.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::KernelTester;
using ::rill::testing::MakeTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::TensorEq;
using ::testing::_;
using ::testing::AllOf;
using ::testing::HasSubstr;

class StackTest : public ::testing::Test {
 protected:
  KernelTester Op(const char* op) const {
    KernelTester t(op);
    t.WithResourceMgr(resources_).WithStepId(step_);
    return t;
  }

  Tensor NewStack(DataType elem_type, int32_t max_size = -1,
                  const std::string& stack_name = "foo") const {
    KernelTester t = Op("StackV2");
    t.Input(Tensor::Scalar<int32_t>(max_size))
        .Attr("elem_type", elem_type)
        .Attr("stack_name", stack_name);
    absl::StatusOr<Tensor> handle = t.RunOne();
    EXPECT_OK(handle);
    return handle.ok() ? *handle : Tensor();
  }

  // Pushes `value` and returns what the push passes on.
  absl::StatusOr<Tensor> Push(const Tensor& stack, Tensor value) const {
    KernelTester t = Op("StackPushV2");
    t.Input(stack).Input(std::move(value));
    return t.RunOne();
  }

  absl::StatusOr<Tensor> Pop(const Tensor& stack, DataType elem_type = DT_FLOAT) const {
    KernelTester t = Op("StackPopV2");
    t.Input(stack).Attr("elem_type", elem_type);
    return t.RunOne();
  }

  absl::Status Close(const Tensor& stack) const {
    KernelTester t = Op("StackCloseV2");
    t.Input(stack);
    return t.Run().status();
  }

  std::shared_ptr<ResourceMgr> resources_ = std::make_shared<ResourceMgr>();
  int64_t step_ = 3;
};

TEST_F(StackTest, PopsInReverseOrder) {
  const Tensor s = NewStack(DT_FLOAT);
  const Tensor a = MakeTensor<float>({2}, {1, 2});
  EXPECT_THAT(Push(s, a), IsOkAndHolds(TensorEq(a)));
  ASSERT_OK(Push(s, MakeTensor<float>({1}, {3})).status());
  EXPECT_THAT(Pop(s), IsOkAndHolds(TensorEq(MakeTensor<float>({1}, {3}))));
  EXPECT_THAT(Pop(s), IsOkAndHolds(TensorEq(a)));
}

TEST_F(StackTest, PopOfEmptyStackNamesIt) {
  const Tensor s = NewStack(DT_FLOAT, -1, "loop_grad_acc");
  EXPECT_THAT(Pop(s), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("Stack[loop_grad_acc] is empty.")));
  ASSERT_OK(Push(s, Tensor::Scalar<float>(1)).status());
  ASSERT_OK(Pop(s).status());
  EXPECT_THAT(Pop(s), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is empty")));
}

TEST_F(StackTest, MaxSizeBoundsPushes) {
  const Tensor s = NewStack(DT_INT32, 2);
  ASSERT_OK(Push(s, Tensor::Scalar<int32_t>(1)).status());
  ASSERT_OK(Push(s, Tensor::Scalar<int32_t>(2)).status());
  EXPECT_THAT(Push(s, Tensor::Scalar<int32_t>(3)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Stack[foo] overflowed its max_size (2)")));
  EXPECT_THAT(Pop(s, DT_INT32), IsOkAndHolds(TensorEq(Tensor::Scalar<int32_t>(2))));
}

TEST_F(StackTest, TypesMustMatch) {
  const Tensor s = NewStack(DT_FLOAT);
  EXPECT_THAT(
      Push(s, Tensor::Scalar<int32_t>(1)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must push values of type float")));
  ASSERT_OK(Push(s, Tensor::Scalar<float>(1)).status());
  EXPECT_THAT(Pop(s, DT_DOUBLE), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("holds float but StackPopV2 pops double")));
}

TEST_F(StackTest, StacksAreSeparatePerRun) {
  // The same node run twice (two loop iterations) makes two stacks.
  const Tensor a = NewStack(DT_FLOAT);
  const Tensor b = NewStack(DT_FLOAT);
  EXPECT_NE(a.scalar<ResourceHandleProto>().name(), b.scalar<ResourceHandleProto>().name());
  ASSERT_OK(Push(a, Tensor::Scalar<float>(1)).status());
  EXPECT_THAT(Pop(b), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is empty")));
}

TEST_F(StackTest, CloseForgetsTheStack) {
  const Tensor s = NewStack(DT_FLOAT);
  ASSERT_OK(Push(s, Tensor::Scalar<float>(1)).status());
  ASSERT_OK(Close(s));
  EXPECT_THAT(Pop(s), StatusIs(absl::StatusCode::kNotFound,
                               AllOf(HasSubstr(s.scalar<ResourceHandleProto>().name()),
                                     HasSubstr("closed"))));
}

TEST_F(StackTest, StepCleanupDropsTheStacks) {
  const Tensor s = NewStack(DT_FLOAT);
  ASSERT_OK(Push(s, Tensor::Scalar<float>(1)).status());
  CleanupStepResources(*resources_, step_);
  EXPECT_THAT(Pop(s), StatusIs(absl::StatusCode::kNotFound, _));
}

TEST_F(StackTest, HandleOfAnotherStepIsNotFound) {
  const Tensor s = NewStack(DT_FLOAT);
  step_ = 4;
  EXPECT_THAT(Push(s, Tensor::Scalar<float>(1)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not made by this step")));
}

}  // namespace
}  // namespace rill
