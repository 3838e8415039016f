#include "graph/tensor_proto_util.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/variant.h"

namespace rill {

// tensor_content is little-endian; buffers are copied to and from it as is.
static_assert(std::endian::native == std::endian::little, "rill assumes a little-endian host");

namespace {

template <typename T>
inline constexpr bool kIsComplex = std::is_same_v<T, complex64> || std::is_same_v<T, complex128>;
template <typename T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

// The typed field of TensorProto that holds values of each element type.
struct FloatVal {
  static constexpr std::string_view kName = "float_val";
  static const auto& Get(const TensorProto& p) { return p.float_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_float_val(); }
};
struct DoubleVal {
  static constexpr std::string_view kName = "double_val";
  static const auto& Get(const TensorProto& p) { return p.double_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_double_val(); }
};
struct IntVal {
  static constexpr std::string_view kName = "int_val";
  static const auto& Get(const TensorProto& p) { return p.int_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_int_val(); }
};
struct Int64Val {
  static constexpr std::string_view kName = "int64_val";
  static const auto& Get(const TensorProto& p) { return p.int64_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_int64_val(); }
};
struct BoolVal {
  static constexpr std::string_view kName = "bool_val";
  static const auto& Get(const TensorProto& p) { return p.bool_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_bool_val(); }
};
struct HalfVal {
  static constexpr std::string_view kName = "half_val";
  static const auto& Get(const TensorProto& p) { return p.half_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_half_val(); }
};
struct StringVal {
  static constexpr std::string_view kName = "string_val";
  static const auto& Get(const TensorProto& p) { return p.string_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_string_val(); }
};
struct Uint32Val {
  static constexpr std::string_view kName = "uint32_val";
  static const auto& Get(const TensorProto& p) { return p.uint32_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_uint32_val(); }
};
struct Uint64Val {
  static constexpr std::string_view kName = "uint64_val";
  static const auto& Get(const TensorProto& p) { return p.uint64_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_uint64_val(); }
};
struct ScomplexVal {
  static constexpr std::string_view kName = "scomplex_val";
  static const auto& Get(const TensorProto& p) { return p.scomplex_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_scomplex_val(); }
};
struct DcomplexVal {
  static constexpr std::string_view kName = "dcomplex_val";
  static const auto& Get(const TensorProto& p) { return p.dcomplex_val(); }
  static auto* Mutable(TensorProto* p) { return p->mutable_dcomplex_val(); }
};

template <typename T>
struct FieldFor;
// clang-format off
template <> struct FieldFor<float> : FloatVal {};
template <> struct FieldFor<double> : DoubleVal {};
template <> struct FieldFor<int32_t> : IntVal {};
template <> struct FieldFor<int16_t> : IntVal {};
template <> struct FieldFor<int8_t> : IntVal {};
template <> struct FieldFor<uint8_t> : IntVal {};
template <> struct FieldFor<uint16_t> : IntVal {};
template <> struct FieldFor<int64_t> : Int64Val {};
template <> struct FieldFor<bool> : BoolVal {};
template <> struct FieldFor<half> : HalfVal {};
template <> struct FieldFor<bfloat16> : HalfVal {};
template <> struct FieldFor<std::string> : StringVal {};
template <> struct FieldFor<uint32_t> : Uint32Val {};
template <> struct FieldFor<uint64_t> : Uint64Val {};
template <> struct FieldFor<complex64> : ScomplexVal {};
template <> struct FieldFor<complex128> : DcomplexVal {};
// clang-format on

// Wire values per element: complex numbers are (real, imaginary) pairs.
template <typename T>
inline constexpr int kWirePerElement = kIsComplex<T> ? 2 : 1;

// The first non-empty typed field, for telling the user that values went to
// the wrong field.
std::string_view FirstNonEmptyField(const TensorProto& p) {
  const std::pair<std::string_view, int> fields[] = {
      {FloatVal::kName, p.float_val_size()},
      {DoubleVal::kName, p.double_val_size()},
      {IntVal::kName, p.int_val_size()},
      {Int64Val::kName, p.int64_val_size()},
      {BoolVal::kName, p.bool_val_size()},
      {HalfVal::kName, p.half_val_size()},
      {StringVal::kName, p.string_val_size()},
      {Uint32Val::kName, p.uint32_val_size()},
      {Uint64Val::kName, p.uint64_val_size()},
      {ScomplexVal::kName, p.scomplex_val_size()},
      {DcomplexVal::kName, p.dcomplex_val_size()},
      {"resource_handle_val", p.resource_handle_val_size()},
      {"variant_val", p.variant_val_size()},
  };
  for (const auto& [name, size] : fields) {
    if (size > 0) return name;
  }
  return {};
}

// Element `i` of the typed field, checked to fit T where the wire type is
// wider.
template <typename T>
absl::StatusOr<T> ReadValue(const TensorProto& proto, int i, DataType dtype) {
  const auto& field = FieldFor<T>::Get(proto);
  if constexpr (kIsComplex<T>) {
    return T(field[2 * i], field[2 * i + 1]);
  } else if constexpr (kIsHalfLike<T>) {
    const int32_t bits = field[i];
    if (bits < 0 || bits > 0xFFFF) {
      return absl::InvalidArgumentError(
          absl::StrFormat("half_val[%d] = %d is not a 16-bit pattern for dtype %s", i, bits,
                          DataTypeString(dtype)));
    }
    return Eigen::numext::bit_cast<T>(static_cast<uint16_t>(bits));
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) < 4) {
    const int32_t value = field[i];
    if (!std::in_range<T>(value)) {
      return absl::InvalidArgumentError(absl::StrFormat("int_val[%d] = %d is out of range for %s",
                                                        i, value, DataTypeString(dtype)));
    }
    return static_cast<T>(value);
  } else {
    return static_cast<T>(field[i]);
  }
}

template <typename T>
void AppendValue(const T& value, TensorProto* proto) {
  auto* field = FieldFor<T>::Mutable(proto);
  if constexpr (kIsComplex<T>) {
    field->Add(value.real());
    field->Add(value.imag());
  } else if constexpr (kIsHalfLike<T>) {
    field->Add(Eigen::numext::bit_cast<uint16_t>(value));
  } else if constexpr (std::is_same_v<T, std::string>) {
    *field->Add() = value;
  } else {
    field->Add(value);
  }
}

// Checks the typed field against `shape` before anything is allocated.
// Fewer values than elements is TensorFlow's repeat-last-value rule (a
// zeros initializer carries one value), so only more values is an error.
template <typename T>
absl::Status CheckTypedValues(const TensorProto& proto, DataType dtype, const TensorShape& shape) {
  const int wire_size = FieldFor<T>::Get(proto).size();
  if (wire_size % kWirePerElement<T> != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s has %d values; %s elements are (real, imaginary) pairs",
                        FieldFor<T>::kName, wire_size, DataTypeString(dtype)));
  }
  const int given = wire_size / kWirePerElement<T>;
  if (given > shape.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s has %d values but shape %s has only %d elements", FieldFor<T>::kName,
                        given, shape.DebugString(), shape.num_elements()));
  }
  if (given == 0) {
    const std::string_view other = FirstNonEmptyField(proto);
    if (!other.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s given for a tensor of dtype %s (its values belong in %s)", other,
                          DataTypeString(dtype), FieldFor<T>::kName));
    }
  }
  return absl::OkStatus();
}

