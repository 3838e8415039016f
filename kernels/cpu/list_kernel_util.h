// What the TensorList kernels share: reading a list, an element shape or an
// index from their inputs, checking an element against its list, and
// outputting a new list.
#ifndef RILL_KERNELS_CPU_LIST_KERNEL_UTIL_H_
#define RILL_KERNELS_CPU_LIST_KERNEL_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "graph/tensor_list.h"
#include "graph/tensor_shape.h"
#include "kernels/framework/op_kernel.h"

namespace rill::list_kernels {

// Input `i`, a scalar variant holding a TensorList whose element dtype is
// `dtype` (DT_INVALID: any).
absl::StatusOr<const TensorList*> ReadList(const KernelContext& ctx, int i,
                                           DataType dtype = DT_INVALID);

// An element_shape input: an int32/int64 vector (-1 for an unknown
// dimension), or the scalar -1 for an unknown shape.
absl::StatusOr<PartialTensorShape> ReadElementShape(const KernelContext& ctx, int i);

// A scalar int32 input.
absl::StatusOr<int32_t> ReadScalarInt(const KernelContext& ctx, int i, const char* what);

// `item` may go into `list`: its dtype, and a shape the list's element
// shape allows.
absl::Status CheckItem(const KernelContext& ctx, const TensorList& list, const Tensor& item);

// The shape an unset element reads as: the list's element shape merged
// with `requested`, which must leave it fully defined.
absl::StatusOr<TensorShape> ShapeOfUnset(const KernelContext& ctx, const TensorList& list,
                                         const PartialTensorShape& requested);

// A zero-filled tensor (empty strings for DT_STRING).
absl::StatusOr<Tensor> Zeros(const KernelContext& ctx, DataType dtype, const TensorShape& shape);

// Element `index` of `list`, or zeros of ShapeOfUnset when it is not set.
absl::StatusOr<Tensor> ItemOrZeros(const KernelContext& ctx, const TensorList& list, int64_t index,
                                   const PartialTensorShape& requested);

// Sets output `i` to a scalar variant holding `list`.
absl::Status SetListOutput(KernelContext& ctx, int i, TensorList list);

// ZerosLike of a variant tensor of lists: each list of the same length
// and element shape, its set elements zeros (as TensorFlow's).
absl::StatusOr<Tensor> ZerosLikeLists(const KernelContext& ctx, const Tensor& lists);

// An INVALID_ARGUMENT naming the node and its op.
absl::Status NodeError(const KernelContext& ctx, const std::string& why);

// A kernel of a list op: cheap, and its node's element_dtype (DT_INVALID
// for an op without one).
class ListKernel : public OpKernel {
 public:
  ListKernel(const OpKernelConstruction& c, DataType dtype) : OpKernel(c), dtype_(dtype) {}
  bool IsExpensive() const override { return false; }

 protected:
  const DataType dtype_;
};

// The element_dtype attr of the node, DT_INVALID when it has none.
absl::StatusOr<DataType> ElementDtype(const OpKernelConstruction& c);

// The factory of a ListKernel K.
template <typename K>
absl::StatusOr<std::unique_ptr<OpKernel>> MakeListKernel(const OpKernelConstruction& c) {
  absl::StatusOr<DataType> dtype = ElementDtype(c);
  if (!dtype.ok()) return dtype.status();
  return std::unique_ptr<OpKernel>(std::make_unique<K>(c, *dtype));
}

}  // namespace rill::list_kernels

#endif  // RILL_KERNELS_CPU_LIST_KERNEL_UTIL_H_
