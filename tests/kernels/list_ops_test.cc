// The TensorList kernels, chained as a program would chain them: each
// step's list is the next step's input. Cases follow TensorFlow's
// list_ops_test.py where it pins a behaviour; errors name what is wrong.
#include <cstdint>
#include <vector>

#include "graph/tensor.h"
#include "graph/tensor_list.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Shape(std::vector<int32_t> dims) {
  return Tensor::FromVector<int32_t>(dims, TensorShape({static_cast<int64_t>(dims.size())}));
}
Tensor UnknownShape() { return Tensor::Scalar<int32_t>(-1); }
Tensor Int(int32_t v) { return Tensor::Scalar<int32_t>(v); }
Tensor Floats(std::vector<float> v, TensorShape shape) {
  return Tensor::FromVector<float>(v, shape);
}

const TensorList& ListOf(const Tensor& t) { return *t.scalar<Variant>().get<TensorList>(); }

absl::StatusOr<Tensor> Reserve(Tensor shape, int32_t n) {
  KernelTester t("TensorListReserve");
  return t.Attr("element_dtype", DT_FLOAT).Input(shape).Input(Int(n)).RunOne();
}
absl::StatusOr<Tensor> SetItem(const Tensor& list, int32_t i, Tensor item) {
  KernelTester t("TensorListSetItem");
  return t.Input(list).Input(Int(i)).Input(item).RunOne();
}
absl::StatusOr<Tensor> Stack(const Tensor& list, Tensor shape) {
  KernelTester t("TensorListStack");
  return t.Attr("element_dtype", DT_FLOAT).Input(list).Input(shape).RunOne();
}
absl::StatusOr<Tensor> FromTensor(Tensor tensor, Tensor shape) {
  KernelTester t("TensorListFromTensor");
  return t.Input(tensor).Input(shape).RunOne();
}

TEST(TensorList, ReserveSetStackReadsUnsetElementsAsZeros) {
  ASSERT_OK_AND_ASSIGN(Tensor list, Reserve(Shape({2}), 3));
  EXPECT_EQ(ListOf(list).tensors.size(), 3u);
  ASSERT_OK_AND_ASSIGN(list, SetItem(list, 0, Floats({1, 2}, {2})));
  ASSERT_OK_AND_ASSIGN(list, SetItem(list, 2, Floats({5, 6}, {2})));
  ASSERT_OK_AND_ASSIGN(Tensor stacked, Stack(list, Shape({2})));
  EXPECT_EQ(stacked.shape(), TensorShape({3, 2}));
  EXPECT_THAT(Values<float>(stacked), ElementsAre(1, 2, 0, 0, 5, 6));
}

TEST(TensorList, SetItemLeavesItsInputListUnchanged) {
  ASSERT_OK_AND_ASSIGN(const Tensor before, Reserve(Shape({}), 2));
  ASSERT_OK_AND_ASSIGN(const Tensor after, SetItem(before, 1, Floats({7}, {})));
  EXPECT_FALSE(ListOf(before).tensors[1].IsInitialized());
  EXPECT_THAT(Values<float>(ListOf(after).tensors[1]), ElementsAre(7));
}

TEST(TensorList, FromTensorGetItemAndLength) {
  ASSERT_OK_AND_ASSIGN(Tensor list, FromTensor(Floats({1, 2, 3, 4, 5, 6}, {3, 2}), Shape({-1})));
  KernelTester length("TensorListLength");
  ASSERT_OK_AND_ASSIGN(Tensor n, length.Input(list).RunOne());
  EXPECT_EQ(n.scalar<int32_t>(), 3);
  KernelTester get("TensorListGetItem");
  ASSERT_OK_AND_ASSIGN(
      Tensor item,
      get.Attr("element_dtype", DT_FLOAT).Input(list).Input(Int(1)).Input(Shape({2})).RunOne());
  EXPECT_THAT(Values<float>(item), ElementsAre(3, 4));
  KernelTester shape("TensorListElementShape");
  ASSERT_OK_AND_ASSIGN(Tensor dims, shape.Attr("shape_type", DT_INT32).Input(list).RunOne());
  EXPECT_THAT(Values<int32_t>(dims), ElementsAre(-1));
}

TEST(TensorList, PushBackPopBackAndTheLimit) {
  KernelTester empty("EmptyTensorList");
  ASSERT_OK_AND_ASSIGN(
      Tensor list,
      empty.Attr("element_dtype", DT_FLOAT).Input(UnknownShape()).Input(Int(2)).RunOne());
  for (float v : {1.f, 2.f}) {
    KernelTester push("TensorListPushBack");
    ASSERT_OK_AND_ASSIGN(list, push.Input(list).Input(Floats({v}, {1})).RunOne());
  }
  KernelTester full("TensorListPushBack");
  EXPECT_THAT(full.Input(list).Input(Floats({3}, {1})).RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the list is full")));
  KernelTester pop("TensorListPopBack");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       pop.Attr("element_dtype", DT_FLOAT).Input(list).Input(UnknownShape()).Run());
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(2));
  EXPECT_EQ(ListOf(out[0]).tensors.size(), 1u);
}

