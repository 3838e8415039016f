// Numeric gradient checks (float64 central differences against the
// Jacobian AddGradients builds) for every differentiable math op.
#include <cmath>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/ops/gradient_checker.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::GradientChecker;
using ::rill::testing::GradientErrorBelow;
using ::rill::testing::Values;
using ::testing::DoubleNear;
using ::testing::ElementsAre;

constexpr double kTolerance = 1e-7;

using BinaryFn = std::function<Output(const Scope&, const Output&, const Output&)>;

struct BinaryCase {
  std::string name;
  BinaryFn fn;
  // Input ranges that keep away from poles and branch cuts.
  double x_lo, x_hi, y_lo, y_hi;

  friend void PrintTo(const BinaryCase& c, std::ostream* os) { *os << c.name; }
};

template <typename Op>
BinaryFn Binary() {
  return [](const Scope& s, const Output& x, const Output& y) -> Output { return Op(s, x, y); };
}

class BinaryGradTest : public ::testing::TestWithParam<BinaryCase> {};

// Equal shapes, a vector against a matrix, a column against a row (both
// broadcast) and a scalar: each input's gradient is summed back to its
// own shape.
TEST_P(BinaryGradTest, MatchesNumericGradientUnderBroadcasting) {
  const BinaryCase& p = GetParam();
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}};
  for (const auto& [sx, sy] : shapes) {
    SCOPED_TRACE(sx.DebugString() + " with " + sy.DebugString());
    GradientChecker c;
    const Output x = c.RandomInput(sx, p.x_lo, p.x_hi);
    const Output y = c.RandomInput(sy, p.y_lo, p.y_hi);
    EXPECT_THAT(c.MaxError({p.fn(c.scope(), x, y)}), GradientErrorBelow(kTolerance));
  }
}

INSTANTIATE_TEST_SUITE_P(
    MathGrad, BinaryGradTest,
    ::testing::Values(BinaryCase{"Add", Binary<ops::Add>(), -1, 1, -1, 1},
                      BinaryCase{"AddV2", Binary<ops::AddV2>(), -1, 1, -1, 1},
                      BinaryCase{"Sub", Binary<ops::Sub>(), -1, 1, -1, 1},
                      BinaryCase{"Mul", Binary<ops::Mul>(), -1, 1, -1, 1},
                      BinaryCase{"Div", Binary<ops::Div>(), -1, 1, 0.5, 2},
                      BinaryCase{"RealDiv", Binary<ops::RealDiv>(), -1, 1, 0.5, 2},
                      BinaryCase{"Maximum", Binary<ops::Maximum>(), -1, 1, -1, 1},
                      BinaryCase{"Minimum", Binary<ops::Minimum>(), -1, 1, -1, 1},
                      BinaryCase{"Pow", Binary<ops::Pow>(), 0.5, 2, -1.5, 1.5},
                      BinaryCase{"FloorMod", Binary<ops::FloorMod>(), -3, 3, 0.7, 1.3},
                      BinaryCase{"SquaredDifference", Binary<ops::SquaredDifference>(), -1, 1, -1,
                                 1}),
    [](const ::testing::TestParamInfo<BinaryCase>& info) { return info.param.name; });

using UnaryFn = std::function<Output(const Scope&, const Output&)>;

struct UnaryCase {
  std::string name;
  UnaryFn fn;
  double lo, hi, min_abs;

  friend void PrintTo(const UnaryCase& c, std::ostream* os) { *os << c.name; }
};

template <typename Op>
UnaryFn Unary() {
  return [](const Scope& s, const Output& x) -> Output { return Op(s, x); };
}

class UnaryGradTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryGradTest, MatchesNumericGradient) {
  const UnaryCase& p = GetParam();
  GradientChecker c;
  const Output x = c.RandomInput({2, 3}, p.lo, p.hi, p.min_abs);
  EXPECT_THAT(c.MaxError({p.fn(c.scope(), x)}), GradientErrorBelow(kTolerance));
}

