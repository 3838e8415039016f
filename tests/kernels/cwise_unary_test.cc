#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
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
using ::rill::testing::TensorNear;
using ::testing::HasSubstr;

// Applies `f` to every element of a float tensor.
Tensor Map(const Tensor& x, const std::function<double(double)>& f) {
  Tensor y(DT_FLOAT, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    y.data<float>()[i] = static_cast<float>(f(x.data<float>()[i]));
  }
  return y;
}

struct UnaryCase {
  std::string op;
  std::function<double(double)> reference;
  double low, high;
};

TEST(CwiseUnary, FloatOpsMatchReference) {
  const std::vector<UnaryCase> cases = {
      {"Neg", [](double x) { return -x; }, -3, 3},
      {"Square", [](double x) { return x * x; }, -3, 3},
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0.01, 4},
      {"Rsqrt", [](double x) { return 1 / std::sqrt(x); }, 0.1, 4},
      {"Exp", [](double x) { return std::exp(x); }, -5, 5},
      {"Log", [](double x) { return std::log(x); }, 0.01, 10},
      {"Abs", [](double x) { return std::abs(x); }, -3, 3},
      {"Sign", [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, -3, 3},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -8, 8},
      {"Tanh", [](double x) { return std::tanh(x); }, -4, 4},
      {"Sin", [](double x) { return std::sin(x); }, -7, 7},
      {"Cos", [](double x) { return std::cos(x); }, -7, 7},
      {"Reciprocal", [](double x) { return 1 / x; }, 0.1, 4},
      {"Inv", [](double x) { return 1 / x; }, -4, -0.1},
      {"Floor", [](double x) { return std::floor(x); }, -5, 5},
      {"Ceil", [](double x) { return std::ceil(x); }, -5, 5},
      {"Rint", [](double x) { return std::nearbyint(x); }, -5, 5},
      {"Round", [](double x) { return std::nearbyint(x); }, -5, 5},
  };
  for (const UnaryCase& c : cases) {
    SCOPED_TRACE(c.op);
    const Tensor x = RandomTensor(DT_FLOAT, {7, 33}, 11, c.low, c.high);
    for (int threads : {1, 2}) {
      ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester(c.op).Input(x).RunOne(threads));
      EXPECT_THAT(y, TensorNear(Map(x, c.reference), 1e-5, 1e-5));
    }
  }
}

TEST(CwiseUnary, IntegerOps) {
  const Tensor x = MakeTensor<int32_t>({5}, {-3, -1, 0, 2, 7});
  ASSERT_OK_AND_ASSIGN(Tensor neg, KernelTester("Neg").Input(x).RunOne());
  EXPECT_THAT(neg, TensorEq(MakeTensor<int32_t>({5}, {3, 1, 0, -2, -7})));
  ASSERT_OK_AND_ASSIGN(Tensor sq, KernelTester("Square").Input(x).RunOne());
  EXPECT_THAT(sq, TensorEq(MakeTensor<int32_t>({5}, {9, 1, 0, 4, 49})));
  ASSERT_OK_AND_ASSIGN(Tensor abs, KernelTester("Abs").Input(x).RunOne());
  EXPECT_THAT(abs, TensorEq(MakeTensor<int32_t>({5}, {3, 1, 0, 2, 7})));
  const Tensor x64 = MakeTensor<int64_t>({3}, {-5, 0, 9});
  ASSERT_OK_AND_ASSIGN(Tensor sign, KernelTester("Sign").Input(x64).RunOne());
  EXPECT_THAT(sign, TensorEq(MakeTensor<int64_t>({3}, {-1, 0, 1})));
}

