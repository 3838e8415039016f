// CPU kernels of the TensorList ops that move many elements at once:
// stacking or gathering them into one tensor, scattering or splitting a
// tensor into a list, and concatenating elements on their first dimension.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor_list.h"
#include "kernels/cpu/element_copy.h"
#include "kernels/cpu/list_kernel_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using namespace list_kernels;  // NOLINT(build/namespaces)

// The elements at `indices` stacked into one [n] + element tensor; unset
// ones read as zeros. All must share a shape.
absl::StatusOr<Tensor> StackElements(KernelContext& ctx, const TensorList& list,
                                     const std::vector<int64_t>& indices,
                                     const PartialTensorShape& requested) {
  PartialTensorShape shape = requested;
  absl::StatusOr<PartialTensorShape> merged = shape.MergeWith(list.element_shape);
  if (!merged.ok()) {
    return NodeError(ctx,
                     absl::StrFormat("element_shape %s does not match the list's %s",
                                     requested.DebugString(), list.element_shape.DebugString()));
  }
  shape = *std::move(merged);
  std::vector<Tensor> items(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    const int64_t i = indices[k];
    if (i < 0 || static_cast<size_t>(i) >= list.tensors.size()) {
      return NodeError(ctx, absl::StrFormat("index %d is out of range for a list of %d elements", i,
                                            list.tensors.size()));
    }
    items[k] = list.tensors[static_cast<size_t>(i)];
    if (!items[k].IsInitialized()) continue;
    merged = shape.MergeWith(items[k].shape());
    if (!merged.ok()) {
      return NodeError(ctx, absl::StrFormat("element %d has shape %s, unlike the others' %s", i,
                                            items[k].shape().DebugString(), shape.DebugString()));
    }
    shape = *std::move(merged);
  }
  if (!shape.IsFullyDefined()) {
    return NodeError(ctx, absl::StrFormat("the elements' shape %s is not fully defined (no element "
                                          "was set, and element_shape does not say)",
                                          shape.DebugString()));
  }
  ASSIGN_OR_RETURN(const TensorShape element, shape.AsTensorShape());
  TensorShape out_shape({static_cast<int64_t>(indices.size())});
  for (int64_t d : element.dim_sizes()) out_shape.AddDim(d);
  ASSIGN_OR_RETURN(Tensor out, Zeros(ctx, list.element_dtype, out_shape));
  const int64_t per = element.num_elements();
  for (size_t k = 0; k < items.size(); ++k) {
    if (items[k].IsInitialized()) {
      CopyTensorElements(items[k], 0, out, static_cast<int64_t>(k) * per, per);
    }
  }
  return out;
}

// Row `r` of `tensor` as its own tensor.
absl::StatusOr<Tensor> Row(const Tensor& tensor, int64_t r) {
  TensorShape row = tensor.shape();
  row.RemoveDim(0);
  ASSIGN_OR_RETURN(Tensor view, tensor.Slice(r, r + 1).Reshaped(row));
  return view.DeepCopy();
}

absl::StatusOr<std::vector<int64_t>> ReadIndices(const KernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DT_INT32 || t.dims() != 1) {
    return NodeError(ctx, absl::StrFormat("indices must be an int32 vector, got a %s of shape %s",
                                          DataTypeString(t.dtype()), t.shape().DebugString()));
  }
  return std::vector<int64_t>(t.data<int32_t>(), t.data<int32_t>() + t.NumElements());
}

class StackOp final : public ListKernel {
 public:
  StackOp(const OpKernelConstruction& c, DataType dtype) : ListKernel(c, dtype) {
    const auto it = c.def().attr().find("num_elements");
    if (it != c.def().attr().end()) num_elements_ = it->second.i();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* list, ReadList(ctx, 0, dtype_));
    ASSIGN_OR_RETURN(const PartialTensorShape shape, ReadElementShape(ctx, 1));
    const auto n = static_cast<int64_t>(list->tensors.size());
    if (num_elements_ != -1 && num_elements_ != n) {
      return NodeError(
          ctx, absl::StrFormat("the list has %d elements, not num_elements %d", n, num_elements_));
    }
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
    ASSIGN_OR_RETURN(Tensor out, StackElements(ctx, *list, all, shape));
    ctx.set_output(0, std::move(out));
    return absl::OkStatus();
  }

 private:
  int64_t num_elements_ = -1;
};

class GatherOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* list, ReadList(ctx, 0, dtype_));
    ASSIGN_OR_RETURN(const std::vector<int64_t> indices, ReadIndices(ctx, 1));
    ASSIGN_OR_RETURN(const PartialTensorShape shape, ReadElementShape(ctx, 2));
    ASSIGN_OR_RETURN(Tensor out, StackElements(ctx, *list, indices, shape));
    ctx.set_output(0, std::move(out));
    return absl::OkStatus();
  }
};