INSTANTIATE_TEST_SUITE_P(
    MathGrad, UnaryGradTest,
    ::testing::Values(UnaryCase{"Neg", Unary<ops::Neg>(), -1, 1, 0},
                      UnaryCase{"Square", Unary<ops::Square>(), -1, 1, 0},
                      UnaryCase{"Sqrt", Unary<ops::Sqrt>(), 0.5, 2, 0},
                      UnaryCase{"Rsqrt", Unary<ops::Rsqrt>(), 0.5, 2, 0},
                      UnaryCase{"Exp", Unary<ops::Exp>(), -1, 1, 0},
                      UnaryCase{"Log", Unary<ops::Log>(), 0.5, 2, 0},
                      UnaryCase{"Abs", Unary<ops::Abs>(), -1, 1, 0.1},
                      UnaryCase{"Sigmoid", Unary<ops::Sigmoid>(), -2, 2, 0},
                      UnaryCase{"Tanh", Unary<ops::Tanh>(), -2, 2, 0},
                      UnaryCase{"Sin", Unary<ops::Sin>(), -3, 3, 0},
                      UnaryCase{"Cos", Unary<ops::Cos>(), -3, 3, 0},
                      UnaryCase{"Reciprocal", Unary<ops::Reciprocal>(), -2, 2, 0.5},
                      UnaryCase{"Inv", Unary<ops::Inv>(), -2, 2, 0.5},
                      // Sign is flat: x * sign(x) = |x| tests that it adds nothing.
                      UnaryCase{"Sign",
                                [](const Scope& s, const Output& x) -> Output {
                                  return ops::Mul(s, x, ops::Sign(s, x));
                                },
                                -1, 1, 0.1}),
    [](const ::testing::TestParamInfo<UnaryCase>& info) { return info.param.name; });

TEST(MathGrad, SigmoidGradIsDifferentiableInBothInputs) {
  GradientChecker c;
  const Output y = c.RandomInput({2, 3}, 0.1, 0.9);
  const Output dy = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({ops::SigmoidGrad(c.scope(), y, dy)}), GradientErrorBelow(kTolerance));
}

TEST(MathGrad, TanhGradIsDifferentiableInBothInputs) {
  GradientChecker c;
  const Output y = c.RandomInput({2, 3}, -0.9, 0.9);
  const Output dy = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({ops::TanhGrad(c.scope(), y, dy)}), GradientErrorBelow(kTolerance));
}

// The gradient ops of Sqrt, Rsqrt and Reciprocal (and Inv), as second
// derivatives need them; y is kept away from 0.
TEST(MathGrad, UnaryGradOpsAreDifferentiableInBothInputs) {
  const std::vector<std::pair<std::string, BinaryFn>> cases = {
      {"SqrtGrad", Binary<ops::SqrtGrad>()},
      {"RsqrtGrad", Binary<ops::RsqrtGrad>()},
      {"ReciprocalGrad", Binary<ops::ReciprocalGrad>()},
      {"InvGrad", Binary<ops::InvGrad>()},
  };
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    GradientChecker c;
    const Output y = c.RandomInput({2, 3}, -2, 2, 0.5);
    const Output dy = c.RandomInput({2, 3});
    EXPECT_THAT(c.MaxError({fn(c.scope(), y, dy)}), GradientErrorBelow(kTolerance));
  }
}

// Floor, Ceil, Round and Rint pass no gradient: x + f(x) has derivative 1.
// The values keep a step's distance from integers and halves.
TEST(MathGrad, RoundingOpsPassNoGradient) {
  const std::vector<std::pair<std::string, UnaryFn>> cases = {
      {"Floor", Unary<ops::Floor>()},
      {"Ceil", Unary<ops::Ceil>()},
      {"Round", Unary<ops::Round>()},
      {"Rint", Unary<ops::Rint>()},
  };
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    GradientChecker c;
    const Output x = c.Input(Tensor::FromVector<double>({-1.7, -0.2, 0.3, 1.2, 2.6, -2.3}, {2, 3}));
    EXPECT_THAT(c.MaxError({ops::Add(c.scope(), x, fn(c.scope(), x))}),
                GradientErrorBelow(kTolerance));
  }
}

