// TensorList: the value of TensorFlow's DT_VARIANT lists (TensorListReserve,
// TensorListSetItem, ...), and its wire form, byte for byte TensorFlow's.
#ifndef RILL_GRAPH_TENSOR_LIST_H_
#define RILL_GRAPH_TENSOR_LIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"
#include "graph/variant.h"

namespace rill {

// A list of tensors of one dtype whose shapes match `element_shape`. Held
// in a Variant, so immutable once made: an op that changes a list makes a
// new one, which shares the element tensors' buffers.
struct TensorList final : public VariantValue {
  static constexpr char kTypeName[] = "tensorflow::TensorList";

  DataType element_dtype = DT_INVALID;
  PartialTensorShape element_shape;  // Unknown rank: any shape.
  int max_num_elements = -1;         // -1: no limit.
  // An uninitialized tensor is an element not set yet (TensorFlow's
  // DT_INVALID tensor), which reads as zeros of the element shape.
  std::vector<Tensor> tensors;

  std::string TypeName() const override { return kTypeName; }
  std::string DebugString() const override;
  // TensorFlow's TensorList::Encode: the set elements as tensors, and in
  // the metadata the unset indices, the dtype, the limit (2^64 - 1 for
  // none) and the element shape, as varints and a TensorShapeProto.
  void Encode(VariantTensorDataProto* proto) const override;
  // INVALID_ARGUMENT naming the field for metadata that does not parse or
  // indices that do not fit the tensors.
  static absl::StatusOr<TensorList> Decode(const VariantTensorDataProto& proto);
};

}  // namespace rill

#endif  // RILL_GRAPH_TENSOR_LIST_H_
