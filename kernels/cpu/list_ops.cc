// CPU kernels of the TensorList ops that make a list, read or change one
// element, or its length. Lists are immutable values: each change makes a
// new list, which shares the element tensors that did not change.
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor_list.h"
#include "kernels/cpu/list_kernel_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using namespace list_kernels;  // NOLINT(build/namespaces)

// EmptyTensorList(element_shape, max_num_elements) and
// TensorListReserve(element_shape, num_elements).
template <bool kReserve>
class NewListOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    TensorList list;
    list.element_dtype = dtype_;
    ASSIGN_OR_RETURN(list.element_shape, ReadElementShape(ctx, 0));
    ASSIGN_OR_RETURN(const int32_t n,
                     ReadScalarInt(ctx, 1, kReserve ? "num_elements" : "max_num_elements"));
    if (kReserve) {
      if (n < 0) return NodeError(ctx, absl::StrFormat("num_elements must be >= 0, got %d", n));
      list.tensors.resize(static_cast<size_t>(n));
    } else {
      if (n < -1)
        return NodeError(ctx, absl::StrFormat("max_num_elements must be >= -1, got %d", n));
      list.max_num_elements = n;
    }
    return SetListOutput(ctx, 0, std::move(list));
  }
};

// TensorListFromTensor(tensor, element_shape): one element per row.
class FromTensorOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& tensor = ctx.input(0);
    if (tensor.dims() < 1) {
      return NodeError(ctx, absl::StrFormat("tensor must have rank >= 1, got shape %s",
                                            tensor.shape().DebugString()));
    }
    TensorList list;
    list.element_dtype = dtype_;
    ASSIGN_OR_RETURN(list.element_shape, ReadElementShape(ctx, 1));
    TensorShape row = tensor.shape();
    row.RemoveDim(0);
    if (!list.element_shape.IsCompatibleWith(row)) {
      return NodeError(ctx, absl::StrFormat("rows of shape %s do not match element_shape %s",
                                            row.DebugString(), list.element_shape.DebugString()));
    }
    // Copies, not views: an element is aligned and owns its buffer.
    const int64_t rows = tensor.dim_size(0);
    list.tensors.reserve(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) {
      ASSIGN_OR_RETURN(Tensor element, tensor.Slice(i, i + 1).Reshaped(row));
      list.tensors.push_back(element.DeepCopy());
    }
    return SetListOutput(ctx, 0, std::move(list));
  }
};

class LengthOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* list, ReadList(ctx, 0));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape({})));
    out->scalar<int32_t>() = static_cast<int32_t>(list->tensors.size());
    return absl::OkStatus();
  }
};

// The list's element shape: a vector (-1 for unknown dimensions), or the
// scalar -1 when even the rank is unknown.
class ElementShapeOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* list, ReadList(ctx, 0));
    const PartialTensorShape& shape = list->element_shape;
    const int rank = shape.unknown_rank() ? 0 : shape.dims();
    ASSIGN_OR_RETURN(
        Tensor * out,
        ctx.AllocateOutput(0, shape.unknown_rank() ? TensorShape({}) : TensorShape({rank})));
    const bool wide = ctx.output_type(0) == DT_INT64;
    for (int d = 0; d < (shape.unknown_rank() ? 1 : rank); ++d) {
      const int64_t v = shape.unknown_rank() ? -1 : shape.dim_size(d);
      if (wide) {
        out->data<int64_t>()[d] = v;
      } else {
        out->data<int32_t>()[d] = static_cast<int32_t>(v);
      }
    }
    return absl::OkStatus();
  }
};

class GetItemOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* list, ReadList(ctx, 0, dtype_));
    ASSIGN_OR_RETURN(const int32_t index, ReadScalarInt(ctx, 1, "index"));
    ASSIGN_OR_RETURN(const PartialTensorShape shape, ReadElementShape(ctx, 2));
    if (index < 0 || static_cast<size_t>(index) >= list->tensors.size()) {
      return NodeError(ctx, absl::StrFormat("index %d is out of range for a list of %d elements",
                                            index, list->tensors.size()));
    }
    ASSIGN_OR_RETURN(Tensor item, ItemOrZeros(ctx, *list, index, shape));
    ctx.set_output(0, std::move(item));
    return absl::OkStatus();
  }
};

