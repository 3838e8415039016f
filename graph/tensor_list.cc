#include "graph/tensor_list.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor_proto_util.h"

namespace rill {
namespace {

void PutVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Reads a varint at *pos of `bytes`, advancing it.
absl::StatusOr<uint64_t> GetVarint(std::string_view bytes, size_t* pos, const char* what) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && *pos < bytes.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(bytes[(*pos)++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("TensorList metadata: %s is not a varint at byte %d", what, *pos));
}

absl::Status BadList(const std::string& why) {
  return absl::InvalidArgumentError("a TensorList variant: " + why);
}

}  // namespace

std::string TensorList::DebugString() const {
  return absl::StrFormat("TensorList<%s, %s>[%d]", DataTypeString(element_dtype),
                         element_shape.DebugString(), tensors.size());
}

void TensorList::Encode(VariantTensorDataProto* proto) const {
  std::vector<size_t> unset;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].IsInitialized()) {
      *proto->add_tensors() = TensorToProto(tensors[i]);
    } else {
      unset.push_back(i);
    }
  }
  std::string metadata;
  PutVarint(unset.size(), &metadata);
  for (size_t i : unset) PutVarint(i, &metadata);
  PutVarint(static_cast<uint64_t>(element_dtype), &metadata);
  PutVarint(static_cast<uint64_t>(static_cast<int64_t>(max_num_elements)), &metadata);
  element_shape.AsProto().AppendToString(&metadata);
  proto->set_metadata(std::move(metadata));
}

absl::StatusOr<TensorList> TensorList::Decode(const VariantTensorDataProto& proto) {
  const std::string_view metadata = proto.metadata();
  size_t pos = 0;
  ASSIGN_OR_RETURN(const uint64_t num_unset, GetVarint(metadata, &pos, "the unset count"));
  const auto num_set = static_cast<uint64_t>(proto.tensors_size());
  if (num_unset > metadata.size()) {
    return BadList(
        absl::StrFormat("%d unset elements in %d bytes of metadata", num_unset, metadata.size()));
  }
  TensorList list;
  list.tensors.reserve(num_set + num_unset);
  int next_set = 0;
  for (uint64_t k = 0; k < num_unset; ++k) {
    ASSIGN_OR_RETURN(const uint64_t index, GetVarint(metadata, &pos, "an unset index"));
    if (index >= num_set + num_unset || index < list.tensors.size()) {
      return BadList(absl::StrFormat("unset index %d is out of order or past the %d elements",
                                     index, num_set + num_unset));
    }
    while (list.tensors.size() < index) {
      if (next_set == proto.tensors_size()) return BadList("fewer elements than its indices say");
      ASSIGN_OR_RETURN(Tensor t, TensorFromProto(proto.tensors(next_set++)));
      list.tensors.push_back(std::move(t));
    }
    list.tensors.emplace_back();
  }
  while (next_set < proto.tensors_size()) {
    ASSIGN_OR_RETURN(Tensor t, TensorFromProto(proto.tensors(next_set++)));
    list.tensors.push_back(std::move(t));
  }
  ASSIGN_OR_RETURN(const uint64_t dtype, GetVarint(metadata, &pos, "the element dtype"));
  if (dtype > static_cast<uint64_t>(std::numeric_limits<int>::max()) ||
      !DataType_IsValid(static_cast<int>(dtype))) {
    return BadList(absl::StrFormat("element dtype %d is not a DataType", dtype));
  }
  list.element_dtype = static_cast<DataType>(dtype);
  ASSIGN_OR_RETURN(const uint64_t max, GetVarint(metadata, &pos, "max_num_elements"));
  if (max == std::numeric_limits<uint64_t>::max()) {
    list.max_num_elements = -1;
  } else if (max > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    return BadList(absl::StrFormat("max_num_elements %d is too large", max));
  } else {
    list.max_num_elements = static_cast<int>(max);
  }
  TensorShapeProto shape;
  if (!shape.ParseFromArray(metadata.data() + pos, static_cast<int>(metadata.size() - pos))) {
    return BadList(absl::StrFormat("the element shape at metadata byte %d does not parse", pos));
  }
  ASSIGN_OR_RETURN(list.element_shape, PartialTensorShape::FromProto(shape));
  for (const Tensor& t : list.tensors) {
    if (t.IsInitialized() && t.dtype() != list.element_dtype) {
      return BadList(absl::StrFormat("an element of type %s in a list of %s",
                                     DataTypeString(t.dtype()),
                                     DataTypeString(list.element_dtype)));
    }
  }
  return list;
}

}  // namespace rill
