// Lighter gradients on the wire: a worker's gradient is cast to a 16-bit float where it is
// computed, or cut to its largest entries (top-k, the rest carried to the next step), crosses
// to the variable's task in fewer bytes, and is made whole again there.
#ifndef RILL_RUNTIME_TRAINING_GRADIENT_COMPRESSION_H_
#define RILL_RUNTIME_TRAINING_GRADIENT_COMPRESSION_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/scope.h"
#include "graph/types.h"
#include "ops/variable.h"
#include "runtime/training/optimizer.h"

namespace rill {

struct GradientCompression {
  // DT_HALF or DT_BFLOAT16; DT_INVALID leaves the gradients as they are. bfloat16 keeps float's
  // range (a gradient never overflows) with 8 bits of mantissa; half keeps 11 bits but flushes
  // what is under 6e-8 to zero and overflows past 65504.
  DataType wire_type = DT_INVALID;
  // In (0, 1): of each gradient, only this fraction of its entries (at least one), the largest
  // by magnitude, travels, as int32 indices and values (in wire_type when set). What is left
  // out stays in a residual beside the gradient and is added to the next step's (error
  // feedback, as in Deep Gradient Compression), so no update is lost, only delayed. 0: all.
  double top_k = 0;
  // Top-k leaves gradients of fewer entries whole (in wire_type when set): their indices
  // would cost about what they save.
  int64_t top_k_min_elements = 1024;
  // Deep Gradient Compression's warm-up: over a worker's first top_k_warmup_steps steps the
  // fraction sent falls exponentially from every entry to top_k, so that the first steps, where
  // gradients change fastest and residuals would grow largest, are not held back. 0: top_k from
  // the first step.
  int64_t top_k_warmup_steps = 0;
  // Where the residuals live: this worker's device ("/job:worker/task:1"). They are the
  // worker's own (local) variables.
  std::string local_device;
  // The variables (by name) whose gradients are compressed; empty: every float gradient.
  std::set<std::string> variables;
};

// "none", "float16"/"fp16"/"half", "bfloat16"/"bf16", or "topk:FRACTION[:WARMUP_STEPS]" with an
// optional "+fp16" or "+bf16" for the values ("topk:0.01+bf16", "topk:0.1:500"), as a flag gives
// it. INVALID_ARGUMENT names what is accepted.
absl::StatusOr<GradientCompression> ParseGradientCompression(std::string_view text);

struct CompressedGradients {
  std::vector<GradientAndVariable> gradients;
  // Top-k's residuals, one per compressed gradient, and with a warm-up the worker's step count:
  // local variables, neither the chief's to initialize nor a checkpoint's.
  std::vector<Variable> residuals;
  // Zeroes the residuals: every worker runs it, as a local init op. Null without residuals.
  Operation residuals_init;
};

// `gradients` with each float gradient that `compression` names replaced by what its
// variable's task rebuilds from the narrow form: Cast(Cast(g, wire_type) colocated with g,
// float) colocated with the variable, or for top-k a dense gradient stitched from the sent
// indices and values. Use before ApplyGradients (or SyncReplicasOptimizer's, whose accumulators
// live with the variables). Errors: a variable named that has no gradient or is not among
// `gradients`, a wire type that is not a 16-bit float, a top_k outside [0, 1), top-k without a
// local device, a variable whose shape is not known.
absl::StatusOr<CompressedGradients> CompressGradients(const Scope& scope,
                                                      std::vector<GradientAndVariable> gradients,
                                                      const GradientCompression& compression);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_GRADIENT_COMPRESSION_H_
