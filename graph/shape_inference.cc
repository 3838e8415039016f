#include "graph/shape_inference.h"

#include <utility>

#include "graph/status_macros.h"
#include "graph/tensor.h"

namespace rill {
namespace {

std::string ForInput(int input_index) {
  return input_index >= 0 ? absl::StrFormat(" for input %d", input_index) : std::string();
}

PartialTensorShape ScalarShape() { return PartialTensorShape(TensorShape()); }

}  // namespace

InferenceContext::InferenceContext(const NodeDef& node, const OpDef& op_def,
                                   const NodeSignature& signature,
                                   std::vector<PartialTensorShape> input_shapes,
                                   std::vector<const Tensor*> input_tensors)
    : node_(node),
      op_def_(op_def),
      signature_(signature),
      inputs_(std::move(input_shapes)),
      input_tensors_(std::move(input_tensors)),
      outputs_(signature.output_types.size()) {
  input_tensors_.resize(inputs_.size(), nullptr);
}

absl::StatusOr<std::pair<int, int>> InferenceContext::InputRange(std::string_view arg_name) const {
  for (int i = 0; i < op_def_.input_arg_size(); ++i) {
    if (op_def_.input_arg(i).name() == arg_name &&
        i < static_cast<int>(signature_.input_arg_ranges.size())) {
      return signature_.input_arg_ranges[i];
    }
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("op '%s' has no input named '%s'", op_def_.name(), arg_name));
}

absl::Status InferenceContext::SetOutputDims(int i, absl::Span<const int64_t> dims) {
  ASSIGN_OR_RETURN(PartialTensorShape shape, PartialTensorShape::Create(dims));
  set_output(i, std::move(shape));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> InferenceContext::GetIntAttr(std::string_view name) const {
  return rill::GetIntAttr(node_, name);
}

absl::StatusOr<float> InferenceContext::GetFloatAttr(std::string_view name) const {
  return rill::GetFloatAttr(node_, name);
}

absl::StatusOr<bool> InferenceContext::GetBoolAttr(std::string_view name) const {
  return rill::GetBoolAttr(node_, name);
}

absl::StatusOr<std::string> InferenceContext::GetStringAttr(std::string_view name) const {
  return rill::GetStringAttr(node_, name);
}

absl::StatusOr<DataType> InferenceContext::GetTypeAttr(std::string_view name) const {
  return rill::GetTypeAttr(node_, name);
}

absl::StatusOr<PartialTensorShape> InferenceContext::GetShapeAttr(std::string_view name) const {
  return rill::GetShapeAttr(node_, name);
}

absl::StatusOr<std::vector<int64_t>> InferenceContext::GetIntListAttr(std::string_view name) const {
  return rill::GetIntListAttr(node_, name);
}

absl::StatusOr<PartialTensorShape> InferenceContext::WithRank(const PartialTensorShape& shape,
                                                              int rank, int input_index) const {
  if (rank < 0 || rank > kMaxTensorRank) {
    return ShapeError("rank %d is out of range [0, %d]", rank, kMaxTensorRank);
  }
  if (shape.unknown_rank()) return PartialTensorShape::UnknownOfRank(rank);
  if (shape.dims() != rank) {
    return ShapeError("Shape must be rank %d but is rank %d%s", rank, shape.dims(),
                      ForInput(input_index));
  }
  return shape;
}

absl::StatusOr<PartialTensorShape> InferenceContext::WithRankAtLeast(
    const PartialTensorShape& shape, int rank, int input_index) const {
  if (!shape.unknown_rank() && shape.dims() < rank) {
    return ShapeError("Shape must be at least rank %d but is rank %d%s", rank, shape.dims(),
                      ForInput(input_index));
  }
  return shape;
}

absl::StatusOr<PartialTensorShape> InferenceContext::WithRankAtMost(const PartialTensorShape& shape,
                                                                    int rank,
                                                                    int input_index) const {
  if (!shape.unknown_rank() && shape.dims() > rank) {
    return ShapeError("Shape must be at most rank %d but is rank %d%s", rank, shape.dims(),
                      ForInput(input_index));
  }
  return shape;
}

absl::StatusOr<int64_t> InferenceContext::MergeDim(int64_t a, int64_t b) const {
  if (a < 0) return b;
  if (b < 0 || a == b) return a;
  return ShapeError("Dimensions must be equal, but are %d and %d", a, b);
}

absl::StatusOr<PartialTensorShape> InferenceContext::Merge(const PartialTensorShape& a,
                                                           const PartialTensorShape& b) const {
  if (a.unknown_rank()) return b;
  if (b.unknown_rank()) return a;
  if (a.dims() != b.dims()) {
    return ShapeError("Shapes must be equal rank, but are %d and %d (%s vs. %s)", a.dims(),
                      b.dims(), a.DebugString(), b.DebugString());
  }
  std::vector<int64_t> dims(a.dims());
  for (int i = 0; i < a.dims(); ++i) {
    absl::StatusOr<int64_t> dim = MergeDim(a.dim_size(i), b.dim_size(i));
    if (!dim.ok()) {
      return ShapeError("Dimension %d in both shapes must be equal, but are %d and %d (%s vs. %s)",
                        i, a.dim_size(i), b.dim_size(i), a.DebugString(), b.DebugString());
    }
    dims[i] = *dim;
  }
  // Each side's known sizes fit in int64, but the sizes taken from both
  // together may not.
  return PartialTensorShape::Create(dims);
}

absl::StatusOr<PartialTensorShape> InferenceContext::Broadcast(const PartialTensorShape& a,
                                                               const PartialTensorShape& b) const {
  return BroadcastShapes(a, b);
}

absl::StatusOr<std::optional<std::vector<int64_t>>> InferenceContext::InputAsInt64s(
    int input_index) const {
  if (input_index < 0 || input_index >= num_inputs()) {
    return ShapeError("input %d is out of range [0, %d)", input_index, num_inputs());
  }
  const Tensor* t = input_tensors_[input_index];
  if (t == nullptr || !t->IsInitialized()) return std::optional<std::vector<int64_t>>();
  if (t->dims() > 1) {
    return ShapeError("Input %d must be a scalar or vector but has rank %d", input_index,
                      t->dims());
  }
  std::vector<int64_t> values(t->NumElements());
  if (t->dtype() == DT_INT32) {
    const int32_t* data = t->data<int32_t>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = data[i];
  } else if (t->dtype() == DT_INT64) {
    const int64_t* data = t->data<int64_t>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = data[i];
  } else {
    return ShapeError("Input %d must be int32 or int64 but is %s", input_index,
                      DataTypeString(t->dtype()));
  }
  return std::optional<std::vector<int64_t>>(std::move(values));
}

absl::StatusOr<PartialTensorShape> InferenceContext::MakeShapeFromShapeTensor(
    int input_index) const {
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> values, InputAsInt64s(input_index));
  const PartialTensorShape& shape = input(input_index);
  if (values.has_value()) {
    // A scalar -1 stands for a shape of unknown rank, as in TensorFlow.
    if (input_tensor(input_index)->dims() == 0) {
      if ((*values)[0] == -1) return PartialTensorShape::Unknown();
      return ShapeError("Input %d is a scalar %d where a shape vector is expected", input_index,
                        (*values)[0]);
    }
    if (values->size() > static_cast<size_t>(kMaxTensorRank)) {
      return ShapeError("Input %d has %d dimensions, more than the maximum %d", input_index,
                        values->size(), kMaxTensorRank);
    }
    for (int64_t d : *values) {
      if (d < -1) {
        return ShapeError("Input %d holds dimension %d; dimensions must be >= -1", input_index, d);
      }
    }
    return PartialTensorShape::Create(*values);
  }
  if (shape.unknown_rank() || shape.dims() == 0) return PartialTensorShape::Unknown();
  ASSIGN_OR_RETURN(PartialTensorShape vector, WithRank(shape, 1, input_index));
  const int64_t rank = vector.dim_size(0);
  if (rank < 0) return PartialTensorShape::Unknown();
  if (rank > kMaxTensorRank) {
    return ShapeError("Input %d has %d dimensions, more than the maximum %d", input_index, rank,
                      kMaxTensorRank);
  }
  return PartialTensorShape::UnknownOfRank(static_cast<int>(rank));
}

namespace shape_fn {

absl::Status Unknown(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, PartialTensorShape::Unknown());
  return absl::OkStatus();
}

absl::Status Unchanged(InferenceContext& c) {
  if (c.num_inputs() < 1 || c.num_outputs() < 1) {
    return ShapeError("op '%s' needs an input and an output for an unchanged shape",
                      c.op_def().name());
  }
  c.set_output(0, c.input(0));
  return absl::OkStatus();
}

absl::Status Scalar(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, ScalarShape());
  return absl::OkStatus();
}

