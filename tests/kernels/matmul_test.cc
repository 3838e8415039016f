#include <cstdint>
#include <type_traits>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "kernels/cpu/onednn_gemm.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::HasSubstr;

// Element (r, c) of a row-major [rows, cols] matrix, or of its transpose.
template <typename T>
T At(const Tensor& m, int64_t offset, int64_t r, int64_t c, bool transposed) {
  const int64_t cols = m.dim_size(m.dims() - 1);
  const T* data = m.data<T>() + offset;
  return transposed ? data[c * cols + r] : data[r * cols + c];
}

template <typename T>
Tensor ReferenceMatMul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const int64_t m = a.dim_size(ta ? 1 : 0);
  const int64_t k = a.dim_size(ta ? 0 : 1);
  const int64_t n = b.dim_size(tb ? 0 : 1);
  // Floats sum in double, so that long inner dimensions compare against a
  // reference more exact than either library.
  using Sum = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  std::vector<T> out(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Sum sum = 0;
      for (int64_t l = 0; l < k; ++l) {
        sum += static_cast<Sum>(At<T>(a, 0, i, l, ta)) * static_cast<Sum>(At<T>(b, 0, l, j, tb));
      }
      out[i * n + j] = static_cast<T>(sum);
    }
  }
  return MakeTensor<T>({m, n}, out);
}

TEST(MatMul, MultipliesSmallMatrices) {
  KernelTester t("MatMul");
  t.Input<float>({2, 3}, {1, 2, 3, 4, 5, 6}).Input<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(out, TensorEq(MakeTensor<float>({2, 2}, {58, 64, 139, 154})));
}

TEST(MatMul, MatchesReferenceForEveryTransposeAndThreadCount) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor a = RandomTensor(DT_FLOAT, ta ? TensorShape{37, 19} : TensorShape{19, 37}, 1);
      const Tensor b = RandomTensor(DT_FLOAT, tb ? TensorShape{23, 37} : TensorShape{37, 23}, 2);
      KernelTester t("MatMul");
      t.Attr("transpose_a", ta).Attr("transpose_b", tb).Input(a).Input(b);
      for (int threads : {1, 2}) {
        ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne(threads));
        EXPECT_THAT(out, TensorNear(ReferenceMatMul<float>(a, b, ta, tb), 1e-5, 1e-4))
            << "transpose_a=" << ta << " transpose_b=" << tb << " threads=" << threads;
      }
    }
  }
}

TEST(MatMul, MatchesReferenceInDouble) {
  const Tensor a = RandomTensor(DT_DOUBLE, {8, 5}, 3);
  const Tensor b = RandomTensor(DT_DOUBLE, {5, 6}, 4);
  KernelTester t("MatMul");
  t.Input(a).Input(b);
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(out, TensorNear(ReferenceMatMul<double>(a, b, false, false), 1e-12, 1e-12));
}

TEST(MatMul, MultipliesIntegersExactly) {
  KernelTester t("MatMul");
  t.Attr("transpose_b", true)
      .Input<int32_t>({2, 2}, {1, -2, 3, 4})
      .Input<int32_t>({3, 2}, {5, 6, -7, 8, 9, 10});
  EXPECT_THAT(t.RunOne(),
              IsOkAndHolds(TensorEq(MakeTensor<int32_t>({2, 3}, {-7, -23, -11, 39, 11, 67}))));
  KernelTester wide("MatMul");
  wide.Input<int64_t>({1, 2}, {int64_t{1} << 40, 3}).Input<int64_t>({2, 1}, {2, 5});
  EXPECT_THAT(wide.RunOne(),
              IsOkAndHolds(TensorEq(MakeTensor<int64_t>({1, 1}, {(int64_t{1} << 41) + 15}))));
}

TEST(MatMul, EmptyInnerDimensionGivesZeros) {
  KernelTester t("MatMul");
  t.Input(Tensor(DT_FLOAT, {2, 0})).Input(Tensor(DT_FLOAT, {0, 3}));
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(out, TensorEq(MakeTensor<float>({2, 3}, {0, 0, 0, 0, 0, 0})));
}

// op(a) [m, k] times op(b) [k, n].
struct ProductShape {
  int64_t m, k, n;
  // Whether a build with oneDNN multiplies it there rather than in Eigen.
  bool onednn;
};

// Float products on each side of the oneDNN thresholds (2^14 multiply-adds,
// more than one row), and ones large enough to be split across the intra-op
// threads by rows (m >= n) or by columns.
constexpr ProductShape kProductShapes[] = {
    {16, 16, 16, false}, {1, 300, 70, false}, {32, 32, 32, true},   {2, 300, 70, true},
    {70, 300, 1, true},  {37, 45, 29, true},  {300, 700, 90, true}, {64, 1100, 300, true},
};

