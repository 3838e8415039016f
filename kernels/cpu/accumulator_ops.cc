// CPU kernels for the conditional accumulators (TensorFlow's reference-
// and resource-handle flavours share one kernel per op) and for
// WorkerClocks. The resources live in the device's ResourceMgr, found by
// (container, shared_name or node name); waiting ops hold no thread.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/conditional_accumulator.h"
#include "kernels/cpu/worker_clocks.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using Reduction = ConditionalAccumulator::Reduction;

// Where a resource lives: the node's container (or the default one) and
// its shared_name (or the node's name), as TensorFlow resolves them.
struct Location {
  std::string container;
  std::string name;
};

absl::StatusOr<Location> GetLocation(const NodeDef& node) {
  ASSIGN_OR_RETURN(std::string container, GetStringAttr(node, "container"));
  ASSIGN_OR_RETURN(std::string shared_name, GetStringAttr(node, "shared_name"));
  return Location{container.empty() ? std::string(kDefaultContainer) : std::move(container),
                  shared_name.empty() ? node.name() : std::move(shared_name)};
}

// A scalar DT_RESOURCE tensor naming the resource, as VarHandleOp makes.
Tensor MakeHandle(const NodeDef& node, const Location& location, const char* type_name) {
  Tensor handle(DT_RESOURCE, TensorShape());
  ResourceHandleProto& proto = handle.scalar<ResourceHandleProto>();
  proto.set_device(node.device());
  proto.set_container(location.container);
  proto.set_name(location.name);
  proto.set_maybe_type_name(type_name);
  return handle;
}

absl::StatusOr<ResourceMgr*> GetResourceMgr(const KernelContext& ctx) {
  if (ctx.resource_manager() == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s needs the device's resource manager to hold its state, and has none", ctx.node().op()));
  }
  return ctx.resource_manager();
}

// The resource that input 0 names: a resource handle, or TensorFlow's
// reference handle, the string vector [container, name].
template <typename R>
absl::StatusOr<std::shared_ptr<R>> LookupFromHandle(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
  const Tensor& handle = ctx.input(0);
  if (handle.dtype() == DT_RESOURCE && handle.NumElements() == 1) {
    const ResourceHandleProto& proto = *handle.data<ResourceHandleProto>();
    return resources->Lookup<R>(proto.container(), proto.name());
  }
  if (handle.dtype() == DT_STRING && handle.shape() == TensorShape({2})) {
    return resources->Lookup<R>(handle.data<std::string>()[0], handle.data<std::string>()[1]);
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: input 0 must be a handle to a %s (a resource, or the strings [container, name]), "
      "got %s",
      ctx.node().op(), R::kTypeName, handle.DebugString()));
}

template <typename T>
absl::StatusOr<T> GetScalar(const KernelContext& ctx, int input, const char* what) {
  const Tensor& t = ctx.input(input);
  if (t.dtype() != kDataTypeOf<T> || t.NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be one %s, got %s", ctx.node().op(), what,
                        DataTypeString(kDataTypeOf<T>), t.DebugString()));
  }
  return *t.data<T>();
}

// ConditionalAccumulator and ResourceConditionalAccumulator: create the
// accumulator on first use and output its handle.
class AccumulatorOp final : public OpKernel {
 public:
  struct Spec {
    DataType dtype;
    PartialTensorShape shape;
    Reduction reduction;
    Location location;
  };

  AccumulatorOp(const OpKernelConstruction& c, Spec spec, Tensor resource_handle)
      : OpKernel(c), spec_(std::move(spec)), resource_handle_(std::move(resource_handle)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    Spec spec;
    ASSIGN_OR_RETURN(spec.dtype, GetTypeAttr(c.def(), "dtype"));
    ASSIGN_OR_RETURN(spec.shape, GetShapeAttr(c.def(), "shape"));
    ASSIGN_OR_RETURN(std::string reduction, GetStringAttr(c.def(), "reduction_type"));
    ASSIGN_OR_RETURN(spec.reduction, ConditionalAccumulator::ParseReduction(reduction));
    ASSIGN_OR_RETURN(spec.location, GetLocation(c.def()));
    // The reference flavour's handle lives with the accumulator instead.
    Tensor handle;
    if (c.output_type(0) == DT_RESOURCE) {
      handle = MakeHandle(c.def(), spec.location, ConditionalAccumulator::kTypeName);
    }
    return std::unique_ptr<OpKernel>(
        std::make_unique<AccumulatorOp>(c, std::move(spec), std::move(handle)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator,
                     resources->LookupOrCreate<ConditionalAccumulator>(
                         spec_.location.container, spec_.location.name,
                         [&]() -> absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> {
                           return std::make_shared<ConditionalAccumulator>(
                               spec_.location.container, spec_.location.name, spec_.dtype,
                               spec_.shape, spec_.reduction);
                         }));
    RETURN_IF_ERROR(accumulator->CheckDeclaration(spec_.dtype, spec_.shape, spec_.reduction));
    if (resource_handle_.IsInitialized()) {
      ctx.set_output(0, resource_handle_);
    } else {
      // The manager keeps the accumulator, and so the handle, alive.
      ctx.set_output_ref(0, accumulator->handle(), accumulator->handle_mu());
    }
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const Spec spec_;
  const Tensor resource_handle_;  // Uninitialized for the reference flavour.
};

class AccumulatorApplyGradientOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator,
                     LookupFromHandle<ConditionalAccumulator>(ctx));
    ASSIGN_OR_RETURN(int64_t local_step, GetScalar<int64_t>(ctx, 1, "local_step"));
    return accumulator->Apply(local_step, ctx.input(2), ctx.eigen_cpu());
  }
};

