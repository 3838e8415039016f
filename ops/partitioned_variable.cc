#include "ops/partitioned_variable.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "ops/standard_ops.h"

namespace rill {
namespace {

absl::Status CheckAxis(int axis, const TensorShape& shape, std::string_view partitioner) {
  if (axis >= 0 && axis < shape.dims()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s: axis %d is not a dimension of shape %s",
                                                    partitioner, axis, shape.DebugString()));
}

// The partition list with `parts` along `axis` and 1 elsewhere.
std::vector<int64_t> PartsAlong(const TensorShape& shape, int axis, int64_t parts) {
  std::vector<int64_t> partitions(shape.dims(), 1);
  partitions[axis] = parts;
  return partitions;
}

// The axis a partition list cuts along and how many parts it makes there:
// INVALID_ARGUMENT for a list of another rank, a count below 1 or above
// the dimension, or cuts along two dimensions.
absl::StatusOr<std::pair<int, int64_t>> CutOf(std::string_view name, const TensorShape& shape,
                                              const std::vector<int64_t>& partitions) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrFormat("partitioned variable '%s' of shape %s: partitions [%s] %s", name,
                        shape.DebugString(), absl::StrJoin(partitions, ", "), why));
  };
  if (static_cast<int>(partitions.size()) != shape.dims()) {
    return bad("need one entry per dimension");
  }
  int axis = 0;
  int cut_dims = 0;
  for (int d = 0; d < shape.dims(); ++d) {
    if (partitions[d] < 1 || partitions[d] > std::max<int64_t>(shape.dim_size(d), 1)) {
      return bad(absl::StrFormat("cut dimension %d into a count outside [1, its length]", d));
    }
    if (partitions[d] > 1) {
      axis = d;
      ++cut_dims;
    }
  }
  if (cut_dims > 1) return bad("cut more than one dimension");
  return std::make_pair(axis, partitions[axis]);
}

}  // namespace

Partitioner FixedSizePartitioner(int64_t num_shards, int axis) {
  return [=](const TensorShape& shape, DataType) -> absl::StatusOr<std::vector<int64_t>> {
    RETURN_IF_ERROR(CheckAxis(axis, shape, "fixed_size_partitioner"));
    if (num_shards < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("fixed_size_partitioner: num_shards %d is below 1", num_shards));
    }
    return PartsAlong(shape, axis, std::min(num_shards, shape.dim_size(axis)));
  };
}

Partitioner MinMaxVariablePartitioner(int64_t max_partitions, int axis, int64_t min_slice_size,
                                      int64_t bytes_per_string_element) {
  return [=](const TensorShape& shape, DataType dtype) -> absl::StatusOr<std::vector<int64_t>> {
    RETURN_IF_ERROR(CheckAxis(axis, shape, "min_max_variable_partitioner"));
    if (max_partitions < 1 || min_slice_size < 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "min_max_variable_partitioner: max_partitions %d and min_slice_size %d must be positive",
          max_partitions, min_slice_size));
    }
    const int64_t element_bytes =
        dtype == DT_STRING ? bytes_per_string_element : static_cast<int64_t>(DataTypeSize(dtype));
    const int64_t total_bytes = shape.num_elements() * element_bytes;
    const int64_t wanted = (total_bytes + min_slice_size - 1) / min_slice_size;
    const int64_t parts =
        std::max<int64_t>(1, std::min({shape.dim_size(axis), max_partitions, wanted}));
    return PartsAlong(shape, axis, parts);
  };
}

