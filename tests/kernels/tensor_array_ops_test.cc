// The TensorArray kernels on forward arrays: writes, reads, gather,
// scatter, concat, split, size, close, and the array's lifetime. Expected
// values and messages follow TensorFlow's tensor_array_ops_test.py.
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

TEST_F(TensorArrayTest, WriteRead) {
  const Tensor ta = NewArray({});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({1, 2}, {4, 5})));
  ASSERT_OK(Write(ta, 1, MakeTensor<float>({1, 1}, {1})));
  ASSERT_OK(Write(ta, 2, F(-3)));
  EXPECT_THAT(Read(ta, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({1, 2}, {4, 5}))));
  EXPECT_THAT(Read(ta, 1), IsOkAndHolds(TensorEq(MakeTensor<float>({1, 1}, {1}))));
  EXPECT_THAT(Read(ta, 2), IsOkAndHolds(TensorEq(F(-3))));
  EXPECT_THAT(Size(ta), IsOkAndHolds(3));
}

TEST_F(TensorArrayTest, HandleIsAScalarResourceInTheStepsContainer) {
  const Tensor ta = NewArray({});
  ASSERT_EQ(ta.dtype(), DT_RESOURCE);
  ASSERT_EQ(ta.dims(), 0);
  const ResourceHandleProto& proto = ta.scalar<ResourceHandleProto>();
  EXPECT_EQ(proto.container(), StepContainer(step_));
  EXPECT_EQ(proto.maybe_type_name(), "TensorArray");
  // The same node running again (a loop's next iteration) makes another.
  const Tensor again = NewArray({});
  EXPECT_NE(again.scalar<ResourceHandleProto>().name(), proto.name());
}

TEST_F(TensorArrayTest, WritePackOfEachDtype) {
  const Tensor f = NewArray({});
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(Write(f, i, MakeTensor<float>({1, 2}, {4.0f + 2 * i, 5.0f + 2 * i})));
  }
  EXPECT_THAT(Gather(f, {0, 1, 2}),
              IsOkAndHolds(TensorEq(MakeTensor<float>({3, 1, 2}, {4, 5, 6, 7, 8, 9}))));

  const Tensor s = NewArray({.dtype = DT_STRING});
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(Write(
        s, i,
        MakeTensor<std::string>({1, 2}, {std::to_string(4 + 2 * i), std::to_string(5 + 2 * i)})));
  }
  EXPECT_THAT(
      Gather(s, {0, 1, 2}, DT_STRING),
      IsOkAndHolds(TensorEq(MakeTensor<std::string>({3, 1, 2}, {"4", "5", "6", "7", "8", "9"}))));

  const Tensor c = NewArray({.dtype = DT_COMPLEX64, .size = 1});
  ASSERT_OK(Write(c, 0, MakeTensor<complex64>({2}, {{1, 2}, {3, 4}})));
  EXPECT_THAT(Gather(c, {0}, DT_COMPLEX64),
              IsOkAndHolds(TensorEq(MakeTensor<complex64>({1, 2}, {{1, 2}, {3, 4}}))));
}

TEST_F(TensorArrayTest, WriteConcat) {
  const Tensor ta = NewArray({.dtype = DT_INT64});
  ASSERT_OK(Write(ta, 0, MakeTensor<int64_t>({3, 2}, {4, 5, 104, 105, 204, 205})));
  ASSERT_OK(Write(ta, 1, MakeTensor<int64_t>({2, 2}, {6, 7, 106, 107})));
  ASSERT_OK(Write(ta, 2, MakeTensor<int64_t>({1, 2}, {8, 9})));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Concat(ta, DT_INT64));
  EXPECT_THAT(out[0], TensorEq(MakeTensor<int64_t>(
                          {6, 2}, {4, 5, 104, 105, 204, 205, 6, 7, 106, 107, 8, 9})));
  EXPECT_THAT(out[1], TensorEq(MakeTensor<int64_t>({3}, {3, 2, 1})));
}

TEST_F(TensorArrayTest, PackOfUnwrittenIndexWithUnknownShapeFails) {
  const Tensor ta = NewArray({});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({1, 2}, {4, 5})));
  EXPECT_THAT(Gather(ta, {0, 1, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Could not read from TensorArray index 1 because it has not "
                                 "yet been written to")));
}

TEST_F(TensorArrayTest, UnwrittenIndexReadsAsZerosWhenTheElementShapeIsKnown) {
  const Tensor ta = NewArray({.element_shape = PartialTensorShape({2})});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({2}, {1, 2})));
  EXPECT_THAT(Gather(ta, {0, 1}), IsOkAndHolds(TensorEq(MakeTensor<float>({2, 2}, {1, 2, 0, 0}))));
}

