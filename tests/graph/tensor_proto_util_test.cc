#include "graph/tensor_proto_util.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "google/protobuf/text_format.h"
#include "graph/proto/graph.pb.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TensorProto ProtoOf(DataType dtype, std::initializer_list<int64_t> dims) {
  TensorProto proto;
  proto.set_dtype(dtype);
  for (int64_t d : dims) proto.mutable_tensor_shape()->add_dim()->set_size(d);
  return proto;
}

template <typename T>
void ExpectTensor(const absl::StatusOr<Tensor>& got, const TensorShape& shape,
                  std::initializer_list<T> values) {
  ASSERT_OK(got);
  const Tensor want = Tensor::FromVector<T>(values, shape);
  EXPECT_TRUE(TensorsEqual(*got, want))
      << "got " << got->DebugString(100) << "\nwant " << want.DebugString(100);
}

TEST(TensorFromProto, ReadsFloatVal) {
  TensorProto p = ProtoOf(DT_FLOAT, {2, 2});
  for (float v : {1.5f, -2.0f, 3.0f, 0.25f}) p.add_float_val(v);
  ExpectTensor<float>(TensorFromProto(p), TensorShape({2, 2}), {1.5f, -2.0f, 3.0f, 0.25f});
}

TEST(TensorFromProto, ReadsDoubleVal) {
  TensorProto p = ProtoOf(DT_DOUBLE, {2});
  p.add_double_val(1e300);
  p.add_double_val(-0.5);
  ExpectTensor<double>(TensorFromProto(p), TensorShape({2}), {1e300, -0.5});
}

TEST(TensorFromProto, ReadsIntValForEveryNarrowIntegerType) {
  TensorProto p = ProtoOf(DT_INT32, {2});
  p.add_int_val(-7);
  p.add_int_val(2147483647);
  ExpectTensor<int32_t>(TensorFromProto(p), TensorShape({2}), {-7, 2147483647});

  p.set_dtype(DT_INT16);
  p.set_int_val(1, -32768);
  ExpectTensor<int16_t>(TensorFromProto(p), TensorShape({2}), {-7, -32768});

  p.set_dtype(DT_INT8);
  p.set_int_val(1, 127);
  ExpectTensor<int8_t>(TensorFromProto(p), TensorShape({2}), {-7, 127});

  p.set_dtype(DT_UINT8);
  p.set_int_val(0, 255);
  ExpectTensor<uint8_t>(TensorFromProto(p), TensorShape({2}), {255, 127});

  p.set_dtype(DT_UINT16);
  p.set_int_val(0, 65535);
  ExpectTensor<uint16_t>(TensorFromProto(p), TensorShape({2}), {65535, 127});
}

TEST(TensorFromProto, RejectsIntValOutOfRangeForTheDtype) {
  TensorProto p = ProtoOf(DT_UINT8, {2});
  p.add_int_val(1);
  p.add_int_val(256);
  EXPECT_THAT(TensorFromProto(p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("int_val[1] = 256"), HasSubstr("uint8"))));
  p.set_dtype(DT_INT8);
  p.set_int_val(1, -129);
  EXPECT_THAT(TensorFromProto(p), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("int8")));
}

TEST(TensorFromProto, ReadsInt64Uint32Uint64AndBoolVals) {
  TensorProto i64 = ProtoOf(DT_INT64, {2});
  i64.add_int64_val(std::numeric_limits<int64_t>::min());
  i64.add_int64_val(5);
  ExpectTensor<int64_t>(TensorFromProto(i64), TensorShape({2}),
                        {std::numeric_limits<int64_t>::min(), 5});

  TensorProto u32 = ProtoOf(DT_UINT32, {1});
  u32.add_uint32_val(4000000000u);
  ExpectTensor<uint32_t>(TensorFromProto(u32), TensorShape({1}), {4000000000u});

  TensorProto u64 = ProtoOf(DT_UINT64, {1});
  u64.add_uint64_val(std::numeric_limits<uint64_t>::max());
  ExpectTensor<uint64_t>(TensorFromProto(u64), TensorShape({1}),
                         {std::numeric_limits<uint64_t>::max()});

  TensorProto b = ProtoOf(DT_BOOL, {3});
  b.add_bool_val(true);
  b.add_bool_val(false);
  b.add_bool_val(true);
  ExpectTensor<bool>(TensorFromProto(b), TensorShape({3}), {true, false, true});
}

