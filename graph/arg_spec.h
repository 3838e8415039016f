// Parses an input or output spec of TensorFlow's op syntax ("x: T",
// "values: N * T", "ref: Ref(T)", "y: float", "out: Tlist") into an ArgDef.
#ifndef RILL_GRAPH_ARG_SPEC_H_
#define RILL_GRAPH_ARG_SPEC_H_

#include <string_view>

#include "absl/status/status.h"
#include "graph/proto/op_def.pb.h"

namespace rill::op_spec {

// "name: T", "name: float", "name: N * T", "name: Tlist", "name: Ref(...)".
// The attrs the arg names must already be in `op_def`; an N of "N * T"
// gets a minimum of 1 unless it has one. INVALID_ARGUMENT saying what is
// malformed or which attr is missing or of the wrong type.
absl::Status ParseArgSpec(std::string_view spec, OpDef* op_def, OpDef::ArgDef* arg);

}  // namespace rill::op_spec

#endif  // RILL_GRAPH_ARG_SPEC_H_
