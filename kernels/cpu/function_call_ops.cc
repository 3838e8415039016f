// The kernel of a function call that could not be inlined because its
// function uses an op rill lacks: the graph still loads and runs every step
// that does not need the call; a step that does fails, saying why.
#include <memory>
#include <string>

#include "graph/function_inline.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

class UninlinedCallOp final : public OpKernel {
 public:
  UninlinedCallOp(const OpKernelConstruction& c, std::string reason)
      : OpKernel(c), reason_(std::move(reason)) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    absl::StatusOr<std::string> reason = GetStringAttr(c.def(), kUninlinedCallAttr);
    return std::unique_ptr<OpKernel>(
        std::make_unique<UninlinedCallOp>(c, reason.ok() ? *reason : "the call was not inlined"));
  }
  absl::Status Compute(KernelContext&) const override { return absl::UnimplementedError(reason_); }
  bool IsExpensive() const override { return false; }

 private:
  const std::string reason_;
};

}  // namespace

void RegisterFunctionCallKernels(KernelRegistry& r) {
  for (const char* op : {"PartitionedCall", "StatefulPartitionedCall"}) {
    r.Register(KernelDef(op).Device(kDeviceCpu), UninlinedCallOp::Create);
  }
}

}  // namespace rill
