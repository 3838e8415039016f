#include "kernels/cpu/conditional_accumulator.h"

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/framework/cpu_threads.h"

namespace rill {
namespace {

// The element types a sum can be kept in (the ops declare numbertype).
template <typename T>
constexpr bool kSummable = !std::is_same_v<T, bool> && !std::is_same_v<T, std::string>;

const char* ReductionName(ConditionalAccumulator::Reduction reduction) {
  return reduction == ConditionalAccumulator::Reduction::kMean ? "MEAN" : "SUM";
}

// sum += gradient. REQUIRES: same dtype and shape, a summable dtype.
void AddInto(const Tensor& sum, const Tensor& gradient, const Eigen::ThreadPoolDevice& device) {
  DispatchType(
      sum.dtype(),
      [&]<typename T>() {
        if constexpr (kSummable<T>) sum.flat<T>().device(device) += gradient.flat<T>();
      },
      [] {});
}

void DivideBy(const Tensor& sum, int32_t count, const Eigen::ThreadPoolDevice& device) {
  DispatchType(
      sum.dtype(),
      [&]<typename T>() {
        if constexpr (kSummable<T>) {
          sum.flat<T>().device(device) = sum.flat<T>() / sum.flat<T>().constant(T(count));
        }
      },
      [] {});
}

}  // namespace

absl::StatusOr<ConditionalAccumulator::Reduction> ConditionalAccumulator::ParseReduction(
    const std::string& name) {
  if (name == "MEAN") return Reduction::kMean;
  if (name == "SUM") return Reduction::kSum;
  return absl::InvalidArgumentError(
      absl::StrFormat("reduction_type must be MEAN or SUM, not '%s'", name));
}

ConditionalAccumulator::ConditionalAccumulator(std::string container, std::string name,
                                               DataType dtype, PartialTensorShape shape,
                                               Reduction reduction)
    : container_(std::move(container)),
      name_(std::move(name)),
      dtype_(dtype),
      shape_(std::move(shape)),
      reduction_(reduction),
      handle_(DT_STRING, TensorShape({2})) {
  handle_.data<std::string>()[0] = container_;
  handle_.data<std::string>()[1] = name_;
}

ConditionalAccumulator::~ConditionalAccumulator() {
  std::deque<PendingTake> takes;
  {
    absl::MutexLock lock(&mu_);
    takes.swap(takes_);
  }
  // A cancellation callback that runs meanwhile finds the accumulator gone
  // and does nothing; deregistering waits for it.
  for (PendingTake& take : takes) {
    if (take.cancellation != nullptr) take.cancellation->DeregisterCallback(take.token);
    take.done(absl::AbortedError(
        absl::StrFormat("accumulator '%s' was deleted while a take waited for %d gradients", name_,
                        take.num_required)));
  }
}

std::string ConditionalAccumulator::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrFormat("%s %s %s, step %d, %d accumulated", DataTypeString(dtype_),
                         shape_.DebugString(), ReductionName(reduction_), global_step_, counter_);
}

absl::Status ConditionalAccumulator::CheckDeclaration(DataType dtype,
                                                      const PartialTensorShape& shape,
                                                      Reduction reduction) const {
  if (dtype == dtype_ && shape == shape_ && reduction == reduction_) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "accumulator '%s' in container '%s' holds %s %s with reduction %s; this node declares "
      "%s %s with reduction %s",
      name_, container_, DataTypeString(dtype_), shape_.DebugString(), ReductionName(reduction_),
      DataTypeString(dtype), shape.DebugString(), ReductionName(reduction)));
}

absl::Status ConditionalAccumulator::CheckGradientLocked(const Tensor& gradient) const {
  if (gradient.dtype() != dtype_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("accumulator '%s' holds %s; the gradient applied is %s", name_,
                        DataTypeString(dtype_), DataTypeString(gradient.dtype())));
  }
  if (!shape_.IsCompatibleWith(PartialTensorShape(gradient.shape()))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("accumulator '%s' is declared with shape %s; the gradient applied has "
                        "shape %s",
                        name_, shape_.DebugString(), gradient.shape().DebugString()));
  }
  if (counter_ > 0 && sum_.shape() != gradient.shape()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "accumulator '%s' (declared shape %s) holds gradients of shape %s this step; the "
        "gradient applied has shape %s",
        name_, shape_.DebugString(), sum_.shape().DebugString(), gradient.shape().DebugString()));
  }
  return absl::OkStatus();
}

