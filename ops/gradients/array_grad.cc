// Gradients of the array ops, after TensorFlow's array_grad.py: reshapes,
// transposes, splitting and joining, tiling, padding, slicing and
// gathering. Without InvertPermutation or UnsortedSegmentSum here, slices
// scatter their gradient with DynamicStitch and gathers with a one-hot
// product.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

using grad::In;
using grad::Ints;
using grad::Out;
using grad::Scalar;
using Outputs = std::vector<Output>;

absl::Status IdentityGrad(const Scope&, const Operation&, const Outputs& dy, Outputs* dx) {
  *dx = dy;
  return absl::OkStatus();
}

// Reshape, ExpandDims, Squeeze: the gradient takes the input's shape back;
// any shape or axis input gets none.
absl::Status ReshapeGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  dx->assign(op.node()->num_inputs(), Output());
  (*dx)[0] = ops::Reshape(s, dy[0], ops::Shape(s, In(op, 0)));
  return absl::OkStatus();
}

// The inverse of a permutation vector p: inverse[p[i]] = i.
Output InvertPermutation(const Scope& s, const Output& perm) {
  const Output p = grad::ToInt32(s, perm);
  return ops::DynamicStitch(s, {p}, {Output(ops::Range(s, 0, ops::Size(s, p), 1))});
}

absl::Status TransposeGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::Transpose(s, dy[0], InvertPermutation(s, In(op, 1))), Output()};
  return absl::OkStatus();
}

// The outputs' gradients, with zeros for those that got none.
Outputs GradsOrZeros(const Scope& s, const Operation& op, const Outputs& dy) {
  Outputs grads;
  for (size_t i = 0; i < dy.size(); ++i) {
    grads.push_back(grad::OrZeros(s, dy[i], Out(op, static_cast<int>(i))));
  }
  return grads;
}

absl::Status SplitGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {Output(), ops::ConcatV2(s, GradsOrZeros(s, op, dy), In(op, 0))};
  return absl::OkStatus();
}

absl::Status SplitVGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::ConcatV2(s, GradsOrZeros(s, op, dy), In(op, 2)), Output(), Output()};
  return absl::OkStatus();
}

// The gradient is split back along the axis in the inputs' sizes.
absl::Status ConcatGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const int n = op.node()->num_inputs() - 1;
  const Output rank = ops::Rank(s, In(op, 0));
  const Output axis = ops::FloorMod(s, grad::ToInt32(s, In(op, n)), rank);
  const Output begin = ops::ExpandDims(s, axis, 0);
  Outputs sizes;
  for (int i = 0; i < n; ++i) {
    sizes.push_back(ops::Slice(s, ops::Shape(s, In(op, i)), begin, {1}));
  }
  const ops::SplitV split(s, dy[0], ops::ConcatV2(s, sizes, 0), axis, n);
  *dx = split.output;
  dx->push_back(Output());
  return absl::OkStatus();
}

absl::Status PackGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(grad::Def(op), "axis"));
  *dx = ops::Unpack(s, dy[0], op.node()->num_inputs(), ops::Unpack::Axis(axis)).output;
  return absl::OkStatus();
}

absl::Status UnpackGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(grad::Def(op), "axis"));
  *dx = {ops::Pack(s, GradsOrZeros(s, op, dy), ops::Pack::Axis(axis))};
  return absl::OkStatus();
}

absl::Status FillGrad(const Scope& s, const Operation&, const Outputs& dy, Outputs* dx) {
  const Output all_axes = ops::Range(s, 0, ops::Rank(s, dy[0]), 1);
  *dx = {Output(), ops::Sum(s, dy[0], all_axes)};
  return absl::OkStatus();
}

// dy viewed as [m0, d0, m1, d1, ...] (multiples interleaved with the
// input's dims) and summed over the multiples.
absl::Status TileGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output multiples = grad::ToInt32(s, In(op, 1));
  const Output interleaved = ops::Reshape(
      s, ops::Transpose(s, ops::Pack(s, {multiples, Output(ops::Shape(s, In(op, 0)))}), {1, 0}),
      {-1});
  const Output multiple_axes = ops::Range(s, 0, ops::Size(s, interleaved), 2);
  *dx = {ops::Sum(s, ops::Reshape(s, dy[0], interleaved), multiple_axes), Output()};
  return absl::OkStatus();
}

// Slice and StridedSlice: the same slice taken of the input's flat indices
// says where each element of dy came from; DynamicStitch writes dy there
// over a zero background.
template <typename SliceFn>
Output ScatterSliceGrad(const Scope& s, const Output& x, const Output& dy, SliceFn slice) {
  const Output size = ops::Size(s, x);
  const Output all = ops::Range(s, 0, size, 1);
  const Output taken = slice(ops::Reshape(s, all, ops::Shape(s, x)));
  const Output zeros = ops::Reshape(s, ops::ZerosLike(s, x), {-1});
  const Output flat = ops::DynamicStitch(s, {all, Output(ops::Reshape(s, taken, {-1}))},
                                         {zeros, Output(ops::Reshape(s, dy, {-1}))});
  return ops::Reshape(s, flat, ops::Shape(s, x));
}

