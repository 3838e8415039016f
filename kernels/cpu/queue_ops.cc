// CPU kernels for the queue ops. FIFOQueueV2 finds or makes its FIFOQueue
// in the device's ResourceMgr and outputs a handle naming it; the others
// look the queue up by that handle. Enqueues and dequeues are
// AsyncOpKernels, so that one waiting for room or for elements holds no
// thread.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/element_copy.h"
#include "kernels/cpu/fifo_queue.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/registry.h"

namespace rill {
namespace {

absl::StatusOr<ResourceMgr*> GetResourceMgr(const KernelContext& ctx) {
  if (ctx.resource_manager() == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s needs the device's resource manager to hold queues, and has none", ctx.node().op()));
  }
  return ctx.resource_manager();
}

// The queue that input 0's handle names.
absl::StatusOr<std::shared_ptr<FIFOQueue>> LookupQueue(const KernelContext& ctx) {
  const Tensor& handle = ctx.input(0);
  if (handle.dtype() != DT_RESOURCE || handle.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: input 0 must be one queue handle, got %s", ctx.node().op(), handle.DebugString()));
  }
  ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
  const ResourceHandleProto& proto = *handle.data<ResourceHandleProto>();
  return resources->Lookup<FIFOQueue>(proto.container(), proto.name());
}

// A copy of each component. The queue keeps its own copies: an input may
// share its buffer with a variable that is later updated in place.
absl::StatusOr<QueueTuple> CopyTuple(KernelContext& ctx, const QueueTuple& tuple) {
  QueueTuple copy;
  for (const Tensor& component : tuple) {
    ASSIGN_OR_RETURN(Tensor c, ctx.AllocateTemp(component.dtype(), component.shape()));
    CopyTensorElements(component, 0, c, 0, component.NumElements());
    copy.push_back(std::move(c));
  }
  return copy;
}

// Row i of every component of a batch becomes element i.
absl::StatusOr<std::vector<QueueTuple>> SplitBatch(KernelContext& ctx, const QueueTuple& batch) {
  const int64_t size = batch[0].dim_size(0);
  std::vector<QueueTuple> elements(static_cast<size_t>(size));
  for (const Tensor& component : batch) {
    TensorShape shape = component.shape();
    shape.RemoveDim(0);
    for (int64_t i = 0; i < size; ++i) {
      ASSIGN_OR_RETURN(Tensor row, ctx.AllocateTemp(component.dtype(), shape));
      CopyTensorElements(component, i * shape.num_elements(), row, 0, shape.num_elements());
      elements[i].push_back(std::move(row));
    }
  }
  return elements;
}

// Stacks component `c` of `elements` into output `c`. REQUIRES: every
// element's component has the same shape (the queue's declared shape).
absl::Status StackOutputs(KernelContext& ctx, const std::vector<QueueTuple>& elements) {
  for (int c = 0; c < ctx.num_outputs(); ++c) {
    const TensorShape& element_shape = elements[0][c].shape();
    TensorShape shape({static_cast<int64_t>(elements.size())});
    for (int64_t d : element_shape.dim_sizes()) shape.AddDim(d);
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(c, shape));
    const int64_t row = element_shape.num_elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      CopyTensorElements(elements[i][c], 0, *out, static_cast<int64_t>(i) * row, row);
    }
  }
  return absl::OkStatus();
}

// FIFOQueueV2: the queue (container, shared_name) as the node declares it.
// Without a shared_name the queue is named after its node, as variables
// are, so that every executor of a session finds the same one (TensorFlow
// shares the stateful kernel itself between them, and its queue is
// private to that kernel).
class FIFOQueueOp final : public OpKernel {
 public:
  struct Definition {
    DataTypeVector component_types;
    std::vector<TensorShape> shapes;
    int64_t capacity = -1;
  };