// Inside [min, max] the gradient goes to t, outside to the bound that
// clipped it: scalar bounds collect it from every element they clip.
TEST(MathGrad, ClipByValueRoutesToTOrTheClippingBound) {
  const Tensor t = Tensor::FromVector<double>({-1.7, -0.2, 0.3, 1.2, 0.6, -2.3}, {2, 3});
  {
    SCOPED_TRACE("scalar bounds");
    GradientChecker c;
    const Output x = c.Input(t);
    const Output lo = c.Input(Tensor::Scalar<double>(-0.5));
    const Output hi = c.Input(Tensor::Scalar<double>(0.5));
    EXPECT_THAT(c.MaxError({ops::ClipByValue(c.scope(), x, lo, hi)}),
                GradientErrorBelow(kTolerance));
  }
  {
    SCOPED_TRACE("tensor bounds");
    GradientChecker c;
    const Output x = c.Input(t);
    const Output lo = c.Input(Tensor::FromVector<double>({-1, -1, 0.5, -1, -1, -2}, {2, 3}));
    const Output hi = c.Input(Tensor::FromVector<double>({1, 0, 1, 2, 0.2, 1}, {2, 3}));
    EXPECT_THAT(c.MaxError({ops::ClipByValue(c.scope(), x, lo, hi)}),
                GradientErrorBelow(kTolerance));
  }
}

// Runs the scope's graph, which has no placeholders, and returns `fetch`.
std::vector<double> Evaluate(const Scope& s, const Output& fetch) {
  absl::StatusOr<GraphDef> graph = s.ToGraphDef();
  EXPECT_OK(graph);
  if (!graph.ok()) return {};
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions(), *graph);
  EXPECT_OK(session);
  if (!session.ok()) return {};
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run({}, {fetch.name()});
  EXPECT_OK(out);
  if (!out.ok()) return {};
  return Values<double>(out->front());
}

// Where the base is 0 or negative, no real log(x) exists: the exponent's
// gradient is 0 there, and so is its derivative with respect to x (log is
// taken of 1 there, not of x, so no 0/0 appears). The base's gradient is
// the usual one, also for a negative base.
TEST(MathGrad, PowExponentGradientIsZeroWhereTheBaseIsNotPositive) {
  const Scope s = ops::NewRootScope();
  const Output x = ops::Const(s, {0.0, -2.0, 3.0});
  const Output y = ops::Const(s, {2.0, 3.0, 0.5});
  const Output z = ops::Pow(s, x, y);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {z}, {x, y}));
  ASSERT_OK_AND_ASSIGN(std::vector<Output> dd, AddGradients(s, {d[1]}, {x}));
  EXPECT_THAT(Evaluate(s, d[0]), ElementsAre(0, 12, DoubleNear(0.5 / std::sqrt(3.0), 1e-12)));
  EXPECT_THAT(Evaluate(s, d[1]),
              ElementsAre(0, 0, DoubleNear(std::sqrt(3.0) * std::log(3.0), 1e-12)));
  const std::vector<double> second = Evaluate(s, dd[0]);
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[0], 0);
  EXPECT_EQ(second[1], 0);
}

TEST(MathGrad, MatMulInEveryTransposeCombination) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      GradientChecker c;
      const Output a = c.RandomInput(ta ? TensorShape({3, 2}) : TensorShape({2, 3}));
      const Output b = c.RandomInput(tb ? TensorShape({4, 3}) : TensorShape({3, 4}));
      const Output y = ops::MatMul(c.scope(), a, b, ops::MatMul::TransposeA(ta).TransposeB(tb));
      EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
    }
  }
}

