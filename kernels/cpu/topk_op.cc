// The CPU kernel of TopKV2: the k largest entries of each row (the last
// dimension) and where they were, as top-k gradient compression picks what
// a worker sends.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// Larger first; NaN above every number (so that it is seen, not hidden);
// equal values by lower index first, as TensorFlow orders them.
template <typename T>
bool Before(const T* row, int32_t a, int32_t b) {
  const T x = row[a];
  const T y = row[b];
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && (!std::isnan(y) || a < b);
  }
  return x > y || (x == y && a < b);
}

template <typename T>
class TopKOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& k_tensor = ctx.input(1);
    if (k_tensor.dims() != 0) {
      return absl::InvalidArgumentError(absl::StrFormat("TopKV2: k must be a scalar, got shape %s",
                                                        k_tensor.shape().DebugString()));
    }
    if (input.dims() < 1) {
      return absl::InvalidArgumentError(
          "TopKV2: input must have at least one dimension, got a scalar");
    }
    const int64_t k = k_tensor.data<int32_t>()[0];
    const int64_t n = input.dim_size(input.dims() - 1);
    if (k < 0 || k > n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "TopKV2: k = %d is not in [0, %d], the length of input's last dimension (shape %s)", k, n,
          input.shape().DebugString()));
    }
    if (n > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("TopKV2: rows of %d entries have indices past int32", n));
    }
    TensorShape out_shape = input.shape();
    out_shape.set_dim(input.dims() - 1, k);
    ASSIGN_OR_RETURN(Tensor * values, ctx.AllocateOutput(0, out_shape));
    ASSIGN_OR_RETURN(Tensor * indices, ctx.AllocateOutput(1, out_shape));
    if (k == 0) return absl::OkStatus();
    const int64_t rows = input.NumElements() / n;
    std::vector<int32_t> order(n);
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = input.data<T>() + r * n;
      std::iota(order.begin(), order.end(), 0);
      const auto before = [row](int32_t a, int32_t b) { return Before(row, a, b); };
      // Selecting first makes small k cost a pass over the row, not a sort.
      if (k < n) std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), before);
      std::sort(order.begin(), order.begin() + k, before);
      T* value_out = values->data<T>() + r * k;
      int32_t* index_out = indices->data<int32_t>() + r * k;
      for (int64_t i = 0; i < k; ++i) {
        index_out[i] = order[i];
        value_out[i] = row[order[i]];
      }
    }
    return absl::OkStatus();
  }
};

template <typename... Ts>
void RegisterTopK(KernelRegistry& r) {
  (r.Register(KernelDef("TopKV2").Device(kDeviceCpu).TypeConstraint<Ts>("T"),
              MakeKernel<TopKOp<Ts>>),
   ...);
}

}  // namespace

void RegisterCpuTopKKernels(KernelRegistry& r) { RegisterTopK<float, double, int32_t, int64_t>(r); }

}  // namespace rill
