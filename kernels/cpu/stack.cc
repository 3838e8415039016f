#include "kernels/cpu/stack.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill {

Stack::Stack(std::string name, DataType elem_type, int64_t max_size)
    : name_(std::move(name)), elem_type_(elem_type), max_size_(max_size) {}

absl::Status Stack::CheckOpenLocked() const {
  if (closed_) {
    return absl::InvalidArgumentError(absl::StrFormat("Stack[%s] has already been closed.", name_));
  }
  return absl::OkStatus();
}

absl::Status Stack::Push(Tensor value) {
  if (value.dtype() != elem_type_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Stack[%s]: must push values of type %s but got %s", name_,
                        DataTypeString(elem_type_), DataTypeString(value.dtype())));
  }
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  if (max_size_ >= 0 && static_cast<int64_t>(values_.size()) >= max_size_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Stack[%s] overflowed its max_size (%d)", name_, max_size_));
  }
  values_.push_back(std::move(value));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Stack::Pop() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  if (values_.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("Stack[%s] is empty.", name_));
  }
  Tensor value = std::move(values_.back());
  values_.pop_back();
  return value;
}

void Stack::Close() {
  std::vector<Tensor> dropped;  // Released outside the lock.
  absl::MutexLock lock(&mu_);
  dropped.swap(values_);
  closed_ = true;
}

int64_t Stack::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(values_.size());
}

std::string Stack::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrFormat("Stack[%s] of %s, %d elements%s", name_, DataTypeString(elem_type_),
                         values_.size(), closed_ ? " (closed)" : "");
}

}  // namespace rill
