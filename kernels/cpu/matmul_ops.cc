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
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cpu_threads.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
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
    if (a.dims() != 2 || b.dims() != 2) {
      return absl::InvalidArgumentError(
          absl::StrFormat("In[0] and In[1] must be matrices: In[0]: %s, In[1]: %s",
                          a.shape().DebugString(), b.shape().DebugString()));
    }
    const int64_t inner_a = a.dim_size(transpose_a_ ? 0 : 1);
    const int64_t inner_b = b.dim_size(transpose_b_ ? 1 : 0);
    if (inner_a != inner_b) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Matrix size-incompatible: In[0]: %s, In[1]: %s", a.shape().DebugString(),
                          b.shape().DebugString()));
    }
    const int64_t rows = a.dim_size(transpose_a_ ? 1 : 0);
    const int64_t cols = b.dim_size(transpose_b_ ? 0 : 1);
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

// The broadcast batch shape of x and y (all but their last two
// dimensions), or INVALID_ARGUMENT naming both shapes.
absl::StatusOr<std::vector<int64_t>> BroadcastBatch(const TensorShape& x, const TensorShape& y) {
  const auto batch_dims = [](const TensorShape& s) {
    return PartialTensorShape(s.dim_sizes().subspan(0, s.dims() - 2));
  };
  auto batch = BroadcastShapes(batch_dims(x), batch_dims(y));
  if (!batch.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("In[0] and In[1] must have compatible batch dimensions: %s vs. %s",
                        x.DebugString(), y.DebugString()));
  }
  return std::vector<int64_t>(batch->dim_sizes().begin(), batch->dim_sizes().end());
}

// The index of output batch `flat` in an operand's own batch dimensions,
// which broadcast (size 1, or missing) against `batch`.
int64_t OperandBatchIndex(int64_t flat, const std::vector<int64_t>& batch,
                          const TensorShape& operand) {
  const int rank = static_cast<int>(batch.size());
  int64_t index = 0;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int64_t coord = flat % batch[i];
    flat /= batch[i];
    const int oi = operand.dims() - 2 - rank + i;
    if (oi < 0) continue;
    const int64_t size = operand.dim_size(oi);
    index += (size == 1 ? 0 : coord) * stride;
    stride *= size;
  }
  return index;
}

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
    if (x.dims() < 2 || y.dims() < 2) {
      return absl::InvalidArgumentError(
          absl::StrFormat("In[0] and In[1] must have rank >= 2: %s vs. %s", x.shape().DebugString(),
                          y.shape().DebugString()));
    }
    const Index x_rows = x.dim_size(x.dims() - 2);
    const Index x_cols = x.dim_size(x.dims() - 1);
    const Index y_rows = y.dim_size(y.dims() - 2);
    const Index y_cols = y.dim_size(y.dims() - 1);
    if ((adj_x_ ? x_rows : x_cols) != (adj_y_ ? y_cols : y_rows)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Matrix size-incompatible: In[0]: %s, In[1]: %s", x.shape().DebugString(),
                          y.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> batch, BroadcastBatch(x.shape(), y.shape()));
    const Index rows = adj_x_ ? x_cols : x_rows;
    const Index cols = adj_y_ ? y_rows : y_cols;
    std::vector<int64_t> out_dims = batch;
    out_dims.push_back(rows);
    out_dims.push_back(cols);
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape(out_dims)));
    if (out->NumElements() == 0) return absl::OkStatus();
    int64_t num_batches = 1;
    for (int64_t b : batch) num_batches *= b;
    for (int64_t i = 0; i < num_batches; ++i) {
      const int64_t xb = OperandBatchIndex(i, batch, x.shape());
      const int64_t yb = OperandBatchIndex(i, batch, y.shape());
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

template <template <typename> class K, typename... Ts>
void RegisterForTypes(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).Device(kDeviceCpu).TypeConstraint<Ts>("T"), &K<Ts>::Create), ...);
}

}  // namespace

void RegisterCpuMatMulKernels(KernelRegistry& registry) {
  RegisterForTypes<MatMulCpu, float, double, int32_t, int64_t>(registry, "MatMul");
  RegisterForTypes<BatchMatMulCpu, float, double>(registry, "BatchMatMulV2");
}

}  // namespace rill
