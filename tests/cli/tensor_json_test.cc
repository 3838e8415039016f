#include "cli/tensor_json.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using testing::IsOkAndHolds;
using testing::StatusIs;

MATCHER_P(TensorIs, expected, expected.DebugString()) {
  *result_listener << "is " << arg.DebugString();
  return TensorsEqual(arg, expected);
}

TEST(ParseJsonTensor, ReadsScalars) {
  EXPECT_THAT(ParseJsonTensor("3", DT_INT32), IsOkAndHolds(TensorIs(Tensor::Scalar<int32_t>(3))));
  EXPECT_THAT(ParseJsonTensor(" -1.5e3 ", DT_FLOAT),
              IsOkAndHolds(TensorIs(Tensor::Scalar<float>(-1500))));
  EXPECT_THAT(ParseJsonTensor("true", DT_BOOL), IsOkAndHolds(TensorIs(Tensor::Scalar<bool>(true))));
  EXPECT_THAT(ParseJsonTensor("0", DT_BOOL), IsOkAndHolds(TensorIs(Tensor::Scalar<bool>(false))));
  EXPECT_THAT(ParseJsonTensor("\"a\\n\\u00e9\"", DT_STRING),
              IsOkAndHolds(TensorIs(Tensor::Scalar<std::string>("a\n\xc3\xa9"))));
}

TEST(ParseJsonTensor, DecodesStringEscapes) {
  EXPECT_THAT(ParseJsonTensor(R"(["\"\\\/\b\f\n\r\t", "\ud83d\ude00"])", DT_STRING),
              IsOkAndHolds(TensorIs(
                  Tensor::FromVector<std::string>({"\"\\/\b\f\n\r\t", "\xf0\x9f\x98\x80"}, {2}))));
}

TEST(ParseJsonTensor, NestingGivesTheShape) {
  EXPECT_THAT(ParseJsonTensor("[1,2,3]", DT_INT64),
              IsOkAndHolds(TensorIs(Tensor::FromVector<int64_t>({1, 2, 3}, {3}))));
  EXPECT_THAT(ParseJsonTensor("[[1, 2], [3, 4]]", DT_DOUBLE),
              IsOkAndHolds(TensorIs(Tensor::FromVector<double>({1, 2, 3, 4}, {2, 2}))));
  EXPECT_THAT(ParseJsonTensor("[[[0.5]], [[1]]]", DT_FLOAT),
              IsOkAndHolds(TensorIs(Tensor::FromVector<float>({0.5f, 1}, {2, 1, 1}))));
  EXPECT_THAT(ParseJsonTensor("[]", DT_FLOAT),
              IsOkAndHolds(TensorIs(Tensor(DT_FLOAT, TensorShape({0})))));
  EXPECT_THAT(ParseJsonTensor("[[], []]", DT_INT32),
              IsOkAndHolds(TensorIs(Tensor(DT_INT32, TensorShape({2, 0})))));
}

TEST(ParseJsonTensor, ConvertsToTheRequestedDtype) {
  EXPECT_THAT(ParseJsonTensor("[0, 255]", DT_UINT8),
              IsOkAndHolds(TensorIs(Tensor::FromVector<uint8_t>({0, 255}, {2}))));
  EXPECT_THAT(ParseJsonTensor("[-128, 1e2, 2.0]", DT_INT8),
              IsOkAndHolds(TensorIs(Tensor::FromVector<int8_t>({-128, 100, 2}, {3}))));
  EXPECT_THAT(ParseJsonTensor("[-9223372036854775808, 9223372036854775807]", DT_INT64),
              IsOkAndHolds(TensorIs(Tensor::FromVector<int64_t>({INT64_MIN, INT64_MAX}, {2}))));
  EXPECT_THAT(ParseJsonTensor("18446744073709551615", DT_UINT64),
              IsOkAndHolds(TensorIs(Tensor::Scalar<uint64_t>(UINT64_MAX))));
  EXPECT_THAT(ParseJsonTensor("0.1", DT_HALF),
              IsOkAndHolds(TensorIs(Tensor::Scalar<half>(half(0.1f)))));
  EXPECT_THAT(ParseJsonTensor("[1.5]", DT_COMPLEX64),
              IsOkAndHolds(TensorIs(Tensor::FromVector<complex64>({{1.5f, 0}}, {1}))));
  EXPECT_THAT(ParseJsonTensor("3.4028235e38", DT_FLOAT),
              IsOkAndHolds(TensorIs(Tensor::Scalar<float>(std::numeric_limits<float>::max()))));
}

