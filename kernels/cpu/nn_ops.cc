// CPU neural-network kernels: activations, softmax and its cross-entropy
// losses, bias addition and its gradient.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/nn_util.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using Index = Eigen::DenseIndex;
using nn_util::ChannelView;
using nn_util::CheckSparseXentShapes;
using nn_util::CheckXentShapes;
using nn_util::ReadIsNchw;

template <typename T>
class ReluCpu final : public OpKernel {
 public:
  explicit ReluCpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, ctx.input(0).shape()));
    out->flat<T>().device(ctx.eigen_cpu()) = ctx.input(0).flat<T>().cwiseMax(T(0));
    return absl::OkStatus();
  }
};

template <typename T>
class Relu6Cpu final : public OpKernel {
 public:
  explicit Relu6Cpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, ctx.input(0).shape()));
    out->flat<T>().device(ctx.eigen_cpu()) = ctx.input(0).flat<T>().cwiseMax(T(0)).cwiseMin(T(6));
    return absl::OkStatus();
  }
};

// L2Loss: half the sum of the squares, as a scalar (Keras's L2
// regularizers).
template <typename T>
class L2LossCpu final : public OpKernel {
 public:
  explicit L2LossCpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape({})));
    const Tensor& t = ctx.input(0);
    double sum = 0;  // Accumulated wider than float, as a reduction would.
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      const double v = t.data<T>()[i];
      sum += v * v;
    }
    out->scalar<T>() = static_cast<T>(sum / 2);
    return absl::OkStatus();
  }
};

absl::Status CheckSameShapes(const Tensor& gradients, const Tensor& other, const char* what) {
  if (gradients.shape() == other.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("gradients and %s must have the same shape: %s vs. %s", what,
                      gradients.shape().DebugString(), other.shape().DebugString()));
}

// The gradient passes where the feature was positive (0 at 0, as
// TensorFlow).
template <typename T>
class ReluGradCpu final : public OpKernel {
 public:
  explicit ReluGradCpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& gradients = ctx.input(0);
    const Tensor& features = ctx.input(1);
    RETURN_IF_ERROR(CheckSameShapes(gradients, features, "features"));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, features.shape()));
    auto f = features.flat<T>();
    out->flat<T>().device(ctx.eigen_cpu()) = gradients.flat<T>() * (f > T(0)).template cast<T>();
    return absl::OkStatus();
  }
};

// Elu: x where x > 0, exp(x) - 1 elsewhere. Its gradient reads the
// output: g where it is > 0, g * (output + 1) elsewhere, as TensorFlow's.
template <typename T>
class EluCpu final : public OpKernel {
 public:
  explicit EluCpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, ctx.input(0).shape()));
    auto x = ctx.input(0).flat<T>();
    out->flat<T>().device(ctx.eigen_cpu()) = (x > T(0)).select(x, x.exp() - T(1));
    return absl::OkStatus();
  }
};

template <typename T>
class EluGradCpu final : public OpKernel {
 public:
  explicit EluGradCpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& gradients = ctx.input(0);
    const Tensor& outputs = ctx.input(1);
    RETURN_IF_ERROR(CheckSameShapes(gradients, outputs, "outputs"));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, outputs.shape()));
    auto g = gradients.flat<T>();
    auto y = outputs.flat<T>();
    out->flat<T>().device(ctx.eigen_cpu()) = (y > T(0)).select(g, g * (y + T(1)));
    return absl::OkStatus();
  }
};

// LeakyRelu: x where x > 0, alpha * x elsewhere; its gradient passes g
// where the feature was > 0 and alpha * g elsewhere.
template <typename T>
class LeakyReluCpu final : public OpKernel {
 public:
  LeakyReluCpu(const OpKernelConstruction& c, float alpha) : OpKernel(c), alpha_(alpha) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const float alpha, GetFloatAttr(c.def(), "alpha"));
    return std::unique_ptr<OpKernel>(std::make_unique<LeakyReluCpu>(c, alpha));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, ctx.input(0).shape()));
    auto x = ctx.input(0).flat<T>();
    out->flat<T>().device(ctx.eigen_cpu()) = (x > T(0)).select(x, x * T(alpha_));
    return absl::OkStatus();
  }

 private:
  const float alpha_;
};

template <typename T>
class LeakyReluGradCpu final : public OpKernel {
 public:
  LeakyReluGradCpu(const OpKernelConstruction& c, float alpha) : OpKernel(c), alpha_(alpha) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const float alpha, GetFloatAttr(c.def(), "alpha"));
    return std::unique_ptr<OpKernel>(std::make_unique<LeakyReluGradCpu>(c, alpha));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& gradients = ctx.input(0);
    const Tensor& features = ctx.input(1);
    RETURN_IF_ERROR(CheckSameShapes(gradients, features, "features"));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, features.shape()));
    auto g = gradients.flat<T>();
    out->flat<T>().device(ctx.eigen_cpu()) = (features.flat<T>() > T(0)).select(g, g * T(alpha_));
    return absl::OkStatus();
  }

 private:
  const float alpha_;
};

