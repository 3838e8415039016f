// CPU kernels for constants, identities, shape queries and the ops that only
// reinterpret a tensor's shape (Reshape, ExpandDims, Squeeze), plus the
// generators Fill, ZerosLike, OnesLike and Range.
// clang-format off
#include "kernels/framework/cpu_threads.h"
// clang-format on

#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"
#include "kernels/common/transform_util.h"
#include "kernels/cpu/list_kernel_util.h"
#include "kernels/framework/device_context.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"
#include "ops/range_length.h"

namespace rill {
namespace {

using transform_util::ReadInts;
using transform_util::Unsupported;

// Builds `shape` from run-time dims, rejecting negative or overflowing ones.
absl::StatusOr<TensorShape> ShapeFromDims(const std::vector<int64_t>& dims) {
  return TensorShape::Create(absl::MakeConstSpan(dims));
}

class ConstOp final : public OpKernel {
 public:
  ConstOp(const OpKernelConstruction& c, Tensor value) : OpKernel(c), value_(std::move(value)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const TensorProto* proto, GetTensorAttr(c.def(), "value"));
    ASSIGN_OR_RETURN(DataType dtype, GetTypeAttr(c.def(), "dtype"));
    ASSIGN_OR_RETURN(Tensor value, TensorFromProto(*proto));
    if (value.dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrFormat("Const value has type %s but dtype is %s",
                                                        DataTypeString(value.dtype()),
                                                        DataTypeString(dtype)));
    }
    return std::unique_ptr<OpKernel>(std::make_unique<ConstOp>(c, std::move(value)));
  }

  // On a device with memory of its own the value is copied there by the
  // first run and shared by every later one.
  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.device_context() == nullptr || InHostMemory(value_.dtype())) {
      ctx.set_output(0, value_);
      return absl::OkStatus();
    }
    absl::MutexLock lock(&mu_);
    if (!on_device_.IsInitialized()) {
      ASSIGN_OR_RETURN(Tensor copy, ctx.AllocateTemp(value_.dtype(), value_.shape()));
      // `value_` outlives the copy, which the device orders before every
      // reader of the output.
      RETURN_IF_ERROR(ctx.device_context()->CopyHostBytesToDevice(
          value_.raw_data(), copy.raw_data(), value_.TotalBytes()));
      on_device_ = std::move(copy);
    }
    ctx.set_output(0, on_device_);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  // Shared by every run; consumers never write inputs.
  const Tensor value_;
  mutable absl::Mutex mu_;
  mutable Tensor on_device_ ABSL_GUARDED_BY(mu_);
};

// Identity, StopGradient, PlaceholderWithDefault and IdentityN: every input
// is forwarded unchanged (sharing its buffer).
class ForwardInputsOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_output(i, ctx.input(i));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class NoOpOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext&) const override { return absl::OkStatus(); }
  bool IsExpensive() const override { return false; }
};

// Writes `values` into a new output of type output_type(0) (int32/int64).
absl::Status SetIntOutput(KernelContext& ctx, const OpKernel& k, const TensorShape& shape,
                          const std::vector<int64_t>& values) {
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
  if (k.output_type(0) == DT_INT32) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] > INT32_MAX) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: value %d does not fit in int32; use out_type int64", k.op(), values[i]));
      }
      out->data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    }
  } else {
    for (size_t i = 0; i < values.size(); ++i) out->data<int64_t>()[i] = values[i];
  }
  return absl::OkStatus();
}

class ShapeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const auto dims = ctx.input(0).shape().dim_sizes();
    const std::vector<int64_t> values(dims.begin(), dims.end());
    return SetIntOutput(ctx, *this, TensorShape({static_cast<int64_t>(values.size())}), values);
  }
  bool IsExpensive() const override { return false; }
};

class SizeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    return SetIntOutput(ctx, *this, TensorShape(), {ctx.input(0).NumElements()});
  }
  bool IsExpensive() const override { return false; }
};

class RankOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
    out->scalar<int32_t>() = ctx.input(0).dims();
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class ReshapeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& sizes = ctx.input(1);
    if (sizes.dims() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("Reshape: shape must be a vector, got shape ", sizes.shape().DebugString()));
    }
    std::vector<int64_t> dims = ReadInts(sizes);
    int unknown = -1;
    int64_t product = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == -1) {
        if (unknown != -1) {
          return absl::InvalidArgumentError(
              absl::StrFormat("Reshape: only one dim may be -1, not both %d and %d", unknown, i));
        }
        unknown = static_cast<int>(i);
      } else if (dims[i] < 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("Reshape: size %d of dim %d is negative", dims[i], i));
      } else if (dims[i] > 0 && product > INT64_MAX / dims[i]) {
        return absl::InvalidArgumentError("Reshape: the shape has too many elements");
      } else {
        product *= dims[i];
      }
    }
    if (unknown != -1) {
      if (product == 0 || input.NumElements() % product != 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Reshape: cannot infer the missing size: input has %d values, which is not a "
            "multiple of %d",
            input.NumElements(), product));
      }
      dims[unknown] = input.NumElements() / product;
    }
    ASSIGN_OR_RETURN(TensorShape shape, ShapeFromDims(dims));
    if (shape.num_elements() != input.NumElements()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Reshape: input has %d values, which cannot be reshaped to %s (%d values)",
          input.NumElements(), shape.DebugString(), shape.num_elements()));
    }
    ASSIGN_OR_RETURN(Tensor out, input.Reshaped(shape));
    ctx.set_output(0, std::move(out));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class ExpandDimsOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    if (ctx.input(1).NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ExpandDims: dim must hold one value, got shape ", ctx.input(1).shape().DebugString()));
    }
    int64_t dim = ReadInts(ctx.input(1))[0];
    const int rank = input.dims();
    if (dim < -rank - 1 || dim > rank) {
      return absl::InvalidArgumentError(
          absl::StrFormat("ExpandDims: dim %d is out of range [%d, %d]", dim, -rank - 1, rank));
    }
    if (dim < 0) dim += rank + 1;
    const auto in_dims = input.shape().dim_sizes();
    std::vector<int64_t> dims(in_dims.begin(), in_dims.end());
    dims.insert(dims.begin() + dim, 1);
    ASSIGN_OR_RETURN(Tensor out, input.Reshaped(TensorShape(absl::MakeConstSpan(dims))));
    ctx.set_output(0, std::move(out));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class SqueezeOp final : public OpKernel {
 public:
  SqueezeOp(const OpKernelConstruction& c, std::vector<int64_t> squeeze_dims)
      : OpKernel(c), squeeze_dims_(std::move(squeeze_dims)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, GetIntListAttr(c.def(), "squeeze_dims"));
    return std::unique_ptr<OpKernel>(std::make_unique<SqueezeOp>(c, std::move(dims)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const int rank = input.dims();
    std::vector<bool> drop(rank, false);
    for (int64_t d : squeeze_dims_) {
      if (d < -rank || d >= rank) {
        return absl::InvalidArgumentError(
            absl::StrFormat("Squeeze: dim %d is out of range [%d, %d)", d, -rank, rank));
      }
      const int64_t axis = d < 0 ? d + rank : d;
      if (input.dim_size(axis) != 1) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Squeeze: cannot squeeze dim %d of size %d", axis, input.dim_size(axis)));
      }
      drop[axis] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) {
      const bool squeeze = squeeze_dims_.empty() ? input.dim_size(i) == 1 : drop[i];
      if (!squeeze) dims.push_back(input.dim_size(i));
    }
    ASSIGN_OR_RETURN(Tensor out, input.Reshaped(TensorShape(absl::MakeConstSpan(dims))));
    ctx.set_output(0, std::move(out));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const std::vector<int64_t> squeeze_dims_;
};

class FillOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& dims = ctx.input(0);
    const Tensor& value = ctx.input(1);
    ASSIGN_OR_RETURN(TensorShape shape, transform_util::FillShape(dims, value));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    return DispatchType(
        value.dtype(),
        [&]<typename T>() {
          std::fill_n(out->data<T>(), out->NumElements(), value.scalar<T>());
          return absl::OkStatus();
        },
        [&] { return Unsupported("Fill", value.dtype()); });
  }
};

// ZerosLike (kOne false) and OnesLike (kOne true).
template <bool kOne>
class ConstantLikeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (!kOne && x.dtype() == DT_VARIANT) {
      ASSIGN_OR_RETURN(Tensor zeros, list_kernels::ZerosLikeLists(ctx, x));
      ctx.set_output(0, std::move(zeros));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, x.shape()));
    return DispatchType(
        x.dtype(),
        [&]<typename T>() {
          if constexpr (std::is_same_v<T, std::string>) {
            if (kOne) return Unsupported(op(), x.dtype());
            std::fill_n(out->data<T>(), out->NumElements(), std::string());
          } else {
            std::fill_n(out->data<T>(), out->NumElements(), T(kOne ? 1 : 0));
          }
          return absl::OkStatus();
        },
        [&] { return Unsupported(op(), x.dtype()); });
  }
};

