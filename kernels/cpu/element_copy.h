// Copies runs of elements between tensors of one dtype, for the kernels
// that stack, split and gather whole elements (strings, handles and
// variants are objects, everything else plain bytes).
#ifndef RILL_KERNELS_CPU_ELEMENT_COPY_H_
#define RILL_KERNELS_CPU_ELEMENT_COPY_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "graph/tensor.h"

namespace rill {

// Copies `count` elements of `from`, starting at element `from_start`, to
// `to` from element `to_start`. REQUIRES: the same dtype, and both ranges
// inside their tensors.
inline void CopyTensorElements(const Tensor& from, int64_t from_start, const Tensor& to,
                               int64_t to_start, int64_t count) {
  if (count == 0) return;
  switch (BaseType(from.dtype())) {
    case DT_STRING:
      std::copy_n(from.data<std::string>() + from_start, count, to.data<std::string>() + to_start);
      return;
    case DT_RESOURCE:
      std::copy_n(from.data<ResourceHandleProto>() + from_start, count,
                  to.data<ResourceHandleProto>() + to_start);
      return;
    case DT_VARIANT:
      std::copy_n(from.data<Variant>() + from_start, count, to.data<Variant>() + to_start);
      return;
    default: {
      const size_t size = static_cast<size_t>(DataTypeSize(from.dtype()));
      std::memcpy(static_cast<char*>(to.raw_data()) + to_start * size,
                  static_cast<const char*>(from.raw_data()) + from_start * size, count * size);
    }
  }
}

}  // namespace rill

#endif  // RILL_KERNELS_CPU_ELEMENT_COPY_H_