class AccumulatorTakeGradientOp final : public AsyncOpKernel {
 public:
  explicit AccumulatorTakeGradientOp(const OpKernelConstruction& c)
      : AsyncOpKernel(c), dtype_(c.output_type(0)) {}

  void ComputeAsync(KernelContext& ctx, DoneCallback done) const override {
    absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> accumulator =
        LookupFromHandle<ConditionalAccumulator>(ctx);
    if (!accumulator.ok()) {
      done(accumulator.status());
      return;
    }
    if ((*accumulator)->dtype() != dtype_) {
      done(absl::InvalidArgumentError(
          absl::StrFormat("accumulator '%s' holds %s; this node takes %s", (*accumulator)->name(),
                          DataTypeString((*accumulator)->dtype()), DataTypeString(dtype_))));
      return;
    }
    absl::StatusOr<int32_t> num_required = GetScalar<int32_t>(ctx, 1, "num_required");
    if (!num_required.ok()) {
      done(num_required.status());
      return;
    }
    (*accumulator)
        ->TakeAsync(*num_required, ctx.cancellation(), ctx.eigen_cpu(),
                    [&ctx, done = std::move(done)](absl::StatusOr<Tensor> average) {
                      if (!average.ok()) {
                        done(average.status());
                        return;
                      }
                      ctx.set_output(0, *std::move(average));
                      done(absl::OkStatus());
                    });
  }

 private:
  const DataType dtype_;
};

class AccumulatorSetGlobalStepOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator,
                     LookupFromHandle<ConditionalAccumulator>(ctx));
    ASSIGN_OR_RETURN(int64_t step, GetScalar<int64_t>(ctx, 1, "new_global_step"));
    accumulator->SetGlobalStep(step);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class AccumulatorNumAccumulatedOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator,
                     LookupFromHandle<ConditionalAccumulator>(ctx));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
    out->scalar<int32_t>() = accumulator->num_accumulated();
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

// WorkerClocks: creates the clocks on first use and outputs their handle.
class WorkerClocksOp final : public OpKernel {
 public:
  WorkerClocksOp(const OpKernelConstruction& c, int num_workers, Location location)
      : OpKernel(c),
        num_workers_(num_workers),
        location_(std::move(location)),
        handle_(MakeHandle(c.def(), location_, WorkerClocks::kTypeName)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t num_workers, GetIntAttr(c.def(), "num_workers"));
    if (num_workers < 1 || num_workers > (int64_t{1} << 20)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("WorkerClocks: num_workers must be in [1, 2^20], not %d", num_workers));
    }
    ASSIGN_OR_RETURN(Location location, GetLocation(c.def()));
    return std::unique_ptr<OpKernel>(
        std::make_unique<WorkerClocksOp>(c, static_cast<int>(num_workers), std::move(location)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
    ASSIGN_OR_RETURN(std::shared_ptr<WorkerClocks> clocks,
                     resources->LookupOrCreate<WorkerClocks>(
                         location_.container, location_.name,
                         [&]() -> absl::StatusOr<std::shared_ptr<WorkerClocks>> {
                           return std::make_shared<WorkerClocks>(location_.name, num_workers_);
                         }));
    if (clocks->num_workers() != num_workers_) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "WorkerClocks '%s' in container '%s' counts %d workers; this node declares %d",
          location_.name, location_.container, clocks->num_workers(), num_workers_));
    }
    ctx.set_output(0, handle_);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const int num_workers_;
  const Location location_;
  const Tensor handle_;  // Shared by every run; consumers never write inputs.
};

