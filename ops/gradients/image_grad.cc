// Gradients of the image ops, after TensorFlow's image_grad.py:
// ResizeBilinear's is ResizeBilinearGrad, with the same sampling attrs.
#include <vector>

#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

absl::Status ResizeBilinearGrad(const Scope& s, const Operation& op, const std::vector<Output>& dy,
                                std::vector<Output>* dx) {
  ASSIGN_OR_RETURN(const bool align_corners, GetBoolAttr(grad::Def(op), "align_corners"));
  ASSIGN_OR_RETURN(const bool half_pixel_centers, GetBoolAttr(grad::Def(op), "half_pixel_centers"));
  *dx = {ops::ResizeBilinearGrad(s, dy[0], grad::In(op, 0),
                                 ops::ResizeBilinearGrad::AlignCorners(align_corners)
                                     .HalfPixelCenters(half_pixel_centers)),
         Output()};
  return absl::OkStatus();
}

}  // namespace

void RegisterImageGradients(GradientRegistry& r) {
  r.Register("ResizeBilinear", ResizeBilinearGrad);
  // No second derivative of a resize here.
  r.RegisterNoGradient("ResizeBilinearGrad");
}

}  // namespace rill