absl::Status SliceGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output begin = In(op, 1);
  const Output size = In(op, 2);
  *dx = {ScatterSliceGrad(s, In(op, 0), dy[0],
                          [&](const Output& x) -> Output { return ops::Slice(s, x, begin, size); }),
         Output(), Output()};
  return absl::OkStatus();
}

absl::Status StridedSliceGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const NodeDef& def = grad::Def(op);
  ASSIGN_OR_RETURN(int64_t begin_mask, GetIntAttr(def, "begin_mask"));
  ASSIGN_OR_RETURN(int64_t end_mask, GetIntAttr(def, "end_mask"));
  ASSIGN_OR_RETURN(int64_t ellipsis_mask, GetIntAttr(def, "ellipsis_mask"));
  ASSIGN_OR_RETURN(int64_t new_axis_mask, GetIntAttr(def, "new_axis_mask"));
  ASSIGN_OR_RETURN(int64_t shrink_axis_mask, GetIntAttr(def, "shrink_axis_mask"));
  const auto attrs = ops::StridedSlice::BeginMask(begin_mask)
                         .EndMask(end_mask)
                         .EllipsisMask(ellipsis_mask)
                         .NewAxisMask(new_axis_mask)
                         .ShrinkAxisMask(shrink_axis_mask);
  *dx = {ScatterSliceGrad(s, In(op, 0), dy[0],
                          [&](const Output& x) -> Output {
                            return ops::StridedSlice(s, x, In(op, 1), In(op, 2), In(op, 3), attrs);
                          }),
         Output(), Output(), Output()};
  return absl::OkStatus();
}

// The gradient of gathering slices of `params` along `axis`: dy rearranged
// to [indices..., other params dims...], then a product with the one-hot
// matrix of the indices adds each slice's gradient into its row (repeated
// indices add up).
absl::StatusOr<Output> GatherParamsGrad(const Scope& s, const Output& params, const Output& indices,
                                        int64_t axis, const Output& dy) {
  const int params_rank = params.shape().dims();
  const int indices_rank = indices.shape().dims();
  if (axis != 0 && (params_rank < 0 || indices_rank < 0)) {
    return absl::UnimplementedError(
        "the gradient of a gather along an axis other than 0 needs params and indices of known "
        "rank");
  }
  const Output params_shape = ops::Shape(s, params);
  const int a = static_cast<int>(axis);
  Output g = dy;
  Output rest_shape;          // params' shape without the axis dimension.
  std::vector<int32_t> back;  // Moves the axis dimension from the front to `a`.
  if (a == 0) {
    rest_shape = ops::Slice(s, params_shape, {1}, {-1});
  } else {
    std::vector<int32_t> front;  // dy's indices dims first, in order.
    for (int i = 0; i < indices_rank; ++i) front.push_back(a + i);
    for (int i = 0; i < a; ++i) front.push_back(i);
    for (int i = a + indices_rank; i < params_rank + indices_rank - 1; ++i) front.push_back(i);
    g = ops::Transpose(s, dy, Ints(s, front));
    std::vector<int32_t> rest;
    for (int i = 0; i < params_rank; ++i) {
      if (i != a) rest.push_back(i);
    }
    rest_shape = ops::Gather(s, params_shape, Ints(s, rest));
    for (int i = 1; i <= a; ++i) back.push_back(i);
    back.push_back(0);
    for (int i = a + 1; i < params_rank; ++i) back.push_back(i);
  }
  const Output depth = ops::Gather(s, params_shape, a);
  const Output rows = ops::Prod(s, rest_shape, 0);
  const Output g_matrix = ops::Reshape(s, g, ops::Pack(s, {Output(ops::Size(s, indices)), rows}));
  const DataType t = BaseType(params.type());
  const Output one_hot =
      ops::OneHot(s, ops::Reshape(s, indices, {-1}), depth, Scalar(s, 1, t), Scalar(s, 0, t));
  const Output product = ops::MatMul(s, one_hot, g_matrix, ops::MatMul::TransposeA(true));
  const Output moved_shape = ops::ConcatV2(s, {Output(ops::Reshape(s, depth, {1})), rest_shape}, 0);
  const Output moved = ops::Reshape(s, product, moved_shape);
  return a == 0 ? moved : Output(ops::Transpose(s, moved, Ints(s, back)));
}

absl::Status GatherGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(Output g, GatherParamsGrad(s, In(op, 0), In(op, 1), 0, dy[0]));
  *dx = {g, Output()};
  return absl::OkStatus();
}

