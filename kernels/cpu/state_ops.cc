// Kernels for variables: reference variables (Variable, VariableV2) and
// the ops that assign them in place, and resource variables (VarHandleOp,
// ReadVariableOp, AssignVariableOp, VarIsInitializedOp, DisableCopyOnRead,
// and ResourceGather on the CPU). Both kinds live in the device's
// ResourceMgr, found by (container, shared_name or node name). Apart from
// AssignAdd, AssignSub and ResourceGather they never compute on elements,
// so the same kernels serve the GPU, copying through its device context.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/gather_geometry.h"
#include "kernels/common/training_util.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/device_context.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// Where a variable lives: the node's container (or the default one) and its
// shared_name (or the node's name), as TensorFlow resolves them.
struct VarLocation {
  std::string container;
  std::string name;
};

absl::StatusOr<VarLocation> GetVarLocation(const NodeDef& node) {
  ASSIGN_OR_RETURN(std::string container, GetStringAttr(node, "container"));
  ASSIGN_OR_RETURN(std::string shared_name, GetStringAttr(node, "shared_name"));
  return VarLocation{container.empty() ? std::string(kDefaultContainer) : std::move(container),
                     shared_name.empty() ? node.name() : std::move(shared_name)};
}

absl::StatusOr<ResourceMgr*> GetResourceMgr(const KernelContext& ctx) {
  if (ctx.resource_manager() == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s needs the device's resource manager to hold variables, and has none", ctx.node().op()));
  }
  return ctx.resource_manager();
}

// Copies the elements of `from` into `to`, in the device's memory when
// they are there. REQUIRES: same dtype and element count.
absl::Status CopyElements(const KernelContext& ctx, const Tensor& from, const Tensor& to) {
  if (BaseType(from.dtype()) == DT_STRING) {
    std::copy_n(from.data<std::string>(), from.NumElements(), to.data<std::string>());
  } else if (ctx.device_context() != nullptr && !InHostMemory(from.dtype())) {
    return ctx.device_context()->CopyWithinDevice(from.raw_data(), to.raw_data(),
                                                  from.TotalBytes());
  } else {
    // memmove: assigning a variable its own value is allowed.
    std::memmove(to.raw_data(), from.raw_data(), from.TotalBytes());
  }
  return absl::OkStatus();
}

// A scalar bool output computed on the host.
absl::Status SetBoolOutput(KernelContext& ctx, bool value) {
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
  if (ctx.device_context() != nullptr) {
    return ctx.device_context()->CopyHostBytesToDevice(&value, out->raw_data(), sizeof(bool));
  }
  out->scalar<bool>() = value;
  return absl::OkStatus();
}

