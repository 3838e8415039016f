#include "graph/tensor.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fmt/format.h"

namespace rill {
namespace {

[[noreturn]] void Fatal(const std::string& message) {
  std::fprintf(stderr, "rill: %s\n", message.c_str());
  std::abort();
}

// Bytes per element as stored in a buffer (sizeof(std::string) for strings);
// 0 for types a Tensor cannot hold.
size_t ElementSize(DataType dtype) {
  if (BaseType(dtype) == DT_RESOURCE) return sizeof(ResourceHandleProto);
  if (BaseType(dtype) == DT_VARIANT) return sizeof(Variant);
  return DispatchType(
      dtype, []<typename T>() { return sizeof(T); }, [] { return size_t{0}; });
}

bool CanBeStored(DataType dtype) {
  return DataTypeCanBeStored(dtype) || BaseType(dtype) == DT_RESOURCE ||
         BaseType(dtype) == DT_VARIANT;
}

// Whether elements are objects, constructed and destroyed with the buffer
// rather than plain bytes.
bool HoldsObjects(DataType dtype) {
  return BaseType(dtype) == DT_STRING || BaseType(dtype) == DT_RESOURCE ||
         BaseType(dtype) == DT_VARIANT;
}

// Calls `fn.template operator()<T>()` for the object element types.
template <typename Fn>
void ForObjectType(DataType dtype, Fn&& fn) {
  if (BaseType(dtype) == DT_STRING) {
    fn.template operator()<std::string>();
  } else if (BaseType(dtype) == DT_VARIANT) {
    fn.template operator()<Variant>();
  } else {
    fn.template operator()<ResourceHandleProto>();
  }
}

bool HandlesEqual(const ResourceHandleProto& a, const ResourceHandleProto& b) {
  return a.device() == b.device() && a.container() == b.container() && a.name() == b.name() &&
         a.hash_code() == b.hash_code() && a.maybe_type_name() == b.maybe_type_name();
}

template <typename T>
inline constexpr bool kIsComplex = std::is_same_v<T, complex64> || std::is_same_v<T, complex128>;
template <typename T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <typename T>
std::string FormatValue(const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    return absl::StrFormat("\"%s\"", absl::CHexEscape(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (kIsHalfLike<T>) {
    return fmt::format("{}", static_cast<float>(value));
  } else if constexpr (kIsComplex<T>) {
    return fmt::format("({},{})", value.real(), value.imag());
  } else if constexpr (sizeof(T) == 1) {
    return fmt::format("{}", static_cast<int>(value));
  } else {
    return fmt::format("{}", value);
  }
}

template <typename T>
bool ElementsEqual(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a == b || (std::isnan(a) && std::isnan(b));
  } else if constexpr (kIsHalfLike<T>) {
    return ElementsEqual(static_cast<float>(a), static_cast<float>(b));
  } else if constexpr (kIsComplex<T>) {
    return ElementsEqual(a.real(), b.real()) && ElementsEqual(a.imag(), b.imag());
  } else {
    return a == b;
  }
}

}  // namespace

std::shared_ptr<TensorBuffer> TensorBuffer::Allocate(Allocator* allocator, DataType dtype,
                                                     int64_t num_elements) {
  const size_t element_size = ElementSize(dtype);
  if (element_size == 0 || num_elements < 0) {
    Fatal(absl::StrFormat("TensorBuffer::Allocate(%s, %d): not a storable buffer",
                          DataTypeString(dtype), num_elements));
  }
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(num_elements), element_size, &bytes)) {
    return nullptr;
  }
  void* data = allocator->AllocateRaw(kTensorAlignment, bytes);
  if (data == nullptr) return nullptr;
  if (HoldsObjects(dtype)) {
    ForObjectType(dtype, [&]<typename T>() {
      auto* objects = static_cast<T*>(data);
      for (int64_t i = 0; i < num_elements; ++i) new (objects + i) T();
    });
  }
  return std::shared_ptr<TensorBuffer>(
      new TensorBuffer(allocator, BaseType(dtype), num_elements, data, bytes));
}

