#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::KernelTester;
using ::rill::testing::MakeTensor;
using ::rill::testing::RandomTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::TensorEq;
using ::testing::HasSubstr;

// MakeTensor cannot take a std::vector<bool>.
Tensor Bools(const TensorShape& shape, std::initializer_list<bool> values) {
  Tensor t(DT_BOOL, shape);
  std::copy(values.begin(), values.end(), t.data<bool>());
  return t;
}

TEST(Compare, FloatOpsBroadcastAgainstReference) {
  // Rounded to tenths so that equal values occur.
  Tensor x = RandomTensor(DT_FLOAT, {4, 1, 6}, 1, -1, 1);
  Tensor y = RandomTensor(DT_FLOAT, {3, 1}, 2, -1, 1);
  for (Tensor* t : {&x, &y}) {
    for (int64_t i = 0; i < t->NumElements(); ++i) {
      t->data<float>()[i] = std::round(t->data<float>()[i] * 3) / 3;
    }
  }
  for (const std::string op :
       {"Equal", "NotEqual", "Less", "Greater", "LessEqual", "GreaterEqual"}) {
    SCOPED_TRACE(op);
    Tensor expected(DT_BOOL, {4, 3, 6});
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 6; ++k) {
          const float a = x.data<float>()[i * 6 + k], b = y.data<float>()[j];
          const bool r = op == "Equal"       ? a == b
                         : op == "NotEqual"  ? a != b
                         : op == "Less"      ? a < b
                         : op == "Greater"   ? a > b
                         : op == "LessEqual" ? a <= b
                                             : a >= b;
          expected.data<bool>()[(i * 3 + j) * 6 + k] = r;
        }
      }
    }
    for (int threads : {1, 2}) {
      ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester(op).Input(x).Input(y).RunOne(threads));
      EXPECT_THAT(z, TensorEq(expected));
    }
  }
}

TEST(Compare, IntegerAndBoolTypes) {
  ASSERT_OK_AND_ASSIGN(Tensor less, KernelTester("Less")
                                        .Input(MakeTensor<int64_t>({3}, {1, 5, 3}))
                                        .Input(Tensor::Scalar<int64_t>(3))
                                        .RunOne());
  EXPECT_THAT(less, TensorEq(Bools({3}, {true, false, false})));
  ASSERT_OK_AND_ASSIGN(Tensor less_equal, KernelTester("LessEqual")
                                              .Input(MakeTensor<int32_t>({3}, {1, 5, 3}))
                                              .Input(Tensor::Scalar<int32_t>(3))
                                              .RunOne());
  EXPECT_THAT(less_equal, TensorEq(Bools({3}, {true, false, true})));
  ASSERT_OK_AND_ASSIGN(Tensor greater_equal, KernelTester("GreaterEqual")
                                                 .Input(MakeTensor<int64_t>({3}, {1, 5, 3}))
                                                 .Input(Tensor::Scalar<int64_t>(3))
                                                 .RunOne());
  EXPECT_THAT(greater_equal, TensorEq(Bools({3}, {false, true, true})));
  ASSERT_OK_AND_ASSIGN(Tensor eq, KernelTester("Equal")
                                      .Input(Bools({2}, {true, false}))
                                      .Input(Bools({2}, {true, true}))
                                      .RunOne());
  EXPECT_THAT(eq, TensorEq(Bools({2}, {true, false})));
}

TEST(Compare, IncompatibleShapesAreAnErrorUnlessAllowed) {
  const Tensor a = MakeTensor<int32_t>({2}, {1, 2});
  const Tensor b = MakeTensor<int32_t>({3}, {1, 2, 3});
  EXPECT_THAT(KernelTester("Greater").Input(a).Input(b).RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  ASSERT_OK_AND_ASSIGN(
      Tensor eq,
      KernelTester("Equal").Attr("incompatible_shape_error", false).Input(a).Input(b).RunOne());
  EXPECT_THAT(eq, TensorEq(Tensor::Scalar<bool>(false)));
  ASSERT_OK_AND_ASSIGN(
      Tensor ne,
      KernelTester("NotEqual").Attr("incompatible_shape_error", false).Input(a).Input(b).RunOne());
  EXPECT_THAT(ne, TensorEq(Tensor::Scalar<bool>(true)));
}

TEST(LogicalAnd, Broadcasts) {
  ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester("LogicalAnd")
                                     .Input(Bools({2, 1}, {true, false}))
                                     .Input(Bools({2}, {true, false}))
                                     .RunOne());
  EXPECT_THAT(z, TensorEq(Bools({2, 2}, {true, false, false, false})));
}