  FIFOQueueOp(const OpKernelConstruction& c, Definition definition, Tensor handle)
      : OpKernel(c), definition_(std::move(definition)), handle_(std::move(handle)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    Definition definition;
    ASSIGN_OR_RETURN(definition.component_types, GetTypeListAttr(c.def(), "component_types"));
    ASSIGN_OR_RETURN(std::vector<PartialTensorShape> shapes, GetShapeListAttr(c.def(), "shapes"));
    if (!shapes.empty() && shapes.size() != definition.component_types.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("FIFOQueueV2 has %d component types but %d shapes; give a shape for "
                          "each component or none",
                          definition.component_types.size(), shapes.size()));
    }
    for (size_t i = 0; i < shapes.size(); ++i) {
      absl::StatusOr<TensorShape> shape = shapes[i].AsTensorShape();
      if (!shape.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("FIFOQueueV2 needs fully defined shapes; component %d has shape %s", i,
                            shapes[i].DebugString()));
      }
      definition.shapes.push_back(*std::move(shape));
    }
    ASSIGN_OR_RETURN(definition.capacity, GetIntAttr(c.def(), "capacity"));
    ASSIGN_OR_RETURN(std::string container, GetStringAttr(c.def(), "container"));
    ASSIGN_OR_RETURN(std::string name, GetStringAttr(c.def(), "shared_name"));
    if (name.empty()) name = c.def().name();
    Tensor handle(DT_RESOURCE, TensorShape());
    ResourceHandleProto& proto = handle.scalar<ResourceHandleProto>();
    proto.set_device(c.def().device());
    proto.set_container(container.empty() ? std::string(kDefaultContainer) : container);
    proto.set_name(name);
    proto.set_maybe_type_name(FIFOQueue::kTypeName);
    return std::unique_ptr<OpKernel>(
        std::make_unique<FIFOQueueOp>(c, std::move(definition), std::move(handle)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
    const ResourceHandleProto& proto = handle_.scalar<ResourceHandleProto>();
    ASSIGN_OR_RETURN(
        std::shared_ptr<FIFOQueue> queue,
        resources->LookupOrCreate<FIFOQueue>(
            proto.container(), proto.name(), [&]() -> absl::StatusOr<std::shared_ptr<FIFOQueue>> {
              return std::make_shared<FIFOQueue>(proto.name(), definition_.component_types,
                                                 definition_.shapes, definition_.capacity);
            }));
    RETURN_IF_ERROR(queue->CheckSameDefinition(definition_.component_types, definition_.shapes,
                                               definition_.capacity));
    ctx.set_output(0, handle_);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const Definition definition_;
  const Tensor handle_;  // Shared by every run; consumers never write inputs.
};

// QueueEnqueueV2 (kMany false) and QueueEnqueueManyV2.
template <bool kMany>
class QueueEnqueueOp final : public AsyncOpKernel {
 public:
  QueueEnqueueOp(const OpKernelConstruction& c, int64_t timeout_ms)
      : AsyncOpKernel(c), timeout_ms_(timeout_ms) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t timeout_ms, GetIntAttr(c.def(), "timeout_ms"));
    return std::unique_ptr<OpKernel>(std::make_unique<QueueEnqueueOp>(c, timeout_ms));
  }

  void ComputeAsync(KernelContext& ctx, DoneCallback done) const override {
    absl::StatusOr<std::shared_ptr<FIFOQueue>> queue = LookupQueue(ctx);
    absl::StatusOr<std::vector<QueueTuple>> elements =
        queue.ok() ? Elements(ctx, **queue) : queue.status();
    if (!elements.ok()) {
      done(elements.status());
      return;
    }
    (*queue)->Enqueue(*std::move(elements), QueueWait{timeout_ms_, ctx.cancellation()},
                      std::move(done));
  }

 private:
  // The elements to add, checked and copied from the inputs.
  static absl::StatusOr<std::vector<QueueTuple>> Elements(KernelContext& ctx,
                                                          const FIFOQueue& queue) {
    QueueTuple components;
    for (int i = 1; i < ctx.num_inputs(); ++i) components.push_back(ctx.input(i));
    RETURN_IF_ERROR(queue.ValidateTuple(components, kMany));
    if constexpr (kMany) {
      return SplitBatch(ctx, components);
    } else {
      ASSIGN_OR_RETURN(QueueTuple element, CopyTuple(ctx, components));
      std::vector<QueueTuple> elements;
      elements.push_back(std::move(element));
      return elements;
    }
  }

  const int64_t timeout_ms_;
};

enum class DequeueKind { kOne, kMany, kUpTo };