TEST_F(TensorArrayTest, UnstackRead) {
  const Tensor ta = NewArray({.dtype = DT_INT32});
  ASSERT_OK(Scatter(ta, {0, 1, 2}, MakeTensor<int32_t>({3, 2}, {1, 11, 2, 21, 3, 31})));
  EXPECT_THAT(Read(ta, 0, DT_INT32), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({2}, {1, 11}))));
  EXPECT_THAT(Read(ta, 1, DT_INT32), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({2}, {2, 21}))));
  EXPECT_THAT(Read(ta, 2, DT_INT32), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({2}, {3, 31}))));

  // An empty matrix unstacks into empty vectors.
  const Tensor empty = NewArray({});
  ASSERT_OK(Scatter(empty, {0, 1, 2}, MakeTensor<float>({3, 0}, {})));
  EXPECT_THAT(Read(empty, 1), IsOkAndHolds(TensorEq(MakeTensor<float>({0}, {}))));
}

TEST_F(TensorArrayTest, ScatterInAnyOrderThenGather) {
  const Tensor ta = NewArray({.size = 4});
  ASSERT_OK(Scatter(ta, {3, 0}, MakeTensor<float>({2, 1}, {30, 0})));
  ASSERT_OK(Scatter(ta, {1, 2}, MakeTensor<float>({2, 1}, {10, 20})));
  EXPECT_THAT(Gather(ta, {2, 0, 3}),
              IsOkAndHolds(TensorEq(MakeTensor<float>({3, 1}, {20, 0, 30}))));
}

TEST_F(TensorArrayTest, ScatterChecksItsArguments) {
  const Tensor ta = NewArray({});
  // The shape function catches a mismatch it can see; the kernel one it
  // cannot.
  EXPECT_THAT(
      Scatter(ta, {0, 1}, MakeTensor<float>({3}, {1, 2, 3})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 indices but value has 3 rows")));
  KernelTester t = Op("TensorArrayScatterV3");
  t.Input(ta)
      .Input<int32_t>({2}, {0, 1})
      .Input(MakeTensor<float>({3}, {1, 2, 3}))
      .Input(Flow())
      .UnknownInputShapes();
  EXPECT_THAT(t.Run(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Expected len(indices) == values.shape[0], but saw: 2 vs. 3")));
  EXPECT_THAT(Scatter(ta, {0, 5}, MakeTensor<float>({2}, {1, 2})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Tried to write to index 5 but array is not resizeable and "
                                 "size is: 3")));
}

TEST_F(TensorArrayTest, SplitRead) {
  const Tensor ta = NewArray({});
  ASSERT_OK(Split(ta, MakeTensor<float>({0}, {}), {0, 0, 0}));
  EXPECT_THAT(Read(ta, 2), IsOkAndHolds(TensorEq(MakeTensor<float>({0}, {}))));

  const Tensor v = NewArray({});
  ASSERT_OK(Split(v, MakeTensor<float>({3}, {1, 2, 3}), {2, 0, 1}));
  EXPECT_THAT(Read(v, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {1, 2}))));
  EXPECT_THAT(Read(v, 1), IsOkAndHolds(TensorEq(MakeTensor<float>({0}, {}))));
  EXPECT_THAT(Read(v, 2), IsOkAndHolds(TensorEq(MakeTensor<float>({1}, {3}))));

  const Tensor m = NewArray({});
  ASSERT_OK(Split(m, MakeTensor<float>({3, 2}, {1, 101, 2, 201, 3, 301}), {2, 0, 1}));
  EXPECT_THAT(Read(m, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({2, 2}, {1, 101, 2, 201}))));
  EXPECT_THAT(Read(m, 1), IsOkAndHolds(TensorEq(MakeTensor<float>({0, 2}, {}))));
  EXPECT_THAT(Read(m, 2), IsOkAndHolds(TensorEq(MakeTensor<float>({1, 2}, {3, 301}))));
}

