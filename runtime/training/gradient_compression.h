// Lighter gradients on the wire: a worker's gradient is cast to a 16-bit float where it is
// computed, crosses to the variable's task at half the bytes, and is cast back there.
#ifndef RILL_RUNTIME_TRAINING_GRADIENT_COMPRESSION_H_
#define RILL_RUNTIME_TRAINING_GRADIENT_COMPRESSION_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/scope.h"
#include "graph/types.h"
#include "runtime/training/optimizer.h"

namespace rill {

struct GradientCompression {
  // DT_HALF or DT_BFLOAT16; DT_INVALID leaves the gradients as they are. bfloat16 keeps float's
  // range (a gradient never overflows) with 8 bits of mantissa; half keeps 11 bits but flushes
  // what is under 6e-8 to zero and overflows past 65504.
  DataType wire_type = DT_INVALID;
  // The variables (by name) whose gradients go narrow; empty: every float gradient.
  std::set<std::string> variables;
};

// "none", "float16"/"fp16"/"half" or "bfloat16"/"bf16", as a flag gives it. INVALID_ARGUMENT
// names what is accepted.
absl::StatusOr<DataType> ParseGradientWireType(std::string_view name);

// `gradients` with each float gradient that `compression` names replaced by
// Cast(Cast(g, wire_type) colocated with g, float) colocated with its variable, so that what
// travels between them is 16-bit. Use before ApplyGradients (or SyncReplicasOptimizer's, whose
// accumulators live with the variables). Errors: a variable named that has no gradient or is not
// among `gradients`, a wire type that is not a 16-bit float.
absl::StatusOr<std::vector<GradientAndVariable>> CompressGradients(
    const Scope& scope, std::vector<GradientAndVariable> gradients,
    const GradientCompression& compression);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_GRADIENT_COMPRESSION_H_
