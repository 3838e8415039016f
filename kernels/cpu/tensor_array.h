// TensorArray: the resource behind TensorArrayV3, an array of tensors of one
// dtype that a step writes once per index and reads back (dynamic_rnn's
// inputs and outputs), with TensorFlow's rules for growth, shapes, clearing
// reads and gradient arrays that add up repeated writes.
#ifndef RILL_KERNELS_CPU_TENSOR_ARRAY_H_
#define RILL_KERNELS_CPU_TENSOR_ARRAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"

namespace rill {

// Rules, as TensorFlow's:
//  - An index is written once; writing it again is INVALID_ARGUMENT,
//    unless the array aggregates (a gradient array): then the values add
//    up, and the array no longer allows gradients of its own.
//  - A written index can no longer be written once read. With
//    clear_after_read the read releases the tensor and a second read is
//    INVALID_ARGUMENT.
//  - Reading an index nobody wrote gives zeros when the shape is known (a
//    gradient array knows the shape its forward array had there, or its
//    element shape; a forward array its element shape when fully
//    defined), else INVALID_ARGUMENT.
//  - A dynamic-size array grows to take any index >= 0 written; a fixed
//    one rejects indices outside [0, size).
//  - Every value must fit the element shape; with identical_element_shapes
//    the first value written fixes it.
// Errors name the array (its node and run) and, for indices, the index
// and the size.
//
// Thread safety: all methods may be called concurrently.
class TensorArray final : public ResourceBase {
 public:
  static constexpr char kTypeName[] = "TensorArray";

  struct Options {
    DataType dtype = DT_FLOAT;
    PartialTensorShape element_shape;  // Unknown rank by default.
    bool identical_element_shapes = false;
    bool dynamic_size = false;
    bool clear_after_read = true;
    // A gradient array: repeated writes add up, and reads of unwritten
    // indices (even past the end) give zeros of the known shape.
    bool is_grad = false;
    // The name the graph gave it, for messages.
    std::string tensor_array_name;
  };

  // `name` is what messages call the array (unique within its step).
  // REQUIRES: 0 <= size <= kMaxSize.
  TensorArray(std::string name, int32_t size, Options options);
  TensorArray(const TensorArray&) = delete;
  TensorArray& operator=(const TensorArray&) = delete;

  // The largest size an array may have or grow to: a bad index or size
  // fails rather than exhausting memory.
  static constexpr int32_t kMaxSize = 1 << 24;

  const std::string& name() const { return name_; }
  // What messages call it: "'name'", or "'name' (tensor_array_name)".
  const std::string& label() const { return label_; }
  DataType dtype() const { return dtype_; }
  bool is_grad() const { return is_grad_; }
  bool identical_element_shapes() const { return identical_element_shapes_; }

  // Stores `values[i]` at `indices[i]`, in order, under one lock; stops at
  // the first error (the earlier writes stay, as in TensorFlow). The array
  // keeps the tensors as given (sharing their buffers). Allocations for
  // sums come from `ctx`.
  absl::Status Write(KernelContext& ctx, absl::Span<const int32_t> indices,
                     absl::Span<const Tensor> values);
  // The tensors at `indices`, in order, under one lock.
  absl::StatusOr<std::vector<Tensor>> Read(KernelContext& ctx, absl::Span<const int32_t> indices);
  // Every element, index 0 first.
  absl::StatusOr<std::vector<Tensor>> ReadAll(KernelContext& ctx);

  // INVALID_ARGUMENT once closed.
  absl::StatusOr<int32_t> Size() const;
  PartialTensorShape element_shape() const;
  // A gradient array may only be made while no index was written twice.
  bool GradientsAllowed() const;
  // Once gradients are computed the forward array may no longer grow.
  void DisableDynamicSize();
  bool dynamic_size() const;

  // Makes this (fresh) gradient array know, for each index `forward` has
  // written, that index's shape with `prepend` in front: reads before any
  // write there give zeros of that shape. INVALID_ARGUMENT when the sizes
  // differ.
  absl::Status CopyShapesFrom(const TensorArray& forward, const TensorShape& prepend);

  // Releases every tensor; later calls fail INVALID_ARGUMENT.
  void Close();
  // "TensorArray 'name' of float, 3 elements".
  std::string DebugString() const override;

 private:
  struct Element {
    Tensor tensor;  // Uninitialized: not written, cleared, or implicit zeros.
    TensorShape shape;
    bool written = false;
    bool read = false;
    bool cleared = false;
    // The tensor is the array's own sum, which later writes may add to in
    // place.
    bool local_copy = false;
  };

  absl::Status WriteLocked(KernelContext& ctx, int32_t index, const Tensor& value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Tensor> ReadLocked(KernelContext& ctx, int32_t index)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shape of zeros standing for unwritten `index`, or an error.
  absl::StatusOr<TensorShape> ZerosShapeLocked(int32_t index) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckOpenLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::string name_;
  const std::string label_;  // For messages: "'name'" or "'name' (tensor_array_name)".
  const DataType dtype_;
  const bool identical_element_shapes_;
  const bool clear_after_read_;
  const bool is_grad_;

  mutable absl::Mutex mu_;
  PartialTensorShape element_shape_ ABSL_GUARDED_BY(mu_);
  bool dynamic_size_ ABSL_GUARDED_BY(mu_);
  std::vector<Element> elements_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool gradients_disallowed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace rill

#endif  // RILL_KERNELS_CPU_TENSOR_ARRAY_H_
