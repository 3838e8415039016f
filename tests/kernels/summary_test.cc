#include <cfloat>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/proto/summary.pb.h"
#include "gtest/gtest.h"
#include "io/histogram.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::KernelTester;
using ::rill::testing::MakeTensor;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

Tensor Strings(const TensorShape& shape, std::vector<std::string> values) {
  return MakeTensor<std::string>(shape, std::move(values));
}

// The Summary a kernel's scalar string output holds.
Summary ParseOutput(const Tensor& out) {
  EXPECT_EQ(out.dtype(), DT_STRING);
  EXPECT_EQ(out.dims(), 0);
  Summary summary;
  EXPECT_TRUE(summary.ParseFromString(out.scalar<std::string>()));
  return summary;
}

Tensor SerializedScalars(const std::vector<std::pair<std::string, float>>& values) {
  Summary summary;
  for (const auto& [tag, v] : values) {
    Summary::Value* value = summary.add_value();
    value->set_tag(tag);
    value->set_simple_value(v);
  }
  return Tensor::Scalar<std::string>(summary.SerializeAsString());
}

TEST(ScalarSummary, OneValuePerTag) {
  ASSERT_OK_AND_ASSIGN(Tensor out, KernelTester("ScalarSummary")
                                       .Input(Strings({2}, {"loss", "accuracy"}))
                                       .Input<float>({2}, {0.25f, 0.75f})
                                       .RunOne());
  const Summary summary = ParseOutput(out);
  ASSERT_EQ(summary.value_size(), 2);
  EXPECT_EQ(summary.value(0).tag(), "loss");
  EXPECT_EQ(summary.value(0).simple_value(), 0.25f);
  EXPECT_EQ(summary.value(1).tag(), "accuracy");
  EXPECT_EQ(summary.value(1).simple_value(), 0.75f);
}

TEST(ScalarSummary, EveryRealNumberTypeBecomesAFloat) {
  const Tensor tag = Strings({}, {"x"});
  const std::vector<Tensor> values = {Tensor::Scalar<double>(2.5),
                                      Tensor::Scalar<int32_t>(-7),
                                      Tensor::Scalar<int64_t>(1 << 20),
                                      Tensor::Scalar<uint8_t>(200),
                                      Tensor::Scalar<int16_t>(-300),
                                      Tensor::Scalar<int8_t>(-5),
                                      Tensor::Scalar<uint16_t>(60000),
                                      Tensor::Scalar<uint32_t>(70000),
                                      Tensor::Scalar<uint64_t>(80000),
                                      Tensor::Scalar<half>(half(1.5f)),
                                      Tensor::Scalar<bfloat16>(bfloat16(-2.0f))};
  const std::vector<float> expected = {2.5f,     -7.0f,    1048576.0f, 200.0f, -300.0f, -5.0f,
                                       60000.0f, 70000.0f, 80000.0f,   1.5f,   -2.0f};
  for (size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(DataTypeString(values[i].dtype()));
    ASSERT_OK_AND_ASSIGN(Tensor out,
                         KernelTester("ScalarSummary").Input(tag).Input(values[i]).RunOne());
    const Summary summary = ParseOutput(out);
    ASSERT_EQ(summary.value_size(), 1);
    EXPECT_EQ(summary.value(0).tag(), "x");
    EXPECT_EQ(summary.value(0).simple_value(), expected[i]);
  }
}

TEST(ScalarSummary, MismatchedShapesNameBoth) {
  EXPECT_THAT(KernelTester("ScalarSummary")
                  .Input(Strings({2}, {"a", "b"}))
                  .Input<float>({3}, {1, 2, 3})
                  .RunOne(),
              StatusIs(kInvalid, HasSubstr("tags and values are not the same shape: [2] != [3]")));
  // As TensorFlow, a lone tag is named.
  EXPECT_THAT(
      KernelTester("ScalarSummary").Input(Strings({}, {"loss"})).Input<float>({1}, {1}).RunOne(),
      StatusIs(kInvalid, HasSubstr("[] != [1] (tag 'loss')")));
}

