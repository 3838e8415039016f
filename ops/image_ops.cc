// Image ops: ResizeBilinear and its gradient, which Keras's Resizing layer
// emits. Names, args and attrs are TensorFlow's.
#include <cstdint>
#include <optional>
#include <vector>

#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

namespace rill {
namespace {

// [batch, size[0], size[1], channels], the sizes when `size` is known.
absl::Status ResizeShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(const PartialTensorShape images, c.WithRank(c.input(0), 4, 0));
  ASSIGN_OR_RETURN(const PartialTensorShape size, c.WithRank(c.input(1), 1, 1));
  if (size.dim_size(0) >= 0 && size.dim_size(0) != 2) {
    return ShapeError("size must hold 2 values (height, width), got shape %s", size.DebugString());
  }
  ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> known, c.InputAsInt64s(1));
  int64_t height = -1, width = -1;
  if (known.has_value() && known->size() == 2) {
    height = (*known)[0];
    width = (*known)[1];
    if (height < 0 || width < 0) {
      return ShapeError("size must be non-negative, got [%d, %d]", height, width);
    }
  }
  return c.SetOutputDims(0, {images.dim_size(0), height, width, images.dim_size(3)});
}

absl::Status ResizeGradShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(const PartialTensorShape image, c.WithRank(c.input(1), 4, 1));
  RETURN_IF_ERROR(c.WithRank(c.input(0), 4, 0).status());
  c.set_output(0, image);
  return absl::OkStatus();
}

}  // namespace

void RegisterImageOps(OpRegistry& r) {
  r.Add(OpDefBuilder("ResizeBilinear")
            .Input("images: T")
            .Input("size: int32")
            .Output("resized_images: float")
            .Attr("T: {int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, double}")
            .Attr("align_corners: bool = false")
            .Attr("half_pixel_centers: bool = false")
            .SetShapeFn(ResizeShape));
  r.Add(OpDefBuilder("ResizeBilinearGrad")
            .Input("grads: float")
            .Input("original_image: T")
            .Output("output: T")
            .Attr("T: {float, bfloat16, half, double}")
            .Attr("align_corners: bool = false")
            .Attr("half_pixel_centers: bool = false")
            .SetShapeFn(ResizeGradShape));
}

}  // namespace rill
