// Parses an attr spec of TensorFlow's op syntax ("T: {float, double}",
// "N: int >= 1", "padding: {'SAME', 'VALID'} = 'SAME'") into an AttrDef.
#ifndef RILL_GRAPH_ATTR_SPEC_H_
#define RILL_GRAPH_ATTR_SPEC_H_

#include <string_view>

#include "absl/status/status.h"
#include "graph/proto/op_def.pb.h"

namespace rill::op_spec {

// "name: type [>= min] [= default]": fills the name, type, allowed values,
// minimum and default of `attr`. The default must itself be a valid value
// of the attr. INVALID_ARGUMENT saying what is malformed.
absl::Status ParseAttrSpec(std::string_view spec, OpDef::AttrDef* attr);

}  // namespace rill::op_spec

#endif  // RILL_GRAPH_ATTR_SPEC_H_
