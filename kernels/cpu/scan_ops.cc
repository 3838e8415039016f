// CPU kernels of the scans along an axis, Cumsum and Cumprod (exclusive,
// reversed), and of Bucketize, which numbers the bucket each value falls in.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
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

struct SumOf {
  template <typename T>
  static T Identity() {
    return T{0};
  }
  template <typename T>
  static T Apply(T a, T b) {
    return a + b;
  }
};

struct ProductOf {
  template <typename T>
  static T Identity() {
    return T{1};
  }
  template <typename T>
  static T Apply(T a, T b) {
    return a * b;
  }
};

// The input seen as [outer, n, inner] around the axis: each (outer, inner)
// pair is one scan of n values, `inner` apart.
template <typename T, typename Reducer>
class ScanOp final : public OpKernel {
 public:
  ScanOp(const OpKernelConstruction& c, bool exclusive, bool reverse)
      : OpKernel(c), exclusive_(exclusive), reverse_(reverse) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const bool exclusive, GetBoolAttr(c.def(), "exclusive"));
    ASSIGN_OR_RETURN(const bool reverse, GetBoolAttr(c.def(), "reverse"));
    return std::unique_ptr<OpKernel>(std::make_unique<ScanOp>(c, exclusive, reverse));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& axis_tensor = ctx.input(1);
    const char* op = this->op().c_str();
    if (axis_tensor.dims() != 0) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: axis must be a scalar, got shape %s",
                                                        op, axis_tensor.shape().DebugString()));
    }
    int64_t axis = axis_tensor.dtype() == DT_INT64 ? axis_tensor.data<int64_t>()[0]
                                                   : axis_tensor.data<int32_t>()[0];
    if (axis < -x.dims() || axis >= x.dims()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: axis %d is out of range for an input of shape %s", op, axis,
                          x.shape().DebugString()));
    }
    if (axis < 0) axis += x.dims();
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, x.shape()));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.dim_size(d);
    for (int d = static_cast<int>(axis) + 1; d < x.dims(); ++d) inner *= x.dim_size(d);
    const int64_t n = x.dim_size(static_cast<int>(axis));
    const T* src = x.data<T>();
    T* dst = out->data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        T running = Reducer::template Identity<T>();
        for (int64_t k = 0; k < n; ++k) {
          const int64_t at = base + (reverse_ ? n - 1 - k : k) * inner;
          if (exclusive_) {
            dst[at] = running;
            running = Reducer::Apply(running, src[at]);
          } else {
            running = Reducer::Apply(running, src[at]);
            dst[at] = running;
          }
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  const bool exclusive_;
  const bool reverse_;
};

template <typename T>
using CumsumOp = ScanOp<T, SumOf>;
template <typename T>
using CumprodOp = ScanOp<T, ProductOf>;

// The number of boundaries at or below each value: its bucket, as
// TensorFlow's (std::upper_bound over sorted boundaries).
template <typename T>
class BucketizeOp final : public OpKernel {
 public:
  BucketizeOp(const OpKernelConstruction& c, std::vector<float> boundaries)
      : OpKernel(c), boundaries_(std::move(boundaries)) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    const auto it = c.def().attr().find("boundaries");
    if (it == c.def().attr().end()) {
      return absl::InvalidArgumentError("Bucketize: the boundaries attr is missing");
    }
    std::vector<float> boundaries(it->second.list().f().begin(), it->second.list().f().end());
    if (!std::is_sorted(boundaries.begin(), boundaries.end())) {
      return absl::InvalidArgumentError("Bucketize: boundaries must be sorted");
    }
    return std::unique_ptr<OpKernel>(std::make_unique<BucketizeOp>(c, std::move(boundaries)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, input.shape()));
    const T* src = input.data<T>();
    int32_t* dst = out->data<int32_t>();
    for (int64_t i = 0; i < input.NumElements(); ++i) {
      dst[i] = static_cast<int32_t>(
          std::upper_bound(boundaries_.begin(), boundaries_.end(), static_cast<double>(src[i]),
                           [](double v, float b) { return v < static_cast<double>(b); }) -
          boundaries_.begin());
    }
    return absl::OkStatus();
  }

 private:
  const std::vector<float> boundaries_;
};

}  // namespace

void RegisterCpuScanKernels(KernelRegistry& r) {
  RegisterForTypes<CumsumOp, float, double, int32_t, int64_t>(r, kDeviceCpu, "Cumsum");
  RegisterForTypes<CumprodOp, float, double, int32_t, int64_t>(r, kDeviceCpu, "Cumprod");
  RegisterForTypes<BucketizeOp, int32_t, int64_t, float, double>(r, kDeviceCpu, "Bucketize");
}

}  // namespace rill
