// CPU kernels of Bincount and DenseBincount: how often each value in
// [0, size) occurs (or the sum of its weights), per row for a matrix
// input. Negative values are an error and values past size are dropped,
// as in TensorFlow.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// Bincount(arr int32, size int32, weights) and DenseBincount(input,
// size, weights, binary_output); weights empty counts each value once.
template <typename T, typename Tidx>
class BincountOp final : public OpKernel {
 public:
  BincountOp(const OpKernelConstruction& c, bool binary) : OpKernel(c), binary_(binary) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    bool binary = false;
    if (c.def().attr().contains("binary_output")) {
      ASSIGN_OR_RETURN(binary, GetBoolAttr(c.def(), "binary_output"));
    }
    return std::unique_ptr<OpKernel>(std::make_unique<BincountOp>(c, binary));
  }
  bool IsExpensive() const override { return false; }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& size_in = ctx.input(1);
    const Tensor& weights = ctx.input(2);
    if (size_in.dims() != 0) {
      return Error(
          absl::StrFormat("size must be a scalar, got shape %s", size_in.shape().DebugString()));
    }
    const int64_t size = size_in.scalar<Tidx>();
    if (size < 0) return Error(absl::StrFormat("size must be non-negative, got %d", size));
    const bool dense = op() == "DenseBincount";
    if (dense && (input.dims() < 1 || input.dims() > 2)) {
      return Error(absl::StrFormat("input must be a vector or a matrix, got shape %s",
                                   input.shape().DebugString()));
    }
    const bool weighted = weights.NumElements() > 0;
    if (weighted && !(weights.shape() == input.shape())) {
      return Error(absl::StrFormat("weights of shape %s must match the input's %s or be empty",
                                   weights.shape().DebugString(), input.shape().DebugString()));
    }
    const bool rows = dense && input.dims() == 2;
    const int64_t num_rows = rows ? input.dim_size(0) : 1;
    const int64_t per_row = rows ? input.dim_size(1) : input.NumElements();
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, rows ? TensorShape({num_rows, size})
                                                              : TensorShape({size})));
    T* bins = out->data<T>();
    std::fill_n(bins, out->NumElements(), T(0));
    const Tidx* values = input.data<Tidx>();
    for (int64_t i = 0; i < input.NumElements(); ++i) {
      if (values[i] < 0) return Error("Input arr must be non-negative!");
      if (values[i] >= size) continue;
      T& bin = bins[(i / per_row) * size + values[i]];
      if (binary_) {
        bin = T(1);
      } else {
        bin += weighted ? weights.data<T>()[i] : T(1);
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(const std::string& why) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s (%s): %s", name(), op(), why));
  }
  const bool binary_;
};

template <typename T>
void RegisterForWeights(KernelRegistry& r) {
  const DataType weights = DataTypeToEnum<T>::value;
  r.Register(KernelDef("Bincount").Device(kDeviceCpu).TypeConstraint("T", weights),
             BincountOp<T, int32_t>::Create);
  r.Register(KernelDef("DenseBincount")
                 .Device(kDeviceCpu)
                 .TypeConstraint("T", weights)
                 .TypeConstraint("Tidx", DT_INT32),
             BincountOp<T, int32_t>::Create);
  r.Register(KernelDef("DenseBincount")
                 .Device(kDeviceCpu)
                 .TypeConstraint("T", weights)
                 .TypeConstraint("Tidx", DT_INT64),
             BincountOp<T, int64_t>::Create);
}

}  // namespace

void RegisterCpuBincountKernels(KernelRegistry& r) {
  RegisterForWeights<int32_t>(r);
  RegisterForWeights<int64_t>(r);
  RegisterForWeights<float>(r);
  RegisterForWeights<double>(r);
}

}  // namespace rill
