// Variant: the element type of DT_VARIANT tensors, an immutable value of
// some kind (a TensorList) that copies share, and its TensorProto wire form.
#ifndef RILL_GRAPH_VARIANT_H_
#define RILL_GRAPH_VARIANT_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "graph/proto/tensor.pb.h"

namespace rill {

// One kind of value a variant holds. Immutable once made: kernels that
// change a value make a new one, so a tensor a consumer still reads never
// changes under it.
class VariantValue {
 public:
  virtual ~VariantValue() = default;
  // TensorFlow's name for the kind ("tensorflow::TensorList"), which its
  // wire form carries.
  virtual std::string TypeName() const = 0;
  virtual std::string DebugString() const = 0;
  // Fills proto's metadata and tensors (type_name is set by the caller).
  virtual void Encode(VariantTensorDataProto* proto) const = 0;
};

// A default-made Variant holds nothing (TensorFlow's empty variant).
// Copies share the value.
class Variant {
 public:
  Variant() = default;
  explicit Variant(std::shared_ptr<const VariantValue> value) : value_(std::move(value)) {}

  bool empty() const { return value_ == nullptr; }
  // The value as a T, or null when it holds something else (or nothing).
  template <typename T>
  const T* get() const {
    return dynamic_cast<const T*>(value_.get());
  }
  std::string TypeName() const { return empty() ? "" : value_->TypeName(); }
  std::string DebugString() const;

  // The same value (not an equal one): variants have no value equality.
  friend bool operator==(const Variant& a, const Variant& b) { return a.value_ == b.value_; }

 private:
  std::shared_ptr<const VariantValue> value_;
};

VariantTensorDataProto EncodeVariant(const Variant& variant);
// INVALID_ARGUMENT naming the type for a kind rill does not know, or a
// malformed value of one it does.
absl::StatusOr<Variant> DecodeVariant(const VariantTensorDataProto& proto);

}  // namespace rill

#endif  // RILL_GRAPH_VARIANT_H_