TEST(MatMul, ChoosesOneDnnOnlyAboveItsThresholds) {
  for (const ProductShape& s : kProductShapes) {
    EXPECT_EQ(PreferOneDnnSgemm(s.m, s.n, s.k), HaveOneDnn() && s.onednn)
        << "m=" << s.m << " k=" << s.k << " n=" << s.n;
  }
}

TEST(MatMul, MatchesReferenceOnEitherSideOfTheOneDnnThresholds) {
  int seed = 20;
  for (const ProductShape& s : kProductShapes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const Tensor a =
            RandomTensor(DT_FLOAT, ta ? TensorShape{s.k, s.m} : TensorShape{s.m, s.k}, ++seed);
        const Tensor b =
            RandomTensor(DT_FLOAT, tb ? TensorShape{s.n, s.k} : TensorShape{s.k, s.n}, ++seed);
        const Tensor expected = ReferenceMatMul<float>(a, b, ta, tb);
        KernelTester t("MatMul");
        t.Attr("transpose_a", ta).Attr("transpose_b", tb).Input(a).Input(b);
        for (int threads : {1, 2, 3}) {
          ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne(threads));
          EXPECT_THAT(out, TensorNear(expected, 1e-4, 1e-4))
              << "m=" << s.m << " k=" << s.k << " n=" << s.n << " transpose_a=" << ta
              << " transpose_b=" << tb << " threads=" << threads;
        }
      }
    }
  }
}

// Shares of rows are rounded up to whole vectors, so with many threads the
// last ones can be left with nothing to do.
TEST(MatMul, SplitsFewRowsAcrossManyThreads) {
  const Tensor a = RandomTensor(DT_FLOAT, {40, 21000}, 7);
  const Tensor b = RandomTensor(DT_FLOAT, {21000, 40}, 8);
  KernelTester t("MatMul");
  t.Input(a).Input(b);
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne(/*num_threads=*/4));
  EXPECT_THAT(out, TensorNear(ReferenceMatMul<float>(a, b, false, false), 1e-3, 1e-4));
}

TEST(MatMul, EmptyOuterDimensionsGiveEmptyProducts) {
  for (bool ta : {false, true}) {
    KernelTester rows("MatMul");
    rows.Attr("transpose_a", ta)
        .Input(Tensor(DT_FLOAT, ta ? TensorShape{64, 0} : TensorShape{0, 64}))
        .Input(RandomTensor(DT_FLOAT, {64, 64}, 9));
    EXPECT_THAT(rows.RunOne(), IsOkAndHolds(TensorEq(Tensor(DT_FLOAT, {0, 64}))));
    KernelTester cols("MatMul");
    cols.Attr("transpose_b", ta)
        .Input(RandomTensor(DT_FLOAT, {64, 64}, 10))
        .Input(Tensor(DT_FLOAT, ta ? TensorShape{0, 64} : TensorShape{64, 0}));
    EXPECT_THAT(cols.RunOne(), IsOkAndHolds(TensorEq(Tensor(DT_FLOAT, {64, 0}))));
  }
}

TEST(MatMul, LargeEmptyInnerDimensionGivesZeros) {
  KernelTester t("MatMul");
  t.Attr("transpose_a", true).Input(Tensor(DT_FLOAT, {0, 64})).Input(Tensor(DT_FLOAT, {0, 64}));
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(out, TensorEq(MakeTensor<float>({64, 64}, std::vector<float>(64 * 64, 0.f))));
}

TEST(MatMul, RejectsIncompatibleInnerDimensions) {
  KernelTester t("MatMul");
  t.Input(Tensor(DT_FLOAT, {2, 3})).Input(Tensor(DT_FLOAT, {4, 2}));
  EXPECT_THAT(t.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Matrix size-incompatible")));
}

// The reference product of every batch, with x's and y's batch indices
// broadcast against the output's.
Tensor ReferenceBatchMatMul(const Tensor& x, const Tensor& y, bool adj_x, bool adj_y,
                            const std::vector<int64_t>& batch) {
  const int64_t xr = x.dim_size(x.dims() - 2), xc = x.dim_size(x.dims() - 1);
  const int64_t yr = y.dim_size(y.dims() - 2), yc = y.dim_size(y.dims() - 1);
  const int64_t m = adj_x ? xc : xr, k = adj_x ? xr : xc, n = adj_y ? yr : yc;
  int64_t batches = 1;
  for (int64_t b : batch) batches *= b;
  auto operand_batch = [&](const Tensor& t, int64_t flat) {
    int64_t index = 0, stride = 1;
    for (int i = static_cast<int>(batch.size()) - 1; i >= 0; --i) {
      const int64_t coord = flat % batch[i];
      flat /= batch[i];
      const int ti = t.dims() - 2 - static_cast<int>(batch.size()) + i;
      if (ti < 0) continue;
      index += (t.dim_size(ti) == 1 ? 0 : coord) * stride;
      stride *= t.dim_size(ti);
    }
    return index;
  };
  std::vector<float> out(batches * m * n);
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t xo = operand_batch(x, b) * xr * xc, yo = operand_batch(y, b) * yr * yc;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (int64_t l = 0; l < k; ++l) {
          sum += At<float>(x, xo, i, l, adj_x) * At<float>(y, yo, l, j, adj_y);
        }
        out[(b * m + i) * n + j] = sum;
      }
    }
  }
  std::vector<int64_t> dims = batch;
  dims.push_back(m);
  dims.push_back(n);
  return MakeTensor<float>(TensorShape(dims), out);
}