TensorBuffer::TensorBuffer(Allocator* allocator, DataType dtype, int64_t num_elements, void* data,
                           size_t bytes)
    : allocator_(allocator),
      dtype_(dtype),
      num_elements_(num_elements),
      data_(data),
      bytes_(bytes) {}

TensorBuffer::~TensorBuffer() {
  if (HoldsObjects(dtype_)) {
    ForObjectType(dtype_, [&]<typename T>() {
      auto* objects = static_cast<T*>(data_);
      for (int64_t i = 0; i < num_elements_; ++i) objects[i].~T();
    });
  }
  allocator_->DeallocateRaw(data_, bytes_);
}

Tensor::Tensor(DataType dtype, const TensorShape& shape) {
  absl::StatusOr<Tensor> tensor = Allocate(CpuAllocator(), dtype, shape);
  if (!tensor.ok()) Fatal(tensor.status().ToString());
  *this = *std::move(tensor);
  if (!HoldsObjects(dtype_)) std::memset(raw_data(), 0, TotalBytes());
}

absl::StatusOr<Tensor> Tensor::Allocate(Allocator* allocator, DataType dtype,
                                        const TensorShape& shape) {
  if (IsRefType(dtype)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot allocate a tensor of reference type %s: references belong to graph edges, "
        "tensors hold values",
        DataTypeString(dtype)));
  }
  if (!CanBeStored(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot allocate a tensor of dtype %s", DataTypeString(dtype)));
  }
  size_t bytes = 0;
  const bool overflows =
      __builtin_mul_overflow(static_cast<size_t>(shape.num_elements()), ElementSize(dtype), &bytes);
  if (overflows || bytes > MaxTensorBytes()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s tensor of shape %s needs %s bytes, more than the %d bytes one tensor may take "
        "(SessionOptions::max_tensor_bytes)",
        DataTypeString(dtype), shape.DebugString(), overflows ? "over 2^64" : std::to_string(bytes),
        MaxTensorBytes()));
  }
  std::shared_ptr<TensorBuffer> buffer =
      TensorBuffer::Allocate(allocator, dtype, shape.num_elements());
  if (buffer == nullptr) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "out of memory allocating a %s tensor of shape %s (%d elements of %d bytes) from %s",
        DataTypeString(dtype), shape.DebugString(), shape.num_elements(), ElementSize(dtype),
        allocator->Name()));
  }
  return Tensor(dtype, shape, std::move(buffer), 0);
}

size_t Tensor::TotalBytes() const {
  if (!IsInitialized()) return 0;
  return static_cast<size_t>(NumElements()) * ElementSize(dtype_);
}

void* Tensor::raw_data() const {
  if (buffer_ == nullptr) return nullptr;
  return static_cast<char*>(buffer_->data()) + offset_;
}

bool Tensor::IsAligned() const {
  return reinterpret_cast<uintptr_t>(raw_data()) % kTensorAlignment == 0;
}

Tensor Tensor::Slice(int64_t start, int64_t limit) const {
  if (dims() < 1 || start < 0 || start > limit || limit > dim_size(0)) {
    Fatal(absl::StrFormat("Slice(%d, %d) of a tensor of shape %s", start, limit,
                          shape_.DebugString()));
  }
  TensorShape shape = shape_;
  shape.set_dim(0, limit - start);
  // An empty view needs no offset (and dim_size(0) may be 0).
  if (start == limit) return Tensor(dtype_, std::move(shape), buffer_, offset_);
  const size_t row_elements = static_cast<size_t>(NumElements() / dim_size(0));
  const size_t offset = offset_ + static_cast<size_t>(start) * row_elements * ElementSize(dtype_);
  return Tensor(dtype_, std::move(shape), buffer_, offset);
}