PartitionedVariable::PartitionedVariable(const Scope& outer, std::string_view name,
                                         const TensorShape& shape, DataType dtype,
                                         const Partitioner& partitioner,
                                         const PartInitializer& initializer)
    : name_(outer.name_prefix() + std::string(name)), shape_(shape) {
  const Scope scope = outer.WithNoControlDependencies();
  if (!scope.ok()) return;
  absl::StatusOr<std::vector<int64_t>> partitions = partitioner(shape, dtype);
  absl::StatusOr<std::pair<int, int64_t>> cut =
      partitions.ok() ? CutOf(name_, shape, *partitions) : partitions.status();
  if (!cut.ok()) {
    scope.UpdateStatus(cut.status());
    return;
  }
  const auto [axis, count] = *cut;
  axis_ = axis;
  // As TensorFlow's _iter_slices: the first `length % count` parts take
  // one row more.
  const int64_t length = shape.dims() == 0 ? 1 : shape.dim_size(axis);
  SaveSliceInfo slice;
  slice.full_name = name_;
  slice.full_shape.assign(shape.dim_sizes().begin(), shape.dim_sizes().end());
  slice.var_offset.assign(shape.dims(), 0);
  slice.var_shape = slice.full_shape;
  std::vector<ops::Input> reads;
  for (int64_t i = 0; i < count; ++i) {
    if (shape.dims() > 0) slice.var_shape[axis] = length / count + (i < length % count ? 1 : 0);
    const std::string part_name = absl::StrFormat("%s/part_%d", name, i);
    const ops::Input initial_value =
        initializer(scope.NewSubScope(part_name + "/Initializer"), slice);
    const Variable part(scope, part_name, initial_value, slice);
    if (!part.ok()) return;
    parts_.push_back(part);
    reads.emplace_back(part.value());
    if (shape.dims() > 0) slice.var_offset[axis] += slice.var_shape[axis];
  }
  const Scope concat = outer.NewSubScope(std::string(name) + "/ConcatPartitions");
  value_ = count == 1 ? Output(ops::Identity(concat.WithOpName("concat"), parts_[0].value()))
                      : Output(ops::ConcatV2(concat.WithOpName("concat"), reads, axis));
}

Output PartitionedGather(const Scope& outer, const PartitionedVariable& params, const Output& ids) {
  const Scope scope = outer.NewSubScope("embedding_lookup");
  if (!scope.ok()) return Output();
  if (!params.ok() || params.axis() != 0 || params.shape().dims() == 0) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrFormat(
        "PartitionedGather: '%s' is not a variable partitioned along axis 0", params.name())));
    return Output();
  }
  const Output flat_ids =
      ops::Cast(scope, ops::Reshape(scope, ids, ops::Input({int64_t{-1}})), DT_INT64);
  const std::vector<Variable>& parts = params.parts();
  const auto gather_beside = [&](const Variable& part, const Output& local_ids) {
    return Output(ops::Gather(scope.ColocateWith(part.ref().op()), part.value(), local_ids));
  };
  Output gathered;
  if (parts.size() == 1) {
    gathered = gather_beside(parts[0], flat_ids);
  } else {
    std::vector<ops::Input> positions;
    std::vector<ops::Input> rows;
    int64_t begin = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      const int64_t end = begin + parts[p].value().shape().dim_size(0);
      // The first part also takes ids below 0 and the last those past the
      // end, whose Gather then refuses them.
      Output mine;
      if (p > 0) mine = ops::GreaterEqual(scope, flat_ids, begin);
      if (p + 1 < parts.size()) {
        const Output below_end = ops::Less(scope, flat_ids, end);
        mine = mine.ok() ? Output(ops::LogicalAnd(scope, mine, below_end)) : below_end;
      }
      const Output at = ops::Reshape(scope, ops::Where(scope, mine), ops::Input({int64_t{-1}}));
      rows.emplace_back(
          gather_beside(parts[p], ops::Sub(scope, ops::Gather(scope, flat_ids, at), begin)));
      positions.emplace_back(ops::Cast(scope, at, DT_INT32));
      begin = end;
    }
    gathered = ops::DynamicStitch(scope, positions, rows);
  }
  std::vector<int32_t> row_dims;
  for (int d = 1; d < params.shape().dims(); ++d) {
    row_dims.push_back(static_cast<int32_t>(params.shape().dim_size(d)));
  }
  const Output row_shape = ops::Const(
      scope,
      Tensor::FromVector<int32_t>(row_dims, TensorShape({static_cast<int64_t>(row_dims.size())})),
      DT_INT32);
  return ops::Reshape(
      scope.WithOpName("Reshape"), gathered,
      ops::ConcatV2(scope, {ops::Input(ops::Shape(scope, ids)), ops::Input(row_shape)}, 0));
}

}  // namespace rill
