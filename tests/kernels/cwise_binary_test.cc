#include <cmath>
#include <cstdint>
#include <functional>
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

// The broadcast of float tensors `a` and `b` through `f`, by index
// arithmetic over the output.
Tensor Reference(const Tensor& a, const Tensor& b, const TensorShape& out,
                 const std::function<double(double, double)>& f) {
  Tensor z(DT_FLOAT, out);
  const int rank = out.dims();
  for (int64_t k = 0; k < out.num_elements(); ++k) {
    int64_t rest = k, ia = 0, ib = 0, sa = 1, sb = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t coord = rest % out.dim_size(d);
      rest /= out.dim_size(d);
      const int da = d - (rank - a.dims()), db = d - (rank - b.dims());
      if (da >= 0) {
        if (a.dim_size(da) != 1) ia += coord * sa;
        sa *= a.dim_size(da);
      }
      if (db >= 0) {
        if (b.dim_size(db) != 1) ib += coord * sb;
        sb *= b.dim_size(db);
      }
    }
    z.data<float>()[k] = static_cast<float>(f(a.data<float>()[ia], b.data<float>()[ib]));
  }
  return z;
}

struct ShapeCase {
  TensorShape a, b, out;
};

const std::vector<ShapeCase>& ShapeCases() {
  static const auto* cases = new std::vector<ShapeCase>{
      {{3, 4}, {3, 4}, {3, 4}},
      {{}, {3, 4}, {3, 4}},
      {{3, 4}, {1}, {3, 4}},
      {{3, 1}, {1, 4}, {3, 4}},
      {{2, 3, 4}, {4}, {2, 3, 4}},
      {{4}, {2, 3, 4}, {2, 3, 4}},
      {{2, 1, 4}, {3, 1}, {2, 3, 4}},
      {{5, 1, 3, 1, 2}, {4, 1, 1, 2}, {5, 4, 3, 1, 2}},
      {{2, 1, 3, 1, 2, 1, 2}, {1, 2, 1, 3, 1, 2, 1}, {2, 2, 3, 3, 2, 2, 2}},
  };
  return *cases;
}

TEST(CwiseBinary, FloatOpsBroadcastLikeNumpy) {
  const std::vector<std::pair<std::string, std::function<double(double, double)>>> ops = {
      {"Add", [](double x, double y) { return x + y; }},
      {"AddV2", [](double x, double y) { return x + y; }},
      {"Sub", [](double x, double y) { return x - y; }},
      {"Mul", [](double x, double y) { return x * y; }},
      {"Div", [](double x, double y) { return x / y; }},
      {"RealDiv", [](double x, double y) { return x / y; }},
      // In float, as the kernel divides, so that quotients near integers agree.
      {"FloorDiv",
       [](double x, double y) {
         return std::floor(static_cast<float>(x) / static_cast<float>(y));
       }},
      {"FloorMod",
       [](double x, double y) {
         const double r = std::fmod(x, y);
         return r != 0 && (r < 0) != (y < 0) ? r + y : r;
       }},
      {"TruncateMod", [](double x, double y) { return std::fmod(x, y); }},
      {"Mod", [](double x, double y) { return std::fmod(x, y); }},
      {"SquaredDifference", [](double x, double y) { return (x - y) * (x - y); }},
      {"Maximum", [](double x, double y) { return std::max(x, y); }},
      {"Minimum", [](double x, double y) { return std::min(x, y); }},
      {"Pow", [](double x, double y) { return std::pow(x, y); }},
  };
  int seed = 0;
  for (const auto& [op, f] : ops) {
    for (const ShapeCase& c : ShapeCases()) {
      SCOPED_TRACE(op + " " + c.a.DebugString() + " " + c.b.DebugString());
      Tensor a = RandomTensor(DT_FLOAT, c.a, ++seed, -3, 3);
      // Divisors kept away from zero; Pow bases positive.
      Tensor b = RandomTensor(DT_FLOAT, c.b, ++seed, 0.5, 3);
      if (op == "Pow") {
        for (int64_t i = 0; i < a.NumElements(); ++i) {
          a.data<float>()[i] = std::abs(a.data<float>()[i]) + 0.5f;
        }
      }
      for (int threads : {1, 2}) {
        ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester(op).Input(a).Input(b).RunOne(threads));
        EXPECT_THAT(z, TensorNear(Reference(a, b, c.out, f), 1e-5, 1e-5));
      }
    }
  }
}

