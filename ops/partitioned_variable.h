// PartitionedVariable: one variable stored as parts along one axis, each a
// Variable of its own that a device setter may put on its own ps task, as
// tf.get_variable with a partitioner (fixed_size_partitioner,
// min_max_variable_partitioner) builds; checkpoints hold it whole.
#ifndef RILL_OPS_PARTITIONED_VARIABLE_H_
#define RILL_OPS_PARTITIONED_VARIABLE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/scope.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"
#include "ops/input.h"
#include "ops/variable.h"

namespace rill {

// How many parts a variable of `shape` and `dtype` is cut into per
// dimension (one entry per dimension, at most one above 1), as
// TensorFlow's partitioner functions return.
using Partitioner =
    std::function<absl::StatusOr<std::vector<int64_t>>(const TensorShape& shape, DataType dtype)>;

// `num_shards` parts along `axis` (fewer when the axis is shorter), as
// tf.compat.v1.fixed_size_partitioner.
Partitioner FixedSizePartitioner(int64_t num_shards, int axis = 0);

// As many parts along `axis` as keep each at least `min_slice_size` bytes,
// at most `max_partitions` and at most the axis' length, as
// tf.compat.v1.min_max_variable_partitioner (a string element counts
// `bytes_per_string_element` bytes).
Partitioner MinMaxVariablePartitioner(int64_t max_partitions, int axis = 0,
                                      int64_t min_slice_size = int64_t{256} << 10,
                                      int64_t bytes_per_string_element = 16);

class PartitionedVariable {
 public:
  // The initial value of one part; `slice` says where the part lies in the
  // full variable (its var_shape is the part's shape).
  using PartInitializer = std::function<ops::Input(const Scope& scope, const SaveSliceInfo& slice)>;

  // Parts "<name>/part_0", "<name>/part_1", ... of `shape` cut as
  // `partitioner` says (the first `length % parts` parts one row longer,
  // as TensorFlow cuts them), each initialized by `initializer` and
  // recording its SaveSliceInfo under the full name. On error (recorded
  // in the scope: a bad partition list, an initial value of another shape)
  // the PartitionedVariable is null.
  PartitionedVariable(const Scope& scope, std::string_view name, const TensorShape& shape,
                      DataType dtype, const Partitioner& partitioner,
                      const PartInitializer& initializer);

  bool ok() const { return value_.ok(); }
  // The full name, the checkpoint key: "hidden/weights".
  const std::string& name() const { return name_; }
  const TensorShape& shape() const { return shape_; }
  int axis() const { return axis_; }
  const std::vector<Variable>& parts() const { return parts_; }
  // The parts' reads joined along the axis ("<name>/ConcatPartitions/concat"),
  // as PartitionedVariable.as_tensor: what a computation takes, on the
  // device that computes; its gradient reaches each part as its slice.
  const Output& value() const { return value_; }
  operator Output() const { return value_; }  // NOLINT

 private:
  std::string name_;
  TensorShape shape_;
  int axis_ = 0;
  std::vector<Variable> parts_;
  Output value_;
};

// The rows `ids` of a variable partitioned along axis 0, each part
// gathering the ids it holds beside itself, so that only those rows leave
// its task (tf.nn.embedding_lookup with partition_strategy "div", the rows
// TensorFlow's partitioners give each part). The result has the shape of
// `ids` followed by the variable's other dimensions. An id outside the
// variable fails in the first or last part's Gather, which names it.
Output PartitionedGather(const Scope& scope, const PartitionedVariable& params, const Output& ids);

}  // namespace rill

#endif  // RILL_OPS_PARTITIONED_VARIABLE_H_
