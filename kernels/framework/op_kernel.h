// OpKernel: the computation of one node on one device type, built once from
// the node's attrs and then run for every step. KernelContext is what a
// kernel sees while it runs: inputs, outputs, allocator and threads.
#ifndef RILL_KERNELS_FRAMEWORK_OP_KERNEL_H_
#define RILL_KERNELS_FRAMEWORK_OP_KERNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "graph/allocator.h"
#include "graph/node_def_util.h"
#include "graph/proto/node_def.pb.h"
#include "graph/proto/op_def.pb.h"
#include "graph/tensor.h"
#include "kernels/framework/cancellation.h"
#include "kernels/framework/device_context.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace rill {

class Rendezvous;
class ResourceMgr;

inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

// What a kernel factory reads: the node (attrs with defaults filled), its
// expanded signature and the device type it runs on.
class OpKernelConstruction {
 public:
  OpKernelConstruction(const NodeDef& def, const OpDef& op_def, const NodeSignature& signature,
                       std::string device_type)
      : def_(def), op_def_(op_def), signature_(signature), device_type_(std::move(device_type)) {}

  const NodeDef& def() const { return def_; }
  const OpDef& op_def() const { return op_def_; }
  const std::string& device_type() const { return device_type_; }
  int num_inputs() const { return static_cast<int>(signature_.input_types.size()); }
  int num_outputs() const { return static_cast<int>(signature_.output_types.size()); }
  DataType input_type(int i) const { return signature_.input_types[i]; }
  DataType output_type(int i) const { return signature_.output_types[i]; }
  const NodeSignature& signature() const { return signature_; }

 private:
  const NodeDef& def_;
  const OpDef& op_def_;
  const NodeSignature& signature_;
  const std::string device_type_;
};

// A value flowing along an edge: a tensor, or for reference edges a pointer
// to a variable's tensor and the mutex that guards it.
struct TensorValue {
  Tensor tensor;          // Used when `ref` is null.
  Tensor* ref = nullptr;  // A variable's storage (reference types).
  absl::Mutex* ref_mu = nullptr;

  bool is_ref() const { return ref != nullptr; }
  // The current value: for a reference, a handle sharing the variable's
  // buffer, read under its mutex.
  Tensor Value() const;
};

// Thread safety: one context per kernel invocation; not shared.
class KernelContext {
 public:
  // A context that owns its inputs and outputs (tests, tools).
  struct Params {
    const NodeDef* node = nullptr;
    std::vector<TensorValue> inputs;
    DataTypeVector output_types;
    const Eigen::ThreadPoolDevice* eigen_cpu = nullptr;  // The intra-op pool.
    Allocator* allocator = nullptr;
    int64_t step_id = 0;
    ResourceMgr* resource_manager = nullptr;   // The device's; outlives the step.
    StepCancellation* cancellation = nullptr;  // Null: never cancelled.
    Rendezvous* rendezvous = nullptr;          // The step's, for _Send/_Recv.
    DeviceContext* device_context = nullptr;   // Null: the device's memory is the host's.
  };

  // A context over storage its caller owns and reuses from node to node, so
  // that running a kernel allocates nothing here (the executor's path).
  // `inputs`, `outputs` and `output_types` must outlive the context, and
  // `outputs` must hold empty values.
  struct Frame {
    const NodeDef* node = nullptr;
    absl::Span<const TensorValue> inputs;
    absl::Span<TensorValue> outputs;
    absl::Span<const DataType> output_types;
    const Eigen::ThreadPoolDevice* eigen_cpu = nullptr;
    Allocator* allocator = nullptr;
    int64_t step_id = 0;
    ResourceMgr* resource_manager = nullptr;
    StepCancellation* cancellation = nullptr;
    Rendezvous* rendezvous = nullptr;
    DeviceContext* device_context = nullptr;
    // The loop frame and iteration the node runs in (0, 0 outside loops).
    uint64_t frame_id = 0;
    int64_t iter_id = 0;
  };

  explicit KernelContext(Params params);
  explicit KernelContext(const Frame& frame);
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  const NodeDef& node() const { return *frame_.node; }
  int num_inputs() const { return static_cast<int>(frame_.inputs.size()); }
  // The value of input `i` (references are read under their mutex when the
  // context is made).
  const Tensor& input(int i) const {
    return frame_.inputs[i].is_ref() ? ref_values_[i] : frame_.inputs[i].tensor;
  }
  bool input_is_ref(int i) const { return frame_.inputs[i].is_ref(); }
  // Whether input `i` has a value: false for a dead input (an untaken
  // branch), which only a Merge or a _Send ever sees.
  bool has_input(int i) const {
    return frame_.inputs[i].is_ref() || frame_.inputs[i].tensor.IsInitialized();
  }
  // A reference input's variable storage and mutex. REQUIRES: input_is_ref(i).
  Tensor* mutable_input(int i) const { return frame_.inputs[i].ref; }
  absl::Mutex* input_ref_mutex(int i) const { return frame_.inputs[i].ref_mu; }