TEST(CwiseBinary, IncompatibleShapesAreRejected) {
  EXPECT_THAT(KernelTester("Add")
                  .Input(RandomTensor(DT_FLOAT, {2, 3}, 1))
                  .Input(RandomTensor(DT_FLOAT, {4}, 2))
                  .RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(CwiseBinary, IntegerDivisionTruncates) {
  ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester("Div")
                                     .Input(MakeTensor<int32_t>({4}, {7, -7, 7, -7}))
                                     .Input(MakeTensor<int32_t>({4}, {2, 2, -2, -2}))
                                     .RunOne());
  EXPECT_THAT(z, TensorEq(MakeTensor<int32_t>({4}, {3, -3, -3, 3})));
}

TEST(CwiseBinary, FloorDivAndModFollowPython) {
  const Tensor x = MakeTensor<int64_t>({6}, {7, -7, 7, -7, 6, -6});
  const Tensor y = MakeTensor<int64_t>({6}, {2, 2, -2, -2, 3, 3});
  ASSERT_OK_AND_ASSIGN(Tensor q, KernelTester("FloorDiv").Input(x).Input(y).RunOne());
  EXPECT_THAT(q, TensorEq(MakeTensor<int64_t>({6}, {3, -4, -4, 3, 2, -2})));
  ASSERT_OK_AND_ASSIGN(Tensor r, KernelTester("FloorMod").Input(x).Input(y).RunOne());
  EXPECT_THAT(r, TensorEq(MakeTensor<int64_t>({6}, {1, 1, -1, -1, 0, 0})));
  ASSERT_OK_AND_ASSIGN(Tensor fr, KernelTester("FloorMod")
                                      .Input(MakeTensor<float>({3}, {7.5f, -7.5f, 7.5f}))
                                      .Input(MakeTensor<float>({3}, {2, 2, -2}))
                                      .RunOne());
  EXPECT_THAT(fr, TensorNear(MakeTensor<float>({3}, {1.5f, 0.5f, -0.5f}), 1e-6, 0));
}

// C's / and %: quotients round toward zero, remainders take the sign of
// the dividend.
TEST(CwiseBinary, TruncatingDivisionAndModRoundTowardZero) {
  const Tensor x = MakeTensor<int32_t>({6}, {7, -7, 7, -7, 6, -6});
  const Tensor y = MakeTensor<int32_t>({6}, {2, 2, -2, -2, 3, 3});
  ASSERT_OK_AND_ASSIGN(Tensor q, KernelTester("TruncateDiv").Input(x).Input(y).RunOne());
  EXPECT_THAT(q, TensorEq(MakeTensor<int32_t>({6}, {3, -3, -3, 3, 2, -2})));
  for (const char* op : {"TruncateMod", "Mod"}) {
    SCOPED_TRACE(op);
    ASSERT_OK_AND_ASSIGN(Tensor r, KernelTester(op).Input(x).Input(y).RunOne());
    EXPECT_THAT(r, TensorEq(MakeTensor<int32_t>({6}, {1, -1, 1, -1, 0, 0})));
    ASSERT_OK_AND_ASSIGN(Tensor fr, KernelTester(op)
                                        .Input(MakeTensor<double>({3}, {7.5, -7.5, 7.5}))
                                        .Input(MakeTensor<double>({3}, {2, 2, -2}))
                                        .RunOne());
    EXPECT_THAT(fr, TensorEq(MakeTensor<double>({3}, {1.5, -1.5, 1.5})));
  }
}

const char* const kIntegerDivisionOps[] = {"Div",         "FloorDiv", "TruncateDiv",
                                           "TruncateMod", "FloorMod", "Mod"};

TEST(CwiseBinary, IntegerDivisionByZeroIsAnError) {
  for (const char* op : kIntegerDivisionOps) {
    SCOPED_TRACE(op);
    EXPECT_THAT(
        KernelTester(op)
            .Input(MakeTensor<int32_t>({2}, {1, 2}))
            .Input(MakeTensor<int32_t>({2}, {1, 0}))
            .RunOne(),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Integer division by zero")));
    EXPECT_THAT(
        KernelTester(op)
            .Input(MakeTensor<int64_t>({2, 2}, {1, 2, 3, 4}))
            .Input(Tensor::Scalar<int64_t>(0))
            .RunOne(),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Integer division by zero")));
  }
}

// An empty dividend divides by nothing: a zero divisor is no error when no
// element is computed with it, as in TensorFlow.
TEST(CwiseBinary, AnEmptyDividendIgnoresAZeroDivisor) {
  for (const char* op : kIntegerDivisionOps) {
    SCOPED_TRACE(op);
    absl::StatusOr<Tensor> out = KernelTester(op)
                                     .Input(MakeTensor<int32_t>({0}, {}))
                                     .Input(Tensor::Scalar<int32_t>(0))
                                     .RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->shape(), TensorShape({0}));
  }
}

// The one quotient that overflows wraps to the most negative value, and
// its remainder is 0, where a plain / or % would trap.
template <typename T>
void ExpectMostNegativeOverMinusOneWraps() {
  constexpr T kMin = std::numeric_limits<T>::min();
  const Tensor x = MakeTensor<T>({4}, {kMin, kMin, 7, -7});
  const Tensor y = MakeTensor<T>({4}, {-1, 1, -1, -1});
  const Tensor quotients = MakeTensor<T>({4}, {kMin, kMin, -7, 7});
  const Tensor remainders = MakeTensor<T>({4}, {0, 0, 0, 0});
  for (const std::string op : kIntegerDivisionOps) {
    SCOPED_TRACE(op);
    const bool is_mod = op.find("Mod") != std::string::npos;
    ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester(op).Input(x).Input(y).RunOne());
    EXPECT_THAT(z, TensorEq(is_mod ? remainders : quotients));
    // A scalar divisor takes another path through the broadcast.
    ASSERT_OK_AND_ASSIGN(Tensor s, KernelTester(op).Input(x).Input(Tensor::Scalar<T>(-1)).RunOne());
    EXPECT_THAT(s, TensorEq(is_mod ? remainders : quotients));
  }
}

TEST(CwiseBinary, MostNegativeInt32OverMinusOneWraps) {
  ExpectMostNegativeOverMinusOneWraps<int32_t>();
}

TEST(CwiseBinary, MostNegativeInt64OverMinusOneWraps) {
  ExpectMostNegativeOverMinusOneWraps<int64_t>();
}

TEST(CwiseBinary, IntegerOpsBroadcast) {
  ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester("Mul")
                                     .Input(MakeTensor<int32_t>({2, 1}, {2, 3}))
                                     .Input(MakeTensor<int32_t>({3}, {1, 10, 100}))
                                     .RunOne());
  EXPECT_THAT(z, TensorEq(MakeTensor<int32_t>({2, 3}, {2, 20, 200, 3, 30, 300})));
  ASSERT_OK_AND_ASSIGN(Tensor m, KernelTester("Maximum")
                                     .Input(MakeTensor<int64_t>({3}, {-1, 5, 2}))
                                     .Input(Tensor::Scalar<int64_t>(2))
                                     .RunOne());
  EXPECT_THAT(m, TensorEq(MakeTensor<int64_t>({3}, {2, 5, 2})));
}

