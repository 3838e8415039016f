// What the optimizer-update kernels of every device share: their attrs,
// the locking of their variables and the checks of their operands.
#ifndef RILL_KERNELS_CPU_TRAINING_UTIL_H_
#define RILL_KERNELS_CPU_TRAINING_UTIL_H_

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "kernels/op_kernel.h"
#include "kernels/resource_mgr.h"

namespace rill::training_util {

// Holds the distinct mutexes of some reference inputs, taken in address
// order so that updates sharing variables (or a mutex) cannot deadlock.
class RefInputLocks {
 public:
  RefInputLocks(const KernelContext& ctx, std::initializer_list<int> inputs, bool lock) {
    if (!lock) return;
    for (int i : inputs) mutexes_.push_back(ctx.input_ref_mutex(i));
    std::sort(mutexes_.begin(), mutexes_.end());
    mutexes_.erase(std::unique(mutexes_.begin(), mutexes_.end()), mutexes_.end());
    for (absl::Mutex* mu : mutexes_) mu->Lock();
  }
  ~RefInputLocks() {
    for (auto it = mutexes_.rbegin(); it != mutexes_.rend(); ++it) (*it)->Unlock();
  }
  RefInputLocks(const RefInputLocks&) = delete;
  RefInputLocks& operator=(const RefInputLocks&) = delete;

 private:
  std::vector<absl::Mutex*> mutexes_;
};

// The tensor of reference input `i`: the variable itself when its lock is
// held, else the snapshot read when the context was made (which shares the
// variable's buffer). FAILED_PRECONDITION naming it when uninitialized.
inline absl::StatusOr<Tensor> RefTensor(const KernelContext& ctx, int i, bool locked) {
  const Tensor& t = locked ? *ctx.mutable_input(i) : ctx.input(i);
  if (!t.IsInitialized()) return UninitializedValueError(ctx, i);
  return t;
}

inline absl::Status CheckSameShape(const KernelContext& ctx, const Tensor& var, const Tensor& other,
                                   const char* other_name) {
  if (var.shape() == other.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: var %s and %s do not have the same shape: %s vs %s", ctx.node().op(),
      RefInputName(ctx, 0), other_name, var.shape().DebugString(), other.shape().DebugString()));
}

// INVALID_ARGUMENT unless input `i`, named `name` in messages, is a scalar.
inline absl::Status CheckScalarInput(const KernelContext& ctx, int i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.dims() == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s is not a scalar: %s", ctx.node().op(),
                                                    name, t.shape().DebugString()));
}

struct ApplyAttrs {
  bool use_locking;
  bool use_nesterov;

  static ApplyAttrs From(const OpKernelConstruction& c) {
    return {GetBoolAttr(c.def(), "use_locking").value_or(false),
            GetBoolAttr(c.def(), "use_nesterov").value_or(false)};
  }
};

}  // namespace rill::training_util

#endif  // RILL_KERNELS_CPU_TRAINING_UTIL_H_