class SetItemOp final : public ListKernel {
 public:
  SetItemOp(const OpKernelConstruction& c, DataType dtype) : ListKernel(c, dtype) {
    const auto it = c.def().attr().find("resize_if_index_out_of_bounds");
    resize_ = it != c.def().attr().end() && it->second.b();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* in, ReadList(ctx, 0, dtype_));
    ASSIGN_OR_RETURN(const int32_t index, ReadScalarInt(ctx, 1, "index"));
    const Tensor& item = ctx.input(2);
    RETURN_IF_ERROR(CheckItem(ctx, *in, item));
    const bool beyond = index >= 0 && static_cast<size_t>(index) >= in->tensors.size();
    if (index < 0 || (beyond && !resize_)) {
      return NodeError(ctx, absl::StrFormat("index %d is out of range for a list of %d elements",
                                            index, in->tensors.size()));
    }
    TensorList list = *in;
    if (beyond) list.tensors.resize(static_cast<size_t>(index) + 1);
    list.tensors[static_cast<size_t>(index)] = item;
    return SetListOutput(ctx, 0, std::move(list));
  }

 private:
  bool resize_ = false;
};

class PushBackOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* in, ReadList(ctx, 0, dtype_));
    const Tensor& item = ctx.input(1);
    RETURN_IF_ERROR(CheckItem(ctx, *in, item));
    if (in->max_num_elements != -1 &&
        static_cast<int64_t>(in->tensors.size()) >= in->max_num_elements) {
      return NodeError(ctx, absl::StrFormat("the list is full: it holds its max_num_elements (%d)",
                                            in->max_num_elements));
    }
    TensorList list = *in;
    list.tensors.push_back(item);
    return SetListOutput(ctx, 0, std::move(list));
  }
};

class PopBackOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* in, ReadList(ctx, 0, dtype_));
    ASSIGN_OR_RETURN(const PartialTensorShape shape, ReadElementShape(ctx, 1));
    if (in->tensors.empty()) return NodeError(ctx, "the list is empty: there is nothing to pop");
    ASSIGN_OR_RETURN(Tensor item,
                     ItemOrZeros(ctx, *in, static_cast<int64_t>(in->tensors.size()) - 1, shape));
    TensorList list = *in;
    list.tensors.pop_back();
    RETURN_IF_ERROR(SetListOutput(ctx, 0, std::move(list)));
    ctx.set_output(1, std::move(item));
    return absl::OkStatus();
  }
};

class ResizeOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* in, ReadList(ctx, 0));
    ASSIGN_OR_RETURN(const int32_t size, ReadScalarInt(ctx, 1, "size"));
    if (size < 0) return NodeError(ctx, absl::StrFormat("size must be >= 0, got %d", size));
    TensorList list = *in;
    list.tensors.resize(static_cast<size_t>(size));
    return SetListOutput(ctx, 0, std::move(list));
  }
};

// TensorListConcatLists(a, b): element by element, b's elements after a's.
class ConcatListsOp final : public ListKernel {
 public:
  using ListKernel::ListKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (!(a.shape() == b.shape())) {
      return NodeError(ctx, absl::StrFormat("input_a has shape %s but input_b %s",
                                            a.shape().DebugString(), b.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor out, ctx.AllocateTemp(DT_VARIANT, a.shape()));
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      const TensorList* x = a.data<Variant>()[i].get<TensorList>();
      const TensorList* y = b.data<Variant>()[i].get<TensorList>();
      if (x == nullptr || y == nullptr)
        return NodeError(ctx, absl::StrFormat("element %d is not a list", i));
      if (x->element_dtype != dtype_ || y->element_dtype != dtype_) {
        return NodeError(
            ctx, absl::StrFormat("element %d: lists of %s and %s, element_dtype %s", i,
                                 DataTypeString(x->element_dtype), DataTypeString(y->element_dtype),
                                 DataTypeString(dtype_)));
      }
      absl::StatusOr<PartialTensorShape> shape = x->element_shape.MergeWith(y->element_shape);
      if (!shape.ok()) {
        return NodeError(
            ctx, absl::StrFormat("element %d: element shapes %s and %s differ", i,
                                 x->element_shape.DebugString(), y->element_shape.DebugString()));
      }
      TensorList list = *x;
      list.element_shape = *std::move(shape);
      list.tensors.insert(list.tensors.end(), y->tensors.begin(), y->tensors.end());
      out.data<Variant>()[i] = Variant(std::make_shared<const TensorList>(std::move(list)));
    }
    ctx.set_output(0, std::move(out));
    return absl::OkStatus();
  }
};

