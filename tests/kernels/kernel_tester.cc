#include "tests/kernels/kernel_tester.h"

#include <cmath>
#include <random>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"
#include "ops/registry.h"

namespace rill::testing {
namespace {

// Sets the type attrs of `node` that the inputs determine and that the
// test did not set.
void InferTypeAttrs(const OpDef& op_def, const std::vector<DataTypeVector>& arg_types,
                    NodeDef* node) {
  auto& attrs = *node->mutable_attr();
  for (int i = 0; i < op_def.input_arg_size() && i < static_cast<int>(arg_types.size()); ++i) {
    const OpDef::ArgDef& arg = op_def.input_arg(i);
    const DataTypeVector& types = arg_types[i];
    if (!arg.number_attr().empty() && !attrs.contains(arg.number_attr())) {
      attrs[arg.number_attr()] = MakeAttr(static_cast<int64_t>(types.size()));
    }
    if (!arg.type_attr().empty() && !attrs.contains(arg.type_attr()) && !types.empty()) {
      attrs[arg.type_attr()] = MakeAttr(BaseType(types[0]));
    }
    if (!arg.type_list_attr().empty() && !attrs.contains(arg.type_list_attr())) {
      DataTypeVector base;
      for (DataType t : types) base.push_back(BaseType(t));
      attrs[arg.type_list_attr()] = MakeAttr(base);
    }
  }
}

}  // namespace

KernelTester::KernelTester(std::string op, std::string device_type)
    : op_(std::move(op)), device_type_(std::move(device_type)) {
  node_.set_name("kernel_under_test");
  node_.set_op(op_);
}

KernelTester& KernelTester::Attr(const std::string& name, AttrValue value) {
  (*node_.mutable_attr())[name] = std::move(value);
  return *this;
}

KernelTester& KernelTester::Input(Tensor value) {
  Arg arg;
  arg.values.push_back(std::move(value));
  args_.push_back(std::move(arg));
  return *this;
}

KernelTester& KernelTester::InputList(std::vector<Tensor> values) {
  Arg arg;
  arg.values = std::move(values);
  arg.is_list = true;
  args_.push_back(std::move(arg));
  return *this;
}

KernelTester& KernelTester::RefInput(Tensor* variable, std::string name) {
  Arg arg;
  arg.ref = variable;
  arg.ref_dtype = variable->dtype();
  arg.owned_mu = std::make_shared<absl::Mutex>();
  arg.ref_mu = arg.owned_mu.get();
  arg.name = std::move(name);
  args_.push_back(std::move(arg));
  return *this;
}

KernelTester& KernelTester::RefInput(Var* var, std::string name) {
  Arg arg;
  arg.ref = var->tensor();
  arg.ref_dtype = var->dtype();
  arg.ref_mu = var->mu();
  arg.name = std::move(name);
  args_.push_back(std::move(arg));
  return *this;
}

KernelTester& KernelTester::UnknownInputShapes() {
  unknown_input_shapes_ = true;
  return *this;
}

KernelTester& KernelTester::WithResourceMgr(std::shared_ptr<ResourceMgr> resources) {
  resources_ = std::move(resources);
  return *this;
}

KernelTester& KernelTester::WithStepId(int64_t step_id) {
  step_id_ = step_id;
  return *this;
}

KernelTester& KernelTester::RefInput(const TensorValue& ref, std::string name) {
  Arg arg;
  arg.ref = ref.ref;
  arg.ref_dtype = ref.ref->dtype();
  arg.ref_mu = ref.ref_mu;
  arg.name = std::move(name);
  args_.push_back(std::move(arg));
  return *this;
}

KernelTester& KernelTester::WithCancellation(StepCancellation* cancellation) {
  cancellation_ = cancellation;
  return *this;
}

KernelTester& KernelTester::WithRendezvous(Rendezvous* rendezvous) {
  rendezvous_ = rendezvous;
  return *this;
}

KernelTester& KernelTester::WithDeviceContext(DeviceContext* device_context) {
  device_context_ = device_context;
  return *this;
}

KernelTester& KernelTester::OnDevice(Allocator* allocator, DeviceContext* device_context) {
  device_allocator_ = allocator;
  device_context_ = device_context;
  return *this;
}

// Everything one run of the kernel uses, kept together so that an async
// kernel can finish after Start returns.
struct KernelTester::Invocation {
  std::string op;
  DeviceContext* device = nullptr;  // Set when the run is on a device (OnDevice).
  // Variables copied to the device, and where their values go back.
  std::vector<std::pair<std::unique_ptr<Tensor>, Tensor*>> device_refs;
  NodeDef node;
  NodeSignature signature;
  std::unique_ptr<InferenceContext> inference;
  std::unique_ptr<OpKernel> kernel;
  std::unique_ptr<CpuThreads> threads;
  std::unique_ptr<KernelContext> ctx;
  absl::Notification finished;
  absl::Status status;  // Set before `finished` is notified.
};

namespace {

// One copy through `device`, waited for.
absl::StatusOr<Tensor> CopyNow(DeviceContext* device, const Tensor& src, bool to_host) {
  Tensor dst;
  absl::Notification copied;
  absl::Status status;
  auto done = [&](absl::Status s) {
    status = std::move(s);
    copied.Notify();
  };
  if (to_host) {
    device->CopyToHost(src, &dst, done);
  } else {
    device->CopyFromHost(src, &dst, done);
  }
  copied.WaitForNotification();
  RETURN_IF_ERROR(status);
  return dst;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> KernelTester::Run(int num_threads) const {
  ASSIGN_OR_RETURN(std::unique_ptr<Invocation> run, Prepare(num_threads));
  RETURN_IF_ERROR(run->kernel->Compute(*run->ctx));
  ASSIGN_OR_RETURN(std::vector<TensorValue> values, Outputs(*run));
  std::vector<Tensor> outputs;
  for (const TensorValue& value : values) {
    Tensor out = value.Value();
    if (run->device != nullptr && out.IsInitialized()) {
      ASSIGN_OR_RETURN(out, CopyNow(run->device, out, /*to_host=*/true));
    }
    outputs.push_back(std::move(out));
  }
  for (const auto& [on_device, host] : run->device_refs) {
    if (!on_device->IsInitialized()) continue;
    ASSIGN_OR_RETURN(*host, CopyNow(run->device, *on_device, /*to_host=*/true));
  }
  return outputs;
}

absl::StatusOr<std::vector<TensorValue>> KernelTester::RunValues(int num_threads) const {
  ASSIGN_OR_RETURN(std::unique_ptr<Invocation> run, Prepare(num_threads));
  RETURN_IF_ERROR(run->kernel->Compute(*run->ctx));
  return Outputs(*run);
}

KernelTester::PendingRun::PendingRun(std::unique_ptr<Invocation> run) : run_(std::move(run)) {}

KernelTester::PendingRun::~PendingRun() {
  // A kernel still waiting uses the run's context: it is left alive, so
  // that the test fails rather than crashes.
  if (run_ != nullptr && !run_->finished.HasBeenNotified()) static_cast<void>(run_.release());
}

bool KernelTester::PendingRun::finished() const { return run_->finished.HasBeenNotified(); }

absl::StatusOr<std::vector<Tensor>> KernelTester::PendingRun::Wait(absl::Duration limit) {
  if (!run_->finished.WaitForNotificationWithTimeout(limit)) {
    return absl::DeadlineExceededError(
        absl::StrFormat("%s did not finish within %s", run_->op, absl::FormatDuration(limit)));
  }
  RETURN_IF_ERROR(run_->status);
  ASSIGN_OR_RETURN(std::vector<TensorValue> values, Outputs(*run_));
  std::vector<Tensor> outputs;
  for (const TensorValue& value : values) outputs.push_back(value.Value());
  return outputs;
}

std::unique_ptr<KernelTester::PendingRun> KernelTester::Start(int num_threads) const {
  absl::StatusOr<std::unique_ptr<Invocation>> prepared = Prepare(num_threads);
  if (!prepared.ok()) {
    auto failed = std::make_unique<Invocation>();
    failed->op = op_;
    failed->status = prepared.status();
    failed->finished.Notify();
    return std::unique_ptr<PendingRun>(new PendingRun(std::move(failed)));
  }
  Invocation* run = prepared->get();
  if (const AsyncOpKernel* async = run->kernel->AsAsync(); async != nullptr) {
    async->ComputeAsync(*run->ctx, [run](absl::Status status) {
      run->status = std::move(status);
      run->finished.Notify();
    });
  } else {
    run->status = run->kernel->Compute(*run->ctx);
    run->finished.Notify();
  }
  return std::unique_ptr<PendingRun>(new PendingRun(*std::move(prepared)));
}

absl::StatusOr<std::unique_ptr<KernelTester::Invocation>> KernelTester::Prepare(
    int num_threads) const {
  ASSIGN_OR_RETURN(const OpRegistration* op, StandardOps().LookUp(op_));
  const OpDef& op_def = op->op_def;
  if (static_cast<int>(args_.size()) != op_def.input_arg_size()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s has %d input args, the test gave %d", op_,
                                                      op_def.input_arg_size(), args_.size()));
  }
  std::vector<DataTypeVector> arg_types;
  for (const Arg& arg : args_) {
    DataTypeVector types;
    if (arg.ref != nullptr) {
      types.push_back(MakeRefType(arg.ref_dtype));
    } else {
      for (const Tensor& t : arg.values) types.push_back(t.dtype());
    }
    arg_types.push_back(std::move(types));
  }
  auto run = std::make_unique<Invocation>();
  run->op = op_;
  NodeDef& node = run->node;
  node = node_;
  InferTypeAttrs(op_def, arg_types, &node);
  AddDefaultsToNodeDef(op_def, &node);
  RETURN_IF_ERROR(ValidateNodeAttrs(node, op_def));
  ASSIGN_OR_RETURN(run->signature, ComputeNodeSignature(node, op_def));
  const NodeSignature& signature = run->signature;

