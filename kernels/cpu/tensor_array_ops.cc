// CPU kernels for the TensorArray ops. TensorArrayV3 makes a TensorArray in
// the running step's container of the device's ResourceMgr and outputs a
// handle naming it; the others look it up by that handle. The flow inputs
// and outputs only order the ops: their values are never read.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/element_copy.h"
#include "kernels/cpu/tensor_array.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/framework/step_resources.h"
#include "kernels/registry.h"

namespace rill {
namespace {

absl::StatusOr<std::shared_ptr<TensorArray>> LookupArray(const KernelContext& ctx) {
  return LookupStepResource<TensorArray>(ctx, 0);
}

// The int32 scalar input `i` (an index or a size).
absl::StatusOr<int32_t> Int32Scalar(const KernelContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DT_INT32 || t.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s must be an int32 scalar, got %s",
                                                      ctx.node().op(), what, t.DebugString()));
  }
  return t.scalar<int32_t>();
}

// The int32 vector input `i`, as values.
absl::StatusOr<std::vector<int32_t>> Int32Vector(const KernelContext& ctx, int i,
                                                 const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DT_INT32 || t.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s must be an int32 vector, got %s",
                                                      ctx.node().op(), what, t.DebugString()));
  }
  return std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + t.NumElements());
}

// Passes flow_in on as flow_out: it only orders the ops.
absl::Status ForwardFlow(KernelContext& ctx, int flow_in, int flow_out) {
  const Tensor& flow = ctx.input(flow_in);
  if (flow.dtype() != DT_FLOAT || flow.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: flow_in must be a float scalar, got %s",
                                                      ctx.node().op(), flow.DebugString()));
  }
  ctx.set_output(flow_out, flow);
  return absl::OkStatus();
}

absl::Status CheckDtype(const KernelContext& ctx, const TensorArray& array) {
  if (array.dtype() != ctx.output_type(0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: TensorArray %s dtype is %s but Op requested dtype %s.", ctx.node().op(), array.label(),
        DataTypeString(array.dtype()), DataTypeString(ctx.output_type(0))));
  }
  return absl::OkStatus();
}

// Rows [start, start + rows) of `value` as a tensor of their own, of shape
// [rows] + value.shape[1:] (or value.shape[1:] when `drop_dim0`).
absl::StatusOr<Tensor> CopyRows(KernelContext& ctx, const Tensor& value, int64_t start,
                                int64_t rows, bool drop_dim0) {
  TensorShape shape = value.shape();
  if (drop_dim0) {
    shape.RemoveDim(0);
  } else {
    shape.set_dim(0, rows);
  }
  ASSIGN_OR_RETURN(Tensor out, ctx.AllocateTemp(value.dtype(), shape));
  const int64_t row_size = value.dim_size(0) == 0 ? 0 : value.NumElements() / value.dim_size(0);
  CopyTensorElements(value, start * row_size, out, 0, rows * row_size);
  return out;
}

