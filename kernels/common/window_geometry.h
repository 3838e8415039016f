// Sliding-window geometry shared by the convolution and pooling kernels:
// the strides, dilations and padding attrs of an NHWC node, and the output
// size and leading padding along one spatial dimension (ops/window_size.h).
#ifndef RILL_KERNELS_COMMON_WINDOW_GEOMETRY_H_
#define RILL_KERNELS_COMMON_WINDOW_GEOMETRY_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/proto/node_def.pb.h"
#include "graph/status_macros.h"
#include "ops/window_size.h"

namespace rill::window {

using Padding = WindowPadding;

// Height and width entries of the strides, dilations (or ksize) and
// explicit padding attrs of an NHWC node.
struct WindowAttrs {
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 2> dilations = {1, 1};
  Padding padding = Padding::kValid;
  // Before and after, for height then width (EXPLICIT only).
  std::array<int64_t, 4> explicit_pads = {0, 0, 0, 0};
};

// The height and width entries of the 4-entry NHWC list attr `name`, whose
// batch and channel entries must be 1.
inline absl::StatusOr<std::array<int64_t, 2>> ReadSpatialPair(const NodeDef& node,
                                                              std::string_view name) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, GetIntListAttr(node, name));
  if (v.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must have 4 entries, but has %d", name, v.size()));
  }
  if (v[0] != 1 || v[3] != 1) {
    return absl::UnimplementedError(
        absl::StrFormat("%s over the batch or channel dimension is not supported", name));
  }
  if (v[1] <= 0 || v[2] <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s entries must be positive", name));
  }
  return std::array<int64_t, 2>{v[1], v[2]};
}

// Reads data_format (only NHWC runs on the CPU, as in TensorFlow), strides,
// padding, explicit_paddings when the op has it and dilations when
// `dilated`.
inline absl::StatusOr<WindowAttrs> ReadWindowAttrs(const NodeDef& node, bool dilated) {
  if (node.attr().contains("data_format")) {
    ASSIGN_OR_RETURN(std::string format, GetStringAttr(node, "data_format"));
    if (format != "NHWC") {
      return absl::UnimplementedError(absl::StrFormat(
          "%s on the CPU supports only the NHWC data format, not %s", node.op(), format));
    }
  }
  WindowAttrs attrs;
  ASSIGN_OR_RETURN(attrs.strides, ReadSpatialPair(node, "strides"));
  if (dilated) {
    ASSIGN_OR_RETURN(attrs.dilations, ReadSpatialPair(node, "dilations"));
  }
  ASSIGN_OR_RETURN(std::string padding, GetStringAttr(node, "padding"));
  if (padding == "SAME") {
    attrs.padding = Padding::kSame;
  } else if (padding == "VALID") {
    attrs.padding = Padding::kValid;
  } else {
    attrs.padding = Padding::kExplicit;
    ASSIGN_OR_RETURN(std::vector<int64_t> pads, GetIntListAttr(node, "explicit_paddings"));
    if (pads.size() != 8 || pads[0] + pads[1] + pads[6] + pads[7] != 0) {
      return absl::InvalidArgumentError(
          "explicit_paddings must have 8 entries and pad only height and width");
    }
    for (int i = 0; i < 4; ++i) {
      if (pads[2 + i] < 0) {
        return absl::InvalidArgumentError("explicit_paddings must be non-negative");
      }
      attrs.explicit_pads[i] = pads[2 + i];
    }
  }
  return attrs;
}

// Where the window runs along one spatial dimension.
struct DimWindow {
  int64_t input = 0;
  int64_t window = 0;
  int64_t dilation = 1;
  int64_t stride = 1;
  int64_t pad_before = 0;
  int64_t output = 0;
};

// The output size and leading padding along spatial dimension `dim`
// (0 height, 1 width); INVALID_ARGUMENT when the window does not fit.
inline absl::StatusOr<DimWindow> ComputeDimWindow(const WindowAttrs& attrs, int dim, int64_t input,
                                                  int64_t window) {
  if (window <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("window size %d along dimension %d must be positive", window, dim + 1));
  }
  const int64_t pad_before = attrs.padding == Padding::kExplicit ? attrs.explicit_pads[2 * dim] : 0;
  const int64_t pad_after =
      attrs.padding == Padding::kExplicit ? attrs.explicit_pads[2 * dim + 1] : 0;
  absl::StatusOr<WindowSize> size =
      ComputeWindowSize(input, window, attrs.dilations[dim], attrs.strides[dim], attrs.padding,
                        pad_before, pad_after);
  if (!size.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("along dimension %d: %s", dim + 1, size.status().message()));
  }
  return DimWindow{input,       window, attrs.dilations[dim], attrs.strides[dim], size->pad_before,
                   size->output};
}

}  // namespace rill::window

#endif  // RILL_KERNELS_COMMON_WINDOW_GEOMETRY_H_