TEST(CwiseBinary, IntegerPow) {
  ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester("Pow")
                                     .Input(MakeTensor<int32_t>({4}, {2, -3, 5, 7}))
                                     .Input(MakeTensor<int32_t>({4}, {10, 3, 0, 1}))
                                     .RunOne());
  EXPECT_THAT(z, TensorEq(MakeTensor<int32_t>({4}, {1024, -27, 1, 7})));
  // Powers too large for the type wrap around as two's complement does.
  ASSERT_OK_AND_ASSIGN(Tensor wrapped, KernelTester("Pow")
                                           .Input(MakeTensor<int32_t>({3}, {2, 2, -2}))
                                           .Input(MakeTensor<int32_t>({3}, {31, 32, 31}))
                                           .RunOne());
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  EXPECT_THAT(wrapped, TensorEq(MakeTensor<int32_t>({3}, {kMin, 0, kMin})));
  EXPECT_THAT(KernelTester("Pow")
                  .Input(MakeTensor<int32_t>({1}, {2}))
                  .Input(MakeTensor<int32_t>({1}, {-1}))
                  .RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative")));
}

TEST(CwiseBinary, SquaredDifferenceOfIntegersBroadcasts) {
  ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester("SquaredDifference")
                                     .Input(MakeTensor<int64_t>({2, 1}, {-2, 3}))
                                     .Input(MakeTensor<int64_t>({3}, {1, -1, 3}))
                                     .RunOne());
  EXPECT_THAT(z, TensorEq(MakeTensor<int64_t>({2, 3}, {9, 1, 25, 4, 16, 0})));
}

