// _Send and _Recv: the two ends of an edge the partitioner cut. _Send
// leaves its input in the step's rendezvous under the edge's key; _Recv
// waits for it without holding a thread. The rendezvous holds host tensors:
// on a device with memory of its own (a GPU) _Send copies its input to the
// host first and _Recv copies what it received to the device, through the
// device's context.
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "kernels/framework/device_context.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/rendezvous.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// The key both ends compute from their identical attrs, prepared once.
absl::StatusOr<PreparedRendezvousKey> KeyFromAttrs(const NodeDef& node) {
  RendezvousKey key;
  ASSIGN_OR_RETURN(key.src_device, GetStringAttr(node, "send_device"));
  ASSIGN_OR_RETURN(int64_t incarnation, GetIntAttr(node, "send_device_incarnation"));
  key.src_incarnation = static_cast<uint64_t>(incarnation);
  ASSIGN_OR_RETURN(key.dst_device, GetStringAttr(node, "recv_device"));
  ASSIGN_OR_RETURN(key.tensor_name, GetStringAttr(node, "tensor_name"));
  return PreparedRendezvousKey::Prepare(key);
}

// Builds a _Send or _Recv kernel with the key of its attrs.
template <typename Kernel>
absl::StatusOr<std::unique_ptr<OpKernel>> CreateWithKey(const OpKernelConstruction& c) {
  ASSIGN_OR_RETURN(PreparedRendezvousKey key, KeyFromAttrs(c.def()));
  return std::unique_ptr<OpKernel>(std::make_unique<Kernel>(c, std::move(key)));
}

// The key of this run of the node: inside a loop, the prepared key with
// the frame and iteration in place of its "0:0", so that each iteration's
// value has its own key (the same in the sending and receiving partition).
const PreparedRendezvousKey& KeyOfRun(const PreparedRendezvousKey& key, const KernelContext& ctx,
                                      PreparedRendezvousKey* scratch) {
  if (ctx.frame_id() == 0 && ctx.iter_id() == 0) return key;
  scratch->dst_task = key.dst_task;
  scratch->text = absl::StrCat(key.text.substr(0, key.text.rfind(';') + 1),
                               static_cast<int64_t>(ctx.frame_id()), ":", ctx.iter_id());
  return *scratch;
}

// A dead value (an untaken branch) travels as an empty tensor.
Tensor ValueOrDead(const KernelContext& ctx) {
  return ctx.has_input(0) ? ctx.input(0) : Tensor();
}

absl::StatusOr<Rendezvous*> StepRendezvous(const KernelContext& ctx) {
  if (ctx.rendezvous() == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s needs a rendezvous: it runs only in a partitioned graph", ctx.node().op()));
  }
  return ctx.rendezvous();
}

class SendOp final : public OpKernel {
 public:
  SendOp(const OpKernelConstruction& c, PreparedRendezvousKey key)
      : OpKernel(c), key_(std::move(key)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Rendezvous * rendezvous, StepRendezvous(ctx));
    PreparedRendezvousKey scratch;
    return rendezvous->Send(KeyOfRun(key_, ctx, &scratch), ValueOrDead(ctx));
  }
  bool IsExpensive() const override { return false; }

 private:
  const PreparedRendezvousKey key_;
};

// _Send on a device with memory of its own.
class DeviceSendOp final : public AsyncOpKernel {
 public:
  DeviceSendOp(const OpKernelConstruction& c, PreparedRendezvousKey key)
      : AsyncOpKernel(c), key_(std::move(key)) {}

  void ComputeAsync(KernelContext& ctx, DoneCallback done) const override {
    absl::StatusOr<Rendezvous*> rendezvous = StepRendezvous(ctx);
    if (!rendezvous.ok()) {
      done(rendezvous.status());
      return;
    }
    PreparedRendezvousKey scratch;
    const PreparedRendezvousKey& key = KeyOfRun(key_, ctx, &scratch);
    DeviceContext* device = ctx.device_context();
    if (device == nullptr || !ctx.has_input(0)) {
      done((*rendezvous)->Send(key, ValueOrDead(ctx)));
      return;
    }
    // The step, and so its rendezvous, lasts until `done`.
    auto host = std::make_shared<Tensor>();
    device->CopyToHost(
        ctx.input(0), host.get(),
        [rendezvous = *rendezvous, key, host, done = std::move(done)](absl::Status copied) {
          if (!copied.ok()) {
            done(absl::Status(copied.code(), absl::StrFormat("copying '%s' to the host: %s",
                                                             key.text, copied.message())));
            return;
          }
          done(rendezvous->Send(key, *host));
        });
  }
  bool IsExpensive() const override { return false; }

 private:
  const PreparedRendezvousKey key_;
};

class RecvOp final : public AsyncOpKernel {
 public:
  RecvOp(const OpKernelConstruction& c, PreparedRendezvousKey key)
      : AsyncOpKernel(c), key_(std::move(key)) {}

  void ComputeAsync(KernelContext& ctx, DoneCallback done) const override {
    absl::StatusOr<Rendezvous*> rendezvous = StepRendezvous(ctx);
    if (!rendezvous.ok()) {
      done(rendezvous.status());
      return;
    }
    PreparedRendezvousKey scratch;
    (*rendezvous)
        ->RecvAsync(KeyOfRun(key_, ctx, &scratch), [this, &ctx, done = std::move(done)](
                                                        const absl::Status& status,
                                                        const Tensor& value) {
          if (!status.ok()) {
            done(status);
            return;
          }
          if (!value.IsInitialized()) {
            done(absl::OkStatus());  // Dead: the output stays unset.
            return;
          }
          if (value.dtype() != BaseType(output_type(0))) {
            done(absl::InternalError(absl::StrFormat("received %s under '%s', expected %s",
                                                     DataTypeString(value.dtype()), key_.text,
                                                     DataTypeString(output_type(0)))));
            return;
          }
          DeviceContext* device = ctx.device_context();
          if (device == nullptr) {
            ctx.set_output(0, value);
            done(absl::OkStatus());
            return;
          }
          auto on_device = std::make_shared<Tensor>();
          device->CopyFromHost(
              value, on_device.get(), [this, &ctx, on_device, done](absl::Status copied) {
                if (!copied.ok()) {
                  done(absl::Status(copied.code(),
                                    absl::StrFormat("copying '%s' to %s: %s", key_.text,
                                                    ctx.node().device(), copied.message())));
                  return;
                }
                ctx.set_output(0, *on_device);
                done(absl::OkStatus());
              });
        });
  }
  // It only registers a callback; waiting does not hold the thread.
  bool IsExpensive() const override { return false; }

 private:
  const PreparedRendezvousKey key_;
};

}  // namespace

void RegisterSendRecvKernels(KernelRegistry& r) {
  r.Register(KernelDef("_Send").Device(kDeviceCpu), CreateWithKey<SendOp>);
  r.Register(KernelDef("_Recv").Device(kDeviceCpu), CreateWithKey<RecvOp>);
  r.Register(KernelDef("_Send").Device(kDeviceGpu), CreateWithKey<DeviceSendOp>);
  r.Register(KernelDef("_Recv").Device(kDeviceGpu), CreateWithKey<RecvOp>);
}

}  // namespace rill