// Variable and VariableV2: a reference to the variable's tensor, created
// (uninitialized) on first use.
class VariableOp final : public OpKernel {
 public:
  VariableOp(const OpKernelConstruction& c, DataType dtype, VarLocation location)
      : OpKernel(c), dtype_(dtype), location_(std::move(location)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(DataType dtype, GetTypeAttr(c.def(), "dtype"));
    ASSIGN_OR_RETURN(VarLocation location, GetVarLocation(c.def()));
    return std::unique_ptr<OpKernel>(std::make_unique<VariableOp>(c, dtype, std::move(location)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
    ASSIGN_OR_RETURN(std::shared_ptr<Var> var,
                     resources->LookupOrCreate<Var>(location_.container, location_.name,
                                                    [&]() -> absl::StatusOr<std::shared_ptr<Var>> {
                                                      return std::make_shared<Var>(dtype_);
                                                    }));
    if (var->dtype() != dtype_) {
      return absl::InvalidArgumentError(
          absl::StrFormat("variable %s/%s holds %s; this node declares it %s", location_.container,
                          location_.name, DataTypeString(var->dtype()), DataTypeString(dtype_)));
    }
    // The manager keeps the variable alive for as long as it may be used.
    ctx.set_output_ref(0, var->tensor(), var->mu());
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const DataType dtype_;
  const VarLocation location_;
};

// Assign: copies the value into the variable, in place when the shapes
// agree, else into a fresh buffer (first assignment, or a new shape with
// validate_shape false). Always under the variable's lock, since it may
// replace the variable's tensor.
class AssignOp final : public OpKernel {
 public:
  explicit AssignOp(const OpKernelConstruction& c)
      : OpKernel(c), validate_shape_(GetBoolAttr(c.def(), "validate_shape").value_or(true)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& value = ctx.input(1);
    {
      absl::MutexLock lock(ctx.input_ref_mutex(0));
      Tensor* var = ctx.mutable_input(0);
      const bool same_shape = var->IsInitialized() && var->shape() == value.shape();
      if (validate_shape_ && var->IsInitialized() && !same_shape) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Assign to %s requires shapes of both tensors to match. lhs shape= %s rhs shape= %s",
            RefInputName(ctx, 0), var->shape().DebugString(), value.shape().DebugString()));
      }
      if (same_shape && var->dtype() == value.dtype()) {
        RETURN_IF_ERROR(CopyElements(ctx, value, *var));
      } else {
        ASSIGN_OR_RETURN(Tensor fresh, ctx.AllocateTemp(BaseType(value.dtype()), value.shape()));
        RETURN_IF_ERROR(CopyElements(ctx, value, fresh));
        *var = std::move(fresh);
      }
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }

 private:
  const bool validate_shape_;
};

// AssignAdd (kAdd) and AssignSub: element-wise update of an initialized
// variable of the same shape; without use_locking the update races with
// other unlocked writers, as in TensorFlow.
template <typename T, bool kAdd>
class AssignUpdateOp final : public OpKernel {
 public:
  explicit AssignUpdateOp(const OpKernelConstruction& c)
      : OpKernel(c), use_locking_(GetBoolAttr(c.def(), "use_locking").value_or(false)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    {
      training_util::RefInputLocks lock(ctx, {0}, use_locking_);
      ASSIGN_OR_RETURN(Tensor var, training_util::AssignUpdateVariable(ctx, use_locking_));
      if constexpr (kAdd) {
        var.flat<T>().device(ctx.eigen_cpu()) += ctx.input(1).flat<T>();
      } else {
        var.flat<T>().device(ctx.eigen_cpu()) -= ctx.input(1).flat<T>();
      }
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }

 private:
  const bool use_locking_;
};

class IsVariableInitializedOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    return SetBoolOutput(ctx, ctx.input(0).IsInitialized());
  }
  bool IsExpensive() const override { return false; }
};

// VarHandleOp: a scalar DT_RESOURCE tensor naming the variable; the
// variable itself is made by the first AssignVariableOp.
class VarHandleOp final : public OpKernel {
 public:
  VarHandleOp(const OpKernelConstruction& c, Tensor handle)
      : OpKernel(c), handle_(std::move(handle)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(VarLocation location, GetVarLocation(c.def()));
    Tensor handle(DT_RESOURCE, TensorShape());
    ResourceHandleProto& proto = handle.scalar<ResourceHandleProto>();
    proto.set_device(c.def().device());
    proto.set_container(location.container);
    proto.set_name(location.name);
    proto.set_maybe_type_name(Var::kTypeName);
    return std::unique_ptr<OpKernel>(std::make_unique<VarHandleOp>(c, std::move(handle)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ctx.set_output(0, handle_);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const Tensor handle_;  // Shared by every run; consumers never write inputs.
};

absl::StatusOr<const ResourceHandleProto*> GetHandle(const KernelContext& ctx) {
  const Tensor& handle = ctx.input(0);
  if (handle.dtype() != DT_RESOURCE || handle.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: input 0 must be one resource handle, got %s", ctx.node().op(), handle.DebugString()));
  }
  return handle.data<ResourceHandleProto>();
}

absl::Status CheckDtype(const char* action, DataType have, DataType want) {
  if (have == want) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("Trying to %s variable with wrong dtype. Expected %s got %s", action,
                      DataTypeString(have), DataTypeString(want)));
}

// Resource variables replace their tensor on every assignment, so a read
// shares the buffer without copying and keeps its value.
absl::StatusOr<Tensor> ReadVariable(KernelContext& ctx, DataType dtype) {
  ASSIGN_OR_RETURN(const ResourceHandleProto* handle, GetHandle(ctx));
  ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
  auto var = resources->Lookup<Var>(handle->container(), handle->name());
  if (!var.ok()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "Error while reading resource variable %s from container %s. This could mean that "
        "the variable was uninitialized. %s",
        handle->name(), handle->container(), var.status().message()));
  }
  RETURN_IF_ERROR(CheckDtype("read", (*var)->dtype(), dtype));
  Tensor value;
  {
    absl::MutexLock lock((*var)->mu());
    value = *(*var)->tensor();
  }
  if (!value.IsInitialized()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("Attempting to read uninitialized resource variable %s from container %s",
                        handle->name(), handle->container()));
  }
  return value;
}