  int num_outputs() const { return static_cast<int>(frame_.outputs.size()); }
  // Allocates output `i` (uninitialized elements) from the device allocator,
  // or from the host's for the types InHostMemory keeps there.
  absl::StatusOr<Tensor*> AllocateOutput(int i, const TensorShape& shape);
  // Allocates a scratch tensor that is not an output (as AllocateOutput).
  absl::StatusOr<Tensor> AllocateTemp(DataType dtype, const TensorShape& shape);
  void set_output(int i, Tensor tensor);
  // Makes output `i` a reference to the variable behind input `input`.
  void forward_ref_input_to_ref_output(int input, int i);
  // Makes output `i` a reference to `ref` guarded by `mu` (variable ops).
  void set_output_ref(int i, Tensor* ref, absl::Mutex* mu);
  const TensorValue& output(int i) const { return frame_.outputs[i]; }

  DataType output_type(int i) const { return frame_.output_types[i]; }
  const Eigen::ThreadPoolDevice& eigen_cpu() const { return *frame_.eigen_cpu; }
  Allocator* allocator() const { return frame_.allocator; }
  int64_t step_id() const { return frame_.step_id; }
  ResourceMgr* resource_manager() const { return frame_.resource_manager; }
  // The device's stream and handles; null on the CPU.
  DeviceContext* device_context() const { return frame_.device_context; }
  // The step's rendezvous; null when the step has none (one device).
  Rendezvous* rendezvous() const { return frame_.rendezvous; }
  // The loop frame and iteration this run of the node is in: rendezvous
  // keys of _Send/_Recv inside loops carry them.
  uint64_t frame_id() const { return frame_.frame_id; }
  int64_t iter_id() const { return frame_.iter_id; }
  // Whether the step was cancelled (an error elsewhere, a deadline); a
  // long-running kernel checks it and returns early.
  bool cancelled() const {
    // Relaxed: a hint polled in loops; the executor orders the real hand-off.
    return frame_.cancellation != nullptr &&
           frame_.cancellation->flag()->load(std::memory_order_relaxed);
  }
  // The step's cancellation, for kernels that wait: they register a
  // callback rather than poll. Null when the step cannot be cancelled.
  StepCancellation* cancellation() const { return frame_.cancellation; }

 private:
  void ReadRefInputs();
  Allocator* AllocatorFor(DataType dtype) const;

  // Storage for the Params constructor (empty for a Frame).
  std::vector<TensorValue> owned_inputs_;
  DataTypeVector owned_output_types_;
  std::vector<TensorValue> owned_outputs_;

  Frame frame_;
  // Input values of reference inputs, read once; empty when there is none.
  std::vector<Tensor> ref_values_;
};

// Kernels are immutable after construction and safe to run concurrently
// (in different steps); failure is reported by the returned status.
class OpKernel {
 public:
  explicit OpKernel(const OpKernelConstruction& c)
      : name_(c.def().name()), op_(c.def().op()), output_types_(c.signature().output_types) {}
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  virtual absl::Status Compute(KernelContext& ctx) const = 0;
  // Cheap kernels (shape queries, identity, constants) run inline on the
  // thread that readied them.
  virtual bool IsExpensive() const { return true; }
  // Non-null for kernels that finish later (AsyncOpKernel).
  virtual const class AsyncOpKernel* AsAsync() const { return nullptr; }

  const std::string& name() const { return name_; }
  const std::string& op() const { return op_; }
  DataType output_type(int i) const { return output_types_[i]; }

 private:
  const std::string name_;
  const std::string op_;
  const DataTypeVector output_types_;
};

// A kernel that may finish after ComputeAsync returns (a _Recv waiting for
// its tensor): it calls `done` exactly once, from any thread, after setting
// its outputs. The context stays valid until then.
class AsyncOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  using DoneCallback = std::function<void(absl::Status)>;

  virtual void ComputeAsync(KernelContext& ctx, DoneCallback done) const = 0;
  // Runs ComputeAsync and waits for it (tools and tests; the executor
  // never blocks a thread on an async kernel).
  absl::Status Compute(KernelContext& ctx) const final;
  const AsyncOpKernel* AsAsync() const final { return this; }
};

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_OP_KERNEL_H_
