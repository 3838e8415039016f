// The TensorArray kernels on gradient arrays: TensorArrayGradV3 finds one
// array per (forward array, source), which adds up repeated writes and
// reads zeros where nothing was written. Expected values and messages follow
// TensorFlow's tensor_array_ops_test.py.
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/framework/step_resources.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/kernels/tensor_array_test_fixture.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::ArraySpec;
using ::rill::testing::F;
using ::rill::testing::Flow;
using ::rill::testing::IsOkAndHolds;
using ::rill::testing::KernelTester;
using ::rill::testing::kScalar;
using ::rill::testing::MakeTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::TensorArrayTest;
using ::rill::testing::TensorEq;
using ::testing::_;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST_F(TensorArrayTest, GradArrayWriteRead) {
  const Tensor ta = NewArray({});
  ASSERT_OK_AND_ASSIGN(const Tensor g, Grad(ta, "grad"));
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({1, 2}, {4, 5})));
  ASSERT_OK(Write(g, 0, MakeTensor<float>({1, 2}, {5, 6})));
  ASSERT_OK(Write(g, 1, MakeTensor<float>({1, 1}, {2})));
  ASSERT_OK(Write(g, 2, F(-2)));
  EXPECT_THAT(Read(ta, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({1, 2}, {4, 5}))));
  EXPECT_THAT(Read(g, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({1, 2}, {5, 6}))));
  EXPECT_THAT(Read(g, 1), IsOkAndHolds(TensorEq(MakeTensor<float>({1, 1}, {2}))));
  EXPECT_THAT(Read(g, 2), IsOkAndHolds(TensorEq(F(-2))));
}

TEST_F(TensorArrayTest, GradOfDynamicArrayHasItsSizeAndFixesIt) {
  const Tensor ta = NewArray({.size = 0, .dynamic_size = true});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({1, 2}, {4, 5})));
  ASSERT_OK(Write(ta, 1, MakeTensor<float>({1, 1}, {1})));
  ASSERT_OK(Write(ta, 2, F(-3)));
  ASSERT_OK_AND_ASSIGN(const Tensor g, Grad(ta, "grad"));
  EXPECT_THAT(Size(ta), IsOkAndHolds(3));
  EXPECT_THAT(Size(g), IsOkAndHolds(3));
  // The forward array no longer grows.
  EXPECT_THAT(Write(ta, 3, F(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not resizeable")));
}

TEST_F(TensorArrayTest, GradForTheSameSourceIsTheSameArray) {
  const Tensor ta = NewArray({});
  ASSERT_OK_AND_ASSIGN(const Tensor g0, Grad(ta, "grad"));
  ASSERT_OK_AND_ASSIGN(const Tensor g1, Grad(ta, "grad"));
  EXPECT_EQ(g0.scalar<ResourceHandleProto>().name(), g1.scalar<ResourceHandleProto>().name());
  ASSERT_OK(Write(g0, 0, MakeTensor<float>({1, 2}, {4, 5})));
  EXPECT_THAT(Read(g1, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({1, 2}, {4, 5}))));

  ASSERT_OK_AND_ASSIGN(const Tensor other, Grad(ta, "gradients_1"));
  EXPECT_NE(other.scalar<ResourceHandleProto>().name(), g0.scalar<ResourceHandleProto>().name());
}

TEST_F(TensorArrayTest, GradArrayAddsRepeatedWrites) {
  const Tensor ta = NewArray({.dtype = DT_INT32});
  ASSERT_OK_AND_ASSIGN(const Tensor g, Grad(ta, "grad"));
  const Tensor three = Tensor::Scalar<int32_t>(3);
  ASSERT_OK(Write(g, 2, three));
  ASSERT_OK(Write(g, 2, Tensor::Scalar<int32_t>(4)));
  ASSERT_OK(Write(g, 2, Tensor::Scalar<int32_t>(5)));
  EXPECT_THAT(Read(g, 2, DT_INT32), IsOkAndHolds(TensorEq(Tensor::Scalar<int32_t>(12))));
  // The sum went into the array's own tensor, not the first value's.
  EXPECT_THAT(three, TensorEq(Tensor::Scalar<int32_t>(3)));

  ASSERT_OK(Write(g, 1, Tensor::Scalar<int32_t>(1)));
  EXPECT_THAT(Write(g, 1, MakeTensor<int32_t>({1}, {1})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Could not aggregate to TensorArray index 1 because the existing "
                                 "shape is [] but the new input shape is [1]")));
  // An array that added up writes has no gradient of its own.
  EXPECT_THAT(Grad(g, "grad"), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("Unable to create a gradients TensorArray")));
}

TEST_F(TensorArrayTest, GradArrayReadsZerosOfTheForwardShapes) {
  const Tensor ta = NewArray({.size = 2});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({2}, {1, 2})));
  ASSERT_OK_AND_ASSIGN(const Tensor g, Grad(ta, "grad"));
  EXPECT_THAT(Read(g, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {0, 0}))));
  // Index 1 was never written forward and no shape is known.
  EXPECT_THAT(Read(g, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not fully defined")));
  // A write after implicit zeros is the value itself.
  const Tensor ta2 = NewArray({.size = 1});
  ASSERT_OK(Write(ta2, 0, MakeTensor<float>({2}, {1, 2})));
  ASSERT_OK_AND_ASSIGN(const Tensor g2, Grad(ta2, "grad"));
  ASSERT_OK(Write(g2, 0, MakeTensor<float>({2}, {7, 8})));
  EXPECT_THAT(Read(g2, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {7, 8}))));
}

TEST_F(TensorArrayTest, GradArrayOfKnownShapeReadsZerosPastItsEnd) {
  const Tensor ta = NewArray({.size = 1, .element_shape = kScalar});
  ASSERT_OK_AND_ASSIGN(const Tensor g, Grad(ta, "grad"));
  EXPECT_THAT(Read(g, 3), IsOkAndHolds(TensorEq(F(0))));
  EXPECT_THAT(Size(g), IsOkAndHolds(4));
}

TEST_F(TensorArrayTest, GradWithShapePrependsToEachElement) {
  const Tensor ta = NewArray({.size = 1});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({2}, {1, 2})));
  KernelTester t = Op("TensorArrayGradWithShape");
  t.Input(ta).Input(Flow()).Input<int32_t>({1}, {3}).Attr("source", "grad");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(Read(out[0], 0),
              IsOkAndHolds(TensorEq(MakeTensor<float>({3, 2}, {0, 0, 0, 0, 0, 0}))));
}
}  // namespace
}  // namespace rill