// QueueDequeueV2 (one element, outputs of the element's shapes),
// QueueDequeueManyV2 (n, stacked) and QueueDequeueUpToV2 (n, or fewer from
// a closed queue).
template <DequeueKind kKind>
class QueueDequeueOp final : public AsyncOpKernel {
 public:
  QueueDequeueOp(const OpKernelConstruction& c, DataTypeVector component_types, int64_t timeout_ms)
      : AsyncOpKernel(c), component_types_(std::move(component_types)), timeout_ms_(timeout_ms) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(DataTypeVector types, GetTypeListAttr(c.def(), "component_types"));
    ASSIGN_OR_RETURN(int64_t timeout_ms, GetIntAttr(c.def(), "timeout_ms"));
    return std::unique_ptr<OpKernel>(
        std::make_unique<QueueDequeueOp>(c, std::move(types), timeout_ms));
  }

  void ComputeAsync(KernelContext& ctx, DoneCallback done) const override {
    absl::StatusOr<std::shared_ptr<FIFOQueue>> queue = LookupQueue(ctx);
    if (!queue.ok()) {
      done(queue.status());
      return;
    }
    absl::StatusOr<int64_t> n = Count(ctx, **queue);
    if (!n.ok()) {
      done(n.status());
      return;
    }
    if (kKind != DequeueKind::kOne && *n == 0) {
      done(EmptyBatch(ctx, **queue));
      return;
    }
    // The context stays valid until `done` runs.
    (*queue)->Dequeue(
        *n, kKind == DequeueKind::kUpTo, QueueWait{timeout_ms_, ctx.cancellation()},
        [&ctx, done = std::move(done)](absl::Status status, std::vector<QueueTuple> elements) {
          if (status.ok()) status = SetOutputs(ctx, std::move(elements));
          done(std::move(status));
        });
  }

 private:
  // How many elements to take, after checking that the queue can give
  // them as this node declares.
  absl::StatusOr<int64_t> Count(const KernelContext& ctx, const FIFOQueue& queue) const {
    RETURN_IF_ERROR(queue.ValidateDequeueTypes(component_types_));
    if constexpr (kKind == DequeueKind::kOne) {
      return 1;
    } else {
      const Tensor& n = ctx.input(1);
      if (n.dtype() != DT_INT32 || n.NumElements() != 1) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: n must be an int32 scalar, got %s", op(), n.DebugString()));
      }
      const int64_t count = *n.data<int32_t>();
      if (count < 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s requested %d < 0 elements", op(), count));
      }
      // A batch of elements of unknown shapes might not stack.
      if (queue.shapes().empty()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "FIFOQueue '%s': DequeueMany and DequeueUpTo require the components to have "
            "specified shapes",
            queue.name()));
      }
      return count;
    }
  }

  static absl::Status EmptyBatch(KernelContext& ctx, const FIFOQueue& queue) {
    for (int c = 0; c < ctx.num_outputs(); ++c) {
      TensorShape shape({0});
      for (int64_t d : queue.shapes()[c].dim_sizes()) shape.AddDim(d);
      RETURN_IF_ERROR(ctx.AllocateOutput(c, shape).status());
    }
    return absl::OkStatus();
  }

  static absl::Status SetOutputs(KernelContext& ctx, std::vector<QueueTuple> elements) {
    if constexpr (kKind == DequeueKind::kOne) {
      // The queue's copy is handed out as is: nothing else holds it now.
      for (int c = 0; c < ctx.num_outputs(); ++c) ctx.set_output(c, std::move(elements[0][c]));
      return absl::OkStatus();
    } else {
      return StackOutputs(ctx, elements);
    }
  }

  const DataTypeVector component_types_;
  const int64_t timeout_ms_;
};

class QueueCloseOp final : public OpKernel {
 public:
  QueueCloseOp(const OpKernelConstruction& c, bool cancel_pending_enqueues)
      : OpKernel(c), cancel_pending_enqueues_(cancel_pending_enqueues) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool cancel, GetBoolAttr(c.def(), "cancel_pending_enqueues"));
    return std::unique_ptr<OpKernel>(std::make_unique<QueueCloseOp>(c, cancel));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<FIFOQueue> queue, LookupQueue(ctx));
    return queue->Close(cancel_pending_enqueues_);
  }
  bool IsExpensive() const override { return false; }

 private:
  const bool cancel_pending_enqueues_;
};

class QueueSizeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<FIFOQueue> queue, LookupQueue(ctx));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
    out->scalar<int32_t>() = static_cast<int32_t>(queue->size());
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class QueueIsClosedOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<FIFOQueue> queue, LookupQueue(ctx));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
    out->scalar<bool>() = queue->is_closed();
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterCpuQueueKernels(KernelRegistry& r) {
  r.Register(KernelDef("FIFOQueueV2").Device(kDeviceCpu), FIFOQueueOp::Create);
  r.Register(KernelDef("QueueEnqueueV2").Device(kDeviceCpu), QueueEnqueueOp<false>::Create);
  r.Register(KernelDef("QueueEnqueueManyV2").Device(kDeviceCpu), QueueEnqueueOp<true>::Create);
  r.Register(KernelDef("QueueDequeueV2").Device(kDeviceCpu),
             QueueDequeueOp<DequeueKind::kOne>::Create);
  r.Register(KernelDef("QueueDequeueManyV2").Device(kDeviceCpu),
             QueueDequeueOp<DequeueKind::kMany>::Create);
  r.Register(KernelDef("QueueDequeueUpToV2").Device(kDeviceCpu),
             QueueDequeueOp<DequeueKind::kUpTo>::Create);
  r.Register(KernelDef("QueueCloseV2").Device(kDeviceCpu), QueueCloseOp::Create);
  r.Register(KernelDef("QueueSizeV2").Device(kDeviceCpu), MakeKernel<QueueSizeOp>);
  r.Register(KernelDef("QueueIsClosedV2").Device(kDeviceCpu), MakeKernel<QueueIsClosedOp>);
}

}  // namespace rill