absl::StatusOr<Tensor> Tensor::Reshaped(const TensorShape& shape) const {
  if (!IsInitialized()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot reshape an uninitialized tensor to %s", shape.DebugString()));
  }
  if (shape.num_elements() != NumElements()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot reshape a tensor of shape %s (%d elements) to %s (%d elements)",
        shape_.DebugString(), NumElements(), shape.DebugString(), shape.num_elements()));
  }
  return Tensor(dtype_, shape, buffer_, offset_);
}

Tensor Tensor::DeepCopy() const {
  if (!IsInitialized()) return Tensor();
  Tensor copy(dtype_, shape_);
  if (HoldsObjects(dtype_)) {
    ForObjectType(dtype_,
                  [&]<typename T>() { std::copy_n(data<T>(), NumElements(), copy.data<T>()); });
  } else {
    std::memcpy(copy.raw_data(), raw_data(), TotalBytes());
  }
  return copy;
}

std::string Tensor::DebugString(int max_entries) const {
  return absl::StrFormat("Tensor<type: %s shape: %s values: %s>", DataTypeString(dtype_),
                         shape_.DebugString(), SummarizeValue(max_entries));
}

std::string Tensor::SummarizeValue(int64_t max_entries) const {
  if (!IsInitialized()) return "<uninitialized>";
  const int64_t shown = std::clamp<int64_t>(max_entries, 0, NumElements());
  if (BaseType(dtype_) == DT_RESOURCE) {
    std::string s;
    for (int64_t i = 0; i < shown; ++i) {
      const ResourceHandleProto& handle = data<ResourceHandleProto>()[i];
      s += absl::StrFormat("%s<%s/%s>", i > 0 ? " " : "", handle.container(), handle.name());
    }
    return shown < NumElements() ? s + "..." : s;
  }
  if (BaseType(dtype_) == DT_VARIANT) {
    std::string s;
    for (int64_t i = 0; i < shown; ++i) {
      s += absl::StrCat(i > 0 ? " " : "", data<Variant>()[i].DebugString());
    }
    return shown < NumElements() ? s + "..." : s;
  }
  std::string out = DispatchType(
      dtype_,
      [&]<typename T>() {
        const T* values = data<T>();
        std::string s;
        for (int64_t i = 0; i < shown; ++i) {
          if (i > 0) s += ' ';
          s += FormatValue(values[i]);
        }
        return s;
      },
      [] { return std::string(); });
  if (shown < NumElements()) out += "...";
  return out;
}

bool TensorsEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  if (!a.IsInitialized() || !b.IsInitialized()) {
    return a.IsInitialized() == b.IsInitialized();
  }
  if (BaseType(a.dtype()) == DT_RESOURCE) {
    return std::equal(a.data<ResourceHandleProto>(),
                      a.data<ResourceHandleProto>() + a.NumElements(),
                      b.data<ResourceHandleProto>(), HandlesEqual);
  }
  if (BaseType(a.dtype()) == DT_VARIANT) {
    return std::equal(a.data<Variant>(), a.data<Variant>() + a.NumElements(), b.data<Variant>());
  }
  return DispatchType(
      a.dtype(),
      [&]<typename T>() {
        const T* x = a.data<T>();
        const T* y = b.data<T>();
        for (int64_t i = 0; i < a.NumElements(); ++i) {
          if (!ElementsEqual(x[i], y[i])) return false;
        }
        return true;
      },
      [] { return false; });
}

namespace tensor_internal {

void TypeMismatch(DataType have, DataType want) {
  Fatal(absl::StrFormat("tensor type mismatch: the tensor holds %s but was accessed as %s",
                        DataTypeString(have), DataTypeString(want)));
}

void RankMismatch(int have, int want) {
  // Tensor::FromVector also reports a wrong number of values through here.
  Fatal(absl::StrFormat("tensor rank or size mismatch: have %d, want %d", have, want));
}

}  // namespace tensor_internal
}  // namespace rill