  KernelContext::Params params;
  params.node = &node;
  std::vector<PartialTensorShape> shapes;
  std::vector<const Tensor*> known_values;
  for (size_t i = 0; i < args_.size(); ++i) {
    const Arg& arg = args_[i];
    const std::string& arg_name = op_def.input_arg(static_cast<int>(i)).name();
    if (arg.ref != nullptr) {
      node.add_input(arg.name.empty() ? arg_name : arg.name);
      Tensor* ref = arg.ref;
      if (device_allocator_ != nullptr) {
        auto on_device = std::make_unique<Tensor>();
        if (arg.ref->IsInitialized()) {
          ASSIGN_OR_RETURN(*on_device, CopyNow(device_context_, *arg.ref, /*to_host=*/false));
        }
        ref = on_device.get();
        run->device_refs.emplace_back(std::move(on_device), arg.ref);
      }
      params.inputs.push_back(TensorValue{Tensor(), ref, arg.ref_mu});
      const bool known = !unknown_input_shapes_ && arg.ref->IsInitialized();
      shapes.push_back(known ? PartialTensorShape(arg.ref->shape()) : PartialTensorShape());
      known_values.push_back(nullptr);
      continue;
    }
    for (size_t k = 0; k < arg.values.size(); ++k) {
      const Tensor& t = arg.values[k];
      node.add_input(arg.is_list ? absl::StrFormat("%s_%d", arg_name, k) : arg_name);
      if (device_allocator_ != nullptr) {
        ASSIGN_OR_RETURN(Tensor on_device, CopyNow(device_context_, t, /*to_host=*/false));
        params.inputs.push_back(TensorValue{std::move(on_device)});
      } else {
        params.inputs.push_back(TensorValue{t});
      }
      shapes.push_back(unknown_input_shapes_ ? PartialTensorShape()
                                             : PartialTensorShape(t.shape()));
      known_values.push_back(unknown_input_shapes_ ? nullptr : &t);
    }
  }
  if (params.inputs.size() != signature.input_types.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s expects %d inputs, the test gave %d", op_,
                                                      signature.input_types.size(),
                                                      params.inputs.size()));
  }
  DataTypeVector given_types;
  for (const DataTypeVector& types : arg_types) {
    given_types.insert(given_types.end(), types.begin(), types.end());
  }
  for (size_t i = 0; i < params.inputs.size(); ++i) {
    const DataType given = given_types[i];
    if (BaseType(given) != BaseType(signature.input_types[i]) ||
        (IsRefType(signature.input_types[i]) && !IsRefType(given))) {
      return absl::InvalidArgumentError(
          absl::StrFormat("input %d: the test gave %s, the op expects %s", i, DataTypeString(given),
                          DataTypeString(signature.input_types[i])));
    }
  }

  run->inference =
      std::make_unique<InferenceContext>(node, op_def, signature, shapes, known_values);
  RETURN_IF_ERROR(op->shape_fn(*run->inference));

  ASSIGN_OR_RETURN(run->kernel,
                   StandardKernels().CreateKernel(node, op_def, signature, device_type_));
  run->threads = std::make_unique<CpuThreads>(num_threads);
  params.output_types = signature.output_types;
  params.eigen_cpu = &run->threads->device();
  params.allocator = device_allocator_ != nullptr ? device_allocator_ : CpuAllocator();
  if (device_allocator_ != nullptr) run->device = device_context_;
  params.resource_manager = resources_.get();
  params.step_id = step_id_;
  params.cancellation = cancellation_;
  params.rendezvous = rendezvous_;
  params.device_context = device_context_;
  run->ctx = std::make_unique<KernelContext>(std::move(params));
  return run;
}