TEST(TensorFromProto, ReadsComplexValsAsPairs) {
  TensorProto c64 = ProtoOf(DT_COMPLEX64, {2});
  for (float v : {1.0f, 2.0f, -3.0f, 0.5f}) c64.add_scomplex_val(v);
  ExpectTensor<complex64>(TensorFromProto(c64), TensorShape({2}),
                          {complex64(1, 2), complex64(-3, 0.5f)});

  TensorProto c128 = ProtoOf(DT_COMPLEX128, {1});
  c128.add_dcomplex_val(0.25);
  c128.add_dcomplex_val(-8);
  ExpectTensor<complex128>(TensorFromProto(c128), TensorShape({1}), {complex128(0.25, -8)});

  c128.add_dcomplex_val(1);
  EXPECT_THAT(TensorFromProto(c128),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("dcomplex_val has 3 values"), HasSubstr("pairs"))));
}

TEST(TensorFromProto, ReadsHalfAndBfloat16FromHalfValBits) {
  TensorProto h = ProtoOf(DT_HALF, {2});
  h.add_half_val(0x3C00);  // 1.0
  h.add_half_val(0xC000);  // -2.0
  ExpectTensor<half>(TensorFromProto(h), TensorShape({2}), {half(1.0f), half(-2.0f)});

  TensorProto bf = ProtoOf(DT_BFLOAT16, {2});
  bf.add_half_val(0x3FC0);  // 1.5
  bf.add_half_val(0x7F80);  // +inf
  ExpectTensor<bfloat16>(TensorFromProto(bf), TensorShape({2}),
                         {bfloat16(1.5f), bfloat16(std::numeric_limits<float>::infinity())});

  bf.set_half_val(1, 0x10000);
  EXPECT_THAT(TensorFromProto(bf),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("half_val[1]"), HasSubstr("bfloat16"))));
}

TEST(TensorFromProto, ReadsStringsWithBinaryBytes) {
  TensorProto p = ProtoOf(DT_STRING, {3});
  p.add_string_val("plain");
  p.add_string_val(std::string("\0\xff\x80zero", 7));
  p.add_string_val("");
  ASSERT_OK_AND_ASSIGN(Tensor t, TensorFromProto(p));
  EXPECT_EQ(t.vec<std::string>()(0), "plain");
  EXPECT_EQ(t.vec<std::string>()(1), std::string("\0\xff\x80zero", 7));
  EXPECT_EQ(t.vec<std::string>()(2), "");
}

TEST(TensorFromProto, RepeatsTheLastValueToFillTheShape) {
  TensorProto p = ProtoOf(DT_INT32, {2, 3});
  p.add_int_val(4);
  p.add_int_val(9);
  ExpectTensor<int32_t>(TensorFromProto(p), TensorShape({2, 3}), {4, 9, 9, 9, 9, 9});

  TensorProto s = ProtoOf(DT_STRING, {3});
  s.add_string_val("only");
  ExpectTensor<std::string>(TensorFromProto(s), TensorShape({3}), {"only", "only", "only"});

  TensorProto c = ProtoOf(DT_COMPLEX64, {3});
  c.add_scomplex_val(1);
  c.add_scomplex_val(-1);
  ExpectTensor<complex64>(TensorFromProto(c), TensorShape({3}),
                          {complex64(1, -1), complex64(1, -1), complex64(1, -1)});
}