// Round and Rint send halves to the even neighbour; Floor and Ceil go
// down and up, also below zero.
TEST(CwiseUnary, RoundingOnNegativesAndHalves) {
  const Tensor x = MakeTensor<float>(
      {11}, {-2.5f, -1.5f, -0.5f, -0.2f, 0.5f, 1.5f, 2.5f, 2.7f, -2.7f, 3.0f, 0.49999997f});
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"Floor", {-3, -2, -1, -1, 0, 1, 2, 2, -3, 3, 0}},
      {"Ceil", {-2, -1, 0, 0, 1, 2, 3, 3, -2, 3, 1}},
      {"Round", {-2, -2, 0, 0, 0, 2, 2, 3, -3, 3, 0}},
      {"Rint", {-2, -2, 0, 0, 0, 2, 2, 3, -3, 3, 0}},
  };
  for (const auto& [op, expected] : cases) {
    SCOPED_TRACE(op);
    ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester(op).Input(x).RunOne());
    EXPECT_THAT(y, TensorEq(MakeTensor<float>({11}, expected)));
  }
}

// The largest double below 0.5 rounds to 0, which floor(x + 0.5) gets
// wrong; values beyond 2^52 are integers already, and NaN and infinities
// stay as they are.
TEST(CwiseUnary, RoundDoubleEdgeCases) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = MakeTensor<double>(
      {7}, {0.49999999999999994, -3.5, 4503599627370497.0, 1e300, kNan, kInf, -kInf});
  ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("Round").Input(x).RunOne());
  EXPECT_THAT(
      y, TensorEq(MakeTensor<double>({7}, {0, -4, 4503599627370497.0, 1e300, kNan, kInf, -kInf})));
}

TEST(CwiseUnary, RoundingHalfAndBfloat16) {
  const Tensor x = MakeTensor<half>({4}, {half(-1.5f), half(2.5f), half(0.5f), half(-0.7f)});
  ASSERT_OK_AND_ASSIGN(Tensor round, KernelTester("Round").Input(x).RunOne());
  EXPECT_THAT(round,
              TensorEq(MakeTensor<half>({4}, {half(-2.0f), half(2.0f), half(0.0f), half(-1.0f)})));
  ASSERT_OK_AND_ASSIGN(Tensor floor, KernelTester("Floor").Input(x).RunOne());
  EXPECT_THAT(floor,
              TensorEq(MakeTensor<half>({4}, {half(-2.0f), half(2.0f), half(0.0f), half(-1.0f)})));
  const Tensor b = MakeTensor<bfloat16>({3}, {bfloat16(-1.5f), bfloat16(3.5f), bfloat16(0.25f)});
  ASSERT_OK_AND_ASSIGN(Tensor ceil, KernelTester("Ceil").Input(b).RunOne());
  EXPECT_THAT(
      ceil, TensorEq(MakeTensor<bfloat16>({3}, {bfloat16(-1.0f), bfloat16(4.0f), bfloat16(1.0f)})));
  ASSERT_OK_AND_ASSIGN(Tensor round_b, KernelTester("Round").Input(b).RunOne());
  EXPECT_THAT(round_b, TensorEq(MakeTensor<bfloat16>(
                           {3}, {bfloat16(-2.0f), bfloat16(4.0f), bfloat16(0.0f)})));
}

TEST(CwiseUnary, RoundLeavesIntegersAlone) {
  const Tensor x = MakeTensor<int64_t>({3}, {-3, 0, std::numeric_limits<int64_t>::max()});
  ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("Round").Input(x).RunOne());
  EXPECT_THAT(y, TensorEq(x));
}

TEST(CwiseUnary, ReciprocalOfZeroIsInfinite) {
  ASSERT_OK_AND_ASSIGN(
      Tensor y,
      KernelTester("Reciprocal").Input(MakeTensor<double>({4}, {-4, 0.5, 0, -0.0})).RunOne());
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_THAT(y, TensorEq(MakeTensor<double>({4}, {-0.25, 2, kInf, -kInf})));
}

// MakeTensor cannot take a std::vector<bool>.
Tensor Bools(const TensorShape& shape, std::initializer_list<bool> values) {
  Tensor t(DT_BOOL, shape);
  std::copy(values.begin(), values.end(), t.data<bool>());
  return t;
}

