// Stack: the resource behind StackV2, a last-in first-out stack of tensors
// of one dtype that a step pushes and pops (the values a while loop's
// gradient needs from its forward iterations).
#ifndef RILL_KERNELS_CPU_STACK_H_
#define RILL_KERNELS_CPU_STACK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/tensor.h"
#include "kernels/framework/resource_mgr.h"

namespace rill {

// Errors name the stack as TensorFlow does ("Stack[name] is empty.").
// Thread safety: all methods may be called concurrently.
class Stack final : public ResourceBase {
 public:
  static constexpr char kTypeName[] = "Stack";

  // `name` is what messages call the stack; `max_size` < 0: unbounded.
  Stack(std::string name, DataType elem_type, int64_t max_size);
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  const std::string& name() const { return name_; }
  DataType elem_type() const { return elem_type_; }

  // Keeps `value` as given (sharing its buffer). INVALID_ARGUMENT when the
  // dtype is not the stack's, the stack is full or closed.
  absl::Status Push(Tensor value);
  // The value pushed last. INVALID_ARGUMENT when empty or closed.
  absl::StatusOr<Tensor> Pop();
  // Releases every value; later pushes and pops fail.
  void Close();
  int64_t size() const;
  // "Stack[name] of float, 2 elements".
  std::string DebugString() const override;

 private:
  absl::Status CheckOpenLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::string name_;
  const DataType elem_type_;
  const int64_t max_size_;

  mutable absl::Mutex mu_;
  std::vector<Tensor> values_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace rill

#endif  // RILL_KERNELS_CPU_STACK_H_