TEST(LogicalOr, Broadcasts) {
  ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester("LogicalOr")
                                     .Input(Bools({2, 1}, {true, false}))
                                     .Input(Bools({2}, {true, false}))
                                     .RunOne());
  EXPECT_THAT(z, TensorEq(Bools({2, 2}, {true, true, true, false})));
}

TEST(LogicalNot, NegatesEachElementKeepingTheShape) {
  ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("LogicalNot")
                                     .Input(Bools({2, 3}, {true, false, false, true, true, false}))
                                     .RunOne());
  EXPECT_THAT(y, TensorEq(Bools({2, 3}, {false, true, true, false, false, true})));
  ASSERT_OK_AND_ASSIGN(Tensor scalar,
                       KernelTester("LogicalNot").Input(Tensor::Scalar<bool>(false)).RunOne());
  EXPECT_THAT(scalar, TensorEq(Tensor::Scalar<bool>(true)));
  ASSERT_OK_AND_ASSIGN(Tensor empty,
                       KernelTester("LogicalNot").Input(Tensor(DT_BOOL, {0, 4})).RunOne());
  EXPECT_THAT(empty, TensorEq(Tensor(DT_BOOL, {0, 4})));
}

TEST(Select, ElementwiseRowwiseAndScalarConditions) {
  const Tensor t = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  const Tensor e = MakeTensor<float>({2, 2}, {-1, -2, -3, -4});
  ASSERT_OK_AND_ASSIGN(Tensor same, KernelTester("Select")
                                        .Input(Bools({2, 2}, {true, false, false, true}))
                                        .Input(t)
                                        .Input(e)
                                        .RunOne());
  EXPECT_THAT(same, TensorEq(MakeTensor<float>({2, 2}, {1, -2, -3, 4})));
  ASSERT_OK_AND_ASSIGN(
      Tensor rows,
      KernelTester("Select").Input(Bools({2}, {false, true})).Input(t).Input(e).RunOne());
  EXPECT_THAT(rows, TensorEq(MakeTensor<float>({2, 2}, {-1, -2, 3, 4})));
  ASSERT_OK_AND_ASSIGN(
      Tensor scalar,
      KernelTester("Select").Input(Tensor::Scalar<bool>(false)).Input(t).Input(e).RunOne());
  EXPECT_THAT(scalar, TensorEq(e));
}

TEST(Select, RandomRowwiseMatchesReference) {
  const Tensor t = RandomTensor(DT_DOUBLE, {9, 4, 3}, 1);
  const Tensor e = RandomTensor(DT_DOUBLE, {9, 4, 3}, 2);
  const Tensor r = RandomTensor(DT_FLOAT, {9}, 3);
  Tensor cond(DT_BOOL, {9});
  Tensor expected(DT_DOUBLE, {9, 4, 3});
  for (int i = 0; i < 9; ++i) {
    cond.data<bool>()[i] = r.data<float>()[i] > 0;
    for (int j = 0; j < 12; ++j) {
      expected.data<double>()[i * 12 + j] =
          (cond.data<bool>()[i] ? t : e).data<double>()[i * 12 + j];
    }
  }
  for (int threads : {1, 2}) {
    ASSERT_OK_AND_ASSIGN(Tensor out,
                         KernelTester("Select").Input(cond).Input(t).Input(e).RunOne(threads));
    EXPECT_THAT(out, TensorEq(expected));
  }
}