absl::StatusOr<std::vector<TensorValue>> KernelTester::Outputs(const Invocation& run) {
  const std::string& op = run.op;
  const KernelContext& ctx = *run.ctx;
  std::vector<TensorValue> outputs;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const TensorValue& value = ctx.output(i);
    if (!value.is_ref() && !value.tensor.IsInitialized()) {
      return absl::InternalError(absl::StrFormat("%s did not set output %d", op, i));
    }
    const Tensor out = value.Value();
    if (value.is_ref() && !out.IsInitialized()) {
      outputs.push_back(value);
      continue;
    }
    if (!run.inference->output(i).IsCompatibleWith(out.shape())) {
      return absl::InternalError(
          absl::StrFormat("%s output %d has shape %s but the shape function says %s", op, i,
                          out.shape().DebugString(), run.inference->output(i).DebugString()));
    }
    if (BaseType(out.dtype()) != BaseType(run.signature.output_types[i])) {
      return absl::InternalError(absl::StrFormat("%s output %d has type %s, the op says %s", op, i,
                                                 DataTypeString(out.dtype()),
                                                 DataTypeString(run.signature.output_types[i])));
    }
    outputs.push_back(value);
  }
  return outputs;
}

absl::StatusOr<Tensor> KernelTester::RunOne(int num_threads) const {
  ASSIGN_OR_RETURN(std::vector<Tensor> outputs, Run(num_threads));
  if (outputs.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s has %d outputs; use Run()", op_, outputs.size()));
  }
  return std::move(outputs[0]);
}