TEST(TensorList, ScatterGatherAndScatterIntoExisting) {
  KernelTester scatter("TensorListScatterV2");
  ASSERT_OK_AND_ASSIGN(Tensor list, scatter.Input(Floats({10, 20}, {2, 1}))
                                        .Input(Tensor::FromVector<int32_t>({3, 0}, {2}))
                                        .Input(Shape({1}))
                                        .Input(Int(5))
                                        .RunOne());
  EXPECT_EQ(ListOf(list).tensors.size(), 5u);
  KernelTester into("TensorListScatterIntoExistingList");
  ASSERT_OK_AND_ASSIGN(list, into.Input(list)
                                 .Input(Floats({30}, {1, 1}))
                                 .Input(Tensor::FromVector<int32_t>({1}, {1}))
                                 .RunOne());
  KernelTester gather("TensorListGather");
  ASSERT_OK_AND_ASSIGN(Tensor rows, gather.Attr("element_dtype", DT_FLOAT)
                                        .Input(list)
                                        .Input(Tensor::FromVector<int32_t>({3, 1, 0, 4}, {4}))
                                        .Input(Shape({1}))
                                        .RunOne());
  EXPECT_EQ(rows.shape(), TensorShape({4, 1}));
  EXPECT_THAT(Values<float>(rows), ElementsAre(10, 30, 20, 0));
}

TEST(TensorList, SplitThenConcatGivesTheTensorAndItsLengths) {
  KernelTester split("TensorListSplit");
  ASSERT_OK_AND_ASSIGN(Tensor list, split.Input(Floats({1, 2, 3, 4, 5, 6}, {3, 2}))
                                        .Input(Shape({-1, 2}))
                                        .Input(Tensor::FromVector<int64_t>({1, 0, 2}, {3}))
                                        .RunOne());
  EXPECT_EQ(ListOf(list).tensors.size(), 3u);
  KernelTester concat("TensorListConcatV2");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, concat.Attr("element_dtype", DT_FLOAT)
                                                    .Input(list)
                                                    .Input(Shape({-1, 2}))
                                                    .Input(Tensor::FromVector<int64_t>({}, {0}))
                                                    .Run());
  EXPECT_EQ(out[0].shape(), TensorShape({3, 2}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(Values<int64_t>(out[1]), ElementsAre(1, 0, 2));
}

TEST(TensorList, ConcatTakesUnsetElementsFromLeadingDims) {
  ASSERT_OK_AND_ASSIGN(Tensor list, Reserve(Shape({-1, 2}), 2));
  ASSERT_OK_AND_ASSIGN(list, SetItem(list, 1, Floats({1, 2}, {1, 2})));
  KernelTester concat("TensorListConcatV2");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, concat.Attr("element_dtype", DT_FLOAT)
                                                    .Input(list)
                                                    .Input(Shape({-1, 2}))
                                                    .Input(Tensor::FromVector<int64_t>({2, 1}, {2}))
                                                    .Run());
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(0, 0, 0, 0, 1, 2));
  EXPECT_THAT(Values<int64_t>(out[1]), ElementsAre(2, 1));
}

TEST(TensorList, ResizeAndConcatLists) {
  ASSERT_OK_AND_ASSIGN(Tensor a, FromTensor(Floats({1, 2}, {2}), Shape({})));
  KernelTester resize("TensorListResize");
  ASSERT_OK_AND_ASSIGN(Tensor longer, resize.Input(a).Input(Int(4)).RunOne());
  EXPECT_EQ(ListOf(longer).tensors.size(), 4u);
  KernelTester concat("TensorListConcatLists");
  ASSERT_OK_AND_ASSIGN(Tensor both,
                       concat.Attr("element_dtype", DT_FLOAT).Input(a).Input(longer).RunOne());
  EXPECT_EQ(ListOf(both).tensors.size(), 6u);
}

TEST(TensorList, BadUseIsAnErrorNamingIt) {
  ASSERT_OK_AND_ASSIGN(Tensor list, Reserve(UnknownShape(), 2));
  EXPECT_THAT(SetItem(list, 2, Floats({1}, {})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("index 2 is out of range")));
  EXPECT_THAT(Stack(list, UnknownShape()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not fully defined")));
  KernelTester wrong("TensorListGetItem");
  EXPECT_THAT(wrong.Attr("element_dtype", DT_INT32)
                  .Input(list)
                  .Input(Int(0))
                  .Input(UnknownShape())
                  .RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element_dtype is int32")));
  ASSERT_OK_AND_ASSIGN(Tensor shaped, Reserve(Shape({2}), 1));
  EXPECT_THAT(SetItem(shaped, 0, Floats({1, 2, 3}, {3})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("an element of shape [3]")));
  KernelTester pop("TensorListPopBack");
  ASSERT_OK_AND_ASSIGN(Tensor none, Reserve(UnknownShape(), 0));
  EXPECT_THAT(pop.Attr("element_dtype", DT_FLOAT).Input(none).Input(UnknownShape()).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the list is empty")));
  KernelTester not_a_list("TensorListLength");
  Tensor empty_variant(DT_VARIANT, TensorShape({}));
  EXPECT_THAT(not_a_list.Input(empty_variant).RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("an empty variant")));
}

}  // namespace
}  // namespace rill::testing