// REQUIRES: CheckTypedValues passed for the tensor's shape.
template <typename T>
absl::Status DecodeTypedValues(const TensorProto& proto, Tensor& tensor) {
  const int given = FieldFor<T>::Get(proto).size() / kWirePerElement<T>;
  const int64_t num_elements = tensor.NumElements();
  T* out = tensor.data<T>();
  if (given == 0) {
    std::fill_n(out, num_elements, T{});
    return absl::OkStatus();
  }
  for (int i = 0; i < given; ++i) {
    ASSIGN_OR_RETURN(out[i], ReadValue<T>(proto, i, tensor.dtype()));
  }
  std::fill(out + given, out + num_elements, out[given - 1]);
  return absl::OkStatus();
}

// Checks tensor_content against `shape` before anything is allocated: its
// size must be exactly the shape's.
template <typename T>
absl::Status CheckContent(const TensorProto& proto, DataType dtype, const TensorShape& shape) {
  const std::string_view typed = FirstNonEmptyField(proto);
  if (!typed.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("both tensor_content and %s are set; only one may hold the values", typed));
  }
  if constexpr (std::is_same_v<T, std::string>) {
    return absl::InvalidArgumentError(
        "tensor_content is not supported for string tensors; use string_val");
  } else {
    const size_t size = proto.tensor_content().size();
    size_t expected = 0;
    if (__builtin_mul_overflow(static_cast<size_t>(shape.num_elements()), sizeof(T), &expected)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor_content has %d bytes but a %s tensor of shape %s needs more bytes than fit in "
          "memory",
          size, DataTypeString(dtype), shape.DebugString()));
    }
    if (size != expected) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor_content has %d bytes but a %s tensor of shape %s needs %d bytes",
                          size, DataTypeString(dtype), shape.DebugString(), expected));
    }
    return absl::OkStatus();
  }
}

// REQUIRES: CheckContent passed for the tensor's shape.
template <typename T>
void DecodeContent(const TensorProto& proto, Tensor& tensor) {
  if constexpr (!std::is_same_v<T, std::string>) {
    const std::string& content = proto.tensor_content();
    if constexpr (std::is_same_v<T, bool>) {
      // Any non-zero byte is true; copying it unchanged into a bool would
      // leave an invalid bool representation.
      std::transform(content.begin(), content.end(), tensor.data<bool>(),
                     [](char c) { return c != 0; });
    } else {
      std::memcpy(tensor.raw_data(), content.data(), content.size());
    }
  }
}

