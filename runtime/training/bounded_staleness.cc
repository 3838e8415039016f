#include "runtime/training/bounded_staleness.h"

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "ops/ops.h"

namespace rill {

absl::StatusOr<BoundedStep> BoundStaleness(const Scope& scope, const Operation& update,
                                           const Variable& global_step,
                                           const BoundedStalenessOptions& options) {
  RETURN_IF_ERROR(scope.status());
  if (options.num_workers < 1 || options.worker_index < 0 ||
      options.worker_index >= options.num_workers || options.staleness < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "bounded staleness: want num_workers >= 1, 0 <= worker_index < num_workers and a "
        "staleness >= 0; got %d workers, worker %d, staleness %d",
        options.num_workers, options.worker_index, options.staleness));
  }
  if (!global_step.ok() || update.node() == nullptr) {
    return absl::InvalidArgumentError("bounded staleness: the update and global step are required");
  }
  const Scope beside_step = scope.ColocateWith(global_step.ref().op());
  const ops::WorkerClocks clocks(beside_step.WithOpName(options.name + "/worker_clocks"),
                                 options.num_workers,
                                 ops::WorkerClocks::SharedName(options.name + "/worker_clocks"));
  const ops::Const worker(beside_step.WithOpName(options.name + "/worker_index"),
                          Tensor::Scalar<int32_t>(options.worker_index), DT_INT32);
  const int64_t timeout_ms =
      options.timeout == absl::InfiniteDuration() ? -1 : absl::ToInt64Milliseconds(options.timeout);
  const ops::WorkerClocksTick tick(
      beside_step.WithOpName(options.name + "/tick").WithControlDependencies({update}),
      clocks.handle, worker,
      ops::WorkerClocksTick::Staleness(options.staleness).TimeoutMs(timeout_ms));
  const ops::WorkerClocksRetire retire(beside_step.WithOpName(options.name + "/retire"),
                                       clocks.handle, worker);
  RETURN_IF_ERROR(scope.status());
  return BoundedStep{tick.operation, tick.clock, tick.slowest, retire.operation};
}

}  // namespace rill
