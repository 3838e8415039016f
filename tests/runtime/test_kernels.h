// Helpers and misbehaving kernels shared by the executor and session tests:
// a kernel that fails, and one that works until its step is cancelled.
#ifndef RILL_TESTS_RUNTIME_TEST_KERNELS_H_
#define RILL_TESTS_RUNTIME_TEST_KERNELS_H_

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "graph/tensor.h"
#include "kernels/framework/op_kernel.h"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace rill::testing {

inline Output FloatConst(const Scope& scope, std::initializer_list<float> values,
                         TensorShape shape) {
  return ops::Const(scope, Tensor::FromVector<float>(values, shape), DT_FLOAT);
}

// Fails every run, cheaply (inline).
class Failing final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext&) const override {
    return absl::DataLossError("the disk is on fire");
  }
  bool IsExpensive() const override { return false; }
};

// Set by UntilCancelled: `slow_started` (when not null) is notified as it
// starts; `slow_saw_cancellation` once it noticed the cancellation.
inline absl::Notification* slow_started = nullptr;
inline std::atomic<bool> slow_saw_cancellation{false};

// Works until the step is cancelled; gives up after a bound so that a
// broken cancellation fails the test instead of hanging it.
class UntilCancelled final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    if (slow_started != nullptr) slow_started->Notify();
    volatile double sink = 0;
    for (int64_t i = 0; i < int64_t{1} << 36; ++i) {
      sink = sink + 1.0;
      if ((i & 0xffff) == 0 && ctx.cancelled()) {
        slow_saw_cancellation = true;
        return absl::CancelledError("noticed");
      }
    }
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
};

}  // namespace rill::testing

#endif  // RILL_TESTS_RUNTIME_TEST_KERNELS_H_