// AddN of lists, as gradients sum them: element by element, an unset
// element counting as zeros.
class AddNListsOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const TensorList* first, ReadList(ctx, 0));
    TensorList sum = *first;
    for (int k = 1; k < ctx.num_inputs(); ++k) {
      ASSIGN_OR_RETURN(const TensorList* next, ReadList(ctx, k, sum.element_dtype));
      if (next->tensors.size() != sum.tensors.size()) {
        return absl::InvalidArgumentError(absl::StrFormat("%s (AddN): lists of %d and %d elements",
                                                          name(), sum.tensors.size(),
                                                          next->tensors.size()));
      }
      for (size_t i = 0; i < sum.tensors.size(); ++i) {
        const Tensor& b = next->tensors[i];
        if (!b.IsInitialized()) continue;
        Tensor& a = sum.tensors[i];
        if (!a.IsInitialized()) {
          a = b;
          continue;
        }
        ASSIGN_OR_RETURN(a, AddTensors(ctx, a, b));
      }
    }
    return SetListOutput(ctx, 0, std::move(sum));
  }

 private:
  absl::StatusOr<Tensor> AddTensors(const KernelContext& ctx, const Tensor& a,
                                    const Tensor& b) const {
    if (!(a.shape() == b.shape())) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s (AddN): list elements of shapes %s and %s", name(),
                          a.shape().DebugString(), b.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(ctx.allocator(), a.dtype(), a.shape()));
    return DispatchType(
        a.dtype(),
        [&]<typename T>() -> absl::StatusOr<Tensor> {
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            for (int64_t i = 0; i < a.NumElements(); ++i) {
              out.data<T>()[i] = a.data<T>()[i] + b.data<T>()[i];
            }
            return out;
          } else {
            return absl::InvalidArgumentError(absl::StrFormat(
                "%s (AddN): lists of %s cannot be added", name(), DataTypeString(a.dtype())));
          }
        },
        [&]() -> absl::StatusOr<Tensor> {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s (AddN): lists of %s cannot be added", name(), DataTypeString(a.dtype())));
        });
  }
};

}  // namespace

void RegisterCpuListKernels(KernelRegistry& r) {
  r.Register(KernelDef("EmptyTensorList").Device(kDeviceCpu), MakeListKernel<NewListOp<false>>);
  r.Register(KernelDef("TensorListReserve").Device(kDeviceCpu), MakeListKernel<NewListOp<true>>);
  r.Register(KernelDef("TensorListFromTensor").Device(kDeviceCpu), MakeListKernel<FromTensorOp>);
  r.Register(KernelDef("TensorListLength").Device(kDeviceCpu), MakeListKernel<LengthOp>);
  r.Register(KernelDef("TensorListElementShape").Device(kDeviceCpu),
             MakeListKernel<ElementShapeOp>);
  r.Register(KernelDef("TensorListGetItem").Device(kDeviceCpu), MakeListKernel<GetItemOp>);
  r.Register(KernelDef("TensorListSetItem").Device(kDeviceCpu), MakeListKernel<SetItemOp>);
  r.Register(KernelDef("TensorListPushBack").Device(kDeviceCpu), MakeListKernel<PushBackOp>);
  r.Register(KernelDef("TensorListPopBack").Device(kDeviceCpu), MakeListKernel<PopBackOp>);
  r.Register(KernelDef("TensorListResize").Device(kDeviceCpu), MakeListKernel<ResizeOp>);
  r.Register(KernelDef("TensorListConcatLists").Device(kDeviceCpu), MakeListKernel<ConcatListsOp>);
  r.Register(KernelDef("AddN").Device(kDeviceCpu).TypeConstraint("T", DT_VARIANT),
             MakeKernel<AddNListsOp>);
  RegisterCpuListGatherKernels(r);
}

}  // namespace rill
