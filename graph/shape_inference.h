// InferenceContext: what a shape function sees of one node (input shapes,
// known input values, attrs) and where it puts the output shapes; plus the
// shape functions many ops share.
#ifndef RILL_GRAPH_SHAPE_INFERENCE_H_
#define RILL_GRAPH_SHAPE_INFERENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/proto/node_def.pb.h"
#include "graph/proto/op_def.pb.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"

namespace rill {

class Tensor;

class InferenceContext {
 public:
  // `input_tensors[i]` is the value of input i when known while building
  // the graph (a Const), else nullptr. Pointers must outlive the context.
  // `signature` is the node's expanded signature (ComputeNodeSignature).
  InferenceContext(const NodeDef& node, const OpDef& op_def, const NodeSignature& signature,
                   std::vector<PartialTensorShape> input_shapes,
                   std::vector<const Tensor*> input_tensors);

  const NodeDef& node() const { return node_; }
  const OpDef& op_def() const { return op_def_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const PartialTensorShape& input(int i) const { return inputs_[i]; }
  DataType input_type(int i) const { return signature_.input_types[i]; }
  const Tensor* input_tensor(int i) const { return input_tensors_[i]; }
  // The flat [begin, end) slots of the named input arg (list args span
  // several slots).
  absl::StatusOr<std::pair<int, int>> InputRange(std::string_view arg_name) const;

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  DataType output_type(int i) const { return signature_.output_types[i]; }
  void set_output(int i, PartialTensorShape shape) { outputs_[i] = std::move(shape); }
  // Output i = a shape of known rank with `dims` (-1 = unknown). Dims that
  // a shape function computed from input values or attrs are untrusted:
  // INVALID_ARGUMENT when there are too many or the known sizes' product
  // overflows int64.
  absl::Status SetOutputDims(int i, absl::Span<const int64_t> dims);
  const PartialTensorShape& output(int i) const { return outputs_[i]; }
  std::vector<PartialTensorShape> TakeOutputs() { return std::move(outputs_); }

  // Attr access, as the Get*Attr functions of node_def_util.h.
  absl::StatusOr<int64_t> GetIntAttr(std::string_view name) const;
  absl::StatusOr<float> GetFloatAttr(std::string_view name) const;
  absl::StatusOr<bool> GetBoolAttr(std::string_view name) const;
  absl::StatusOr<std::string> GetStringAttr(std::string_view name) const;
  absl::StatusOr<DataType> GetTypeAttr(std::string_view name) const;
  absl::StatusOr<PartialTensorShape> GetShapeAttr(std::string_view name) const;
  absl::StatusOr<std::vector<int64_t>> GetIntListAttr(std::string_view name) const;

  // Checks that `shape` has rank `rank` (unknown rank becomes
  // UnknownOfRank(rank)); the error names input `input_index` when >= 0.
  absl::StatusOr<PartialTensorShape> WithRank(const PartialTensorShape& shape, int rank,
                                              int input_index = -1) const;
  absl::StatusOr<PartialTensorShape> WithRankAtLeast(const PartialTensorShape& shape, int rank,
                                                     int input_index = -1) const;
  absl::StatusOr<PartialTensorShape> WithRankAtMost(const PartialTensorShape& shape, int rank,
                                                    int input_index = -1) const;
  // Two dimension sizes (-1 = unknown) that must agree.
  absl::StatusOr<int64_t> MergeDim(int64_t a, int64_t b) const;
  absl::StatusOr<PartialTensorShape> Merge(const PartialTensorShape& a,
                                           const PartialTensorShape& b) const;
  // NumPy broadcasting of two shapes; an error when a known pair of
  // dimensions is neither equal nor 1.
  absl::StatusOr<PartialTensorShape> Broadcast(const PartialTensorShape& a,
                                               const PartialTensorShape& b) const;

  // The known value of a 0-D or 1-D int32/int64 input; nullopt when not
  // known while building. INVALID_ARGUMENT for another dtype or rank.
  absl::StatusOr<std::optional<std::vector<int64_t>>> InputAsInt64s(int input_index) const;
  // A shape given as a 1-D int32/int64 tensor input (e.g. Reshape's
  // `shape`, Fill's `dims`): its value when known (-1 entries stay
  // unknown), else a shape of known rank when the input's length is known,
  // else unknown rank.
  absl::StatusOr<PartialTensorShape> MakeShapeFromShapeTensor(int input_index) const;

 private:
  const NodeDef& node_;
  const OpDef& op_def_;
  const NodeSignature& signature_;
  std::vector<PartialTensorShape> inputs_;
  std::vector<const Tensor*> input_tensors_;
  std::vector<PartialTensorShape> outputs_;
};

// An INVALID_ARGUMENT status built with absl::StrFormat.
template <typename... Args>
absl::Status ShapeError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrFormat(format, args...));
}

// Shape functions shared by many ops.
namespace shape_fn {
absl::Status Unknown(InferenceContext& c);          // Every output unknown.
absl::Status Unchanged(InferenceContext& c);        // Output 0 = input 0.
absl::Status Scalar(InferenceContext& c);           // Every output a scalar.
absl::Status NoOutputs(InferenceContext& c);        // Nothing to set.
absl::Status BroadcastBinary(InferenceContext& c);  // Output 0 = broadcast(input 0, input 1).
// Output 0 = the merge of every input (they must all agree), e.g. AddN.
absl::Status MergeAllInputs(InferenceContext& c);
// Output 0 = the `shape` attr (unknown rank when absent).
absl::Status FromShapeAttr(InferenceContext& c);
}  // namespace shape_fn

}  // namespace rill

#endif  // RILL_GRAPH_SHAPE_INFERENCE_H_
