// GPU matrix products through cuBLAS: MatMul and BatchMatMulV2 (broadcast
// batch dimensions), float and double.
//
// cuBLAS is column-major and rill's tensors are row-major: a row-major
// [r, c] matrix is the column-major [c, r] matrix of its transpose, so
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands
// swapped. The handle keeps cuBLAS's default math (CUBLAS_DEFAULT_MATH):
// float products run in full float32, never TF32 tensor cores, so they
// match the CPU's within rounding.
#include <climits>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/matmul_shapes.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"

namespace rill {
namespace {

// One product of row-major blocks, as cuBLAS wants it: out [rows, cols] =
// op(a) op(b), a stored [a_rows, a_cols] and b [b_rows, b_cols]; over
// `batches` matrices at the given strides (in elements; 0 repeats one
// matrix).
struct Gemm {
  bool transpose_a = false, transpose_b = false;
  int64_t rows = 0, cols = 0, inner = 0;
  int64_t a_cols = 0, b_cols = 0;
  int64_t batches = 1;
  int64_t a_stride = 0, b_stride = 0, out_stride = 0;
};

absl::Status CheckFitsInt(const Gemm& g, const KernelContext& ctx) {
  for (int64_t v : {g.rows, g.cols, g.inner, g.a_cols, g.b_cols, g.batches}) {
    if (v > INT_MAX) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: a matrix dimension of %d is more than cuBLAS takes", ctx.node().name(), v));
    }
  }
  return absl::OkStatus();
}

// Queues the product on the device's stream: one cuBLAS call, which reads
// the operands in place (the transposes are cuBLAS's op flags).
template <typename T>
absl::Status RunGemm(KernelContext& ctx, GpuDeviceContext& gpu, const Gemm& g, const T* a,
                     const T* b, T* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(gpu.library_mu()) {
  RETURN_IF_ERROR(CheckFitsInt(g, ctx));
  const T alpha = 1, beta = 0;
  // Swapped operands: the column-major view of b is b^T, so op(B)^T is b's
  // buffer as it is when b is not transposed.
  const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.cols);
  const int n = static_cast<int>(g.rows);
  const int k = static_cast<int>(g.inner);
  const int ldb = static_cast<int>(g.b_cols);
  const int lda = static_cast<int>(g.a_cols);
  cublasStatus_t status;
  if (g.batches == 1) {
    if constexpr (std::is_same_v<T, float>) {
      status =
          cublasSgemm(gpu.cublas(), op_b, op_a, m, n, k, &alpha, b, ldb, a, lda, &beta, out, m);
    } else {
      status =
          cublasDgemm(gpu.cublas(), op_b, op_a, m, n, k, &alpha, b, ldb, a, lda, &beta, out, m);
    }
  } else {
    const int batches = static_cast<int>(g.batches);
    if constexpr (std::is_same_v<T, float>) {
      status =
          cublasSgemmStridedBatched(gpu.cublas(), op_b, op_a, m, n, k, &alpha, b, ldb, g.b_stride,
                                    a, lda, g.a_stride, &beta, out, m, g.out_stride, batches);
    } else {
      status =
          cublasDgemmStridedBatched(gpu.cublas(), op_b, op_a, m, n, k, &alpha, b, ldb, g.b_stride,
                                    a, lda, g.a_stride, &beta, out, m, g.out_stride, batches);
    }
  }
  // The message is built only on failure: this runs once per product.
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return CublasResult(status, ctx.node().name() + ": cuBLAS gemm");
}

// A sum over an empty inner dimension: zeros.
absl::Status ZeroFill(KernelContext& ctx, GpuDeviceContext& gpu, Tensor& out) {
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(out.raw_data(), 0, out.TotalBytes(), gpu.compute_stream()),
                       ctx.node().name() + ": zeroing the product");
  return absl::OkStatus();
}

template <typename T>
class MatMulGpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool transpose_a, GetBoolAttr(c.def(), "transpose_a"));
    ASSIGN_OR_RETURN(bool transpose_b, GetBoolAttr(c.def(), "transpose_b"));
    return std::unique_ptr<OpKernel>(new MatMulGpu(c, transpose_a, transpose_b));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    ASSIGN_OR_RETURN(const matmul::ProductDims dims,
                     matmul::MatMulDims(a.shape(), b.shape(), transpose_a_, transpose_b_));
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape({dims.rows, dims.cols})));
    if (out->NumElements() == 0) return absl::OkStatus();
    if (dims.inner == 0) return ZeroFill(ctx, *gpu, *out);
    Gemm g;
    g.transpose_a = transpose_a_;
    g.transpose_b = transpose_b_;
    g.rows = dims.rows;
    g.cols = dims.cols;
    g.inner = dims.inner;
    g.a_cols = a.dim_size(1);
    g.b_cols = b.dim_size(1);
    absl::MutexLock lock(&gpu->library_mu());
    return RunGemm<T>(ctx, *gpu, g, a.data<T>(), b.data<T>(), out->data<T>());
  }

 private:
  MatMulGpu(const OpKernelConstruction& c, bool transpose_a, bool transpose_b)
      : OpKernel(c), transpose_a_(transpose_a), transpose_b_(transpose_b) {}

  const bool transpose_a_;
  const bool transpose_b_;
};