TEST(ParseJsonTensor, AcceptsNonFiniteNamesForFloats) {
  ASSERT_OK_AND_ASSIGN(const Tensor t,
                       ParseJsonTensor("[\"NaN\", \"Infinity\", \"-inf\"]", DT_DOUBLE));
  EXPECT_TRUE(std::isnan(t.data<double>()[0]));
  EXPECT_EQ(t.data<double>()[1], std::numeric_limits<double>::infinity());
  EXPECT_EQ(t.data<double>()[2], -std::numeric_limits<double>::infinity());
  EXPECT_THAT(ParseJsonTensor("\"many\"", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"many\" is not a number")));
}

TEST(ParseJsonTensor, RejectsRaggedListsNamingThePosition) {
  EXPECT_THAT(ParseJsonTensor("[[1, 2], [3]]", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("byte offset 9"), HasSubstr("element [1] is a list of 1"),
                             HasSubstr("a list of 2 is expected"))));
  EXPECT_THAT(ParseJsonTensor("[[1, 2], 3]", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("byte offset 9"), HasSubstr("element [1] is a value"))));
  EXPECT_THAT(ParseJsonTensor("[1, [2]]", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("byte offset 4"), HasSubstr("element [1] is a list"))));
}

TEST(ParseJsonTensor, RejectsValuesTheDtypeCannotHold) {
  EXPECT_THAT(
      ParseJsonTensor("[1, 300]", DT_UINT8),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("byte offset 4"), HasSubstr("300 is out of range for uint8"))));
  EXPECT_THAT(ParseJsonTensor("-1", DT_UINT32),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range for uint32")));
  EXPECT_THAT(ParseJsonTensor("2147483648", DT_INT32),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range for int32")));
  EXPECT_THAT(ParseJsonTensor("9223372036854775808", DT_INT64),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range for int64")));
  EXPECT_THAT(ParseJsonTensor("1e19", DT_INT64),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range for int64")));
  EXPECT_THAT(ParseJsonTensor("1.5", DT_INT32),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1.5 is not an integer")));
  EXPECT_THAT(ParseJsonTensor("1e39", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range for float32")));
  EXPECT_THAT(ParseJsonTensor("70000", DT_HALF),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range for float16")));
  EXPECT_THAT(ParseJsonTensor("1e400", DT_DOUBLE),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range for float64")));
  EXPECT_THAT(ParseJsonTensor("true", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a boolean cannot be a float32 element")));
  EXPECT_THAT(ParseJsonTensor("2", DT_BOOL),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("true, false, 0 or 1")));
  EXPECT_THAT(ParseJsonTensor("1", DT_STRING),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a number cannot be a string element")));
}

TEST(ParseJsonTensor, RejectsMalformedJson) {
  EXPECT_THAT(ParseJsonTensor("", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a value")));
  EXPECT_THAT(ParseJsonTensor("[1, 2", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("byte offset 5"), HasSubstr("expected ',' or ']'"))));
  EXPECT_THAT(ParseJsonTensor("[1,]", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 3")));
  EXPECT_THAT(ParseJsonTensor("01", DT_INT32),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected text")));
  EXPECT_THAT(ParseJsonTensor("1.", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("digit after '.'")));
  EXPECT_THAT(ParseJsonTensor("+1", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a number")));
  EXPECT_THAT(ParseJsonTensor("null", DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  EXPECT_THAT(ParseJsonTensor("\"a\\x\"", DT_STRING),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("byte offset 2"), HasSubstr("bad escape"))));
  EXPECT_THAT(ParseJsonTensor("\"\\ud83d\"", DT_STRING),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unpaired surrogate")));
  EXPECT_THAT(ParseJsonTensor("\"abc", DT_STRING),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unterminated string")));
  EXPECT_THAT(ParseJsonTensor(std::string(300, '['), DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nested too deeply")));
}

TEST(TensorToJson, WritesDtypeShapeAndFlatValues) {
  EXPECT_THAT(
      TensorToJson(Tensor::FromVector<float>({1.5f, 2}, {2})),
      IsOkAndHolds(std::string(R"({"dtype": "float32", "shape": [2], "values": [1.5, 2]})")));
  EXPECT_THAT(
      TensorToJson(Tensor::FromVector<int32_t>({1, 2, 3, 4}, {2, 2})),
      IsOkAndHolds(std::string(R"({"dtype": "int32", "shape": [2, 2], "values": [1, 2, 3, 4]})")));
  EXPECT_THAT(TensorToJson(Tensor::Scalar<bool>(true)),
              IsOkAndHolds(std::string(R"({"dtype": "bool", "shape": [], "values": [true]})")));
}

TEST(TensorToJson, PrintsShortestRoundTripFloats) {
  EXPECT_THAT(JsonValues(Tensor::FromVector<float>({0.1f, 1e-7f, 3.4028235e38f}, {3})),
              IsOkAndHolds(std::string("[0.1, 1e-07, 3.4028235e+38]")));
  EXPECT_THAT(JsonValues(Tensor::FromVector<double>({0.1, 1.0 / 3}, {2})),
              IsOkAndHolds(std::string("[0.1, 0.3333333333333333]")));
  for (float v : {0.1f, 1.0f / 3, 123456.789f, -2.5e-30f}) {
    ASSERT_OK_AND_ASSIGN(const std::string text, JsonValues(Tensor::Scalar<float>(v)));
    ASSERT_OK_AND_ASSIGN(const Tensor back,
                         ParseJsonTensor(text.substr(1, text.size() - 2), DT_FLOAT));
    EXPECT_EQ(back.scalar<float>(), v) << text;
  }
}

TEST(TensorToJson, WritesNonFiniteAsStringsTheParserReads) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor t = Tensor::FromVector<float>({std::nanf(""), inf, -inf}, {3});
  ASSERT_OK_AND_ASSIGN(const std::string values, JsonValues(t));
  EXPECT_EQ(values, R"(["NaN", "Infinity", "-Infinity"])");
  EXPECT_THAT(ParseJsonTensor(values, DT_FLOAT), IsOkAndHolds(TensorIs(t)));
}

TEST(TensorToJson, WritesOtherElementKinds) {
  EXPECT_THAT(JsonValues(Tensor::FromVector<int8_t>({-3, 4}, {2})),
              IsOkAndHolds(std::string("[-3, 4]")));
  EXPECT_THAT(JsonValues(Tensor::FromVector<uint64_t>({UINT64_MAX}, {1})),
              IsOkAndHolds(std::string("[18446744073709551615]")));
  EXPECT_THAT(JsonValues(Tensor::FromVector<complex64>({{1, -0.5f}}, {1})),
              IsOkAndHolds(std::string("[[1, -0.5]]")));
  EXPECT_THAT(JsonValues(Tensor::FromVector<half>({half(0.5f)}, {1})),
              IsOkAndHolds(std::string("[0.5]")));
  EXPECT_THAT(JsonValues(Tensor::FromVector<std::string>({"a\"b\\", "\x01"}, {2})),
              IsOkAndHolds(std::string(R"(["a\"b\\", "\u0001"])")));
}

TEST(NumpyDtypeName, UsesNumpyNamesBothWays) {
  EXPECT_EQ(NumpyDtypeName(DT_FLOAT), "float32");
  EXPECT_EQ(NumpyDtypeName(DT_DOUBLE), "float64");
  EXPECT_EQ(NumpyDtypeName(DT_HALF), "float16");
  EXPECT_EQ(NumpyDtypeName(MakeRefType(DT_INT64)), "int64");
  EXPECT_EQ(NumpyDtypeName(DT_BOOL), "bool");
  EXPECT_THAT(DataTypeFromNumpyName("uint8"), IsOkAndHolds(DT_UINT8));
  EXPECT_THAT(DataTypeFromNumpyName("float"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'float'")));
}

}  // namespace
}  // namespace rill
