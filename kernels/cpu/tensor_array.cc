#include "kernels/cpu/tensor_array.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

// A tensor of `shape` filled with T's zero (false, "").
absl::StatusOr<Tensor> Zeros(KernelContext& ctx, DataType dtype, const TensorShape& shape) {
  ASSIGN_OR_RETURN(Tensor zeros, ctx.AllocateTemp(dtype, shape));
  const bool filled = DispatchType(
      dtype,
      [&]<typename T>() {
        std::fill_n(zeros.data<T>(), zeros.NumElements(), T{});
        return true;
      },
      [] { return false; });
  if (!filled) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a TensorArray of %s cannot make zeros", DataTypeString(dtype)));
  }
  return zeros;
}

template <typename T>
constexpr bool kAddable = !std::is_same_v<T, bool> && !std::is_same_v<T, std::string>;

// *sum = a + b, elementwise. REQUIRES: one dtype and shape; `sum` may be a.
absl::Status Add(const Tensor& a, const Tensor& b, Tensor* sum) {
  return DispatchType(
      a.dtype(),
      [&]<typename T>() -> absl::Status {
        if constexpr (kAddable<T>) {
          const T* x = a.data<T>();
          const T* y = b.data<T>();
          T* out = sum->data<T>();
          for (int64_t i = 0; i < a.NumElements(); ++i) out[i] = static_cast<T>(x[i] + y[i]);
          return absl::OkStatus();
        } else {
          return absl::InvalidArgumentError(absl::StrFormat(
              "a gradient TensorArray cannot add up values of %s", DataTypeString(a.dtype())));
        }
      },
      [&] {
        return absl::InvalidArgumentError(absl::StrFormat(
            "a gradient TensorArray cannot add up values of %s", DataTypeString(a.dtype())));
      });
}

}  // namespace

TensorArray::TensorArray(std::string name, int32_t size, Options options)
    : name_(std::move(name)),
      label_(options.tensor_array_name.empty()
                 ? absl::StrCat("'", name_, "'")
                 : absl::StrCat("'", name_, "' (", options.tensor_array_name, ")")),
      dtype_(options.dtype),
      identical_element_shapes_(options.identical_element_shapes),
      clear_after_read_(options.clear_after_read),
      is_grad_(options.is_grad),
      element_shape_(std::move(options.element_shape)),
      dynamic_size_(options.dynamic_size),
      elements_(static_cast<size_t>(size)) {}

absl::Status TensorArray::CheckOpenLocked() const {
  if (closed_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TensorArray %s has already been closed", label_));
  }
  return absl::OkStatus();
}

absl::Status TensorArray::Write(KernelContext& ctx, absl::Span<const int32_t> indices,
                                absl::Span<const Tensor> values) {
  if (indices.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("TensorArray %s: %d indices for %d values",
                                                      label_, indices.size(), values.size()));
  }
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < indices.size(); ++i) {
    RETURN_IF_ERROR(WriteLocked(ctx, indices[i], values[i]));
  }
  return absl::OkStatus();
}

absl::Status TensorArray::WriteLocked(KernelContext& ctx, int32_t index, const Tensor& value) {
  RETURN_IF_ERROR(CheckOpenLocked());
  const int64_t size = static_cast<int64_t>(elements_.size());
  if (index < 0 || (!dynamic_size_ && index >= size)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray %s: Tried to write to index %d but array is not resizeable and size is: "
        "%d",
        label_, index, size));
  }
  if (index >= size) {
    if (index >= kMaxSize) {
      return absl::InvalidArgumentError(
          absl::StrFormat("TensorArray %s: cannot grow to write index %d: at most %d elements",
                          label_, index, kMaxSize));
    }
    elements_.resize(static_cast<size_t>(index) + 1);
  }
  Element& e = elements_[index];
  if (value.dtype() != dtype_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray %s: Could not write to TensorArray index %d because the value dtype is %s "
        "but TensorArray dtype is %s.",
        label_, index, DataTypeString(value.dtype()), DataTypeString(dtype_)));
  }
  if (!element_shape_.IsCompatibleWith(value.shape())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray %s: Could not write to TensorArray index %d because the value shape is %s "
        "which is incompatible with the TensorArray's inferred element shape: %s (consider "
        "setting infer_shape=False).",
        label_, index, value.shape().DebugString(), element_shape_.DebugString()));
  }
  if (identical_element_shapes_ && !element_shape_.IsFullyDefined()) {
    element_shape_ = PartialTensorShape(value.shape());
  }
  if (e.read) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray %s: Could not write to TensorArray index %d because it has already been "
        "read.",
        label_, index));
  }
  if (!is_grad_ && e.written) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray %s: Could not write to TensorArray index %d because it has already been "
        "written to.",
        label_, index));
  }
  if (!e.written) {
    e.tensor = value;
    e.shape = value.shape();
    e.written = true;
    return absl::OkStatus();
  }
  // A gradient array adds the new value to what is there.
  if (!(value.shape() == e.shape)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray %s: Could not aggregate to TensorArray index %d because the existing "
        "shape is %s but the new input shape is %s.",
        label_, index, e.shape.DebugString(), value.shape().DebugString()));
  }
  if (!e.tensor.IsInitialized()) {
    // Only the shape was known (implicit zeros): the value is the sum.
    e.tensor = value;
    return absl::OkStatus();
  }
  if (!e.local_copy) {
    // The first tensor may be shared with its producer: sum into our own.
    ASSIGN_OR_RETURN(Tensor sum, ctx.AllocateTemp(dtype_, e.shape));
    RETURN_IF_ERROR(Add(e.tensor, value, &sum));
    e.tensor = std::move(sum);
    e.local_copy = true;
  } else {
    RETURN_IF_ERROR(Add(e.tensor, value, &e.tensor));
  }
  gradients_disallowed_ = true;
  return absl::OkStatus();
}