TEST(CwiseBinary, EmptyOperandGivesEmptyOutput) {
  ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester("Add")
                                     .Input(Tensor(DT_FLOAT, {0, 3}))
                                     .Input(RandomTensor(DT_FLOAT, {3}, 1))
                                     .RunOne());
  EXPECT_EQ(z.shape(), TensorShape({0, 3}));
}

TEST(AddN, SumsAllInputs) {
  const Tensor a = RandomTensor(DT_FLOAT, {5, 6}, 1);
  const Tensor b = RandomTensor(DT_FLOAT, {5, 6}, 2);
  const Tensor c = RandomTensor(DT_FLOAT, {5, 6}, 3);
  Tensor expected(DT_FLOAT, {5, 6});
  for (int64_t i = 0; i < 30; ++i) {
    expected.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i] + c.data<float>()[i];
  }
  for (int threads : {1, 2}) {
    ASSERT_OK_AND_ASSIGN(Tensor z, KernelTester("AddN").InputList({a, b, c}).RunOne(threads));
    EXPECT_THAT(z, TensorNear(expected, 1e-6, 1e-6));
  }
  ASSERT_OK_AND_ASSIGN(Tensor one, KernelTester("AddN").InputList({a}).RunOne());
  EXPECT_THAT(one, TensorEq(a));
}

TEST(AddN, RejectsMismatchedShapes) {
  EXPECT_THAT(KernelTester("AddN")
                  .InputList({RandomTensor(DT_FLOAT, {2, 3}, 1), RandomTensor(DT_FLOAT, {3, 2}, 2)})
                  .RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

// DivNoNan: 0 wherever the divisor is 0, 0 / 0 included.
TEST(CwiseBinary, DivNoNanIsZeroWhereTheDivisorIs) {
  absl::StatusOr<Tensor> out = KernelTester("DivNoNan")
                                   .Input(MakeTensor<float>({4}, {3, 0, -1, 1}))
                                   .Input(MakeTensor<float>({4}, {0, 0, 2, 4}))
                                   .RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(::rill::testing::Values<float>(*out), ::testing::ElementsAre(0, 0, -0.5, 0.25));
}

}  // namespace
}  // namespace rill