// When each operand holds either one matrix or one per output batch, one
// strided-batched call does all (stride 0 repeats the single matrix), or
// one plain product when x's batches stack into one matrix. Otherwise
// (batch dimensions broadcast against each other, [2, 1] with [1, 3]) one
// strided-batched call per run of the last batch dimension.
template <typename T>
class BatchMatMulGpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool adj_x, GetBoolAttr(c.def(), "adj_x"));
    ASSIGN_OR_RETURN(bool adj_y, GetBoolAttr(c.def(), "adj_y"));
    return std::unique_ptr<OpKernel>(new BatchMatMulGpu(c, adj_x, adj_y));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    ASSIGN_OR_RETURN(const matmul::BatchDims d,
                     matmul::BatchMatMulDims(x.shape(), y.shape(), adj_x_, adj_y_));
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, d.output_shape()));
    if (out->NumElements() == 0) return absl::OkStatus();
    if (d.product.inner == 0) return ZeroFill(ctx, *gpu, *out);

    const int64_t x_size = d.x_rows * d.x_cols;
    const int64_t y_size = d.y_rows * d.y_cols;
    const int64_t out_size = d.product.rows * d.product.cols;
    Gemm g;
    g.transpose_a = adj_x_;
    g.transpose_b = adj_y_;
    g.rows = d.product.rows;
    g.cols = d.product.cols;
    g.inner = d.product.inner;
    g.a_cols = d.x_cols;
    g.b_cols = d.y_cols;
    const int64_t x_batches = matmul::OperandBatches(x.shape());
    const int64_t y_batches = matmul::OperandBatches(y.shape());
    const auto strided = [&](int64_t batches) { return batches == 1 || batches == d.num_batches; };
    absl::MutexLock lock(&gpu->library_mu());
    if (strided(x_batches) && strided(y_batches)) {
      // x's matrices lie one after another, so against a single y they are
      // the rows of one [batches * rows, x_cols] matrix: one plain product,
      // which cuBLAS tiles better than many small ones.
      if (y_batches == 1 && x_batches == d.num_batches && !adj_x_ &&
          d.num_batches * g.rows <= INT_MAX) {
        g.rows *= d.num_batches;
        return RunGemm<T>(ctx, *gpu, g, x.data<T>(), y.data<T>(), out->data<T>());
      }
      g.batches = d.num_batches;
      g.a_stride = x_batches == 1 ? 0 : x_size;
      g.b_stride = y_batches == 1 ? 0 : y_size;
      g.out_stride = out_size;
      return RunGemm<T>(ctx, *gpu, g, x.data<T>(), y.data<T>(), out->data<T>());
    }
    // Along the last batch dimension each operand steps by one matrix or,
    // where it has size 1 (or none), repeats one.
    const int64_t run = d.batch.back();
    const auto step = [&](const TensorShape& s, int64_t size) -> int64_t {
      return s.dims() > 2 && s.dim_size(s.dims() - 3) == run ? size : 0;
    };
    g.batches = run;
    g.a_stride = step(x.shape(), x_size);
    g.b_stride = step(y.shape(), y_size);
    g.out_stride = out_size;
    for (int64_t i = 0; i < d.num_batches; i += run) {
      const int64_t xb = matmul::OperandBatchIndex(i, d.batch, x.shape());
      const int64_t yb = matmul::OperandBatchIndex(i, d.batch, y.shape());
      RETURN_IF_ERROR(RunGemm<T>(ctx, *gpu, g, x.data<T>() + xb * x_size, y.data<T>() + yb * y_size,
                                 out->data<T>() + i * out_size));
    }
    return absl::OkStatus();
  }

 private:
  // The adjoint of a real matrix is its transpose.
  BatchMatMulGpu(const OpKernelConstruction& c, bool adj_x, bool adj_y)
      : OpKernel(c), adj_x_(adj_x), adj_y_(adj_y) {}

  const bool adj_x_;
  const bool adj_y_;
};

}  // namespace

// cuBLAS has no integer GEMM: int32 and int64 products stay on the CPU,
// as in TensorFlow.
void RegisterGpuMatMulKernels(KernelRegistry& registry) {
  RegisterForTypes<MatMulGpu, float, double>(registry, kDeviceGpu, "MatMul");
  RegisterForTypes<BatchMatMulGpu, float, double>(registry, kDeviceGpu, "BatchMatMulV2");
}

}  // namespace rill