class WorkerClocksTickOp final : public AsyncOpKernel {
 public:
  WorkerClocksTickOp(const OpKernelConstruction& c, int64_t staleness, absl::Duration timeout)
      : AsyncOpKernel(c), staleness_(staleness), timeout_(timeout) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t staleness, GetIntAttr(c.def(), "staleness"));
    ASSIGN_OR_RETURN(int64_t timeout_ms, GetIntAttr(c.def(), "timeout_ms"));
    if (staleness < -1 || timeout_ms < -1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "WorkerClocksTick: staleness (%d) and timeout_ms (%d) must be >= -1 (-1: unbounded)",
          staleness, timeout_ms));
    }
    const absl::Duration timeout =
        timeout_ms < 0 ? absl::InfiniteDuration() : absl::Milliseconds(timeout_ms);
    return std::unique_ptr<OpKernel>(std::make_unique<WorkerClocksTickOp>(c, staleness, timeout));
  }

  void ComputeAsync(KernelContext& ctx, DoneCallback done) const override {
    absl::StatusOr<std::shared_ptr<WorkerClocks>> clocks = LookupFromHandle<WorkerClocks>(ctx);
    absl::StatusOr<int32_t> worker =
        clocks.ok() ? GetScalar<int32_t>(ctx, 1, "worker") : clocks.status();
    if (!worker.ok()) {
      done(worker.status());
      return;
    }
    (*clocks)->TickAsync(
        *worker, staleness_, timeout_, ctx.cancellation(),
        [&ctx, done = std::move(done)](absl::StatusOr<WorkerClocks::Release> release) {
          if (!release.ok()) {
            done(release.status());
            return;
          }
          absl::Status status = SetScalar<int64_t>(ctx, 0, release->clock);
          if (status.ok()) status = SetScalar<int64_t>(ctx, 1, release->slowest);
          done(std::move(status));
        });
  }
  // It only registers a wait; waiting does not hold the thread.
  bool IsExpensive() const override { return false; }

 private:
  template <typename T>
  static absl::Status SetScalar(KernelContext& ctx, int output, T value) {
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(output, TensorShape()));
    out->scalar<T>() = value;
    return absl::OkStatus();
  }

  const int64_t staleness_;  // -1: no bound.
  const absl::Duration timeout_;
};

class WorkerClocksRetireOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<WorkerClocks> clocks, LookupFromHandle<WorkerClocks>(ctx));
    ASSIGN_OR_RETURN(const int32_t worker, GetScalar<int32_t>(ctx, 1, "worker"));
    return clocks->Retire(worker);
  }
  bool IsExpensive() const override { return false; }
};

class WorkerClocksStateOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<WorkerClocks> clocks, LookupFromHandle<WorkerClocks>(ctx));
    const std::vector<WorkerClocks::Worker> workers = clocks->State();
    const absl::Time now = absl::Now();
    const TensorShape shape({static_cast<int64_t>(workers.size())});
    ASSIGN_OR_RETURN(Tensor * steps, ctx.AllocateOutput(0, shape));
    ASSIGN_OR_RETURN(Tensor * seconds, ctx.AllocateOutput(1, shape));
    for (size_t i = 0; i < workers.size(); ++i) {
      steps->data<int64_t>()[i] = workers[i].clock;
      seconds->data<double>()[i] = workers[i].last_heard == absl::InfinitePast()
                                       ? -1.0
                                       : absl::ToDoubleSeconds(now - workers[i].last_heard);
    }
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterCpuAccumulatorKernels(KernelRegistry& r) {
  const DataTypeVector types = {DT_FLOAT, DT_DOUBLE, DT_HALF,      DT_BFLOAT16,
                                DT_INT32, DT_INT64,  DT_COMPLEX64, DT_COMPLEX128};
  // ConditionalAccumulator, AccumulatorApplyGradient, ... and their
  // Resource* twins.
  for (const std::string prefix : {"", "Resource"}) {
    r.Register(KernelDef(prefix + "ConditionalAccumulator")
                   .Device(kDeviceCpu)
                   .TypeConstraint("dtype", types),
               AccumulatorOp::Create);
    r.Register(KernelDef(prefix + "AccumulatorApplyGradient")
                   .Device(kDeviceCpu)
                   .TypeConstraint("dtype", types),
               MakeKernel<AccumulatorApplyGradientOp>);
    r.Register(KernelDef(prefix + "AccumulatorTakeGradient")
                   .Device(kDeviceCpu)
                   .TypeConstraint("dtype", types),
               MakeKernel<AccumulatorTakeGradientOp>);
    r.Register(KernelDef(prefix + "AccumulatorSetGlobalStep").Device(kDeviceCpu),
               MakeKernel<AccumulatorSetGlobalStepOp>);
    r.Register(KernelDef(prefix + "AccumulatorNumAccumulated").Device(kDeviceCpu),
               MakeKernel<AccumulatorNumAccumulatedOp>);
  }
  r.Register(KernelDef("WorkerClocks").Device(kDeviceCpu), WorkerClocksOp::Create);
  r.Register(KernelDef("WorkerClocksTick").Device(kDeviceCpu), WorkerClocksTickOp::Create);
  r.Register(KernelDef("WorkerClocksRetire").Device(kDeviceCpu), MakeKernel<WorkerClocksRetireOp>);
  r.Register(KernelDef("WorkerClocksState").Device(kDeviceCpu), MakeKernel<WorkerClocksStateOp>);
}

}  // namespace rill