// TensorArrayV3: a fresh array per run, named after the node and the run
// (the same node runs once per loop iteration), in the step's container.
class TensorArrayOp final : public OpKernel {
 public:
  TensorArrayOp(const OpKernelConstruction& c, TensorArray::Options options)
      : OpKernel(c), options_(std::move(options)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    TensorArray::Options options;
    ASSIGN_OR_RETURN(options.dtype, GetTypeAttr(c.def(), "dtype"));
    ASSIGN_OR_RETURN(options.element_shape, GetShapeAttr(c.def(), "element_shape"));
    ASSIGN_OR_RETURN(options.dynamic_size, GetBoolAttr(c.def(), "dynamic_size"));
    ASSIGN_OR_RETURN(options.clear_after_read, GetBoolAttr(c.def(), "clear_after_read"));
    ASSIGN_OR_RETURN(options.identical_element_shapes,
                     GetBoolAttr(c.def(), "identical_element_shapes"));
    ASSIGN_OR_RETURN(options.tensor_array_name, GetStringAttr(c.def(), "tensor_array_name"));
    return std::unique_ptr<OpKernel>(std::make_unique<TensorArrayOp>(c, std::move(options)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(int32_t size, Int32Scalar(ctx, 0, "size"));
    if (size < 0 || size > TensorArray::kMaxSize) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: Size should be >= 0 and at most %d, got %d", op(), TensorArray::kMaxSize, size));
    }
    ASSIGN_OR_RETURN(
        Tensor handle,
        CreateStepResource<TensorArray>(
            ctx, name(), runs_,
            [&](const std::string& key) -> absl::StatusOr<std::shared_ptr<TensorArray>> {
              return std::make_shared<TensorArray>(key, size, options_);
            }));
    ctx.set_output(0, std::move(handle));
    ctx.set_output(1, Tensor::Scalar<float>(0.0f));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const TensorArray::Options options_;
  // Counts runs, to name each run's resource; the only state a run changes.
  mutable std::atomic<int64_t> runs_{0};
};

// TensorArrayGradV3 and (kWithShape) TensorArrayGradWithShape: the gradient
// array of (forward array, source), made on the first call and found by
// later ones, of the forward array's size, with each written index's shape
// (after shape_to_prepend).
template <bool kWithShape>
class TensorArrayGradOp final : public OpKernel {
 public:
  TensorArrayGradOp(const OpKernelConstruction& c, std::string source)
      : OpKernel(c), source_(std::move(source)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(std::string source, GetStringAttr(c.def(), "source"));
    return std::unique_ptr<OpKernel>(std::make_unique<TensorArrayGradOp>(c, std::move(source)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> forward, LookupArray(ctx));
    ASSIGN_OR_RETURN(ResourceMgr * resources, StepResourceMgr(ctx));
    TensorShape prepend;
    if constexpr (kWithShape) {
      ASSIGN_OR_RETURN(std::vector<int32_t> dims, Int32Vector(ctx, 2, "shape_to_prepend"));
      ASSIGN_OR_RETURN(prepend,
                       TensorShape::Create(std::vector<int64_t>(dims.begin(), dims.end())));
    }
    // Once gradients are being computed the forward array may not grow.
    forward->DisableDynamicSize();
    ASSIGN_OR_RETURN(int32_t size, forward->Size());
    if (!forward->GradientsAllowed()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Unable to create a gradients TensorArray for %s. Perhaps you used the "
          "multiple_writes_aggregate flag on a previous write? Gradient calculation is "
          "impossible when multiple writes are performed to the same index.",
          forward->label()));
    }
    TensorArray::Options options;
    options.dtype = forward->dtype();
    const PartialTensorShape forward_shape = forward->element_shape();
    if (!forward_shape.unknown_rank()) {
      std::vector<int64_t> dims(prepend.dim_sizes().begin(), prepend.dim_sizes().end());
      dims.insert(dims.end(), forward_shape.dim_sizes().begin(), forward_shape.dim_sizes().end());
      ASSIGN_OR_RETURN(options.element_shape, PartialTensorShape::Create(dims));
    }
    options.identical_element_shapes = forward->identical_element_shapes();
    options.is_grad = true;
    std::string key = absl::StrCat(forward->name(), "@", source_);
    Tensor handle = MakeStepResourceHandle(ctx, key, TensorArray::kTypeName);
    const ResourceHandleProto& proto = handle.scalar<ResourceHandleProto>();
    RETURN_IF_ERROR(resources
                        ->LookupOrCreate<TensorArray>(
                            proto.container(), proto.name(),
                            [&]() -> absl::StatusOr<std::shared_ptr<TensorArray>> {
                              auto grad = std::make_shared<TensorArray>(key, size, options);
                              RETURN_IF_ERROR(grad->CopyShapesFrom(*forward, prepend));
                              return grad;
                            })
                        .status());
    ctx.set_output(0, std::move(handle));
    return ForwardFlow(ctx, 1, 1);
  }
  bool IsExpensive() const override { return false; }

 private:
  const std::string source_;
};

class TensorArrayWriteOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, LookupArray(ctx));
    ASSIGN_OR_RETURN(int32_t index, Int32Scalar(ctx, 1, "index"));
    const Tensor& value = ctx.input(2);
    RETURN_IF_ERROR(
        array->Write(ctx, absl::MakeConstSpan(&index, 1), absl::MakeConstSpan(&value, 1)));
    return ForwardFlow(ctx, 3, 0);
  }
  bool IsExpensive() const override { return false; }
};

class TensorArrayReadOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, LookupArray(ctx));
    ASSIGN_OR_RETURN(int32_t index, Int32Scalar(ctx, 1, "index"));
    RETURN_IF_ERROR(CheckDtype(ctx, *array));
    ASSIGN_OR_RETURN(std::vector<Tensor> values, array->Read(ctx, absl::MakeConstSpan(&index, 1)));
    ctx.set_output(0, std::move(values[0]));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

// TensorArrayGatherV3: the elements at `indices`, stacked.
class TensorArrayGatherOp final : public OpKernel {
 public:
  TensorArrayGatherOp(const OpKernelConstruction& c, PartialTensorShape element_shape)
      : OpKernel(c), element_shape_(std::move(element_shape)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(PartialTensorShape shape, GetShapeAttr(c.def(), "element_shape"));
    return std::unique_ptr<OpKernel>(std::make_unique<TensorArrayGatherOp>(c, std::move(shape)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, LookupArray(ctx));
    ASSIGN_OR_RETURN(std::vector<int32_t> indices, Int32Vector(ctx, 1, "indices"));
    RETURN_IF_ERROR(CheckDtype(ctx, *array));
    if (indices.empty()) {
      // Nothing to read a shape from: it must be known.
      absl::StatusOr<PartialTensorShape> merged = element_shape_.MergeWith(array->element_shape());
      absl::StatusOr<TensorShape> shape = merged.ok() ? merged->AsTensorShape() : merged.status();
      if (!shape.ok()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "TensorArray %s gathers no elements, but element shape %s is not fully defined. "
            "Currently only static shapes are supported when packing zero-size TensorArrays.",
            array->label(), element_shape_.DebugString()));
      }
      TensorShape out({0});
      for (int64_t d : shape->dim_sizes()) out.AddDim(d);
      return ctx.AllocateOutput(0, out).status();
    }
    ASSIGN_OR_RETURN(std::vector<Tensor> values, array->Read(ctx, indices));
    const TensorShape& first = values[0].shape();
    if (!element_shape_.IsCompatibleWith(first)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "TensorArray %s was passed element_shape %s which does not match the Tensor at index "
          "%d: %s",
          array->label(), element_shape_.DebugString(), indices[0], first.DebugString()));
    }
    for (size_t i = 1; i < values.size(); ++i) {
      if (!(values[i].shape() == first)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "TensorArray %s has inconsistent shapes. Index %d has shape: %s but index %d has "
            "shape: %s",
            array->label(), indices[0], first.DebugString(), indices[i],
            values[i].shape().DebugString()));
      }
    }
    std::vector<int64_t> dims = {static_cast<int64_t>(values.size())};
    dims.insert(dims.end(), first.dim_sizes().begin(), first.dim_sizes().end());
    ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Create(dims));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    const int64_t row = first.num_elements();
    for (size_t i = 0; i < values.size(); ++i) {
      CopyTensorElements(values[i], 0, *out, static_cast<int64_t>(i) * row, row);
    }
    return absl::OkStatus();
  }

 private:
  const PartialTensorShape element_shape_;
};