// Writes row k of `tensor` to element indices[k] of `list`, growing it to
// hold the largest index.
absl::Status ScatterRows(const KernelContext& ctx, const Tensor& tensor,
                         const std::vector<int64_t>& indices, TensorList* list) {
  if (tensor.dims() < 1 || tensor.dim_size(0) != static_cast<int64_t>(indices.size())) {
    return NodeError(ctx, absl::StrFormat("tensor of shape %s needs one row per index (%d indices)",
                                          tensor.shape().DebugString(), indices.size()));
  }
  if (tensor.dtype() != list->element_dtype) {
    return NodeError(ctx,
                     absl::StrFormat("a %s tensor for a list of %s", DataTypeString(tensor.dtype()),
                                     DataTypeString(list->element_dtype)));
  }
  for (size_t k = 0; k < indices.size(); ++k) {
    const int64_t i = indices[k];
    if (i < 0) return NodeError(ctx, absl::StrFormat("index %d is negative", i));
    if (static_cast<size_t>(i) >= list->tensors.size()) {
      list->tensors.resize(static_cast<size_t>(i) + 1);
    }
    ASSIGN_OR_RETURN(Tensor row, Row(tensor, static_cast<int64_t>(k)));
    if (!list->element_shape.IsCompatibleWith(row.shape())) {
      return NodeError(
          ctx, absl::StrFormat("rows of shape %s do not match element_shape %s",
                               row.shape().DebugString(), list->element_shape.DebugString()));
    }
    list->tensors[static_cast<size_t>(i)] = std::move(row);
  }
  return absl::OkStatus();
}

// TensorListScatter(tensor, indices, element_shape) and ScatterV2 (with
// num_elements, -1: as many as the largest index needs).
template <bool kV2>
class ScatterOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    TensorList list;
    list.element_dtype = dtype_;
    ASSIGN_OR_RETURN(const std::vector<int64_t> indices, ReadIndices(ctx, 1));
    ASSIGN_OR_RETURN(list.element_shape, ReadElementShape(ctx, 2));
    if (kV2) {
      ASSIGN_OR_RETURN(const int32_t n, ReadScalarInt(ctx, 3, "num_elements"));
      const int64_t needed =
          indices.empty() ? 0 : *std::max_element(indices.begin(), indices.end()) + 1;
      if (n != -1 && n < needed) {
        return NodeError(
            ctx, absl::StrFormat("num_elements %d is too small for index %d", n, needed - 1));
      }
      if (n > 0) list.tensors.resize(static_cast<size_t>(n));
    }
    RETURN_IF_ERROR(ScatterRows(ctx, ctx.input(0), indices, &list));
    return SetListOutput(ctx, 0, std::move(list));
  }
};

class ScatterIntoExistingOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* in, ReadList(ctx, 0, dtype_));
    ASSIGN_OR_RETURN(const std::vector<int64_t> indices, ReadIndices(ctx, 2));
    TensorList list = *in;
    RETURN_IF_ERROR(ScatterRows(ctx, ctx.input(1), indices, &list));
    return SetListOutput(ctx, 0, std::move(list));
  }
};

