// The CPU kernel of Assert: INVALID_ARGUMENT naming the node and showing
// its data, as TensorFlow's message does, when the condition is false.
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

class AssertOp final : public OpKernel {
 public:
  AssertOp(const OpKernelConstruction& c, int64_t summarize) : OpKernel(c), summarize_(summarize) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const int64_t summarize, GetIntAttr(c.def(), "summarize"));
    return std::unique_ptr<OpKernel>(std::make_unique<AssertOp>(c, summarize));
  }
  bool IsExpensive() const override { return false; }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& condition = ctx.input(0);
    if (condition.dims() != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Assert: the condition must be a scalar, got shape %s", condition.shape().DebugString()));
    }
    if (condition.data<bool>()[0]) return absl::OkStatus();
    std::string message = "assertion failed:";
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      absl::StrAppend(&message, " [", ctx.input(i).SummarizeValue(summarize_), "]");
    }
    return absl::InvalidArgumentError(message);
  }

 private:
  const int64_t summarize_;
};

}  // namespace

void RegisterCpuAssertKernels(KernelRegistry& r) {
  r.Register(KernelDef("Assert").Device(kDeviceCpu), AssertOp::Create);
}

}  // namespace rill