std::shared_ptr<Var> VarHolding(const Tensor& value) {
  auto var = std::make_shared<Var>(value.dtype());
  absl::MutexLock lock(var->mu());
  *var->tensor() = value.DeepCopy();
  return var;
}

Tensor ValueOf(Var& var) {
  absl::MutexLock lock(var.mu());
  return *var.tensor();
}

Tensor RandomTensor(DataType dtype, const TensorShape& shape, int seed, double low, double high) {
  Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  DispatchType(
      dtype,
      [&]<typename T>() {
        if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, half> ||
                      std::is_same_v<T, bfloat16>) {
          T* data = t.data<T>();
          for (int64_t i = 0; i < t.NumElements(); ++i) data[i] = static_cast<T>(dist(rng));
        }
      },
      [] {});
  return t;
}

std::string TensorDifference(const Tensor& expected, const Tensor& actual, double atol,
                             double rtol) {
  if (expected.dtype() != actual.dtype()) {
    return absl::StrFormat("dtype %s, expected %s", DataTypeString(actual.dtype()),
                           DataTypeString(expected.dtype()));
  }
  if (!(expected.shape() == actual.shape())) {
    return absl::StrFormat("shape %s, expected %s", actual.shape().DebugString(),
                           expected.shape().DebugString());
  }
  return DispatchType(
      expected.dtype(),
      [&]<typename T>() -> std::string {
        const T* e = expected.data<T>();
        const T* a = actual.data<T>();
        for (int64_t i = 0; i < expected.NumElements(); ++i) {
          if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> ||
                        std::is_same_v<T, bfloat16>) {
            const double ev = static_cast<double>(e[i]), av = static_cast<double>(a[i]);
            // Equal infinities match too, though their difference is NaN.
            if (av == ev || (std::isnan(ev) && std::isnan(av))) continue;
            if (!(std::abs(av - ev) <= atol + rtol * std::abs(ev))) {
              return absl::StrFormat("element %d is %.9g, expected %.9g", i, av, ev);
            }
          } else if (!(a[i] == e[i])) {
            return absl::StrFormat("element %d differs; got %s; expected %s", i,
                                   actual.SummarizeValue(10), expected.SummarizeValue(10));
          }
        }
        return "";
      },
      [&]() -> std::string { return "unsupported dtype"; });
}

}  // namespace rill::testing
