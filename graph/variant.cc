#include "graph/variant.h"

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor_list.h"

namespace rill {

std::string Variant::DebugString() const {
  return empty() ? "Variant<empty>" : value_->DebugString();
}

VariantTensorDataProto EncodeVariant(const Variant& variant) {
  VariantTensorDataProto proto;
  if (variant.empty()) return proto;
  proto.set_type_name(variant.TypeName());
  variant.get<VariantValue>()->Encode(&proto);
  return proto;
}

absl::StatusOr<Variant> DecodeVariant(const VariantTensorDataProto& proto) {
  if (proto.type_name().empty() && proto.metadata().empty() && proto.tensors_size() == 0) {
    return Variant();
  }
  if (proto.type_name() == TensorList::kTypeName) {
    ASSIGN_OR_RETURN(TensorList list, TensorList::Decode(proto));
    return Variant(std::make_shared<const TensorList>(std::move(list)));
  }
  return absl::InvalidArgumentError(absl::StrFormat("a variant of type '%s': rill decodes only %s",
                                                    proto.type_name(), TensorList::kTypeName));
}

}  // namespace rill
