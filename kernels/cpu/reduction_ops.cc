// CPU kernels for reductions over axes (Sum, Mean, Max, Min, Prod) and
// ArgMax/ArgMin.
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/reduction_util.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

namespace ei = Eigen::internal;
using Index = Eigen::DenseIndex;
using reduction_util::ArgGeometry;
using reduction_util::Fold;
using reduction_util::FoldedReduction;
using reduction_util::ReadArgAxis;
using reduction_util::ReducedAxes;
using reduction_util::ReducedShape;

// Rearranges `in` (of folded `dims`) so that all kept runs come first and
// all reduced runs last: a [kept, reduced] matrix. For patterns of four or
// more runs, which are rare.
template <typename T>
void GatherKeptFirst(const T* in, const FoldedReduction& f, T* out) {
  const int n = static_cast<int>(f.dims.size());
  std::vector<int64_t> strides(n, 1);
  for (int i = n - 2; i >= 0; --i) strides[i] = strides[i + 1] * f.dims[i + 1];
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < n; ++i) {
      if (f.reduced[i] == (pass == 1)) order.push_back(i);
    }
  }
  std::vector<int64_t> pos(n, 0);
  int64_t total = 1;
  for (int64_t d : f.dims) total *= d;
  for (int64_t k = 0; k < total; ++k) {
    int64_t src = 0;
    for (int j = 0; j < n; ++j) src += pos[order[j]] * strides[order[j]];
    out[k] = in[src];
    for (int j = n - 1; j >= 0; --j) {
      if (++pos[order[j]] < f.dims[order[j]]) break;
      pos[order[j]] = 0;
    }
  }
}

// The result of reducing nothing, as TensorFlow gives it: the mean is NaN
// (0 for integers), the float max and min are -inf and +inf.
template <typename T, typename Reducer>
T EmptyReduction() {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  if constexpr (std::is_same_v<Reducer, ei::MeanReducer<T>>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else if constexpr (kFloat && std::is_same_v<Reducer, ei::MaxReducer<T>>) {
    return -std::numeric_limits<T>::infinity();
  } else if constexpr (kFloat && std::is_same_v<Reducer, ei::MinReducer<T>>) {
    return std::numeric_limits<T>::infinity();
  } else {
    return Reducer().initialize();
  }
}

template <typename T, typename Reducer, typename Tidx>
class ReductionOp final : public OpKernel {
 public:
  explicit ReductionOp(const OpKernelConstruction& c)
      : OpKernel(c), keep_dims_(GetBoolAttr(c.def(), "keep_dims").value_or(false)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedAxes<Tidx>(ctx.input(1), in.dims()));
    const TensorShape out_shape = ReducedShape(in.shape(), reduced, keep_dims_);
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, out_shape));
    if (out_shape.num_elements() == 0) return absl::OkStatus();
    const Eigen::ThreadPoolDevice& d = ctx.eigen_cpu();
    auto o = out->flat<T>();
    const FoldedReduction f = Fold(in.shape(), reduced);
    const T* data = in.data<T>();
    const Eigen::array<Index, 1> dim0{0}, dim1{1};
    if (in.NumElements() == 0) {
      // Only reduced dimensions can be empty here: the identity of the op.
      o.device(d) = o.constant(EmptyReduction<T, Reducer>());
      return absl::OkStatus();
    }
    const size_t n = f.dims.size();
    if (n == 0 || (n == 1 && !f.reduced[0])) {
      o.device(d) = in.flat<T>();
    } else if (n == 1) {
      Tensor::ConstTensorMap<T, 1> v(data, f.dims[0]);
      Tensor::TensorMap<T, 0> s(o.data());
      s.device(d) = v.reduce(dim0, Reducer());
    } else if (n == 2) {
      Tensor::ConstTensorMap<T, 2> m(data, f.dims[0], f.dims[1]);
      o.device(d) = m.reduce(f.reduced[0] ? dim0 : dim1, Reducer());
    } else if (n == 3 && !f.reduced[0]) {
      Tensor::ConstTensorMap<T, 3> m(data, f.dims[0], f.dims[1], f.dims[2]);
      Tensor::TensorMap<T, 2> o2(o.data(), f.dims[0], f.dims[2]);
      o2.device(d) = m.reduce(dim1, Reducer());
    } else {
      ASSIGN_OR_RETURN(Tensor tmp, ctx.AllocateTemp(in.dtype(), in.shape()));
      GatherKeptFirst(data, f, tmp.data<T>());
      Tensor::ConstTensorMap<T, 2> m(tmp.data<T>(), out_shape.num_elements(),
                                     in.NumElements() / out_shape.num_elements());
      o.device(d) = m.reduce(dim1, Reducer());
    }
    return absl::OkStatus();
  }

 private:
  const bool keep_dims_;
};

