// CPU 2-D pooling (NHWC): MaxPool, its gradient, and AvgPool. Windows are
// clipped to the input, so SAME padding never contributes a value: AvgPool
// divides by the number of in-bounds elements, as TensorFlow.
#include "kernels/cpu/pooling_ops.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/pooling_geometry.h"
#include "kernels/common/window_geometry.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/op_kernel.h"

namespace rill {
namespace {

using Index = Eigen::DenseIndex;
using pooling::PoolAttrs;
using pooling::PoolGeometry;
using window::DimWindow;

// The in-bounds input range [begin, end) of output position `o`'s window.
std::pair<Index, Index> WindowRange(const DimWindow& w, Index o) {
  const Index start = o * w.stride - w.pad_before;
  return {std::max<Index>(start, 0), std::min<Index>(start + w.window, w.input)};
}

// Calls fn(image, out_row, out_col, row_range, col_range) for every output
// position of images [begin, end).
template <typename Fn>
void ForEachOutput(const PoolGeometry& g, Index begin, Index end, Fn&& fn) {
  for (Index n = begin; n < end; ++n) {
    for (Index r = 0; r < g.rows.output; ++r) {
      for (Index c = 0; c < g.cols.output; ++c) {
        fn(n, r, c, WindowRange(g.rows, r), WindowRange(g.cols, c));
      }
    }
  }
}

// Images are independent; the cost is per image.
template <typename Fn>
void ParallelOverImages(const Eigen::ThreadPoolDevice& d, const PoolGeometry& g, Fn&& fn) {
  const double cost =
      static_cast<double>(g.rows.output * g.cols.output * g.depth * g.rows.window * g.cols.window);
  d.parallelFor(g.batch, Eigen::TensorOpCost(0, 0, cost), fn);
}

template <typename T, bool kMax>
class PoolCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(PoolAttrs attrs, pooling::ReadPoolAttrs(c.def()));
    return std::unique_ptr<OpKernel>(new PoolCpu(c, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    ASSIGN_OR_RETURN(PoolGeometry g, pooling::ComputeGeometry(attrs_, input.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.output_shape()));
    if (out->NumElements() == 0) return absl::OkStatus();
    const T* in = input.data<T>();
    T* result = out->data<T>();
    ParallelOverImages(ctx.eigen_cpu(), g, [&](Index begin, Index end) {
      ForEachOutput(g, begin, end, [&](Index n, Index r, Index c, auto rr, auto cr) {
        T* dst = result + ((n * g.rows.output + r) * g.cols.output + c) * g.depth;
        std::fill(dst, dst + g.depth, kMax ? std::numeric_limits<T>::lowest() : T(0));
        for (Index ir = rr.first; ir < rr.second; ++ir) {
          for (Index ic = cr.first; ic < cr.second; ++ic) {
            const T* src = in + ((n * g.rows.input + ir) * g.cols.input + ic) * g.depth;
            for (Index k = 0; k < g.depth; ++k) {
              dst[k] = kMax ? std::max(dst[k], src[k]) : dst[k] + src[k];
            }
          }
        }
        if (!kMax) {
          const Index count = (rr.second - rr.first) * (cr.second - cr.first);
          for (Index k = 0; k < g.depth && count > 0; ++k) dst[k] /= static_cast<T>(count);
        }
      });
    });
    return absl::OkStatus();
  }

 private:
  PoolCpu(const OpKernelConstruction& c, PoolAttrs attrs) : OpKernel(c), attrs_(attrs) {}
  const PoolAttrs attrs_;
};

// Each output's gradient goes to the first maximum of its window in
// orig_input (row-major scan), as TensorFlow's CPU kernel.
template <typename T>
class MaxPoolGradCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(PoolAttrs attrs, pooling::ReadPoolAttrs(c.def()));
    return std::unique_ptr<OpKernel>(new MaxPoolGradCpu(c, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& orig_input = ctx.input(0);
    const Tensor& orig_output = ctx.input(1);
    const Tensor& grad = ctx.input(2);
    ASSIGN_OR_RETURN(PoolGeometry g, pooling::ComputeGeometry(attrs_, orig_input.shape()));
    RETURN_IF_ERROR(pooling::CheckPooledShapes(g, orig_output.shape(), grad.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, orig_input.shape()));
    if (out->NumElements() == 0) return absl::OkStatus();
    const T* in = orig_input.data<T>();
    const T* grad_in = grad.data<T>();
    T* result = out->data<T>();
    const Index image_size = g.rows.input * g.cols.input * g.depth;
    ParallelOverImages(ctx.eigen_cpu(), g, [&](Index begin, Index end) {
      std::fill(result + begin * image_size, result + end * image_size, T(0));
      ForEachOutput(g, begin, end, [&](Index n, Index r, Index c, auto rr, auto cr) {
        const Index out_offset = ((n * g.rows.output + r) * g.cols.output + c) * g.depth;
        for (Index k = 0; k < g.depth; ++k) {
          Index arg_max = -1;
          T max = std::numeric_limits<T>::lowest();
          for (Index ir = rr.first; ir < rr.second; ++ir) {
            for (Index ic = cr.first; ic < cr.second; ++ic) {
              const Index at = ((n * g.rows.input + ir) * g.cols.input + ic) * g.depth + k;
              if (arg_max < 0 || in[at] > max) {
                max = in[at];
                arg_max = at;
              }
            }
          }
          if (arg_max >= 0) result[arg_max] += grad_in[out_offset + k];
        }
      });
    });
    return absl::OkStatus();
  }

 private:
  MaxPoolGradCpu(const OpKernelConstruction& c, PoolAttrs attrs) : OpKernel(c), attrs_(attrs) {}
  const PoolAttrs attrs_;
};

template <typename T>
using MaxPoolCpu = PoolCpu<T, true>;
template <typename T>
using AvgPoolCpu = PoolCpu<T, false>;

template <template <typename> class K, typename... Ts>
void RegisterForTypes(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).Device(kDeviceCpu).TypeConstraint("T", kDataTypeOf<Ts>),
              &K<Ts>::Create),
   ...);
}

}  // namespace

void RegisterCpuPoolingKernels(KernelRegistry& registry) {
  RegisterForTypes<MaxPoolCpu, float, double, int32_t, int64_t>(registry, "MaxPool");
  RegisterForTypes<MaxPoolGradCpu, float, double>(registry, "MaxPoolGrad");
  RegisterForTypes<AvgPoolCpu, float, double>(registry, "AvgPool");
}

}  // namespace rill
