// TensorList's wire form, byte for byte TensorFlow's, through a variant
// TensorProto and back, and the errors for malformed ones.
#include "graph/tensor_list.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"
#include "graph/variant.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::HasSubstr;

TensorList ThreeWithAGap() {
  TensorList list;
  list.element_dtype = DT_FLOAT;
  list.element_shape = PartialTensorShape({});
  list.tensors = {Tensor::Scalar<float>(1.5f), Tensor(), Tensor::Scalar<float>(-2)};
  return list;
}

TEST(TensorList, EncodesAsTensorFlowDoes) {
  VariantTensorDataProto proto =
      EncodeVariant(Variant(std::make_shared<TensorList>(ThreeWithAGap())));
  EXPECT_EQ(proto.type_name(), "tensorflow::TensorList");
  ASSERT_EQ(proto.tensors_size(), 2);  // The unset element is only an index.
  // One unset element, at index 1; DT_FLOAT (1); no limit (2^64 - 1 as a
  // varint); then the scalar shape's TensorShapeProto, which is empty.
  const std::string expected =
      std::string("\x01\x01\x01", 3) + std::string(9, '\xff') + std::string("\x01", 1);
  EXPECT_EQ(proto.metadata(), expected);
}

TEST(TensorList, RoundTripsThroughAVariantTensorProto) {
  Tensor t(DT_VARIANT, TensorShape({2}));
  t.data<Variant>()[0] = Variant(std::make_shared<TensorList>(ThreeWithAGap()));
  const TensorProto proto = TensorToProto(t);
  ASSERT_EQ(proto.variant_val_size(), 2);
  ASSERT_OK_AND_ASSIGN(Tensor back, TensorFromProto(proto));
  EXPECT_EQ(back.dtype(), DT_VARIANT);
  EXPECT_TRUE(back.data<Variant>()[1].empty());
  const TensorList* list = back.data<Variant>()[0].get<TensorList>();
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->element_dtype, DT_FLOAT);
  EXPECT_EQ(list->max_num_elements, -1);
  EXPECT_EQ(list->element_shape, PartialTensorShape({}));
  ASSERT_EQ(list->tensors.size(), 3u);
  EXPECT_THAT(Values<float>(list->tensors[0]), ::testing::ElementsAre(1.5f));
  EXPECT_FALSE(list->tensors[1].IsInitialized());
  EXPECT_THAT(Values<float>(list->tensors[2]), ::testing::ElementsAre(-2.f));
}

TEST(TensorList, KeepsALimitAndAnUnknownShape) {
  TensorList list;
  list.element_dtype = DT_INT32;
  list.max_num_elements = 7;
  VariantTensorDataProto proto = EncodeVariant(Variant(std::make_shared<TensorList>(list)));
  ASSERT_OK_AND_ASSIGN(const Variant back, DecodeVariant(proto));
  const TensorList* decoded = back.get<TensorList>();
  ASSERT_NE(decoded, nullptr);
  EXPECT_EQ(decoded->max_num_elements, 7);
  EXPECT_TRUE(decoded->element_shape.unknown_rank());
}

TEST(TensorList, MalformedWireFormsAreErrors) {
  VariantTensorDataProto proto =
      EncodeVariant(Variant(std::make_shared<TensorList>(ThreeWithAGap())));
  VariantTensorDataProto cut = proto;
  cut.set_metadata(proto.metadata().substr(0, 4));
  EXPECT_THAT(DecodeVariant(cut), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("max_num_elements is not a varint")));
  VariantTensorDataProto far = proto;
  far.set_metadata(std::string("\x01\x09", 2) + proto.metadata().substr(2));
  EXPECT_THAT(DecodeVariant(far),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unset index 9")));
  VariantTensorDataProto wrong_type = proto;
  wrong_type.mutable_tensors(0)->set_dtype(DT_INT32);
  wrong_type.mutable_tensors(0)->clear_tensor_content();
  wrong_type.mutable_tensors(0)->add_int_val(3);
  EXPECT_THAT(DecodeVariant(wrong_type),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("an element of type int32")));
  VariantTensorDataProto other;
  other.set_type_name("tensorflow::data::DatasetVariant");
  EXPECT_THAT(DecodeVariant(other), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("'tensorflow::data::DatasetVariant'")));
  TensorProto counted;
  counted.set_dtype(DT_VARIANT);
  counted.mutable_tensor_shape()->add_dim()->set_size(3);
  *counted.add_variant_val() = proto;
  EXPECT_THAT(TensorFromProto(counted),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("variant_val has 1 values")));
}

}  // namespace
}  // namespace rill