TEST_F(TensorArrayTest, SplitIncompatibleShapesFail) {
  const Tensor ta = NewArray({});
  EXPECT_THAT(Split(ta, MakeTensor<float>({3}, {1, 2, 3}), {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Expected sum of lengths to be equal to values.shape[0], but "
                                 "sum of lengths is 1 and value's shape is: [3]")));
  EXPECT_THAT(Split(ta, F(1), {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Expected value to be at least a vector, but received shape: "
                                 "[]")));
  EXPECT_THAT(Split(ta, MakeTensor<float>({3}, {1, 2, 3}), {2, -1, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("length 1 is -1")));
  const Tensor two = NewArray({.size = 2});
  EXPECT_THAT(Split(two, MakeTensor<float>({1}, {1}), {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("size is not equal to the size of lengths (2 vs. 1), and the "
                                 "TensorArray is not marked as dynamically resizeable")));
}

TEST_F(TensorArrayTest, ConcatIncompatibleShapesFail) {
  const Tensor scalars = NewArray({});
  ASSERT_OK(Write(scalars, 0, F(3)));
  ASSERT_OK(Write(scalars, 1, F(4)));
  ASSERT_OK(Write(scalars, 2, MakeTensor<float>({1}, {3})));
  EXPECT_THAT(Concat(scalars),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Concat saw a scalar shape at index 0 but requires at least "
                                 "vectors")));

  const Tensor ta = NewArray({});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({1}, {3})));
  ASSERT_OK(Write(ta, 1, MakeTensor<float>({1}, {4})));
  ASSERT_OK(Write(ta, 2, MakeTensor<float>({1, 1}, {3})));
  EXPECT_THAT(Concat(ta), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("Index 0 has (excepting dimension 0) shape: [] but "
                                             "index 2 has (excepting dimension 0) shape: [1]")));
}

TEST_F(TensorArrayTest, EmptyArrayStacksAndConcatsWithAKnownShape) {
  const Tensor ta = NewArray({.size = 0});
  EXPECT_THAT(Gather(ta, {}, DT_FLOAT, PartialTensorShape({2})),
              IsOkAndHolds(TensorEq(MakeTensor<float>({0, 2}, {}))));
  EXPECT_THAT(Gather(ta, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not fully defined")));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Concat(ta, DT_FLOAT, PartialTensorShape({3})));
  EXPECT_THAT(out[0], TensorEq(MakeTensor<float>({0, 3}, {})));
  EXPECT_THAT(out[1], TensorEq(MakeTensor<int64_t>({0}, {})));
}

TEST_F(TensorArrayTest, WrongIndexOrDtypeFails) {
  const Tensor ta = NewArray({});
  EXPECT_THAT(Write(ta, 0, MakeTensor<std::string>({}, {"wrong_type_scalar"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the value dtype is string but TensorArray dtype is float")));
  EXPECT_THAT(Write(ta, -1, F(3)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Tried to write to index -1 but array is not resizeable and "
                                 "size is: 3")));
  EXPECT_THAT(Write(ta, 3, F(3)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Tried to write to index 3 but array is not resizeable and "
                                 "size is: 3")));
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({1, 2}, {4, 5})));
  EXPECT_THAT(Read(ta, 0, DT_DOUBLE),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dtype is float but Op requested dtype double.")));
  EXPECT_THAT(Read(ta, 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("Could not read from TensorArray index 1 because "
                                              "it has not yet been written to")));
  EXPECT_THAT(Read(ta, -1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Tried to read from index -1 but array size is: 3")));
  EXPECT_THAT(Read(ta, 3), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("Tried to read from index 3 but array size is: 3")));
}

TEST_F(TensorArrayTest, WritingTwiceFails) {
  const Tensor ta = NewArray({});
  ASSERT_OK(Write(ta, 2, F(3)));
  EXPECT_THAT(Write(ta, 2, F(3)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("foo"), HasSubstr("Could not write to TensorArray index 2 "
                                                         "because it has already been written "
                                                         "to."))));
}

TEST_F(TensorArrayTest, WritingAfterAReadFails) {
  const Tensor ta = NewArray({});
  ASSERT_OK(Write(ta, 0, F(1)));
  ASSERT_OK(Read(ta, 0).status());
  EXPECT_THAT(Write(ta, 0, F(2)), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("because it has already been read")));
}

TEST_F(TensorArrayTest, ReadTwiceNeedsClearAfterReadOff) {
  const Tensor value = MakeTensor<float>({2, 2}, {1, -1, 10, -10});
  const Tensor once = NewArray({.size = 2});
  ASSERT_OK(Scatter(once, {0, 1}, value));
  ASSERT_OK(Read(once, 0).status());
  EXPECT_THAT(Read(once, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Could not read index 0 twice because it was cleared after a "
                                 "previous read (perhaps try setting clear_after_read = false?)")));

  const Tensor twice = NewArray({.size = 2, .clear_after_read = false});
  ASSERT_OK(Scatter(twice, {0, 1}, value));
  ASSERT_OK(Read(twice, 0).status());
  EXPECT_THAT(Read(twice, 0), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {1, -1}))));
}