TEST(HistogramSummary, EncodesTheHistogramOfAllValues) {
  ASSERT_OK_AND_ASSIGN(Tensor out, KernelTester("HistogramSummary")
                                       .Input(Strings({}, {"weights"}))
                                       .Input<float>({2, 2}, {-1.0f, 0.0f, 0.5f, 0.5f})
                                       .RunOne());
  const Summary summary = ParseOutput(out);
  ASSERT_EQ(summary.value_size(), 1);
  EXPECT_EQ(summary.value(0).tag(), "weights");
  Histogram expected;
  for (double v : {-1.0, 0.0, 0.5, 0.5}) expected.Add(v);
  HistogramProto expected_proto;
  expected.EncodeToProto(&expected_proto);
  EXPECT_EQ(summary.value(0).histo().SerializeAsString(), expected_proto.SerializeAsString());
  EXPECT_EQ(summary.value(0).histo().num(), 4);
  EXPECT_EQ(summary.value(0).histo().min(), -1.0);
  EXPECT_EQ(summary.value(0).histo().max(), 0.5);
  EXPECT_EQ(summary.value(0).histo().sum(), 0.0);
}

TEST(HistogramSummary, IntegerValuesAndNoValues) {
  ASSERT_OK_AND_ASSIGN(Tensor out, KernelTester("HistogramSummary")
                                       .Input(Strings({}, {"ids"}))
                                       .Input<int64_t>({3}, {1, 2, 3})
                                       .RunOne());
  EXPECT_EQ(ParseOutput(out).value(0).histo().sum(), 6.0);

  ASSERT_OK_AND_ASSIGN(
      out,
      KernelTester("HistogramSummary").Input(Strings({}, {"none"})).Input<float>({0}, {}).RunOne());
  const HistogramProto empty = ParseOutput(out).value(0).histo();
  EXPECT_EQ(empty.num(), 0);
  EXPECT_EQ(empty.min(), DBL_MAX);
  EXPECT_EQ(empty.max(), -DBL_MAX);
  EXPECT_THAT(empty.bucket_limit(), ::testing::ElementsAre(DBL_MAX));
}

TEST(HistogramSummary, RejectsNanAndInfinityNamingTheTag) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THAT(KernelTester("HistogramSummary")
                  .Input(Strings({}, {"layer1/weights"}))
                  .Input<float>({3}, {1, nan, 2})
                  .RunOne(),
              StatusIs(kInvalid, HasSubstr("Nan in summary histogram for: layer1/weights")));
  EXPECT_THAT(KernelTester("HistogramSummary")
                  .Input(Strings({}, {"layer1/weights"}))
                  .Input<double>({2}, {1, -inf})
                  .RunOne(),
              StatusIs(kInvalid, HasSubstr("Infinity in summary histogram for: layer1/weights")));
}

TEST(HistogramSummary, RejectsATagThatIsNotAScalar) {
  EXPECT_THAT(KernelTester("HistogramSummary")
                  .Input(Strings({1}, {"w"}))
                  .Input<float>({1}, {1})
                  .UnknownInputShapes()
                  .RunOne(),
              StatusIs(kInvalid, HasSubstr("tags must be scalar")));
}

TEST(MergeSummary, ConcatenatesValuesOfEveryInputInOrder) {
  Tensor pair(DT_STRING, {2});
  pair.data<std::string>()[0] = SerializedScalars({{"b", 2}}).scalar<std::string>();
  pair.data<std::string>()[1] = SerializedScalars({{"c", 3}, {"d", 4}}).scalar<std::string>();
  ASSERT_OK_AND_ASSIGN(
      Tensor out,
      KernelTester("MergeSummary").InputList({SerializedScalars({{"a", 1}}), pair}).RunOne());
  const Summary summary = ParseOutput(out);
  ASSERT_EQ(summary.value_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(summary.value(i).tag(), std::string(1, static_cast<char>('a' + i)));
    EXPECT_EQ(summary.value(i).simple_value(), i + 1);
  }
}

TEST(MergeSummary, RejectsADuplicateTag) {
  EXPECT_THAT(KernelTester("MergeSummary")
                  .InputList({SerializedScalars({{"loss", 1}, {"lr", 0.1f}}),
                              SerializedScalars({{"loss", 2}})})
                  .RunOne(),
              StatusIs(kInvalid, HasSubstr("Duplicate tag loss found in summary inputs")));
  // Values without a tag (tensor summaries) may repeat.
  ASSERT_OK_AND_ASSIGN(Tensor out,
                       KernelTester("MergeSummary")
                           .InputList({SerializedScalars({{"", 1}}), SerializedScalars({{"", 2}})})
                           .RunOne());
  EXPECT_EQ(ParseOutput(out).value_size(), 2);
}

TEST(MergeSummary, RejectsAnInputThatIsNotASummary) {
  EXPECT_THAT(KernelTester("MergeSummary")
                  .InputList({Tensor::Scalar<std::string>("\xff\xff not a proto")})
                  .RunOne(),
              StatusIs(kInvalid, HasSubstr("Could not parse one of the summary inputs")));
}

}  // namespace
}  // namespace rill