class ReadVariableOp final : public OpKernel {
 public:
  explicit ReadVariableOp(const OpKernelConstruction& c) : OpKernel(c), dtype_(c.output_type(0)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor value, ReadVariable(ctx, dtype_));
    ctx.set_output(0, std::move(value));
    return absl::OkStatus();
  }

 private:
  const DataType dtype_;
};

// ResourceGather: rows of the variable's value (axis 0), read as
// ReadVariableOp reads it (sharing its buffer), then gathered.
class ResourceGatherOp final : public OpKernel {
 public:
  explicit ResourceGatherOp(const OpKernelConstruction& c)
      : OpKernel(c), dtype_(c.output_type(0)) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const int64_t batch_dims, GetIntAttr(c.def(), "batch_dims"));
    if (batch_dims != 0) {
      return absl::UnimplementedError(
          absl::StrFormat("ResourceGather with batch_dims %d (only 0 is supported)", batch_dims));
    }
    return std::unique_ptr<OpKernel>(std::make_unique<ResourceGatherOp>(c));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Tensor value, ReadVariable(ctx, dtype_));
    if (value.dims() < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("ResourceGather: the variable must have rank >= 1, got shape %s",
                          value.shape().DebugString()));
    }
    return transform_util::GatherAlong(ctx, value, ctx.input(1), 0, "ResourceGather");
  }

 private:
  const DataType dtype_;
};

class AssignVariableOp final : public OpKernel {
 public:
  AssignVariableOp(const OpKernelConstruction& c, DataType dtype, bool validate_shape)
      : OpKernel(c), dtype_(dtype), validate_shape_(validate_shape) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(DataType dtype, GetTypeAttr(c.def(), "dtype"));
    ASSIGN_OR_RETURN(bool validate_shape, GetBoolAttr(c.def(), "validate_shape"));
    return std::unique_ptr<OpKernel>(std::make_unique<AssignVariableOp>(c, dtype, validate_shape));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const ResourceHandleProto* handle, GetHandle(ctx));
    ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
    const Tensor& value = ctx.input(1);
    ASSIGN_OR_RETURN(std::shared_ptr<Var> var,
                     resources->LookupOrCreate<Var>(handle->container(), handle->name(),
                                                    [&]() -> absl::StatusOr<std::shared_ptr<Var>> {
                                                      return std::make_shared<Var>(dtype_);
                                                    }));
    RETURN_IF_ERROR(CheckDtype("assign", var->dtype(), dtype_));
    // A copy: the variable must not alias a tensor its feeder may reuse.
    ASSIGN_OR_RETURN(Tensor copy, ctx.AllocateTemp(dtype_, value.shape()));
    RETURN_IF_ERROR(CopyElements(ctx, value, copy));
    absl::MutexLock lock(var->mu());
    Tensor* current = var->tensor();
    if (validate_shape_ && current->IsInitialized() && current->shape() != value.shape()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Trying to assign to variable %s a tensor of shape %s; it has shape %s", handle->name(),
          value.shape().DebugString(), current->shape().DebugString()));
    }
    *current = std::move(copy);
    return absl::OkStatus();
  }

 private:
  const DataType dtype_;
  const bool validate_shape_;
};

// AssignAddVariableOp and AssignSubVariableOp: the variable's value plus
// (or minus) `value`, stored as a new tensor, so a read that still holds
// the old one keeps its value.
template <bool kAdd>
class AssignUpdateVariableOp final : public OpKernel {
 public:
  AssignUpdateVariableOp(const OpKernelConstruction& c, DataType dtype)
      : OpKernel(c), dtype_(dtype) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(DataType dtype, GetTypeAttr(c.def(), "dtype"));
    return std::unique_ptr<OpKernel>(std::make_unique<AssignUpdateVariableOp>(c, dtype));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const ResourceHandleProto* handle, GetHandle(ctx));
    ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
    auto var = resources->Lookup<Var>(handle->container(), handle->name());
    if (!var.ok()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: resource variable %s in container %s does not exist (uninitialized?)", op(),
          handle->name(), handle->container()));
    }
    RETURN_IF_ERROR(CheckDtype("update", (*var)->dtype(), dtype_));
    const Tensor& delta = ctx.input(1);
    absl::MutexLock lock((*var)->mu());
    Tensor* current = (*var)->tensor();
    if (!current->IsInitialized()) {
      return absl::FailedPreconditionError(
          absl::StrFormat("%s: resource variable %s is uninitialized", op(), handle->name()));
    }
    if (current->shape() != delta.shape()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: variable %s has shape %s but the update has shape %s", op(), handle->name(),
          current->shape().DebugString(), delta.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor updated, ctx.AllocateTemp(dtype_, delta.shape()));
    RETURN_IF_ERROR(DispatchType(
        dtype_,
        [&]<typename T>() -> absl::Status {
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            const T* a = current->data<T>();
            const T* b = delta.data<T>();
            T* out = updated.data<T>();
            for (int64_t i = 0; i < delta.NumElements(); ++i)
              out[i] = kAdd ? a[i] + b[i] : a[i] - b[i];
            return absl::OkStatus();
          } else {
            return absl::InvalidArgumentError(absl::StrFormat(
                "%s: variables of %s cannot be updated", op(), DataTypeString(dtype_)));
          }
        },
        [&]() -> absl::Status {
          return absl::InvalidArgumentError(absl::StrFormat("%s: variables of %s cannot be updated",
                                                            op(), DataTypeString(dtype_)));
        }));
    *current = std::move(updated);
    return absl::OkStatus();
  }

 private:
  const DataType dtype_;
};

