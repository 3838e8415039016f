// ConditionalAccumulator: the resource behind TensorFlow's accumulator ops,
// which averages (or sums) one step's gradients across replicas.
#ifndef RILL_KERNELS_CPU_CONDITIONAL_ACCUMULATOR_H_
#define RILL_KERNELS_CPU_CONDITIONAL_ACCUMULATOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "kernels/framework/cancellation.h"
#include "kernels/framework/resource_mgr.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace rill {

// Replicas apply gradients tagged with the global step they were computed
// at; the accumulator sums those not older than its own global step and
// drops the others (stale). A take waits until enough gradients have
// arrived, returns their mean (divided by the number received, which may
// exceed the number required) or sum, starts a new round and advances the
// global step. Takes are served in the order they arrive.
//
// Create with std::make_shared: waiting takes reach it through weak
// pointers, so that deleting it from the resource manager fails them
// (ABORTED) instead of leaving them waiting for ever.
//
// Thread safety: all methods may be called concurrently. A take completes
// on the thread of the Apply that satisfies it, at once when it can, or on
// the thread that cancels its step; never under the accumulator's lock.
class ConditionalAccumulator final : public ResourceBase,
                                     public std::enable_shared_from_this<ConditionalAccumulator> {
 public:
  static constexpr char kTypeName[] = "ConditionalAccumulator";

  enum class Reduction { kMean, kSum };
  // "MEAN" or "SUM", as in the ops' reduction_type attr.
  static absl::StatusOr<Reduction> ParseReduction(const std::string& name);

  // The average (or sum), or why there is none.
  using TakeDone = std::function<void(absl::StatusOr<Tensor>)>;

  // `shape` may be partially known; every gradient must fit it, and all
  // gradients of a round must have the same shape.
  ConditionalAccumulator(std::string container, std::string name, DataType dtype,
                         PartialTensorShape shape, Reduction reduction);
  // Takes still waiting fail with ABORTED.
  ~ConditionalAccumulator() override;
  ConditionalAccumulator(const ConditionalAccumulator&) = delete;
  ConditionalAccumulator& operator=(const ConditionalAccumulator&) = delete;

  // "float [?,3] MEAN, step 4, 2 accumulated".
  std::string DebugString() const override;

  // INVALID_ARGUMENT naming the accumulator and both declarations when a
  // node declares it with another dtype, shape or reduction than the node
  // that created it.
  absl::Status CheckDeclaration(DataType dtype, const PartialTensorShape& shape,
                                Reduction reduction) const;

  // The [container, name] string vector that TensorFlow's reference handle
  // holds, and its mutex: ConditionalAccumulator's ref output points here.
  // Never written after construction.
  Tensor* handle() { return &handle_; }
  absl::Mutex* handle_mu() { return &handle_mu_; }

  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }

  // Adds `gradient` when local_step >= the global step; otherwise drops it
  // and still returns OK (a stale replica is not an error). INVALID_ARGUMENT
  // when it has the wrong dtype or shape. Element-wise math runs on
  // `device`.
  absl::Status Apply(int64_t local_step, const Tensor& gradient,
                     const Eigen::ThreadPoolDevice& device);

  // Calls `done` with the reduced gradient once `num_required` gradients
  // have arrived and every earlier take is served (at once if they are).
  // INVALID_ARGUMENT when num_required <= 0; CANCELLED when `cancellation`
  // (may be null) cancels the step first. `done` runs exactly once.
  void TakeAsync(int32_t num_required, StepCancellation* cancellation,
                 const Eigen::ThreadPoolDevice& device, TakeDone done);

  // Sets the global step. Moving it forward discards what was accumulated:
  // those gradients were computed before `step`, stale by the accumulator's
  // own rule, so that a restarted chief starts a clean round. (TensorFlow
  // keeps them.) Moving it back is allowed, as in TensorFlow, which only
  // warns.
  void SetGlobalStep(int64_t step);

  // Gradients in the current round.
  int32_t num_accumulated() const;

 private:
  struct PendingTake {
    uint64_t id;
    int32_t num_required;
    TakeDone done;
    StepCancellation* cancellation;  // Null: the step cannot be cancelled.
    StepCancellation::Token token;
  };

  absl::Status CheckGradientLocked(const Tensor& gradient) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Ends the round: the reduced sum, with the counter reset and the global
  // step advanced. REQUIRES: counter_ > 0.
  Tensor TakeLocked(const Eigen::ThreadPoolDevice& device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails take `id` with CANCELLED if it is still waiting.
  void CancelTake(uint64_t id, const absl::Status& cause);
  std::string WaitingForLocked(int32_t num_required) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::string container_;
  const std::string name_;
  const DataType dtype_;
  const PartialTensorShape shape_;
  const Reduction reduction_;
  absl::Mutex handle_mu_;
  Tensor handle_;

  mutable absl::Mutex mu_;
  int64_t global_step_ ABSL_GUARDED_BY(mu_) = 0;
  int32_t counter_ ABSL_GUARDED_BY(mu_) = 0;
  Tensor sum_ ABSL_GUARDED_BY(mu_);  // Uninitialized while counter_ is 0.
  std::deque<PendingTake> takes_ ABSL_GUARDED_BY(mu_);
  uint64_t next_take_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace rill

#endif  // RILL_KERNELS_CPU_CONDITIONAL_ACCUMULATOR_H_
