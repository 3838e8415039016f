// CPU matrix products: MatMul and BatchMatMulV2 (broadcast batch
// dimensions), as Eigen tensor contractions on the intra-op pool, or through
// oneDNN for the float32 shapes on which it is faster.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/matmul_shapes.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using Index = Eigen::DenseIndex;
template <typename T>
using ConstMatrixMap = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Index>>;
template <typename T>
using MatrixMap = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Index>>;

// out = op(a) * op(b), where op transposes when asked; a and b are
// [rows, cols] row-major blocks.
template <typename T>
absl::Status Multiply(const Eigen::ThreadPoolDevice& d, const T* a, Index a_rows, Index a_cols,
                      bool transpose_a, const T* b, Index b_rows, Index b_cols, bool transpose_b,
                      T* out, Index out_rows, Index out_cols) {
  MatrixMap<T> result(out, out_rows, out_cols);
  if (a_rows * a_cols == 0 || b_rows * b_cols == 0) {
    // An empty inner dimension leaves a sum of nothing.
    result.device(d) = result.constant(T(0));
    return absl::OkStatus();
  }
  const Index inner = transpose_a ? a_rows : a_cols;
  if constexpr (std::is_same_v<T, float>) {
    if (PreferOneDnnSgemm(out_rows, out_cols, inner)) {
      return OneDnnSgemm(d, transpose_a, transpose_b, out_rows, out_cols, inner, a, b, out);
    }
  }
  const Eigen::array<Eigen::IndexPair<Index>, 1> contract = {
      Eigen::IndexPair<Index>(transpose_a ? 0 : 1, transpose_b ? 1 : 0)};
  result.device(d) =
      ConstMatrixMap<T>(a, a_rows, a_cols).contract(ConstMatrixMap<T>(b, b_rows, b_cols), contract);
  return absl::OkStatus();
}

template <typename T>
class MatMulCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool transpose_a, GetBoolAttr(c.def(), "transpose_a"));
    ASSIGN_OR_RETURN(bool transpose_b, GetBoolAttr(c.def(), "transpose_b"));
    return std::unique_ptr<OpKernel>(new MatMulCpu(c, transpose_a, transpose_b));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    ASSIGN_OR_RETURN(const matmul::ProductDims dims,
                     matmul::MatMulDims(a.shape(), b.shape(), transpose_a_, transpose_b_));
    const int64_t rows = dims.rows;
    const int64_t cols = dims.cols;
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape({rows, cols})));
    if (rows * cols == 0) return absl::OkStatus();
    return Multiply<T>(ctx.eigen_cpu(), a.data<T>(), a.dim_size(0), a.dim_size(1), transpose_a_,
                       b.data<T>(), b.dim_size(0), b.dim_size(1), transpose_b_, out->data<T>(),
                       rows, cols);
  }

 private:
  MatMulCpu(const OpKernelConstruction& c, bool transpose_a, bool transpose_b)
      : OpKernel(c), transpose_a_(transpose_a), transpose_b_(transpose_b) {}

  const bool transpose_a_;
  const bool transpose_b_;
};

template <typename T>
class BatchMatMulCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool adj_x, GetBoolAttr(c.def(), "adj_x"));
    ASSIGN_OR_RETURN(bool adj_y, GetBoolAttr(c.def(), "adj_y"));
    return std::unique_ptr<OpKernel>(new BatchMatMulCpu(c, adj_x, adj_y));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    ASSIGN_OR_RETURN(const matmul::BatchDims d,
                     matmul::BatchMatMulDims(x.shape(), y.shape(), adj_x_, adj_y_));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, d.output_shape()));
    if (out->NumElements() == 0) return absl::OkStatus();
    const Index x_rows = d.x_rows;
    const Index x_cols = d.x_cols;
    const Index y_rows = d.y_rows;
    const Index y_cols = d.y_cols;
    const Index rows = d.product.rows;
    const Index cols = d.product.cols;
    const std::vector<int64_t>& batch = d.batch;
    const int64_t num_batches = d.num_batches;
    for (int64_t i = 0; i < num_batches; ++i) {
      const int64_t xb = matmul::OperandBatchIndex(i, batch, x.shape());
      const int64_t yb = matmul::OperandBatchIndex(i, batch, y.shape());
      RETURN_IF_ERROR(Multiply<T>(ctx.eigen_cpu(), x.data<T>() + xb * x_rows * x_cols, x_rows,
                                  x_cols, adj_x_, y.data<T>() + yb * y_rows * y_cols, y_rows,
                                  y_cols, adj_y_, out->data<T>() + i * rows * cols, rows, cols));
    }
    return absl::OkStatus();
  }

 private:
  // The adjoint of a real matrix is its transpose.
  BatchMatMulCpu(const OpKernelConstruction& c, bool adj_x, bool adj_y)
      : OpKernel(c), adj_x_(adj_x), adj_y_(adj_y) {}

  const bool adj_x_;
  const bool adj_y_;
};

}  // namespace

void RegisterCpuMatMulKernels(KernelRegistry& registry) {
  RegisterForTypes<MatMulCpu, float, double, int32_t, int64_t>(registry, kDeviceCpu, "MatMul");
  RegisterForTypes<BatchMatMulCpu, float, double>(registry, kDeviceCpu, "BatchMatMulV2");
}

}  // namespace rill