TEST(BatchMatMulV2, BroadcastsBatchDimensionsWithAdjoints) {
  for (bool adj_x : {false, true}) {
    for (bool adj_y : {false, true}) {
      // x is [2, 1, 3, 4] (or its adjoint) and y [3, 4, 5]: batch [2, 3].
      const Tensor xs =
          RandomTensor(DT_FLOAT, adj_x ? TensorShape{2, 1, 4, 3} : TensorShape{2, 1, 3, 4}, 5);
      const Tensor ys =
          RandomTensor(DT_FLOAT, adj_y ? TensorShape{3, 5, 4} : TensorShape{3, 4, 5}, 6);
      KernelTester t("BatchMatMulV2");
      t.Attr("adj_x", adj_x).Attr("adj_y", adj_y).Input(xs).Input(ys);
      for (int threads : {1, 2}) {
        ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne(threads));
        EXPECT_THAT(out, TensorNear(ReferenceBatchMatMul(xs, ys, adj_x, adj_y, {2, 3}), 1e-5, 1e-5))
            << "adj_x=" << adj_x << " adj_y=" << adj_y;
      }
    }
  }
}

TEST(BatchMatMulV2, MultipliesRankTwoOperandsAsMatMul) {
  const Tensor x = RandomTensor(DT_FLOAT, {3, 4}, 10);
  const Tensor y = RandomTensor(DT_FLOAT, {4, 2}, 11);
  KernelTester t("BatchMatMulV2");
  t.Input(x).Input(y);
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(out, TensorNear(ReferenceMatMul<float>(x, y, false, false), 1e-5, 1e-5));
}

TEST(BatchMatMulV2, MultipliesBatchesLargeEnoughForOneDnn) {
  const Tensor x = RandomTensor(DT_FLOAT, {3, 48, 40}, 12);
  const Tensor y = RandomTensor(DT_FLOAT, {1, 30, 40}, 13);
  ASSERT_EQ(PreferOneDnnSgemm(48, 30, 40), HaveOneDnn());
  KernelTester t("BatchMatMulV2");
  t.Attr("adj_y", true).Input(x).Input(y);
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(out, TensorNear(ReferenceBatchMatMul(x, y, false, true, {3}), 1e-5, 1e-4));
}

TEST(BatchMatMulV2, RejectsIncompatibleBatchDimensions) {
  KernelTester t("BatchMatMulV2");
  t.Input(Tensor(DT_FLOAT, {2, 3, 4})).Input(Tensor(DT_FLOAT, {3, 4, 5}));
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[3,4,5]")));
}

TEST(BatchMatMulV2, RejectsIncompatibleMatrixDimensions) {
  KernelTester t("BatchMatMulV2");
  t.Input(Tensor(DT_FLOAT, {2, 3, 4})).Input(Tensor(DT_FLOAT, {2, 3, 5}));
  EXPECT_THAT(t.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Matrix size-incompatible")));
}

TEST(MatMul, RejectsEmptyOperandsWhoseProductShapeOverflows) {
  constexpr int64_t k2To32 = int64_t{1} << 32;
  KernelTester t("MatMul");
  t.Input(Tensor(DT_FLOAT, TensorShape({k2To32, 0})))
      .Input(Tensor(DT_FLOAT, TensorShape({0, k2To32})));
  EXPECT_THAT(t.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
  KernelTester batch("BatchMatMulV2");
  batch.Input(Tensor(DT_FLOAT, TensorShape({2, k2To32, 0})))
      .Input(Tensor(DT_FLOAT, TensorShape({0, k2To32})));
  EXPECT_THAT(batch.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
}

}  // namespace
}  // namespace rill::testing
