#include "runtime/training/gradient_compression.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "ops/ops.h"

namespace rill {

absl::StatusOr<DataType> ParseGradientWireType(std::string_view name) {
  if (name == "none") return DT_INVALID;
  if (name == "float16" || name == "fp16" || name == "half") return DT_HALF;
  if (name == "bfloat16" || name == "bf16") return DT_BFLOAT16;
  return absl::InvalidArgumentError(absl::StrFormat(
      "gradient compression '%s': expected none, float16 (fp16) or bfloat16 (bf16)", name));
}

absl::StatusOr<std::vector<GradientAndVariable>> CompressGradients(
    const Scope& scope, std::vector<GradientAndVariable> gradients,
    const GradientCompression& compression) {
  if (compression.wire_type == DT_INVALID) return gradients;
  if (compression.wire_type != DT_HALF && compression.wire_type != DT_BFLOAT16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "gradients travel as float16 or bfloat16, not %s", DataTypeString(compression.wire_type)));
  }
  std::set<std::string> unmatched = compression.variables;
  for (GradientAndVariable& pair : gradients) {
    const std::string& name = pair.variable.name();
    if (!compression.variables.empty()) {
      if (unmatched.erase(name) == 0) continue;
      if (pair.gradient.node() == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrFormat("variable '%s' has no gradient to compress", name));
      }
    }
    if (pair.gradient.node() == nullptr || BaseType(pair.gradient.type()) != DT_FLOAT) continue;
    const Scope named = scope.NewSubScope(name + "/wire");
    const Output narrow = ops::Cast(named.ColocateWith(pair.gradient.op()).WithOpName("narrow"),
                                    pair.gradient, compression.wire_type);
    pair.gradient = ops::Cast(named.ColocateOnlyWith(pair.variable.ref().op()).WithOpName("wide"),
                              narrow, DT_FLOAT);
  }
  if (!unmatched.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "gradient compression names variable '%s', which is not among those trained",
        *unmatched.begin()));
  }
  RETURN_IF_ERROR(scope.status());
  return gradients;
}

}  // namespace rill