absl::Status GatherV2Grad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(int64_t batch_dims, GetIntAttr(grad::Def(op), "batch_dims"));
  const std::optional<std::vector<int64_t>> axis = grad::ConstantInts(In(op, 2));
  if (batch_dims != 0 || !axis.has_value() || axis->size() != 1) {
    return absl::UnimplementedError(
        "the gradient of GatherV2 needs a constant axis and batch_dims = 0");
  }
  const Output params = In(op, 0);
  int64_t a = axis->front();
  if (a < 0) {
    if (params.shape().unknown_rank()) {
      return absl::UnimplementedError(
          "the gradient of GatherV2 with a negative axis needs params of known rank");
    }
    a += params.shape().dims();
  }
  ASSIGN_OR_RETURN(Output g, GatherParamsGrad(s, params, In(op, 1), a, dy[0]));
  *dx = {g, Output(), Output()};
  return absl::OkStatus();
}

// Each data input's elements went to the positions its indices name.
absl::Status DynamicStitchGrad(const Scope& s, const Operation& op, const Outputs& dy,
                               Outputs* dx) {
  const int n = op.node()->num_inputs() / 2;
  dx->assign(n, Output());
  for (int i = 0; i < n; ++i) dx->push_back(ops::Gather(s, dy[0], In(op, i)));
  return absl::OkStatus();
}

// Pad and PadV2: the middle of the padded gradient, from the paddings'
// first column; the paddings and the constant get none.
absl::Status PadGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  const Output before =
      ops::Reshape(s, ops::Slice(s, grad::ToInt32(s, In(op, 1)), {0, 0}, {-1, 1}), {-1});
  dx->assign(op.node()->num_inputs(), Output());
  (*dx)[0] = ops::Slice(s, dy[0], before, ops::Shape(s, x));
  return absl::OkStatus();
}

// MirrorPad's gradient folds the border back (MirrorPadGrad); that one's
// is MirrorPad again.
template <bool kOfGrad>
absl::Status MirrorPadGradient(const Scope& s, const Operation& op, const Outputs& dy,
                               Outputs* dx) {
  ASSIGN_OR_RETURN(const std::string mode, GetStringAttr(grad::Def(op), "mode"));
  const Output paddings = In(op, 1);
  *dx = {kOfGrad ? Output(ops::MirrorPad(s, dy[0], paddings, mode))
                 : Output(ops::MirrorPadGrad(s, dy[0], paddings, mode)),
         Output()};
  return absl::OkStatus();
}

absl::Status ReverseV2Grad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::ReverseV2(s, dy[0], In(op, 1)), Output()};
  return absl::OkStatus();
}

// GatherNd: each gathered slice's gradient adds into the slice it came
// from (ScatterNd sums repeated indices).
absl::Status GatherNdGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output indices = In(op, 1);
  const Output shape = ops::Shape(s, In(op, 0), ops::Shape::OutType(BaseType(indices.type())));
  *dx = {ops::ScatterNd(s, indices, dy[0], shape), Output()};
  return absl::OkStatus();
}

// ScatterNd: each update's gradient is the output gradient where it went.
absl::Status ScatterNdGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {Output(), ops::GatherNd(s, dy[0], In(op, 0)), Output()};
  return absl::OkStatus();
}

}  // namespace

void RegisterArrayGradients(GradientRegistry& r) {
  r.Register("Identity", IdentityGrad);
  r.Register("IdentityN", IdentityGrad);
  r.Register("PlaceholderWithDefault", IdentityGrad);
  r.Register("Reshape", ReshapeGrad);
  r.Register("ExpandDims", ReshapeGrad);
  r.Register("Squeeze", ReshapeGrad);
  r.Register("Transpose", TransposeGrad);
  r.Register("Split", SplitGrad);
  r.Register("SplitV", SplitVGrad);
  r.Register("ConcatV2", ConcatGrad);
  r.Register("Pack", PackGrad);
  r.Register("Unpack", UnpackGrad);
  r.Register("Fill", FillGrad);
  r.Register("Tile", TileGrad);
  r.Register("Slice", SliceGrad);
  r.Register("StridedSlice", StridedSliceGrad);
  r.Register("Gather", GatherGrad);
  r.Register("GatherV2", GatherV2Grad);
  r.Register("DynamicStitch", DynamicStitchGrad);
  r.Register("Pad", PadGrad);
  r.Register("PadV2", PadGrad);
  r.Register("MirrorPad", MirrorPadGradient<false>);
  r.Register("MirrorPadGrad", MirrorPadGradient<true>);
  r.Register("GatherNd", GatherNdGrad);
  r.Register("ReverseV2", ReverseV2Grad);
  r.Register("ScatterNd", ScatterNdGrad);

  // Shape queries, constants built from shapes, and the explicit stop.
  for (const char* op : {"Shape", "Size", "Rank", "BroadcastGradientArgs", "ZerosLike", "OnesLike",
                         "OneHot", "Where", "StopGradient"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace rill
