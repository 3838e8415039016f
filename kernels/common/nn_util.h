// Checks and geometry the neural-network kernels of every device share:
// bias data formats and the shapes of the softmax cross-entropy losses.
#ifndef RILL_KERNELS_COMMON_NN_UTIL_H_
#define RILL_KERNELS_COMMON_NN_UTIL_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/op_kernel.h"

namespace rill::nn_util {

// Reads data_format once: NHWC puts channels last, NCHW in dimension 1.
inline absl::StatusOr<bool> ReadIsNchw(const OpKernelConstruction& c) {
  ASSIGN_OR_RETURN(std::string format, GetStringAttr(c.def(), "data_format"));
  return format == "NCHW";
}

// The value viewed as [outer, channels, inner] for a channel dimension in
// position 1 (NCHW) or last (NHWC, inner = 1); INVALID_ARGUMENT when the
// rank is too small for the format.
inline absl::StatusOr<std::array<int64_t, 3>> ChannelView(const TensorShape& shape, bool nchw) {
  if (shape.dims() < (nchw ? 3 : 2)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Input tensor must be at least %d-D for data format %s, got shape %s",
                        nchw ? 3 : 2, nchw ? "NCHW" : "NHWC", shape.DebugString()));
  }
  const int channel = nchw ? 1 : shape.dims() - 1;
  std::array<int64_t, 3> view = {1, shape.dim_size(channel), 1};
  for (int i = 0; i < shape.dims(); ++i) {
    if (i < channel) view[0] *= shape.dim_size(i);
    if (i > channel) view[2] *= shape.dim_size(i);
  }
  return view;
}

// BiasAdd's value as ChannelView gives it, after checking that the bias
// is a vector with one entry per channel.
inline absl::StatusOr<std::array<int64_t, 3>> BiasAddView(const Tensor& value, const Tensor& bias,
                                                          bool nchw) {
  ASSIGN_OR_RETURN(const auto view, ChannelView(value.shape(), nchw));
  if (bias.dims() != 1 || bias.dim_size(0) != view[1]) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Must provide as many biases as the channel dimension of the input tensor: bias "
        "shape %s, value shape %s",
        bias.shape().DebugString(), value.shape().DebugString()));
  }
  return view;
}

// SoftmaxCrossEntropyWithLogits: logits and labels 2-D of one shape.
inline absl::Status CheckXentShapes(const Tensor& logits, const Tensor& labels) {
  if (logits.dims() != 2 || logits.shape() != labels.shape()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "logits and labels must be 2-D of the same size: logits_size=%s labels_size=%s",
        logits.shape().DebugString(), labels.shape().DebugString()));
  }
  return absl::OkStatus();
}

// SparseSoftmaxCrossEntropyWithLogits: 2-D logits, one label per row.
inline absl::Status CheckSparseXentShapes(const Tensor& logits, const Tensor& labels) {
  if (logits.dims() != 2 || labels.dims() != 1 || logits.dim_size(0) != labels.dim_size(0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "logits must be 2-D and labels 1-D with the same first dimension: logits shape %s, "
        "labels shape %s",
        logits.shape().DebugString(), labels.shape().DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace rill::nn_util

#endif  // RILL_KERNELS_COMMON_NN_UTIL_H_