template <typename T>
class RangeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    for (int i = 0; i < 3; ++i) {
      if (ctx.input(i).dims() != 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("Range: input %d must be a scalar, got shape %s", i,
                            ctx.input(i).shape().DebugString()));
      }
    }
    const T start = ctx.input(0).scalar<T>();
    const T limit = ctx.input(1).scalar<T>();
    const T delta = ctx.input(2).scalar<T>();
    if (delta == 0) return absl::InvalidArgumentError("Range: delta must not be 0");
    if ((delta > 0 && start > limit) || (delta < 0 && start < limit)) {
      return absl::InvalidArgumentError(absl::StrCat("Range: cannot reach limit ", limit,
                                                     " from start ", start, " by delta ", delta));
    }
    int64_t size;
    if constexpr (std::is_integral_v<T>) {
      ASSIGN_OR_RETURN(size, RangeLength(int64_t{start}, int64_t{limit}, int64_t{delta}));
    } else {
      const double length = std::ceil(std::abs((static_cast<double>(limit) - start) / delta));
      if (!(length < 0x1p62)) {
        return absl::InvalidArgumentError(absl::StrCat("Range: too many elements: ", length));
      }
      size = static_cast<int64_t>(length);
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape({size})));
    T* data = out->data<T>();
    for (int64_t i = 0; i < size; ++i) {
      if constexpr (std::is_integral_v<T>) {
        // Every value lies between start and limit, but a step count times
        // delta may not fit in T.
        data[i] = static_cast<T>(int64_t{start} + i * int64_t{delta});
      } else {
        data[i] = static_cast<T>(start + static_cast<T>(i) * delta);
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterCpuArrayKernels(KernelRegistry& r) {
  for (const char* device : {kDeviceCpu, kDeviceGpu}) {
    r.Register(KernelDef("Const").Device(device), ConstOp::Create);
  }
  r.Register(KernelDef("Identity").Device(kDeviceCpu), MakeKernel<ForwardInputsOp>);
  r.Register(KernelDef("IdentityN").Device(kDeviceCpu), MakeKernel<ForwardInputsOp>);
  r.Register(KernelDef("StopGradient").Device(kDeviceCpu), MakeKernel<ForwardInputsOp>);
  r.Register(KernelDef("PlaceholderWithDefault").Device(kDeviceCpu), MakeKernel<ForwardInputsOp>);
  r.Register(KernelDef("NoOp").Device(kDeviceCpu), MakeKernel<NoOpOp>);
  r.Register(KernelDef("Shape").Device(kDeviceCpu), MakeKernel<ShapeOp>);
  r.Register(KernelDef("Size").Device(kDeviceCpu), MakeKernel<SizeOp>);
  r.Register(KernelDef("Rank").Device(kDeviceCpu), MakeKernel<RankOp>);
  r.Register(KernelDef("Reshape").Device(kDeviceCpu), MakeKernel<ReshapeOp>);
  r.Register(KernelDef("ExpandDims").Device(kDeviceCpu), MakeKernel<ExpandDimsOp>);
  r.Register(KernelDef("Squeeze").Device(kDeviceCpu), SqueezeOp::Create);
  r.Register(KernelDef("Fill").Device(kDeviceCpu), MakeKernel<FillOp>);
  r.Register(KernelDef("ZerosLike").Device(kDeviceCpu), MakeKernel<ConstantLikeOp<false>>);
  r.Register(KernelDef("OnesLike").Device(kDeviceCpu), MakeKernel<ConstantLikeOp<true>>);
  r.Register(KernelDef("Range").Device(kDeviceCpu).TypeConstraint<int32_t>("Tidx"),
             MakeKernel<RangeOp<int32_t>>);
  r.Register(KernelDef("Range").Device(kDeviceCpu).TypeConstraint<int64_t>("Tidx"),
             MakeKernel<RangeOp<int64_t>>);
  r.Register(KernelDef("Range").Device(kDeviceCpu).TypeConstraint<float>("Tidx"),
             MakeKernel<RangeOp<float>>);
  r.Register(KernelDef("Range").Device(kDeviceCpu).TypeConstraint<double>("Tidx"),
             MakeKernel<RangeOp<double>>);
}

}  // namespace rill
