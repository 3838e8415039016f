#include "kernels/cpu/list_kernel_util.h"

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"

namespace rill::list_kernels {

absl::Status NodeError(const KernelContext& ctx, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s (%s): %s", ctx.node().name(), ctx.node().op(), why));
}

absl::StatusOr<const TensorList*> ReadList(const KernelContext& ctx, int i, DataType dtype) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DT_VARIANT || t.dims() != 0) {
    return NodeError(ctx, absl::StrFormat("input %d must be a scalar variant (a list), got a %s of "
                                          "shape %s",
                                          i, DataTypeString(t.dtype()), t.shape().DebugString()));
  }
  const Variant& v = t.scalar<Variant>();
  const TensorList* list = v.get<TensorList>();
  if (list == nullptr) {
    return NodeError(ctx, absl::StrFormat("input %d holds %s, not a TensorList", i,
                                          v.empty() ? "an empty variant" : v.TypeName()));
  }
  if (dtype != DT_INVALID && list->element_dtype != dtype) {
    return NodeError(ctx,
                     absl::StrFormat("the list holds %s elements but element_dtype is %s",
                                     DataTypeString(list->element_dtype), DataTypeString(dtype)));
  }
  return list;
}

absl::StatusOr<PartialTensorShape> ReadElementShape(const KernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DT_INT32 && t.dtype() != DT_INT64) {
    return NodeError(ctx, absl::StrFormat("element_shape must be int32 or int64, got %s",
                                          DataTypeString(t.dtype())));
  }
  const auto at = [&](int64_t k) {
    return t.dtype() == DT_INT32 ? int64_t{t.data<int32_t>()[k]} : t.data<int64_t>()[k];
  };
  if (t.dims() == 0) {
    if (at(0) != -1) {
      return NodeError(
          ctx, absl::StrFormat("a scalar element_shape must be -1 (unknown), got %d", at(0)));
    }
    return PartialTensorShape();
  }
  if (t.dims() != 1) {
    return NodeError(ctx, absl::StrFormat("element_shape must be a vector or the scalar -1, got "
                                          "shape %s",
                                          t.shape().DebugString()));
  }
  std::vector<int64_t> dims(static_cast<size_t>(t.NumElements()));
  for (size_t k = 0; k < dims.size(); ++k) dims[k] = at(static_cast<int64_t>(k));
  absl::StatusOr<PartialTensorShape> shape = PartialTensorShape::Create(dims);
  if (!shape.ok()) return NodeError(ctx, "element_shape: " + std::string(shape.status().message()));
  return shape;
}

absl::StatusOr<int32_t> ReadScalarInt(const KernelContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DT_INT32 || t.dims() != 0) {
    return NodeError(ctx, absl::StrFormat("%s must be an int32 scalar, got a %s of shape %s", what,
                                          DataTypeString(t.dtype()), t.shape().DebugString()));
  }
  return t.scalar<int32_t>();
}

absl::Status CheckItem(const KernelContext& ctx, const TensorList& list, const Tensor& item) {
  if (item.dtype() != list.element_dtype) {
    return NodeError(
        ctx, absl::StrFormat("an element of type %s for a list of %s", DataTypeString(item.dtype()),
                             DataTypeString(list.element_dtype)));
  }
  if (!list.element_shape.IsCompatibleWith(item.shape())) {
    return NodeError(ctx,
                     absl::StrFormat("an element of shape %s for a list of elements of shape %s",
                                     item.shape().DebugString(), list.element_shape.DebugString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorShape> ShapeOfUnset(const KernelContext& ctx, const TensorList& list,
                                         const PartialTensorShape& requested) {
  absl::StatusOr<PartialTensorShape> merged = list.element_shape.MergeWith(requested);
  if (!merged.ok()) {
    return NodeError(ctx,
                     absl::StrFormat("element_shape %s does not match the list's %s",
                                     requested.DebugString(), list.element_shape.DebugString()));
  }
  if (!merged->IsFullyDefined()) {
    return NodeError(ctx, absl::StrFormat("an element that was never set reads as zeros, but its "
                                          "shape %s is not fully defined",
                                          merged->DebugString()));
  }
  return merged->AsTensorShape();
}

absl::StatusOr<Tensor> Zeros(const KernelContext& ctx, DataType dtype, const TensorShape& shape) {
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(ctx.allocator(), dtype, shape));
  if (dtype != DT_STRING && dtype != DT_VARIANT && dtype != DT_RESOURCE) {
    std::memset(t.raw_data(), 0, t.TotalBytes());
  }
  return t;
}

absl::StatusOr<Tensor> ItemOrZeros(const KernelContext& ctx, const TensorList& list, int64_t index,
                                   const PartialTensorShape& requested) {
  const Tensor& item = list.tensors[static_cast<size_t>(index)];
  if (item.IsInitialized()) {
    if (!requested.IsCompatibleWith(item.shape())) {
      return NodeError(ctx,
                       absl::StrFormat("element %d has shape %s, not the element_shape %s", index,
                                       item.shape().DebugString(), requested.DebugString()));
    }
    return item;
  }
  ASSIGN_OR_RETURN(const TensorShape shape, ShapeOfUnset(ctx, list, requested));
  return Zeros(ctx, list.element_dtype, shape);
}

absl::Status SetListOutput(KernelContext& ctx, int i, TensorList list) {
  ASSIGN_OR_RETURN(Tensor out, ctx.AllocateTemp(DT_VARIANT, TensorShape({})));
  out.scalar<Variant>() = Variant(std::make_shared<const TensorList>(std::move(list)));
  ctx.set_output(i, std::move(out));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ZerosLikeLists(const KernelContext& ctx, const Tensor& lists) {
  ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(ctx.allocator(), DT_VARIANT, lists.shape()));
  for (int64_t i = 0; i < lists.NumElements(); ++i) {
    const TensorList* in = lists.data<Variant>()[i].get<TensorList>();
    if (in == nullptr) return NodeError(ctx, absl::StrFormat("element %d is not a list", i));
    TensorList list = *in;
    for (Tensor& t : list.tensors) {
      if (t.IsInitialized()) {
        ASSIGN_OR_RETURN(t, Zeros(ctx, t.dtype(), t.shape()));
      }
    }
    out.data<Variant>()[i] = Variant(std::make_shared<const TensorList>(std::move(list)));
  }
  return out;
}

absl::StatusOr<DataType> ElementDtype(const OpKernelConstruction& c) {
  if (!c.def().attr().contains("element_dtype")) return DT_INVALID;
  return GetTypeAttr(c.def(), "element_dtype");
}

}  // namespace rill::list_kernels