TEST_F(TensorArrayTest, DynamicSizeGrowsOnWrite) {
  const Tensor ta = NewArray({.size = 0, .dynamic_size = true});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({1, 2}, {4, 5})));
  ASSERT_OK(Write(ta, 1, MakeTensor<float>({1, 1}, {1})));
  ASSERT_OK(Write(ta, 2, F(-3)));
  EXPECT_THAT(Size(ta), IsOkAndHolds(3));
  ASSERT_OK(Write(ta, 9, F(9)));
  EXPECT_THAT(Size(ta), IsOkAndHolds(10));
  EXPECT_THAT(Write(ta, -1, F(0)), StatusIs(absl::StatusCode::kInvalidArgument, _));
  EXPECT_THAT(Write(ta, (1 << 30), F(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot grow")));
  // A dynamic array also takes a split of any length.
  const Tensor split = NewArray({.size = 0, .dynamic_size = true});
  ASSERT_OK(Split(split, MakeTensor<float>({3}, {1, 2, 3}), {1, 2}));
  EXPECT_THAT(Size(split), IsOkAndHolds(2));
}

TEST_F(TensorArrayTest, ElementShapeIsEnforced) {
  const Tensor ta = NewArray({.element_shape = PartialTensorShape({-1, 2})});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6})));
  EXPECT_THAT(Write(ta, 1, MakeTensor<float>({2}, {1, 2})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("incompatible with the TensorArray's inferred element shape")));

  // With identical_element_shapes the first write fixes the shape.
  const Tensor same = NewArray({.identical_element_shapes = true});
  ASSERT_OK(Write(same, 0, MakeTensor<float>({2}, {1, 2})));
  EXPECT_THAT(Write(same, 1, MakeTensor<float>({3}, {1, 2, 3})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[2]")));
}

TEST_F(TensorArrayTest, GatherOfInconsistentShapesFails) {
  const Tensor ta = NewArray({});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({2}, {1, 2})));
  ASSERT_OK(Write(ta, 1, MakeTensor<float>({3}, {1, 2, 3})));
  EXPECT_THAT(Gather(ta, {0, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("inconsistent shapes. Index 0 has shape: [2] but index 1 has "
                                 "shape: [3]")));
}

TEST_F(TensorArrayTest, MultipleArrays) {
  const Tensor h1 = NewArray({.size = 1});
  const Tensor h2 = NewArray({.size = 1});
  ASSERT_OK(Write(h1, 0, F(4)));
  ASSERT_OK(Write(h2, 0, F(5)));
  EXPECT_THAT(Read(h1, 0), IsOkAndHolds(TensorEq(F(4))));
  EXPECT_THAT(Read(h2, 0), IsOkAndHolds(TensorEq(F(5))));
}

TEST_F(TensorArrayTest, CloseReleasesTheArray) {
  const Tensor ta = NewArray({});
  ASSERT_OK(Write(ta, 0, MakeTensor<float>({1, 2}, {4, 5})));
  ASSERT_OK(Close(ta));
  EXPECT_THAT(Read(ta, 0), StatusIs(absl::StatusCode::kNotFound,
                                    AllOf(HasSubstr(ta.scalar<ResourceHandleProto>().name()),
                                          HasSubstr("closed"))));
  EXPECT_THAT(Close(ta), StatusIs(absl::StatusCode::kNotFound, _));
}

TEST_F(TensorArrayTest, StepCleanupDropsTheStepsArrays) {
  const Tensor ta = NewArray({});
  ASSERT_OK_AND_ASSIGN(const Tensor g, Grad(ta, "grad"));
  step_ = 8;
  const Tensor other_step = NewArray({});
  CleanupStepResources(*resources_, 7);
  step_ = 7;
  EXPECT_THAT(Size(ta), StatusIs(absl::StatusCode::kNotFound, _));
  EXPECT_THAT(Size(g), StatusIs(absl::StatusCode::kNotFound, _));
  step_ = 8;
  EXPECT_THAT(Size(other_step), IsOkAndHolds(3));
}

TEST_F(TensorArrayTest, HandleOfAnotherStepIsNotFound) {
  const Tensor ta = NewArray({});
  step_ = 8;
  EXPECT_THAT(Size(ta), StatusIs(absl::StatusCode::kNotFound,
                                 AllOf(HasSubstr(ta.scalar<ResourceHandleProto>().name()),
                                       HasSubstr("not made by this step"))));
}

TEST_F(TensorArrayTest, BadInputsFailCleanly) {
  EXPECT_THAT(TryNewArray({.size = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Size should be >= 0")));
  EXPECT_THAT(TryNewArray({.size = (1 << 30)}), StatusIs(absl::StatusCode::kInvalidArgument, _));
  KernelTester t = Op("TensorArraySizeV3");
  t.Input(Tensor(DT_RESOURCE, TensorShape({2}))).Input(Flow());
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one handle")));
}

}  // namespace
}  // namespace rill