// TensorFlow's DisableCopyOnRead turns off a variable's copy-on-read mode,
// which lets sparse updates write in place while readers hold its value.
// rill's resource variables have no such mode (an assignment replaces the
// tensor, so a read keeps its value), so there is nothing to turn off; TF2
// restore functions call it on every variable.
class DisableCopyOnReadOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Compute(KernelContext&) const override { return absl::OkStatus(); }
};

// A handle whose variable does not exist yet (no AssignVariableOp has run)
// or is another kind of resource reads as uninitialized, not as an error,
// as in TensorFlow: readiness checks ask before anything is assigned.
class VarIsInitializedOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const ResourceHandleProto* handle, GetHandle(ctx));
    ASSIGN_OR_RETURN(ResourceMgr * resources, GetResourceMgr(ctx));
    const absl::StatusOr<std::shared_ptr<Var>> var =
        resources->Lookup<Var>(handle->container(), handle->name());
    return SetBoolOutput(ctx, var.ok() && (*var)->is_initialized());
  }
  bool IsExpensive() const override { return false; }
};

template <typename... Ts>
void RegisterAssignUpdate(KernelRegistry& r) {
  (r.Register(KernelDef("AssignAdd").Device(kDeviceCpu).TypeConstraint<Ts>("T"),
              MakeKernel<AssignUpdateOp<Ts, true>>),
   ...);
  (r.Register(KernelDef("AssignSub").Device(kDeviceCpu).TypeConstraint<Ts>("T"),
              MakeKernel<AssignUpdateOp<Ts, false>>),
   ...);
}

}  // namespace

void RegisterCpuStateKernels(KernelRegistry& r) {
  RegisterAssignUpdate<float, double, int32_t, int64_t, half, bfloat16, int8_t, int16_t, uint8_t,
                       complex64, complex128>(r);
  // VarHandleOp's output is host memory everywhere: host_kernels.cc gives
  // it to the GPU.
  r.Register(KernelDef("VarHandleOp").Device(kDeviceCpu), VarHandleOp::Create);
  r.Register(KernelDef("ResourceGather").Device(kDeviceCpu), ResourceGatherOp::Create);
  r.Register(KernelDef("AssignAddVariableOp").Device(kDeviceCpu),
             AssignUpdateVariableOp<true>::Create);
  r.Register(KernelDef("AssignSubVariableOp").Device(kDeviceCpu),
             AssignUpdateVariableOp<false>::Create);
  for (const char* device : {kDeviceCpu, kDeviceGpu}) {
    r.Register(KernelDef("Variable").Device(device), VariableOp::Create);
    r.Register(KernelDef("VariableV2").Device(device), VariableOp::Create);
    r.Register(KernelDef("Assign").Device(device), MakeKernel<AssignOp>);
    r.Register(KernelDef("IsVariableInitialized").Device(device),
               MakeKernel<IsVariableInitializedOp>);
    r.Register(KernelDef("ReadVariableOp").Device(device), MakeKernel<ReadVariableOp>);
    r.Register(KernelDef("AssignVariableOp").Device(device), AssignVariableOp::Create);
    r.Register(KernelDef("VarIsInitializedOp").Device(device), MakeKernel<VarIsInitializedOp>);
    r.Register(KernelDef("DisableCopyOnRead").Device(device), MakeKernel<DisableCopyOnReadOp>);
  }
}

}  // namespace rill