absl::Status CheckDecodableDtype(DataType dtype) {
  if (dtype == DT_INVALID) {
    return absl::InvalidArgumentError("TensorProto has dtype DT_INVALID (no dtype set)");
  }
  if (IsRefType(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TensorProto has reference dtype %s; a tensor holds values, not references",
                        DataTypeString(dtype)));
  }
  switch (dtype) {
    case DT_RESOURCE:
    case DT_QINT8:
    case DT_QUINT8:
    case DT_QINT16:
    case DT_QUINT16:
    case DT_QINT32:
      return absl::UnimplementedError(
          absl::StrFormat("TensorProto of dtype %s is not supported", DataTypeString(dtype)));
    default:
      break;
  }
  if (dtype != DT_VARIANT && !DataTypeCanBeStored(dtype)) {
    return absl::InvalidArgumentError(absl::StrFormat("TensorProto has %s", DataTypeString(dtype)));
  }
  return absl::OkStatus();
}

// Index one past the last element that differs from the final one: writing
// values [0, end) is enough for the repeat-last rule to restore the rest.
template <typename T>
int64_t EndOfDistinctValues(const T* values, int64_t n) {
  const auto same = [](const T& a, const T& b) {
    if constexpr (std::is_same_v<T, std::string>) {
      return a == b;
    } else {
      // Bitwise, so that -0.0 and NaN payloads survive.
      return std::memcmp(&a, &b, sizeof(T)) == 0;
    }
  };
  int64_t end = n;
  while (end > 1 && same(values[end - 2], values[n - 1])) --end;
  return end;
}

// Variants come one per element in variant_val (none: all empty).
absl::StatusOr<Tensor> VariantsFromProto(const TensorProto& proto, const TensorShape& shape,
                                         Allocator* allocator) {
  if (!proto.tensor_content().empty()) {
    return absl::InvalidArgumentError("tensor_content is not supported for variant tensors");
  }
  const int given = proto.variant_val_size();
  if (given != 0 && given != shape.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("variant_val has %d values but a variant tensor of shape %s has %d "
                        "elements",
                        given, shape.DebugString(), shape.num_elements()));
  }
  ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(allocator, DT_VARIANT, shape));
  for (int i = 0; i < given; ++i) {
    absl::StatusOr<Variant> value = DecodeVariant(proto.variant_val(i));
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("variant_val %d: %s", i, value.status().message()));
    }
    tensor.data<Variant>()[i] = *std::move(value);
  }
  return tensor;
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const TensorProto& proto, Allocator* allocator) {
  const DataType dtype = proto.dtype();
  RETURN_IF_ERROR(CheckDecodableDtype(dtype));
  absl::StatusOr<TensorShape> shape = TensorShape::FromProto(proto.tensor_shape());
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TensorProto has an invalid shape: %s", shape.status().message()));
  }
  if (dtype == DT_VARIANT) return VariantsFromProto(proto, *shape, allocator);
  const bool from_content = !proto.tensor_content().empty();
  return DispatchType(
      dtype,
      [&]<typename T>() -> absl::StatusOr<Tensor> {
        if (from_content) {
          RETURN_IF_ERROR(CheckContent<T>(proto, dtype, *shape));
          ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(allocator, dtype, *shape));
          DecodeContent<T>(proto, tensor);
          return tensor;
        }
        RETURN_IF_ERROR(CheckTypedValues<T>(proto, dtype, *shape));
        ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(allocator, dtype, *shape));
        RETURN_IF_ERROR(DecodeTypedValues<T>(proto, tensor));
        return tensor;
      },
      []() -> absl::StatusOr<Tensor> { return absl::InternalError("dtype checked above"); });
}

TensorProto TensorToProto(const Tensor& tensor, TensorProtoEncoding encoding) {
  TensorProto proto;
  proto.set_dtype(tensor.dtype());
  tensor.shape().AsProto(proto.mutable_tensor_shape());
  if (!tensor.IsInitialized()) return proto;
  if (tensor.dtype() == DT_VARIANT) {
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      *proto.add_variant_val() = EncodeVariant(tensor.data<Variant>()[i]);
    }
    return proto;
  }
  DispatchType(
      tensor.dtype(),
      [&]<typename T>() {
        const T* values = tensor.data<T>();
        const int64_t n = tensor.NumElements();
        if constexpr (!std::is_same_v<T, std::string>) {
          if (encoding == TensorProtoEncoding::kContent) {
            proto.set_tensor_content(tensor.raw_data(), tensor.TotalBytes());
            return;
          }
        }
        const int64_t end =
            encoding == TensorProtoEncoding::kTypedValues ? EndOfDistinctValues(values, n) : n;
        FieldFor<T>::Mutable(&proto)->Reserve(static_cast<int>(end * kWirePerElement<T>));
        for (int64_t i = 0; i < end; ++i) AppendValue(values[i], &proto);
      },
      [] {});
  return proto;
}

}  // namespace rill