TEST(TensorFromProto, NoValuesMeansZeros) {
  ExpectTensor<float>(TensorFromProto(ProtoOf(DT_FLOAT, {3})), TensorShape({3}), {0, 0, 0});
  ExpectTensor<bool>(TensorFromProto(ProtoOf(DT_BOOL, {2})), TensorShape({2}), {false, false});
  ExpectTensor<std::string>(TensorFromProto(ProtoOf(DT_STRING, {2})), TensorShape({2}), {"", ""});
  ExpectTensor<half>(TensorFromProto(ProtoOf(DT_HALF, {1})), TensorShape({1}), {half(0.0f)});
  ExpectTensor<double>(TensorFromProto(ProtoOf(DT_DOUBLE, {})), TensorShape(), {0.0});
}

TEST(TensorFromProto, RejectsMoreValuesThanElements) {
  TensorProto p = ProtoOf(DT_FLOAT, {2});
  for (float v : {1.0f, 2.0f, 3.0f}) p.add_float_val(v);
  EXPECT_THAT(TensorFromProto(p), StatusIs(absl::StatusCode::kInvalidArgument,
                                           AllOf(HasSubstr("float_val has 3 values"),
                                                 HasSubstr("[2]"), HasSubstr("2 elements"))));
  TensorProto empty = ProtoOf(DT_STRING, {0});
  empty.add_string_val("x");
  EXPECT_THAT(TensorFromProto(empty),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("string_val has 1 values")));
}

TEST(TensorFromProto, NamesAValueFieldThatDoesNotMatchTheDtype) {
  TensorProto p = ProtoOf(DT_FLOAT, {2});
  p.add_int64_val(3);
  EXPECT_THAT(TensorFromProto(p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("int64_val given for a tensor of dtype float")));
  TensorProto h = ProtoOf(DT_HALF, {1});
  h.add_float_val(1.0f);
  EXPECT_THAT(TensorFromProto(h),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("float_val given for a tensor of dtype half"),
                             HasSubstr("half_val"))));
}