absl::Status NoOutputs(InferenceContext&) { return absl::OkStatus(); }

absl::Status BroadcastBinary(InferenceContext& c) {
  if (c.num_inputs() != 2 || c.num_outputs() < 1) {
    return ShapeError("op '%s' needs two inputs and an output to broadcast", c.op_def().name());
  }
  ASSIGN_OR_RETURN(PartialTensorShape out, c.Broadcast(c.input(0), c.input(1)));
  c.set_output(0, std::move(out));
  return absl::OkStatus();
}

absl::Status MergeAllInputs(InferenceContext& c) {
  if (c.num_outputs() < 1) {
    return ShapeError("op '%s' has no output to merge inputs into", c.op_def().name());
  }
  PartialTensorShape merged;
  for (int i = 0; i < c.num_inputs(); ++i) {
    absl::StatusOr<PartialTensorShape> next = c.Merge(merged, c.input(i));
    if (!next.ok()) {
      return ShapeError(
          "All inputs must have the same shape, but input %d is %s where %s is "
          "expected: %s",
          i, c.input(i).DebugString(), merged.DebugString(), next.status().message());
    }
    merged = *std::move(next);
  }
  c.set_output(0, std::move(merged));
  return absl::OkStatus();
}

absl::Status FromShapeAttr(InferenceContext& c) {
  if (c.num_outputs() < 1) {
    return ShapeError("op '%s' has no output for its shape attr", c.op_def().name());
  }
  if (!c.node().attr().contains("shape")) {
    c.set_output(0, PartialTensorShape::Unknown());
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(PartialTensorShape shape, c.GetShapeAttr("shape"));
  c.set_output(0, std::move(shape));
  return absl::OkStatus();
}

}  // namespace shape_fn
}  // namespace rill