// TensorArrayScatterV3: row i of `value` becomes element indices[i].
class TensorArrayScatterOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, LookupArray(ctx));
    ASSIGN_OR_RETURN(std::vector<int32_t> indices, Int32Vector(ctx, 1, "indices"));
    const Tensor& value = ctx.input(2);
    if (value.dims() < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: Expected value to be at least a vector, but received shape: %s",
                          op(), value.shape().DebugString()));
    }
    if (value.dim_size(0) != static_cast<int64_t>(indices.size())) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: Expected len(indices) == values.shape[0], but saw: %d vs. %d", op(),
                          indices.size(), value.dim_size(0)));
    }
    std::vector<Tensor> elements;
    elements.reserve(indices.size());
    for (size_t i = 0; i < indices.size(); ++i) {
      ASSIGN_OR_RETURN(Tensor row, CopyRows(ctx, value, static_cast<int64_t>(i), 1, true));
      elements.push_back(std::move(row));
    }
    RETURN_IF_ERROR(array->Write(ctx, indices, elements));
    return ForwardFlow(ctx, 3, 0);
  }
};

// TensorArrayConcatV3: every element joined along dimension 0, and each
// element's length there.
class TensorArrayConcatOp final : public OpKernel {
 public:
  TensorArrayConcatOp(const OpKernelConstruction& c, PartialTensorShape except0)
      : OpKernel(c), except0_(std::move(except0)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(PartialTensorShape shape, GetShapeAttr(c.def(), "element_shape_except0"));
    return std::unique_ptr<OpKernel>(std::make_unique<TensorArrayConcatOp>(c, std::move(shape)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, LookupArray(ctx));
    RETURN_IF_ERROR(CheckDtype(ctx, *array));
    ASSIGN_OR_RETURN(std::vector<Tensor> values, array->ReadAll(ctx));
    ASSIGN_OR_RETURN(Tensor * lengths,
                     ctx.AllocateOutput(1, TensorShape({static_cast<int64_t>(values.size())})));
    if (values.empty()) {
      absl::StatusOr<TensorShape> except0 = except0_.AsTensorShape();
      if (!except0.ok()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "TensorArray %s has size zero, but element_shape_except0 %s is not fully defined. "
            "Currently only static shapes are supported when concatenating zero-size "
            "TensorArrays.",
            array->label(), except0_.DebugString()));
      }
      TensorShape out({0});
      for (int64_t d : except0->dim_sizes()) out.AddDim(d);
      return ctx.AllocateOutput(0, out).status();
    }
    TensorShape except0;
    int64_t rows = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].dims() < 1) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "TensorArray %s: Concat saw a scalar shape at index %d but requires at least "
            "vectors. Did you mean to call pack?",
            array->label(), i));
      }
      TensorShape shape = values[i].shape();
      shape.RemoveDim(0);
      if (i == 0) {
        except0 = shape;
      } else if (!(shape == except0)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "TensorArray %s has inconsistent shapes. Index 0 has (excepting dimension 0) "
            "shape: %s but index %d has (excepting dimension 0) shape: %s",
            array->label(), except0.DebugString(), i, shape.DebugString()));
      }
      lengths->data<int64_t>()[i] = values[i].dim_size(0);
      rows += values[i].dim_size(0);  // Each fits in memory, so the sum fits int64.
    }
    if (!except0_.IsCompatibleWith(except0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "TensorArray %s: element_shape_except0 %s does not match the elements' %s",
          array->label(), except0_.DebugString(), except0.DebugString()));
    }
    std::vector<int64_t> dims = {rows};
    dims.insert(dims.end(), except0.dim_sizes().begin(), except0.dim_sizes().end());
    ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Create(dims));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    int64_t at = 0;
    for (const Tensor& value : values) {
      CopyTensorElements(value, 0, *out, at, value.NumElements());
      at += value.NumElements();
    }
    return absl::OkStatus();
  }

 private:
  const PartialTensorShape except0_;
};

