// What the CPU and GPU random kernels share: the generator's seed from the
// seed and seed2 attrs, and the output shape from the shape input.
#ifndef RILL_KERNELS_COMMON_RANDOM_UTIL_H_
#define RILL_KERNELS_COMMON_RANDOM_UTIL_H_

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "graph/node_def_util.h"
#include "graph/proto/node_def.pb.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"

namespace rill::rng {

// As TensorFlow: when seed or seed2 is non-zero the generator starts from a
// state derived from both, so a program that runs the op repeatedly sees
// the same sequence of tensors on every execution; when both are zero it
// is seeded from std::random_device.
inline absl::StatusOr<uint64_t> SeedFromAttrs(const NodeDef& node) {
  ASSIGN_OR_RETURN(int64_t seed, GetIntAttr(node, "seed"));
  ASSIGN_OR_RETURN(int64_t seed2, GetIntAttr(node, "seed2"));
  if (seed == 0 && seed2 == 0) {
    std::random_device device;
    return (uint64_t{device()} << 32) ^ device();
  }
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
  uint32_t words[2];
  seq.generate(words, words + 2);
  return (uint64_t{words[0]} << 32) | words[1];
}

// The output shape that the int32 or int64 vector `shape` gives, or
// INVALID_ARGUMENT naming `op`.
inline absl::StatusOr<TensorShape> OutputShape(const Tensor& shape, std::string_view op) {
  if (shape.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: shape must be a vector, got shape %s",
                                                      op, shape.shape().DebugString()));
  }
  std::vector<int64_t> dims(shape.NumElements());
  for (size_t i = 0; i < dims.size(); ++i) {
    dims[i] = shape.dtype() == DT_INT32 ? shape.data<int32_t>()[i] : shape.data<int64_t>()[i];
  }
  return TensorShape::Create(absl::MakeConstSpan(dims));
}

}  // namespace rill::rng

#endif  // RILL_KERNELS_COMMON_RANDOM_UTIL_H_