absl::Status ConditionalAccumulator::Apply(int64_t local_step, const Tensor& gradient,
                                           const Eigen::ThreadPoolDevice& device) {
  std::optional<PendingTake> served;
  Tensor result;
  {
    absl::MutexLock lock(&mu_);
    if (local_step < global_step_) return absl::OkStatus();  // Stale: dropped.
    if (absl::Status status = CheckGradientLocked(gradient); !status.ok()) return status;
    if (counter_ == 0) {
      // A copy: the caller may reuse the gradient's buffer.
      sum_ = gradient.DeepCopy();
    } else {
      AddInto(sum_, gradient, device);
    }
    ++counter_;
    // A round serves at most one take, since it resets the counter.
    if (!takes_.empty() && counter_ >= takes_.front().num_required) {
      served = std::move(takes_.front());
      takes_.pop_front();
      result = TakeLocked(device);
    }
  }
  if (served) {
    // Exactly one of this and the cancellation callback finds the take in
    // takes_; this waits for a callback already running to finish.
    if (served->cancellation != nullptr) served->cancellation->DeregisterCallback(served->token);
    served->done(std::move(result));
  }
  return absl::OkStatus();
}

void ConditionalAccumulator::TakeAsync(int32_t num_required, StepCancellation* cancellation,
                                       const Eigen::ThreadPoolDevice& device, TakeDone done) {
  if (num_required <= 0) {
    done(absl::InvalidArgumentError(absl::StrFormat(
        "a take from accumulator '%s' must require a positive number of gradients, not %d", name_,
        num_required)));
    return;
  }
  absl::Status failure;
  Tensor result;
  {
    absl::MutexLock lock(&mu_);
    if (takes_.empty() && counter_ >= num_required) {
      result = TakeLocked(device);
    } else {
      PendingTake take{next_take_id_++, num_required, std::move(done), cancellation, 0};
      // Registered under mu_ so that the callback, which takes mu_, sees
      // the take queued; Cancel runs callbacks outside its own lock.
      const std::weak_ptr<ConditionalAccumulator> weak = weak_from_this();
      const uint64_t id = take.id;
      if (cancellation == nullptr || cancellation->RegisterCallback(
                                         [weak, id](const absl::Status& cause) {
                                           if (auto self = weak.lock()) self->CancelTake(id, cause);
                                         },
                                         &take.token)) {
        takes_.push_back(std::move(take));
        return;
      }
      done = std::move(take.done);
      failure = absl::CancelledError(
          absl::StrFormat("a take from accumulator '%s' was cancelled before it waited for %s",
                          name_, WaitingForLocked(num_required)));
    }
  }
  if (failure.ok()) {
    done(std::move(result));
  } else {
    done(std::move(failure));
  }
}

void ConditionalAccumulator::CancelTake(uint64_t id, const absl::Status& cause) {
  TakeDone done;
  std::string waiting;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = takes_.begin(); it != takes_.end(); ++it) {
      if (it->id != id) continue;
      done = std::move(it->done);
      waiting = WaitingForLocked(it->num_required);
      takes_.erase(it);
      break;
    }
  }
  if (!done) return;  // Served first.
  done(absl::CancelledError(
      absl::StrFormat("a take from accumulator '%s' was cancelled while it waited for %s: %s",
                      name_, waiting, cause.ToString())));
}

void ConditionalAccumulator::SetGlobalStep(int64_t step) {
  absl::MutexLock lock(&mu_);
  if (step > global_step_) {
    sum_ = Tensor();
    counter_ = 0;
  }
  global_step_ = step;
}

int32_t ConditionalAccumulator::num_accumulated() const {
  absl::MutexLock lock(&mu_);
  return counter_;
}

Tensor ConditionalAccumulator::TakeLocked(const Eigen::ThreadPoolDevice& device) {
  Tensor result = std::move(sum_);
  sum_ = Tensor();
  if (reduction_ == Reduction::kMean) DivideBy(result, counter_, device);
  counter_ = 0;
  ++global_step_;
  return result;
}

std::string ConditionalAccumulator::WaitingForLocked(int32_t num_required) const {
  return absl::StrFormat("%d gradients at step %d (%d arrived)", num_required, global_step_,
                         counter_);
}

}  // namespace rill