template <typename T>
Tensor SpecialValues() {
  using Limits = std::numeric_limits<T>;
  return MakeTensor<T>({6}, {Limits::quiet_NaN(), Limits::infinity(), -Limits::infinity(), T(0),
                             T(-1.5f), Limits::max()});
}

TEST(CwiseUnary, ClassifiesNanAndInfinities) {
  const Tensor nan = Bools({6}, {true, false, false, false, false, false});
  const Tensor inf = Bools({6}, {false, true, true, false, false, false});
  const Tensor finite = Bools({6}, {false, false, false, true, true, true});
  for (const Tensor& x : {SpecialValues<float>(), SpecialValues<double>(), SpecialValues<half>(),
                          SpecialValues<bfloat16>()}) {
    SCOPED_TRACE(DataTypeString(x.dtype()));
    ASSERT_OK_AND_ASSIGN(Tensor is_nan, KernelTester("IsNan").Input(x).RunOne());
    EXPECT_THAT(is_nan, TensorEq(nan));
    ASSERT_OK_AND_ASSIGN(Tensor is_inf, KernelTester("IsInf").Input(x).RunOne());
    EXPECT_THAT(is_inf, TensorEq(inf));
    ASSERT_OK_AND_ASSIGN(Tensor is_finite, KernelTester("IsFinite").Input(x).RunOne());
    EXPECT_THAT(is_finite, TensorEq(finite));
  }
}

TEST(CwiseUnary, DoubleExpAndScalarShape) {
  ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("Exp").Input(Tensor::Scalar<double>(1.0)).RunOne());
  EXPECT_THAT(y, TensorNear(Tensor::Scalar<double>(M_E), 1e-12, 0));
}

TEST(CwiseUnary, EmptyInputGivesEmptyOutput) {
  ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("Tanh").Input(Tensor(DT_FLOAT, {0, 3})).RunOne());
  EXPECT_EQ(y.shape(), TensorShape({0, 3}));
}

TEST(CwiseUnary, GradientsMatchReference) {
  const Tensor y = RandomTensor(DT_FLOAT, {4, 9}, 3);
  const Tensor dy = RandomTensor(DT_FLOAT, {4, 9}, 4);
  const std::vector<std::pair<std::string, std::function<double(double, double)>>> cases = {
      {"SigmoidGrad", [](double a, double g) { return g * a * (1 - a); }},
      {"TanhGrad", [](double a, double g) { return g * (1 - a * a); }},
      {"SqrtGrad", [](double a, double g) { return g / (2 * a); }},
      {"RsqrtGrad", [](double a, double g) { return -g * a * a * a / 2; }},
      {"ReciprocalGrad", [](double a, double g) { return -g * a * a; }},
      {"InvGrad", [](double a, double g) { return -g * a * a; }},
  };
  for (const auto& [op, f] : cases) {
    SCOPED_TRACE(op);
    Tensor expected(DT_FLOAT, y.shape());
    for (int64_t i = 0; i < y.NumElements(); ++i) {
      expected.data<float>()[i] = static_cast<float>(f(y.data<float>()[i], dy.data<float>()[i]));
    }
    ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester(op).Input(y).Input(dy).RunOne());
    EXPECT_THAT(z, TensorNear(expected, 1e-6, 1e-5));
  }
}

TEST(CwiseUnary, GradientRejectsMismatchedShapes) {
  EXPECT_THAT(KernelTester("TanhGrad")
                  .Input(RandomTensor(DT_FLOAT, {2, 3}, 1))
                  .Input(RandomTensor(DT_FLOAT, {3, 2}, 2))
                  .RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(CwiseUnary, UnregisteredTypeIsNotFound) {
  EXPECT_THAT(KernelTester("Abs").Input(MakeTensor<int8_t>({1}, {-1})).RunOne(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("Abs")));
}

}  // namespace
}  // namespace rill
