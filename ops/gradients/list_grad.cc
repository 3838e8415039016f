// Gradients of the TensorList ops, after TensorFlow's list_ops.py: a list's
// gradient is a list of its elements' gradients, so reads and writes swap
// (GetItem and SetItem, Stack and FromTensor, Gather and Scatter, Concat
// and Split, PushBack and PopBack). Making a list, its length and its
// element shape have none, nor has joining two lists.
#include <vector>

#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

using grad::In;
using grad::Out;
using Outputs = std::vector<Output>;

// The shape of `t` without its first dimension: the element shape of the
// list `t` was stacked from.
Output RowShape(const Scope& s, const Output& t) {
  return ops::Slice(s, ops::Shape(s, t), grad::Ints(s, {1}), grad::Ints(s, {-1}));
}

// A list like `list` (its length and element shape) holding no gradients.
Output EmptyLike(const Scope& s, const Output& list, DataType dtype) {
  return ops::TensorListReserve(s, ops::TensorListElementShape(s, list, DT_INT32),
                                ops::TensorListLength(s, list), dtype);
}

absl::Status GetItemGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "element_dtype"));
  const Output dlist = ops::TensorListSetItem(s, EmptyLike(s, In(op, 0), dtype), In(op, 1), dy[0]);
  *dx = {dlist, Output(), Output()};
  return absl::OkStatus();
}

absl::Status SetItemGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "element_dtype"));
  const Output item = In(op, 2);
  Output dlist = ops::TensorListSetItem(s, dy[0], In(op, 1), ops::ZerosLike(s, item));
  const Output ditem = ops::TensorListGetItem(s, dy[0], In(op, 1), ops::Shape(s, item), dtype);
  ASSIGN_OR_RETURN(const bool resized, GetBoolAttr(grad::Def(op), "resize_if_index_out_of_bounds"));
  if (resized) dlist = ops::TensorListResize(s, dlist, ops::TensorListLength(s, In(op, 0)));
  *dx = {dlist, Output(), ditem};
  return absl::OkStatus();
}

absl::Status StackGrad(const Scope& s, const Operation&, const Outputs& dy, Outputs* dx) {
  *dx = {ops::TensorListFromTensor(s, dy[0], RowShape(s, dy[0])), Output()};
  return absl::OkStatus();
}

absl::Status FromTensorGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "element_dtype"));
  const Output t = In(op, 0);
  *dx = {ops::TensorListStack(s, dy[0], RowShape(s, t), dtype), Output()};
  return absl::OkStatus();
}

// The gathered rows' gradients summed into a dense [length] + element
// tensor (an index gathered twice gets both), then made a list.
// TensorFlow scatters them into the list instead, where a repeated index
// keeps only its last row's gradient.
absl::Status GatherGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output list = In(op, 0);
  const Output length = ops::Reshape(s, ops::TensorListLength(s, list), grad::Ints(s, {1}));
  const Output dense = ops::ScatterNd(s, ops::ExpandDims(s, In(op, 1), -1), dy[0],
                                      ops::ConcatV2(s, {length, RowShape(s, dy[0])}, 0));
  const Output dlist =
      ops::TensorListFromTensor(s, dense, ops::TensorListElementShape(s, list, DT_INT32));
  *dx = {dlist, Output(), Output()};
  return absl::OkStatus();
}

// Scatter(tensor, indices, element_shape[, num_elements]).
absl::Status ScatterGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "element_dtype"));
  const Output t = In(op, 0);
  dx->assign(op.node()->num_inputs(), Output());
  (*dx)[0] = ops::TensorListGather(s, dy[0], In(op, 1), RowShape(s, t), dtype);
  return absl::OkStatus();
}

absl::Status ScatterIntoExistingGrad(const Scope& s, const Operation& op, const Outputs& dy,
                                     Outputs* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "element_dtype"));
  const Output t = In(op, 1);
  const Output indices = In(op, 2);
  const Output dt = ops::TensorListGather(s, dy[0], indices, RowShape(s, t), dtype);
  const Output dlist =
      ops::TensorListScatterIntoExistingList(s, dy[0], ops::ZerosLike(s, t), indices);
  *dx = {dlist, dt, Output()};
  return absl::OkStatus();
}

// Concat(list) and ConcatV2(list, element_shape, leading_dims) -> tensor,
// lengths.
absl::Status ConcatGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output dlist = ops::TensorListSplit(
      s, dy[0], ops::TensorListElementShape(s, In(op, 0), DT_INT64), Out(op, 1));
  dx->assign(op.node()->num_inputs(), Output());
  (*dx)[0] = dlist;
  return absl::OkStatus();
}

// Split(tensor, element_shape, lengths).
absl::Status SplitGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "element_dtype"));
  const Output t = In(op, 0);
  const Output shape = ops::ConcatV2(s, {grad::Ints(s, {-1}), RowShape(s, t)}, 0);
  *dx = {ops::TensorListConcatV2(s, dy[0], shape, In(op, 2), dtype).tensor, Output(), Output()};
  return absl::OkStatus();
}

absl::Status PushBackGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "element_dtype"));
  const ops::TensorListPopBack pop(s, dy[0], ops::Shape(s, In(op, 1)), dtype);
  *dx = {pop.output_handle, pop.tensor};
  return absl::OkStatus();
}

absl::Status PopBackGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "element_dtype"));
  Output dlist = dy[0];
  if (!dlist.ok()) dlist = EmptyLike(s, Out(op, 0), dtype);
  const Output ditem = dy[1].ok() ? dy[1] : ops::ZerosLike(s, Out(op, 1));
  *dx = {ops::TensorListPushBack(s, dlist, ditem), Output()};
  return absl::OkStatus();
}

absl::Status ResizeGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::TensorListResize(s, dy[0], ops::TensorListLength(s, In(op, 0))), Output()};
  return absl::OkStatus();
}

}  // namespace

void RegisterListGradients(GradientRegistry& r) {
  r.Register("TensorListGetItem", GetItemGrad);
  r.Register("TensorListSetItem", SetItemGrad);
  r.Register("TensorListStack", StackGrad);
  r.Register("TensorListFromTensor", FromTensorGrad);
  r.Register("TensorListGather", GatherGrad);
  r.Register("TensorListScatter", ScatterGrad);
  r.Register("TensorListScatterV2", ScatterGrad);
  r.Register("TensorListScatterIntoExistingList", ScatterIntoExistingGrad);
  r.Register("TensorListConcat", ConcatGrad);
  r.Register("TensorListConcatV2", ConcatGrad);
  r.Register("TensorListSplit", SplitGrad);
  r.Register("TensorListPushBack", PushBackGrad);
  r.Register("TensorListPopBack", PopBackGrad);
  r.Register("TensorListResize", ResizeGrad);
  // As in TensorFlow, which defines none for joining lists either.
  for (const char* op : {"EmptyTensorList", "TensorListReserve", "TensorListLength",
                         "TensorListElementShape", "TensorListConcatLists"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace rill
