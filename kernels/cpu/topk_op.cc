// The CPU kernel of TopKV2: the k largest entries of each row (the last
// dimension) and where they were, as top-k gradient compression picks what
// a worker sends.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// Larger first, NaN above every number (so that it is seen, not hidden).
template <typename T>
bool Greater(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x)) return !std::isnan(y);
    if (std::isnan(y)) return false;
  }
  return x > y;
}

template <typename T>
bool IsNan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// The k-th largest of `values` (reordered) by `greater`.
template <typename T, typename Compare>
T KthLargest(std::vector<T>& values, int64_t k, Compare greater) {
  std::nth_element(values.begin(), values.begin() + (k - 1), values.end(), greater);
  return values[k - 1];
}

template <typename T>
class TopKOp final : public OpKernel {
 public:
  TopKOp(const OpKernelConstruction& c, bool sorted) : OpKernel(c), sorted_(sorted) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const bool sorted, GetBoolAttr(c.def(), "sorted"));
    return std::unique_ptr<OpKernel>(std::make_unique<TopKOp>(c, sorted));
  }

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
    std::vector<T> scratch(n);
    std::vector<int32_t> chosen;
    chosen.reserve(k);
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = input.data<T>() + r * n;
      // The k-th largest, found on a copy of the values (contiguous, no
      // indirection), then every entry above it and, of the entries equal
      // to it, the lowest indices: TensorFlow's choice.
      std::copy_n(row, n, scratch.begin());
      // Without NaN (nearly always), a plain comparison: several times
      // faster than one that checks each operand.
      const bool has_nan = std::any_of(row, row + n, [](T x) { return IsNan(x); });
      const T kth =
          has_nan ? KthLargest(scratch, k, Greater<T>) : KthLargest(scratch, k, std::greater<T>());
      chosen.clear();
      for (int32_t i = 0; i < n; ++i) {
        if (has_nan ? Greater(row[i], kth) : row[i] > kth) chosen.push_back(i);
      }
      for (int32_t i = 0; i < n && static_cast<int64_t>(chosen.size()) < k; ++i) {
        if (!Greater(row[i], kth) && !Greater(kth, row[i])) chosen.push_back(i);
      }
      // Unsorted, the entries come in index order (TensorFlow leaves the
      // order unspecified then).
      if (sorted_) {
        std::sort(chosen.begin(), chosen.end(), [row](int32_t a, int32_t b) {
          return Greater(row[a], row[b]) || (!Greater(row[b], row[a]) && a < b);
        });
      }
      T* value_out = values->data<T>() + r * k;
      int32_t* index_out = indices->data<int32_t>() + r * k;
      for (int64_t i = 0; i < k; ++i) {
        index_out[i] = chosen[i];
        value_out[i] = row[chosen[i]];
      }
    }
    return absl::OkStatus();
  }

 private:
  const bool sorted_;
};

template <typename... Ts>
void RegisterTopK(KernelRegistry& r) {
  (r.Register(KernelDef("TopKV2").Device(kDeviceCpu).TypeConstraint<Ts>("T"), TopKOp<Ts>::Create),
   ...);
}

}  // namespace

void RegisterCpuTopKKernels(KernelRegistry& r) { RegisterTopK<float, double, int32_t, int64_t>(r); }

}  // namespace rill