TEST(MathGrad, BatchMatMulInEveryAdjointCombination) {
  for (bool adj_x : {false, true}) {
    for (bool adj_y : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "adj_x=" << adj_x << " adj_y=" << adj_y);
      GradientChecker c;
      const Output x = c.RandomInput(adj_x ? TensorShape({2, 3, 2}) : TensorShape({2, 2, 3}));
      const Output y = c.RandomInput(adj_y ? TensorShape({2, 4, 3}) : TensorShape({2, 3, 4}));
      const Output z =
          ops::BatchMatMulV2(c.scope(), x, y, ops::BatchMatMulV2::AdjX(adj_x).AdjY(adj_y));
      EXPECT_THAT(c.MaxError({z}), GradientErrorBelow(kTolerance));
    }
  }
}

TEST(MathGrad, BatchMatMulSumsOverBroadcastBatchDimensions) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 1, 2, 3});
  const Output y = c.RandomInput({3, 3, 2});
  EXPECT_THAT(c.MaxError({ops::BatchMatMulV2(c.scope(), x, y)}), GradientErrorBelow(kTolerance));
}

TEST(MathGrad, AddNWithARepeatedInput) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  const Output y = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({ops::AddN(c.scope(), {x, y, x})}), GradientErrorBelow(kTolerance));
}

// The float checker (step 1e-3) is the one that can move a value across a
// precision change without rounding drowning the difference.
TEST(MathGrad, CastBetweenFloatingTypes) {
  GradientChecker c(DT_FLOAT);
  const Output x = c.RandomInput({2, 3});
  const Output y = ops::Mul(c.scope(), ops::Cast(c.scope(), x, DT_DOUBLE), 3.0);
  EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(1e-3));
}

TEST(MathGrad, SelectRoutesToTheChosenInput) {
  GradientChecker c;
  const Output t = c.RandomInput({2, 3});
  const Output e = c.RandomInput({2, 3});
  const Output cond = ops::Const(
      c.scope(), Tensor::FromVector<bool>({true, false, false, true, true, false}, {2, 3}),
      DT_BOOL);
  EXPECT_THAT(c.MaxError({ops::Select(c.scope(), cond, t, e)}), GradientErrorBelow(kTolerance));
}

using ReductionFn = std::function<Output(const Scope&, const Output&, const Output&, bool)>;

template <typename Op>
ReductionFn Reduction() {
  return [](const Scope& s, const Output& x, const Output& axes, bool keep_dims) -> Output {
    return Op(s, x, axes, typename Op::Attrs().KeepDims(keep_dims));
  };
}

struct ReductionCase {
  std::string name;
  ReductionFn fn;

  friend void PrintTo(const ReductionCase& c, std::ostream* os) { *os << c.name; }
};

class ReductionGradTest : public ::testing::TestWithParam<ReductionCase> {};

// One axis, several, a negative one, a scalar axis, all axes, and with
// kept dimensions.
TEST_P(ReductionGradTest, MatchesNumericGradientOverAxes) {
  const ReductionCase& p = GetParam();
  struct Axes {
    Tensor axes;
    bool keep_dims;
  };
  const std::vector<Axes> cases = {{Tensor::FromVector<int32_t>({1}, {1}), false},
                                   {Tensor::FromVector<int32_t>({0, 2}, {2}), false},
                                   {Tensor::FromVector<int32_t>({-1}, {1}), true},
                                   {Tensor::Scalar<int32_t>(0), false},
                                   {Tensor::FromVector<int32_t>({0, 1, 2}, {3}), false},
                                   {Tensor::FromVector<int32_t>({0, 2}, {2}), true}};
  for (const Axes& a : cases) {
    SCOPED_TRACE(a.axes.DebugString() + (a.keep_dims ? " keep_dims" : ""));
    GradientChecker c;
    const Output x = c.RandomInput({2, 3, 4}, 0.5, 1.5);
    const Output axes = ops::Const(c.scope(), a.axes, DT_INT32);
    EXPECT_THAT(c.MaxError({p.fn(c.scope(), x, axes, a.keep_dims)}),
                GradientErrorBelow(kTolerance));
  }
}