TEST(Select, RejectsMismatchedCondition) {
  const Tensor t = RandomTensor(DT_FLOAT, {2, 3}, 1);
  EXPECT_THAT(
      KernelTester("Select").Input(Bools({3}, {true, true, true})).Input(t).Input(t).RunOne(),
      StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(Cast, ConvertsBetweenTypes) {
  const Tensor f = MakeTensor<float>({4}, {1.75f, -2.5f, 0.0f, 3.0f});
  ASSERT_OK_AND_ASSIGN(Tensor i, KernelTester("Cast").Attr("DstT", DT_INT32).Input(f).RunOne());
  EXPECT_THAT(i, TensorEq(MakeTensor<int32_t>({4}, {1, -2, 0, 3})));
  ASSERT_OK_AND_ASSIGN(Tensor b, KernelTester("Cast").Attr("DstT", DT_BOOL).Input(f).RunOne());
  EXPECT_THAT(b, TensorEq(Bools({4}, {true, true, false, true})));
  ASSERT_OK_AND_ASSIGN(Tensor h, KernelTester("Cast").Attr("DstT", DT_HALF).Input(f).RunOne());
  ASSERT_OK_AND_ASSIGN(Tensor back, KernelTester("Cast").Attr("DstT", DT_DOUBLE).Input(h).RunOne());
  EXPECT_THAT(back, TensorEq(MakeTensor<double>({4}, {1.75, -2.5, 0.0, 3.0})));
  ASSERT_OK_AND_ASSIGN(Tensor u, KernelTester("Cast")
                                     .Attr("DstT", DT_BFLOAT16)
                                     .Attr("Truncate", true)
                                     .Input(MakeTensor<uint8_t>({2}, {7, 200}))
                                     .RunOne());
  ASSERT_OK_AND_ASSIGN(Tensor l, KernelTester("Cast").Attr("DstT", DT_INT64).Input(u).RunOne());
  EXPECT_THAT(l, TensorEq(MakeTensor<int64_t>({2}, {7, 200})));
}

// float <-> half goes through F16C where the machine has it: the same bits
// as Eigen's one-at-a-time conversion, edge cases included.
TEST(Cast, FloatAndHalfRoundTheWayEigenDoes) {
  std::vector<float> values = {
      0.f,      -0.f,   1.f,      65504.f, 65520.f, 65519.f,
      -1e9f,    6e-8f,  3e-8f,    2.9e-8f, 1e-5f,   0.1f,
      1.0f / 3, 1e-40f, -6.1e-5f, 2049.f,  2051.f,  std::numeric_limits<float>::infinity()};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> scale(-20.f, 20.f);
  while (values.size() < 1003)
    values.push_back(std::ldexp(scale(rng), static_cast<int>(scale(rng))));
  const Tensor f = MakeTensor<float>({static_cast<int64_t>(values.size())}, values);
  ASSERT_OK_AND_ASSIGN(Tensor h, KernelTester("Cast").Attr("DstT", DT_HALF).Input(f).RunOne());
  ASSERT_OK_AND_ASSIGN(Tensor back, KernelTester("Cast").Attr("DstT", DT_FLOAT).Input(h).RunOne());
  for (size_t i = 0; i < values.size(); ++i) {
    const half expected(values[i]);
    EXPECT_EQ(Eigen::numext::bit_cast<uint16_t>(h.data<half>()[i]),
              Eigen::numext::bit_cast<uint16_t>(expected))
        << values[i];
    EXPECT_EQ(back.data<float>()[i], static_cast<float>(expected)) << values[i];
  }
  const Tensor nan = MakeTensor<float>({1}, {std::nanf("")});
  ASSERT_OK_AND_ASSIGN(Tensor nan_half,
                       KernelTester("Cast").Attr("DstT", DT_HALF).Input(nan).RunOne());
  EXPECT_TRUE(Eigen::numext::isnan(nan_half.data<half>()[0]));
}

TEST(Cast, UnsupportedPairIsNotFound) {
  EXPECT_THAT(
      KernelTester("Cast").Attr("DstT", DT_INT16).Input(MakeTensor<float>({1}, {1})).RunOne(),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("Cast")));
}

// Assert passes quietly on true; on false the step fails with the data,
// `summarize` values of each, as TensorFlow's message shows them.
TEST(Assert, FailsWithItsDataWhenTheConditionIsFalse) {
  EXPECT_TRUE(KernelTester("Assert")
                  .Input(Tensor::Scalar<bool>(true))
                  .InputList({MakeTensor<int32_t>({4}, {1, 2, 3, 4})})
                  .Run()
                  .ok());
  EXPECT_THAT(KernelTester("Assert")
                  .Attr("summarize", int64_t{2})
                  .Input(Tensor::Scalar<bool>(false))
                  .InputList({MakeTensor<int32_t>({4}, {1, 2, 3, 4})})
                  .Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("assertion failed: [1 2")));
}

// SelectV2 broadcasts the condition, t and e together, as NumPy's where:
// a [2,1] condition over [3] branches, and a scalar e.
Tensor TrueFalse(const TensorShape& shape) {
  Tensor cond(DT_BOOL, shape);
  cond.data<bool>()[0] = true;
  cond.data<bool>()[1] = false;
  return cond;
}

TEST(SelectV2, BroadcastsItsThreeInputs) {
  absl::StatusOr<Tensor> out = KernelTester("SelectV2")
                                   .Input(TrueFalse({2, 1}))
                                   .Input(MakeTensor<float>({3}, {1, 2, 3}))
                                   .Input(MakeTensor<float>({}, {-1}))
                                   .RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), TensorShape({2, 3}));
  EXPECT_THAT(::rill::testing::Values<float>(*out), ::testing::ElementsAre(1, 2, 3, -1, -1, -1));
  EXPECT_THAT(KernelTester("SelectV2")
                  .UnknownInputShapes()
                  .Input(TrueFalse({2}))
                  .Input(MakeTensor<float>({3}, {1, 2, 3}))
                  .Input(MakeTensor<float>({3}, {1, 2, 3}))
                  .RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not broadcast")));
}

}  // namespace
}  // namespace rill