// TensorListConcat (element_shape attr) and TensorListConcatV2
// (element_shape and leading_dims inputs): the elements joined on their
// first dimension, and that dimension of each. An unset element takes its
// leading dimension from leading_dims and the rest from element_shape.
template <bool kV2>
class ConcatOp final : public ListKernel {
 public:
  ConcatOp(const OpKernelConstruction& c, DataType dtype) : ListKernel(c, dtype) {
    if (!kV2) {
      absl::StatusOr<PartialTensorShape> shape = GetShapeAttr(c.def(), "element_shape");
      if (shape.ok()) attr_shape_ = *std::move(shape);
    }
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* list, ReadList(ctx, 0, dtype_));
    PartialTensorShape shape = attr_shape_;
    std::vector<int64_t> leading;
    if (kV2) {
      ASSIGN_OR_RETURN(shape, ReadElementShape(ctx, 1));
      const Tensor& dims = ctx.input(2);
      if (dims.dtype() != DT_INT64 || dims.dims() != 1) {
        return NodeError(ctx, "leading_dims must be an int64 vector");
      }
      leading.assign(dims.data<int64_t>(), dims.data<int64_t>() + dims.NumElements());
    }
    absl::StatusOr<PartialTensorShape> merged = shape.MergeWith(list->element_shape);
    if (!merged.ok()) {
      return NodeError(
          ctx, absl::StrFormat("element_shape %s does not match the list's %s", shape.DebugString(),
                               list->element_shape.DebugString()));
    }
    shape = *std::move(merged);
    const size_t n = list->tensors.size();
    std::vector<Tensor> items(n);
    TensorShape rest;  // The trailing dimensions every element shares.
    bool have_rest = false;
    for (size_t i = 0; i < n; ++i) {
      Tensor item = list->tensors[i];
      if (!item.IsInitialized()) {
        if (i >= leading.size() || shape.unknown_rank() || shape.dims() < 1) {
          return NodeError(ctx,
                           absl::StrFormat("element %d was never set, and neither leading_dims "
                                           "nor element_shape give its shape",
                                           i));
        }
        PartialTensorShape p({leading[i]});
        for (int d = 1; d < shape.dims(); ++d) p.AddDim(shape.dim_size(d));
        absl::StatusOr<TensorShape> full = p.AsTensorShape();
        if (!full.ok()) {
          return NodeError(ctx, absl::StrFormat("element %d was never set and its shape %s is not "
                                                "fully defined",
                                                i, p.DebugString()));
        }
        ASSIGN_OR_RETURN(item, Zeros(ctx, dtype_, *full));
      }
      if (item.dims() < 1) {
        return NodeError(
            ctx, absl::StrFormat("element %d is a scalar: concatenation needs rank >= 1", i));
      }
      TensorShape tail = item.shape();
      tail.RemoveDim(0);
      if (have_rest && !(tail == rest)) {
        return NodeError(ctx, absl::StrFormat("element %d has shape %s, unlike the others' [?,%s]",
                                              i, item.shape().DebugString(), rest.DebugString()));
      }
      rest = tail;
      have_rest = true;
      items[i] = std::move(item);
    }
    if (!have_rest) {
      if (shape.unknown_rank() || shape.dims() < 1) {
        return NodeError(ctx, "an empty list whose element_shape is unknown has no concatenation");
      }
      PartialTensorShape tail = PartialTensorShape::UnknownOfRank(0);
      for (int d = 1; d < shape.dims(); ++d) tail.AddDim(shape.dim_size(d));
      absl::StatusOr<TensorShape> full = tail.AsTensorShape();
      if (!full.ok()) return NodeError(ctx, "an empty list's element_shape is not fully defined");
      rest = *full;
    }
    int64_t rows = 0;
    for (const Tensor& t : items) rows += t.dim_size(0);
    TensorShape out_shape({rows});
    for (int64_t d : rest.dim_sizes()) out_shape.AddDim(d);
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, out_shape));
    ASSIGN_OR_RETURN(Tensor * lengths,
                     ctx.AllocateOutput(1, TensorShape({static_cast<int64_t>(n)})));
    int64_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      CopyTensorElements(items[i], 0, *out, at, items[i].NumElements());
      at += items[i].NumElements();
      lengths->data<int64_t>()[i] = items[i].dim_size(0);
    }
    return absl::OkStatus();
  }

 private:
  PartialTensorShape attr_shape_;
};

// TensorListSplit(tensor, element_shape, lengths): consecutive row blocks.
class SplitOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& tensor = ctx.input(0);
    TensorList list;
    list.element_dtype = dtype_;
    ASSIGN_OR_RETURN(list.element_shape, ReadElementShape(ctx, 1));
    const Tensor& lengths = ctx.input(2);
    if (tensor.dims() < 1) return NodeError(ctx, "tensor must have rank >= 1");
    if (lengths.dtype() != DT_INT64 || lengths.dims() != 1) {
      return NodeError(ctx, "lengths must be an int64 vector");
    }
    int64_t start = 0;
    for (int64_t k = 0; k < lengths.NumElements(); ++k) {
      const int64_t len = lengths.data<int64_t>()[k];
      if (len < 0 || len > tensor.dim_size(0) - start) {
        return NodeError(ctx, absl::StrFormat("length %d at %d runs past the %d rows", len, k,
                                              tensor.dim_size(0)));
      }
      Tensor block = tensor.Slice(start, start + len).DeepCopy();
      if (!list.element_shape.IsCompatibleWith(block.shape())) {
        return NodeError(
            ctx, absl::StrFormat("a block of shape %s does not match element_shape %s",
                                 block.shape().DebugString(), list.element_shape.DebugString()));
      }
      list.tensors.push_back(std::move(block));
      start += len;
    }
    if (start != tensor.dim_size(0)) {
      return NodeError(ctx, absl::StrFormat("lengths sum to %d but the tensor has %d rows", start,
                                            tensor.dim_size(0)));
    }
    return SetListOutput(ctx, 0, std::move(list));
  }
};

}  // namespace

void RegisterCpuListGatherKernels(KernelRegistry& r) {
  r.Register(KernelDef("TensorListStack").Device(kDeviceCpu), MakeListKernel<StackOp>);
  r.Register(KernelDef("TensorListGather").Device(kDeviceCpu), MakeListKernel<GatherOp>);
  r.Register(KernelDef("TensorListScatter").Device(kDeviceCpu), MakeListKernel<ScatterOp<false>>);
  r.Register(KernelDef("TensorListScatterV2").Device(kDeviceCpu), MakeListKernel<ScatterOp<true>>);
  r.Register(KernelDef("TensorListScatterIntoExistingList").Device(kDeviceCpu),
             MakeListKernel<ScatterIntoExistingOp>);
  r.Register(KernelDef("TensorListConcat").Device(kDeviceCpu), MakeListKernel<ConcatOp<false>>);
  r.Register(KernelDef("TensorListConcatV2").Device(kDeviceCpu), MakeListKernel<ConcatOp<true>>);
  r.Register(KernelDef("TensorListSplit").Device(kDeviceCpu), MakeListKernel<SplitOp>);
}

}  // namespace rill
