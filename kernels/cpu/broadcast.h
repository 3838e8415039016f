// NumPy broadcasting for CPU element-wise kernels: the output shape of two
// operands, and evaluation of a binary functor over them through Eigen
// broadcasts of reshaped views. Include after kernels/framework/cpu_threads.h.
#ifndef RILL_KERNELS_CPU_BROADCAST_H_
#define RILL_KERNELS_CPU_BROADCAST_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/broadcast_shape.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"

namespace rill {

void RegisterCpuCwiseBinaryKernels(KernelRegistry& registry);  // cpu/cwise_binary_ops.cc

namespace broadcast_internal {

template <int N, typename In, typename Out, typename F>
void EvalFolded(const Eigen::ThreadPoolDevice& d, const Folded& f, const In* a, const In* b,
                Out* out, F fn) {
  using Index = Eigen::DenseIndex;
  Eigen::array<Index, N> out_dims, a_dims, b_dims, a_rep, b_rep;
  for (int i = 0; i < N; ++i) {
    out_dims[i] = f.out_dims[i];
    a_dims[i] = f.a_dims[i];
    b_dims[i] = f.b_dims[i];
    a_rep[i] = f.out_dims[i] / f.a_dims[i];
    b_rep[i] = f.out_dims[i] / f.b_dims[i];
  }
  Tensor::ConstTensorMap<In, N> ta(a, a_dims);
  Tensor::ConstTensorMap<In, N> tb(b, b_dims);
  Tensor::TensorMap<Out, N> to(out, out_dims);
  if constexpr (N == 2) {
    // A broadcast that repeats nothing still costs a block copy, so an
    // operand that spans the output (a bias row added to a batch) is read
    // as is; only for two dimensions, the common case, to bound code size.
    if (f.a_dims == f.out_dims) {
      to.device(d) = ta.binaryExpr(tb.broadcast(b_rep), fn);
      return;
    }
    if (f.b_dims == f.out_dims) {
      to.device(d) = ta.broadcast(a_rep).binaryExpr(tb, fn);
      return;
    }
  }
  to.device(d) = ta.broadcast(a_rep).binaryExpr(tb.broadcast(b_rep), fn);
}

// The same as EvalFolded for any rank, one element at a time on the
// calling thread: for alternating patterns of more than four dimensions.
template <typename In, typename Out, typename F>
void EvalFoldedByIndex(const Folded& f, const In* a, const In* b, Out* out, F fn) {
  const int n = static_cast<int>(f.out_dims.size());
  std::vector<int64_t> a_stride(n), b_stride(n), pos(n, 0);
  int64_t sa = 1, sb = 1, total = 1;
  for (int i = n - 1; i >= 0; --i) {
    a_stride[i] = f.a_dims[i] == 1 ? 0 : sa;
    b_stride[i] = f.b_dims[i] == 1 ? 0 : sb;
    sa *= f.a_dims[i];
    sb *= f.b_dims[i];
    total *= f.out_dims[i];
  }
  int64_t ia = 0, ib = 0;
  for (int64_t k = 0; k < total; ++k) {
    out[k] = fn(a[ia], b[ib]);
    for (int i = n - 1; i >= 0; --i) {
      ia += a_stride[i];
      ib += b_stride[i];
      if (++pos[i] < f.out_dims[i]) break;
      ia -= a_stride[i] * f.out_dims[i];
      ib -= b_stride[i] * f.out_dims[i];
      pos[i] = 0;
    }
  }
}

}  // namespace broadcast_internal

// Computes out = fn(a, b) element-wise with NumPy broadcasting into a new
// output `index` of ctx. `fn(In, In) -> Out` is called by Eigen and must be
// thread-safe.
template <typename In, typename Out, typename F>
absl::Status BinaryBroadcast(KernelContext& ctx, const Tensor& a, const Tensor& b, F fn,
                             int index = 0) {
  ASSIGN_OR_RETURN(TensorShape shape, BroadcastShape(a.shape(), b.shape()));
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(index, shape));
  if (shape.num_elements() == 0) return absl::OkStatus();
  const Eigen::ThreadPoolDevice& d = ctx.eigen_cpu();
  auto o = out->flat<Out>();
  if (a.shape() == b.shape()) {
    o.device(d) = a.flat<In>().binaryExpr(b.flat<In>(), fn);
  } else if (a.NumElements() == 1) {
    const In s = *a.data<In>();
    o.device(d) = b.flat<In>().unaryExpr([s, fn](const In& x) { return fn(s, x); });
  } else if (b.NumElements() == 1) {
    const In s = *b.data<In>();
    o.device(d) = a.flat<In>().unaryExpr([s, fn](const In& x) { return fn(x, s); });
  } else {
    using broadcast_internal::EvalFolded;
    using broadcast_internal::EvalFoldedByIndex;
    const broadcast_internal::Folded f = broadcast_internal::Fold(a.shape(), b.shape(), shape);
    const In* pa = a.data<In>();
    const In* pb = b.data<In>();
    Out* po = out->data<Out>();
    switch (f.out_dims.size()) {
      case 1:
        EvalFolded<1>(d, f, pa, pb, po, fn);
        break;
      case 2:
        EvalFolded<2>(d, f, pa, pb, po, fn);
        break;
      case 3:
        EvalFolded<3>(d, f, pa, pb, po, fn);
        break;
      case 4:
        EvalFolded<4>(d, f, pa, pb, po, fn);
        break;
      default:
        EvalFoldedByIndex(f, pa, pb, po, fn);
        break;
    }
  }
  return absl::OkStatus();
}

}  // namespace rill

#endif  // RILL_KERNELS_CPU_BROADCAST_H_