INSTANTIATE_TEST_SUITE_P(MathGrad, ReductionGradTest,
                         ::testing::Values(ReductionCase{"Sum", Reduction<ops::Sum>()},
                                           ReductionCase{"Mean", Reduction<ops::Mean>()},
                                           ReductionCase{"Max", Reduction<ops::Max>()},
                                           ReductionCase{"Min", Reduction<ops::Min>()},
                                           ReductionCase{"Prod", Reduction<ops::Prod>()}),
                         [](const ::testing::TestParamInfo<ReductionCase>& info) {
                           return info.param.name;
                         });

// The product of the others, not y / x: exact where an element is zero.
TEST(MathGrad, ProdWithAZeroElement) {
  GradientChecker c;
  const Output x = c.Input(Tensor::FromVector<double>({0.5, 0, 2, 1.5, -1, 0.75}, {2, 3}));
  EXPECT_THAT(c.MaxError({ops::Prod(c.scope(), x, 1)}), GradientErrorBelow(kTolerance));
}

// Tied maxima share the gradient equally, as TensorFlow.
TEST(MathGrad, MaxSharesTheGradientAmongTies) {
  GradientChecker c;
  const Output x = c.Input(Tensor::FromVector<double>({1, 3, 3, 2}, {4}));
  const Output y = ops::Max(c.scope(), x, 0);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> dx, AddGradients(c.scope(), {y}, {x}));
  ASSERT_OK_AND_ASSIGN(GraphDef graph, c.scope().ToGraphDef());
  ASSERT_OK_AND_ASSIGN(auto session, NewSession(SessionOptions(), graph));
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      session->Run({{x.name(), Tensor::FromVector<double>({1, 3, 3, 2}, {4})}}, {dx[0].name()}));
  EXPECT_THAT(std::vector<double>(out[0].data<double>(), out[0].data<double>() + 4),
              ::testing::ElementsAre(0, 0.5, 0.5, 0));
}

// Cumsum in all four ways, along the middle axis and the last.
TEST(MathGrad, Cumsum) {
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      for (int axis : {1, -1}) {
        GradientChecker c;
        const Output x = c.RandomInput({2, 3, 4});
        const Output y =
            ops::Cumsum(c.scope(), x, axis, ops::Cumsum::Exclusive(exclusive).Reverse(reverse));
        EXPECT_THAT(c.MaxError({ops::Square(c.scope(), y)}), GradientErrorBelow(kTolerance))
            << exclusive << reverse << axis;
      }
    }
  }
}

// Cumprod away from 0, where its gradient (divided by x) is finite.
TEST(MathGrad, Cumprod) {
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      GradientChecker c;
      const Output x = c.RandomInput({3, 4}, -1.5, 1.5, /*min_abs=*/0.3);
      const Output y =
          ops::Cumprod(c.scope(), x, 1, ops::Cumprod::Exclusive(exclusive).Reverse(reverse));
      EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(1e-6)) << exclusive << reverse;
    }
  }
}

// DivNoNan away from a zero divisor differentiates as Div, broadcasting.
TEST(MathGrad, DivNoNan) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  const Output y = c.RandomInput({3}, -2, 2, /*min_abs=*/0.5);
  EXPECT_THAT(c.MaxError({ops::DivNoNan(c.scope(), x, y)}), GradientErrorBelow(kTolerance));
}

// SelectV2 with each input broadcast: the branches' gradients summed back
// over the dimensions they were broadcast along.
TEST(MathGrad, SelectV2Broadcasting) {
  GradientChecker c;
  const Output cond =
      ops::Const(c.scope(), Tensor::FromVector<bool>({true, false}, {2, 1}), DT_BOOL);
  const Output t = c.RandomInput({3});
  const Output e = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({ops::Square(c.scope(), ops::SelectV2(c.scope(), cond, t, e))}),
              GradientErrorBelow(kTolerance));
}

}  // namespace
}  // namespace rill