template <typename T, typename Tidx, typename OutT, bool kMax>
class ArgOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    ASSIGN_OR_RETURN(const ArgGeometry g, ReadArgAxis<Tidx>(in, ctx.input(1)));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.out_shape));
    if (g.out_shape.num_elements() == 0) return absl::OkStatus();
    Tensor::ConstTensorMap<T, 3> m(in.data<T>(), g.outer, g.size, g.inner);
    Tensor::TensorMap<OutT, 2> o(out->data<OutT>(), g.outer, g.inner);
    if constexpr (kMax) {
      o.device(ctx.eigen_cpu()) = m.argmax(1).template cast<OutT>();
    } else {
      o.device(ctx.eigen_cpu()) = m.argmin(1).template cast<OutT>();
    }
    return absl::OkStatus();
  }
};

template <template <typename> class Reducer, typename... Ts>
void RegisterReduction(KernelRegistry& r, const char* op) {
  const auto one = [&]<typename T, typename Tidx>() {
    r.Register(KernelDef(op).TypeConstraint<T>("T").template TypeConstraint<Tidx>("Tidx"),
               MakeKernel<ReductionOp<T, Reducer<T>, Tidx>>);
  };
  (one.template operator()<Ts, int32_t>(), ...);
  (one.template operator()<Ts, int64_t>(), ...);
}

template <bool kMax, typename... Ts>
void RegisterArg(KernelRegistry& r, const char* op) {
  const auto one = [&]<typename T, typename Tidx, typename OutT>() {
    r.Register(KernelDef(op)
                   .TypeConstraint<T>("T")
                   .template TypeConstraint<Tidx>("Tidx")
                   .template TypeConstraint<OutT>("output_type"),
               MakeKernel<ArgOp<T, Tidx, OutT, kMax>>);
  };
  (one.template operator()<Ts, int32_t, int32_t>(), ...);
  (one.template operator()<Ts, int32_t, int64_t>(), ...);
  (one.template operator()<Ts, int64_t, int32_t>(), ...);
  (one.template operator()<Ts, int64_t, int64_t>(), ...);
}

template <typename T>
using MaxReducer = Eigen::internal::MaxReducer<T>;
template <typename T>
using MinReducer = Eigen::internal::MinReducer<T>;

}  // namespace

void RegisterCpuReductionKernels(KernelRegistry& r) {
  RegisterReduction<ei::SumReducer, float, double, int32_t, int64_t>(r, "Sum");
  RegisterReduction<ei::MeanReducer, float, double, int32_t, int64_t>(r, "Mean");
  RegisterReduction<ei::ProdReducer, float, double, int32_t, int64_t>(r, "Prod");
  RegisterReduction<MaxReducer, float, double, int32_t, int64_t>(r, "Max");
  RegisterReduction<MinReducer, float, double, int32_t, int64_t>(r, "Min");
  RegisterArg<true, float, double, int32_t, int64_t>(r, "ArgMax");
  RegisterArg<false, float, double, int32_t, int64_t>(r, "ArgMin");
}

}  // namespace rill