// Softmax and LogSoftmax along the last axis; the row maximum is
// subtracted first so that exp cannot overflow.
template <typename T, bool kLog>
class SoftmaxCpu final : public OpKernel {
 public:
  explicit SoftmaxCpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.dims() < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("logits must have rank >= 1, got shape %s", in.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * out_tensor, ctx.AllocateOutput(0, in.shape()));
    if (in.NumElements() == 0) return absl::OkStatus();
    const auto& d = ctx.eigen_cpu();
    auto logits = in.flat_inner_dims<T, 2>();
    auto out = out_tensor->flat_inner_dims<T, 2>();
    const Index rows = logits.dimension(0);
    const Index classes = logits.dimension(1);
    const Eigen::array<Index, 1> along_class = {1};
    const Eigen::array<Index, 2> column = {rows, 1};
    const Eigen::array<Index, 2> across = {1, classes};
    const auto shifted =
        logits - logits.maximum(along_class).eval().reshape(column).broadcast(across);
    // Softmax fuses the shift into its exponentiation, and multiplies by
    // each row's inverted sum rather than dividing every element by it.
    if (kLog) {
      out.device(d) = shifted;
      out.device(d) =
          out - out.exp().sum(along_class).log().eval().reshape(column).broadcast(across);
    } else {
      out.device(d) = shifted.exp();
      out.device(d) = out * out.sum(along_class).inverse().eval().reshape(column).broadcast(across);
    }
    return absl::OkStatus();
  }
};

// loss[b] = -sum_c labels[b, c] * log_softmax(logits)[b, c];
// backprop = softmax(logits) - labels.
template <typename T>
class SoftmaxCrossEntropyCpu final : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyCpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& logits_in = ctx.input(0);
    const Tensor& labels_in = ctx.input(1);
    RETURN_IF_ERROR(CheckXentShapes(logits_in, labels_in));
    const Index rows = logits_in.dim_size(0);
    const Index classes = logits_in.dim_size(1);
    ASSIGN_OR_RETURN(Tensor * loss_tensor, ctx.AllocateOutput(0, TensorShape({rows})));
    ASSIGN_OR_RETURN(Tensor * backprop_tensor, ctx.AllocateOutput(1, logits_in.shape()));
    if (rows == 0) return absl::OkStatus();
    const auto& d = ctx.eigen_cpu();
    auto loss = loss_tensor->vec<T>();
    if (classes == 0) {
      loss.device(d) = loss.constant(T(0));
      return absl::OkStatus();
    }
    auto logits = logits_in.matrix<T>();
    auto labels = labels_in.matrix<T>();
    auto backprop = backprop_tensor->matrix<T>();
    ASSIGN_OR_RETURN(Tensor log_sum_tensor, ctx.AllocateTemp(kDataTypeOf<T>, TensorShape({rows})));
    auto log_sum = log_sum_tensor.vec<T>();
    const Eigen::array<Index, 1> along_class = {1};
    const Eigen::array<Index, 2> column = {rows, 1};
    const Eigen::array<Index, 2> across = {1, classes};
    // backprop holds the shifted logits until the end.
    backprop.device(d) =
        logits - logits.maximum(along_class).eval().reshape(column).broadcast(across);
    log_sum.device(d) = backprop.exp().sum(along_class).log();
    loss.device(d) =
        (labels * (log_sum.reshape(column).broadcast(across) - backprop)).sum(along_class);
    backprop.device(d) = (backprop - log_sum.reshape(column).broadcast(across)).exp() - labels;
    return absl::OkStatus();
  }
};

// As SoftmaxCrossEntropyWithLogits with one-hot labels given as class
// indices, each of which must lie in [0, classes).
template <typename T, typename L>
class SparseSoftmaxCrossEntropyCpu final : public OpKernel {
 public:
  explicit SparseSoftmaxCrossEntropyCpu(const OpKernelConstruction& c) : OpKernel(c) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& logits_in = ctx.input(0);
    const Tensor& labels_in = ctx.input(1);
    RETURN_IF_ERROR(CheckSparseXentShapes(logits_in, labels_in));
    const Index rows = logits_in.dim_size(0);
    const Index classes = logits_in.dim_size(1);
    const L* labels = labels_in.data<L>();
    for (Index i = 0; i < rows; ++i) {
      if (labels[i] < 0 || labels[i] >= classes) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Received a label value of %d which is outside the valid range of [0, %d). "
            "Label index: %d",
            static_cast<int64_t>(labels[i]), classes, i));
      }
    }
    ASSIGN_OR_RETURN(Tensor * loss_tensor, ctx.AllocateOutput(0, TensorShape({rows})));
    ASSIGN_OR_RETURN(Tensor * backprop_tensor, ctx.AllocateOutput(1, logits_in.shape()));
    const T* logits = logits_in.data<T>();
    T* loss = loss_tensor->data<T>();
    T* backprop = backprop_tensor->data<T>();
    auto rows_in = [&](Index begin, Index end) {
      for (Index i = begin; i < end; ++i) {
        const T* row = logits + i * classes;
        T* grad = backprop + i * classes;
        T max = row[0];
        for (Index c = 1; c < classes; ++c) max = std::max(max, row[c]);
        T sum = 0;
        for (Index c = 0; c < classes; ++c) sum += std::exp(row[c] - max);
        const T log_sum = std::log(sum);
        for (Index c = 0; c < classes; ++c) grad[c] = std::exp(row[c] - max - log_sum);
        grad[labels[i]] -= T(1);
        loss[i] = log_sum - (row[labels[i]] - max);
      }
    };
    ctx.eigen_cpu().parallelFor(rows, Eigen::TensorOpCost(0, 0, 10.0 * classes), rows_in);
    return absl::OkStatus();
  }
};