TEST(TensorFromProto, ReadsTensorContent) {
  TensorProto p = ProtoOf(DT_INT16, {3});
  const int16_t values[] = {-1, 300, 7};
  p.set_tensor_content(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  ExpectTensor<int16_t>(TensorFromProto(p), TensorShape({3}), {-1, 300, 7});
}

TEST(TensorFromProto, RejectsTensorContentOfTheWrongSize) {
  TensorProto p = ProtoOf(DT_FLOAT, {2, 3});
  p.set_tensor_content(std::string(20, '\0'));
  EXPECT_THAT(TensorFromProto(p), StatusIs(absl::StatusCode::kInvalidArgument,
                                           AllOf(HasSubstr("20 bytes"), HasSubstr("needs 24 bytes"),
                                                 HasSubstr("[2,3]"))));
}

TEST(TensorFromProto, RejectsTensorContentBesideTypedValues) {
  TensorProto p = ProtoOf(DT_FLOAT, {1});
  p.set_tensor_content(std::string(4, '\0'));
  p.add_float_val(1.0f);
  EXPECT_THAT(TensorFromProto(p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor_content"), HasSubstr("float_val"))));
}

TEST(TensorFromProto, RejectsTensorContentForStrings) {
  TensorProto p = ProtoOf(DT_STRING, {1});
  p.set_tensor_content("abc");
  EXPECT_THAT(TensorFromProto(p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("string_val")));
}

TEST(TensorFromProto, RejectsUnsupportedDtypesNamingThem) {
  EXPECT_THAT(TensorFromProto(ProtoOf(DT_INVALID, {1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("DT_INVALID")));
  EXPECT_THAT(TensorFromProto(ProtoOf(DT_FLOAT_REF, {1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float_ref")));
  for (DataType dtype :
       {DT_RESOURCE, DT_QINT8, DT_QUINT8, DT_QINT16, DT_QUINT16, DT_QINT32}) {
    EXPECT_THAT(TensorFromProto(ProtoOf(dtype, {1})),
                StatusIs(absl::StatusCode::kUnimplemented, HasSubstr(DataTypeString(dtype))));
  }
  EXPECT_THAT(TensorFromProto(ProtoOf(static_cast<DataType>(77), {1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown dtype 77")));
}

TEST(TensorFromProto, RejectsMalformedShapes) {
  EXPECT_THAT(TensorFromProto(ProtoOf(DT_FLOAT, {2, -3})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("invalid shape"), HasSubstr("-3"))));
  EXPECT_THAT(TensorFromProto(ProtoOf(DT_FLOAT, {-1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown")));
  TensorProto unknown_rank = ProtoOf(DT_FLOAT, {});
  unknown_rank.mutable_tensor_shape()->set_unknown_rank(true);
  EXPECT_THAT(TensorFromProto(unknown_rank),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown rank")));
  const int64_t big = int64_t{1} << 33;
  EXPECT_THAT(TensorFromProto(ProtoOf(DT_FLOAT, {big, big})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
}

class CountingAllocator final : public Allocator {
 public:
  std::string Name() const override { return "counting"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    ++calls;
    return CpuAllocator()->AllocateRaw(alignment, bytes);
  }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    CpuAllocator()->DeallocateRaw(ptr, bytes);
  }
  int calls = 0;
};

TEST(TensorFromProto, UsesTheGivenAllocator) {
  CountingAllocator allocator;
  ASSERT_OK(TensorFromProto(ProtoOf(DT_FLOAT, {4}), &allocator));
  EXPECT_EQ(allocator.calls, 1);
}

constexpr int64_t k2To32 = int64_t{1} << 32;

TEST(TensorFromProto, ChecksTensorContentAgainstAHugeShapeBeforeAllocating) {
  TensorProto p = ProtoOf(DT_INT32, {k2To32});
  p.set_tensor_content(std::string(4, '\0'));
  CountingAllocator allocator;
  EXPECT_THAT(TensorFromProto(p, &allocator),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor_content has 4 bytes"), HasSubstr("[4294967296]"),
                             HasSubstr("17179869184 bytes"))));
  EXPECT_EQ(allocator.calls, 0);
  // Bytes past what size_t holds are refused too.
  TensorProto wide = ProtoOf(DT_COMPLEX128, {int64_t{1} << 61});
  wide.set_tensor_content(std::string(16, '\0'));
  EXPECT_THAT(TensorFromProto(wide, &allocator),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tensor_content has 16")));
  EXPECT_EQ(allocator.calls, 0);
}

TEST(TensorFromProto, ChecksTypedValuesBeforeAllocating) {
  TensorProto p = ProtoOf(DT_FLOAT, {2});
  for (float v : {1.0f, 2.0f, 3.0f}) p.add_float_val(v);
  CountingAllocator allocator;
  EXPECT_THAT(TensorFromProto(p, &allocator),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float_val has 3 values")));
  TensorProto misplaced = ProtoOf(DT_INT32, {k2To32});
  misplaced.add_float_val(1);
  EXPECT_THAT(TensorFromProto(misplaced, &allocator),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("belong in int_val")));
  EXPECT_EQ(allocator.calls, 0);
}

// One value over a huge shape is TensorFlow's repeat-last rule, so the shape
// alone decides: past the limit on one tensor it is refused before any
// memory is touched.
TEST(TensorFromProto, OneValueOverAShapePastTheTensorLimitIsResourceExhausted) {
  const testing::ScopedMaxTensorBytes limit(1 << 20);
  TensorProto p = ProtoOf(DT_INT32, {k2To32});
  p.add_int_val(1);
  CountingAllocator allocator;
  EXPECT_THAT(
      TensorFromProto(p, &allocator),
      StatusIs(absl::StatusCode::kResourceExhausted,
               AllOf(HasSubstr("int32 tensor of shape [4294967296]"), HasSubstr("1048576 bytes"))));
  EXPECT_EQ(allocator.calls, 0);
  // Within the limit the rule still fills the shape.
  TensorProto small = ProtoOf(DT_INT32, {3});
  small.add_int_val(7);
  ExpectTensor<int32_t>(TensorFromProto(small), TensorShape({3}), {7, 7, 7});
}

TEST(TensorFromProto, BytesPastWhatMemoryHoldsAreResourceExhaustedAtAnyLimit) {
  TensorProto p = ProtoOf(DT_COMPLEX128, {int64_t{1} << 61});
  p.add_dcomplex_val(1);
  p.add_dcomplex_val(2);
  EXPECT_THAT(TensorFromProto(p),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("one tensor may take")));
}

TEST(TensorToProto, ContentEncodingWritesRawLittleEndianBytes) {
  const Tensor t = Tensor::FromVector<int32_t>({1, 258}, TensorShape({2}));
  const TensorProto p = TensorToProto(t);
  EXPECT_EQ(p.dtype(), DT_INT32);
  EXPECT_EQ(p.tensor_shape().dim_size(), 1);
  EXPECT_EQ(p.tensor_shape().dim(0).size(), 2);
  EXPECT_EQ(p.tensor_content(), std::string("\x01\0\0\0\x02\x01\0\0", 8));
  EXPECT_EQ(p.int_val_size(), 0);
}

TEST(TensorToProto, TypedEncodingDropsTrailingRepeats) {
  const Tensor t = Tensor::FromVector<float>({1, 2, 2, 3, 3, 3}, TensorShape({2, 3}));
  const TensorProto p = TensorToProto(t, TensorProtoEncoding::kTypedValues);
  EXPECT_TRUE(p.tensor_content().empty());
  EXPECT_THAT(p.float_val(), ElementsAre(1, 2, 2, 3));
}

TEST(TensorToProto, TypedEncodingOfEqualValuesIsOneValue) {
  const Tensor t = Tensor::FromVector<int64_t>({7, 7, 7, 7}, TensorShape({4}));
  EXPECT_THAT(TensorToProto(t, TensorProtoEncoding::kTypedValues).int64_val(), ElementsAre(7));
  const Tensor empty(DT_FLOAT, TensorShape({0}));
  EXPECT_EQ(TensorToProto(empty, TensorProtoEncoding::kTypedValues).float_val_size(), 0);
}

TEST(TensorToProto, TypedEncodingKeepsTheSignOfZero) {
  const Tensor t = Tensor::FromVector<float>({0.0f, -0.0f}, TensorShape({2}));
  const TensorProto p = TensorToProto(t, TensorProtoEncoding::kTypedValues);
  ASSERT_EQ(p.float_val_size(), 2);
  EXPECT_TRUE(std::signbit(p.float_val(1)));
}

TEST(TensorToProto, HalfGoesToHalfValAsBits) {
  const Tensor t = Tensor::FromVector<half>({half(1.0f), half(-2.0f)}, TensorShape({2}));
  EXPECT_THAT(TensorToProto(t, TensorProtoEncoding::kTypedValues).half_val(),
              ElementsAre(0x3C00, 0xC000));
  const Tensor b = Tensor::FromVector<bfloat16>({bfloat16(1.5f)}, TensorShape({1}));
  EXPECT_THAT(TensorToProto(b, TensorProtoEncoding::kTypedValues).half_val(), ElementsAre(0x3FC0));
}

TEST(TensorToProto, StringsAlwaysGoToStringVal) {
  const Tensor t = Tensor::FromVector<std::string>({"a", std::string("\0b", 2)}, TensorShape({2}));
  const TensorProto p = TensorToProto(t);
  EXPECT_TRUE(p.tensor_content().empty());
  EXPECT_THAT(p.string_val(), ElementsAre("a", std::string("\0b", 2)));
}

// A tensor of every dtype whose values differ from each other and are not
// all zeros.
Tensor DistinctValues(DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  DispatchType(
      dtype,
      [&]<typename T>() {
        T* data = t.data<T>();
        for (int64_t i = 0; i < t.NumElements(); ++i) {
          if constexpr (std::is_same_v<T, std::string>) {
            data[i] = std::string(static_cast<size_t>(i), static_cast<char>('a' + i));
          } else if constexpr (std::is_same_v<T, bool>) {
            data[i] = i % 2 == 1;
          } else if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>) {
            data[i] = T(static_cast<typename T::value_type>(i),
                        -static_cast<typename T::value_type>(i) / 2);
          } else {
            data[i] = static_cast<T>(static_cast<float>(i * 3 + 1));
          }
        }
      },
      [] { FAIL() << "not storable"; });
  return t;
}

TEST(TensorProtoRoundTrip, EveryStorableDtypeInBothEncodings) {
  int storable = 0;
  for (int v = 1; v <= 23; ++v) {
    const auto dtype = static_cast<DataType>(v);
    if (!DataTypeCanBeStored(dtype)) continue;
    ++storable;
    for (const TensorShape& shape : {TensorShape({2, 3}), TensorShape(), TensorShape({0, 4})}) {
      const Tensor t = DistinctValues(dtype, shape);
      for (auto encoding : {TensorProtoEncoding::kContent, TensorProtoEncoding::kTypedValues}) {
        const TensorProto p = TensorToProto(t, encoding);
        ASSERT_OK_AND_ASSIGN(Tensor back, TensorFromProto(p));
        EXPECT_TRUE(TensorsEqual(back, t)) << DataTypeString(dtype) << " " << shape.DebugString()
                                           << " encoding " << static_cast<int>(encoding) << ": "
                                           << back.DebugString() << " vs " << t.DebugString();
        // The serialized bytes decode to the same tensor too.
        TensorProto reparsed;
        ASSERT_TRUE(reparsed.ParseFromString(p.SerializeAsString()));
        ASSERT_OK_AND_ASSIGN(Tensor again, TensorFromProto(reparsed));
        EXPECT_TRUE(TensorsEqual(again, t)) << DataTypeString(dtype);
      }
    }
  }
  EXPECT_EQ(storable, 16);
}

TEST(TensorProtoRoundTrip, RepeatedTailSurvivesTypedEncoding) {
  const Tensor t = Tensor::FromVector<double>({5, -1, -1, -1}, TensorShape({2, 2}));
  const TensorProto p = TensorToProto(t, TensorProtoEncoding::kTypedValues);
  EXPECT_EQ(p.double_val_size(), 2);
  ASSERT_OK_AND_ASSIGN(Tensor back, TensorFromProto(p));
  EXPECT_TRUE(TensorsEqual(back, t));
}

TEST(TensorFromProto, DecodesConstValuesFromATensorFlowGraph) {
  const std::string text =
      testing::ReadFileOrDie(testing::TestDataDir() + "/tf_graphs/const_values.pbtxt");
  GraphDef graph;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &graph));
  std::map<std::string, Tensor> consts;
  for (const NodeDef& node : graph.node()) {
    ASSERT_EQ(node.op(), "Const");
    ASSERT_OK_AND_ASSIGN(consts[node.name()], TensorFromProto(node.attr().at("value").tensor()));
  }
  ASSERT_EQ(consts.size(), 3u);
  EXPECT_TRUE(TensorsEqual(consts["x"],
                           Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}))));
  EXPECT_TRUE(TensorsEqual(consts["y"],
                           Tensor::FromVector<int64_t>({1, 3, 2, 5, 4, 7}, TensorShape({2, 3}))));
  EXPECT_TRUE(TensorsEqual(consts["z"],
                           Tensor::FromVector<int32_t>({1, 3, 2, 5, 4, 7}, TensorShape({2, 3}))));
}

}  // namespace
}  // namespace rill