absl::StatusOr<TensorShape> TensorArray::ZerosShapeLocked(int32_t index) const {
  if (element_shape_.IsFullyDefined()) return element_shape_.AsTensorShape();
  return absl::InvalidArgumentError(absl::StrFormat(
      "TensorArray %s: Could not read from TensorArray index %d because it has not yet been "
      "written to, and the element shape %s is not fully defined, so no zeros can stand in for "
      "it (set a full element_shape on the TensorArray to read zeros there)",
      label_, index, element_shape_.DebugString()));
}

absl::StatusOr<Tensor> TensorArray::ReadLocked(KernelContext& ctx, int32_t index) {
  RETURN_IF_ERROR(CheckOpenLocked());
  const int64_t size = static_cast<int64_t>(elements_.size());
  if (index < 0 || (!is_grad_ && index >= size)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray %s: Tried to read from index %d but array size is: %d", label_, index, size));
  }
  if (index >= size || !elements_[index].written) {
    // An index nobody wrote reads as zeros when its shape is known; a
    // gradient array may be read past its end (a forward array that
    // stop_gradient kept from being written).
    ASSIGN_OR_RETURN(TensorShape shape, ZerosShapeLocked(index));
    if (index >= size) {
      if (index >= kMaxSize) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "TensorArray %s: cannot read index %d: at most %d elements", label_, index, kMaxSize));
      }
      elements_.resize(static_cast<size_t>(index) + 1);
      for (int64_t i = size; i <= index; ++i) {
        elements_[i].shape = shape;
        elements_[i].written = true;
      }
    } else {
      elements_[index].shape = shape;
      elements_[index].written = true;
    }
  }
  Element& e = elements_[index];
  if (e.cleared) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray %s: Could not read index %d twice because it was cleared after a previous "
        "read (perhaps try setting clear_after_read = false?).",
        label_, index));
  }
  if (!e.tensor.IsInitialized()) {
    ASSIGN_OR_RETURN(e.tensor, Zeros(ctx, dtype_, e.shape));
  }
  Tensor value = e.tensor;
  if (clear_after_read_) {
    e.tensor = Tensor();
    e.cleared = true;
  }
  e.read = true;
  return value;
}

absl::StatusOr<std::vector<Tensor>> TensorArray::Read(KernelContext& ctx,
                                                      absl::Span<const int32_t> indices) {
  absl::MutexLock lock(&mu_);
  std::vector<Tensor> values;
  values.reserve(indices.size());
  for (int32_t index : indices) {
    ASSIGN_OR_RETURN(Tensor value, ReadLocked(ctx, index));
    values.push_back(std::move(value));
  }
  return values;
}

absl::StatusOr<std::vector<Tensor>> TensorArray::ReadAll(KernelContext& ctx) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  std::vector<Tensor> values;
  values.reserve(elements_.size());
  for (size_t i = 0; i < elements_.size(); ++i) {
    ASSIGN_OR_RETURN(Tensor value, ReadLocked(ctx, static_cast<int32_t>(i)));
    values.push_back(std::move(value));
  }
  return values;
}

absl::StatusOr<int32_t> TensorArray::Size() const {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  return static_cast<int32_t>(elements_.size());
}

PartialTensorShape TensorArray::element_shape() const {
  absl::MutexLock lock(&mu_);
  return element_shape_;
}

bool TensorArray::GradientsAllowed() const {
  absl::MutexLock lock(&mu_);
  return !gradients_disallowed_;
}

void TensorArray::DisableDynamicSize() {
  absl::MutexLock lock(&mu_);
  dynamic_size_ = false;
}

bool TensorArray::dynamic_size() const {
  absl::MutexLock lock(&mu_);
  return dynamic_size_;
}

absl::Status TensorArray::CopyShapesFrom(const TensorArray& forward, const TensorShape& prepend) {
  // This array is fresh and unshared, so the two locks cannot be taken in
  // the other order by anyone else.
  absl::MutexLock lock(&mu_);
  absl::MutexLock forward_lock(&forward.mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  RETURN_IF_ERROR(forward.CheckOpenLocked());
  if (elements_.size() != forward.elements_.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TensorArray sizes do not match during CopyShapesFrom: %s has size %d but %s has size %d",
        label_, elements_.size(), forward.label_, forward.elements_.size()));
  }
  for (size_t i = 0; i < elements_.size(); ++i) {
    const Element& from = forward.elements_[i];
    if (!from.written) continue;
    std::vector<int64_t> dims(prepend.dim_sizes().begin(), prepend.dim_sizes().end());
    dims.insert(dims.end(), from.shape.dim_sizes().begin(), from.shape.dim_sizes().end());
    ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Create(dims));
    // Written, without a tensor: reads give zeros until a write adds one.
    elements_[i].shape = std::move(shape);
    elements_[i].written = true;
  }
  return absl::OkStatus();
}

void TensorArray::Close() {
  std::vector<Element> dropped;  // Released outside the lock.
  absl::MutexLock lock(&mu_);
  dropped.swap(elements_);
  closed_ = true;
}

std::string TensorArray::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrFormat("TensorArray %s of %s, %d elements%s", label_, DataTypeString(dtype_),
                         elements_.size(), closed_ ? " (closed)" : "");
}

}  // namespace rill