template <typename T>
class BiasAddCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool nchw, ReadIsNchw(c));
    return std::unique_ptr<OpKernel>(new BiasAddCpu(c, nchw));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& value = ctx.input(0);
    const Tensor& bias = ctx.input(1);
    ASSIGN_OR_RETURN(auto view, nn_util::BiasAddView(value, bias, nchw_));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, value.shape()));
    if (value.NumElements() == 0) return absl::OkStatus();
    using Map3 = Eigen::TensorMap<Eigen::Tensor<T, 3, Eigen::RowMajor, Index>>;
    const Eigen::array<Index, 3> bias_shape = {1, view[1], 1};
    const Eigen::array<Index, 3> tile = {view[0], 1, view[2]};
    Map3(out->data<T>(), view).device(ctx.eigen_cpu()) =
        Map3(value.data<T>(), view) + bias.vec<T>().reshape(bias_shape).broadcast(tile);
    return absl::OkStatus();
  }

 private:
  BiasAddCpu(const OpKernelConstruction& c, bool nchw) : OpKernel(c), nchw_(nchw) {}
  const bool nchw_;
};

// Sums out_backprop over every dimension but the channel one.
template <typename T>
class BiasAddGradCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool nchw, ReadIsNchw(c));
    return std::unique_ptr<OpKernel>(new BiasAddGradCpu(c, nchw));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& backprop = ctx.input(0);
    ASSIGN_OR_RETURN(auto view, ChannelView(backprop.shape(), nchw_));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape({view[1]})));
    using Map3 = Eigen::TensorMap<Eigen::Tensor<const T, 3, Eigen::RowMajor, Index>>;
    const Eigen::array<Index, 2> outer_and_inner = {0, 2};
    out->vec<T>().device(ctx.eigen_cpu()) = Map3(backprop.data<T>(), view).sum(outer_and_inner);
    return absl::OkStatus();
  }

 private:
  BiasAddGradCpu(const OpKernelConstruction& c, bool nchw) : OpKernel(c), nchw_(nchw) {}
  const bool nchw_;
};

template <typename T>
using Softmax = SoftmaxCpu<T, false>;
template <typename T>
using LogSoftmax = SoftmaxCpu<T, true>;

template <typename T, typename L>
void RegisterSparseXent(KernelRegistry& r) {
  r.Register(KernelDef("SparseSoftmaxCrossEntropyWithLogits")
                 .TypeConstraint("T", kDataTypeOf<T>)
                 .TypeConstraint("Tlabels", kDataTypeOf<L>),
             &MakeKernel<SparseSoftmaxCrossEntropyCpu<T, L>>);
}

}  // namespace

void RegisterCpuNnKernels(KernelRegistry& registry) {
  RegisterForTypes<ReluCpu, float, double, int32_t, int64_t>(registry, kDeviceCpu, "Relu");
  RegisterForTypes<Relu6Cpu, float, double, int32_t, int64_t>(registry, kDeviceCpu, "Relu6");
  RegisterForTypes<L2LossCpu, float, double>(registry, kDeviceCpu, "L2Loss");
  RegisterForTypes<ReluGradCpu, float, double, int32_t, int64_t>(registry, kDeviceCpu, "ReluGrad");
  RegisterForTypes<EluCpu, float, double>(registry, kDeviceCpu, "Elu");
  RegisterForTypes<EluGradCpu, float, double>(registry, kDeviceCpu, "EluGrad");
  RegisterForTypes<LeakyReluCpu, float, double>(registry, kDeviceCpu, "LeakyRelu");
  RegisterForTypes<LeakyReluGradCpu, float, double>(registry, kDeviceCpu, "LeakyReluGrad");
  RegisterForTypes<Softmax, float, double>(registry, kDeviceCpu, "Softmax");
  RegisterForTypes<LogSoftmax, float, double>(registry, kDeviceCpu, "LogSoftmax");
  RegisterForTypes<SoftmaxCrossEntropyCpu, float, double>(registry, kDeviceCpu,
                                                          "SoftmaxCrossEntropyWithLogits");
  RegisterSparseXent<float, int32_t>(registry);
  RegisterSparseXent<float, int64_t>(registry);
  RegisterSparseXent<double, int32_t>(registry);
  RegisterSparseXent<double, int64_t>(registry);
  RegisterForTypes<BiasAddCpu, float, double, int32_t, int64_t>(registry, kDeviceCpu, "BiasAdd");
  RegisterForTypes<BiasAddGradCpu, float, double, int32_t, int64_t>(registry, kDeviceCpu,
                                                                    "BiasAddGrad");
}

}  // namespace rill