// TensorArraySplitV3: `value` cut along dimension 0 into pieces of
// `lengths`, piece i becoming element i.
class TensorArraySplitOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, LookupArray(ctx));
    const Tensor& value = ctx.input(1);
    const Tensor& lengths = ctx.input(2);
    if (value.dims() < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: Expected value to be at least a vector, but received shape: %s",
                          op(), value.shape().DebugString()));
    }
    if (lengths.dtype() != DT_INT64 || lengths.dims() != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: Expected lengths to be an int64 vector, got %s", op(), lengths.DebugString()));
    }
    const int64_t n = lengths.NumElements();
    if (n > TensorArray::kMaxSize) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %d lengths, more than a TensorArray may hold (%d)", op(), n, TensorArray::kMaxSize));
    }
    const int64_t* length = lengths.data<int64_t>();
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (length[i] < 0 || length[i] > value.dim_size(0) - sum) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: Expected sum of lengths to be equal to values.shape[0], but length %d is %d with "
            "%d rows left of value's shape %s",
            op(), i, length[i], value.dim_size(0) - sum, value.shape().DebugString()));
      }
      sum += length[i];
    }
    if (sum != value.dim_size(0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: Expected sum of lengths to be equal to values.shape[0], but sum of lengths is %d "
          "and value's shape is: %s",
          op(), sum, value.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(int32_t size, array->Size());
    if (!array->dynamic_size() && size != n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "TensorArray %s's size is not equal to the size of lengths (%d vs. %d), and the "
          "TensorArray is not marked as dynamically resizeable",
          array->label(), size, n));
    }
    std::vector<int32_t> indices;
    std::vector<Tensor> elements;
    int64_t start = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(Tensor piece, CopyRows(ctx, value, start, length[i], false));
      indices.push_back(static_cast<int32_t>(i));
      elements.push_back(std::move(piece));
      start += length[i];
    }
    RETURN_IF_ERROR(array->Write(ctx, indices, elements));
    return ForwardFlow(ctx, 3, 0);
  }
};

class TensorArraySizeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, LookupArray(ctx));
    ASSIGN_OR_RETURN(int32_t size, array->Size());
    ctx.set_output(0, Tensor::Scalar<int32_t>(size));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

// TensorArrayCloseV3: releases the elements and forgets the array, so that
// a later use of the handle is NOT_FOUND.
class TensorArrayCloseOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, LookupArray(ctx));
    ASSIGN_OR_RETURN(const ResourceHandleProto* handle, StepResourceHandle(ctx, 0));
    ASSIGN_OR_RETURN(ResourceMgr * resources, StepResourceMgr(ctx));
    array->Close();
    // A concurrent close may have deleted it first: closed either way.
    static_cast<void>(resources->Delete(handle->container(), handle->name()));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterCpuTensorArrayKernels(KernelRegistry& r) {
  r.Register(KernelDef("TensorArrayV3").Device(kDeviceCpu), TensorArrayOp::Create);
  r.Register(KernelDef("TensorArrayGradV3").Device(kDeviceCpu), TensorArrayGradOp<false>::Create);
  r.Register(KernelDef("TensorArrayGradWithShape").Device(kDeviceCpu),
             TensorArrayGradOp<true>::Create);
  r.Register(KernelDef("TensorArrayWriteV3").Device(kDeviceCpu), MakeKernel<TensorArrayWriteOp>);
  r.Register(KernelDef("TensorArrayReadV3").Device(kDeviceCpu), MakeKernel<TensorArrayReadOp>);
  r.Register(KernelDef("TensorArrayGatherV3").Device(kDeviceCpu), TensorArrayGatherOp::Create);
  r.Register(KernelDef("TensorArrayScatterV3").Device(kDeviceCpu),
             MakeKernel<TensorArrayScatterOp>);
  r.Register(KernelDef("TensorArrayConcatV3").Device(kDeviceCpu), TensorArrayConcatOp::Create);
  r.Register(KernelDef("TensorArraySplitV3").Device(kDeviceCpu), MakeKernel<TensorArraySplitOp>);
  r.Register(KernelDef("TensorArraySizeV3").Device(kDeviceCpu), MakeKernel<TensorArraySizeOp>);
  r.Register(KernelDef("TensorArrayCloseV3").Device(kDeviceCpu), MakeKernel<TensorArrayCloseOp>);
}

}  // namespace rill
