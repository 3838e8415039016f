// Worker: one task's devices and the graphs registered on them. A step of
// a registered graph runs one executor per device over one rendezvous,
// which keeps tensors between the task's devices local and pushes those
// for other tasks to them.
#ifndef RILL_RUNTIME_SESSION_WORKER_H_
#define RILL_RUNTIME_SESSION_WORKER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/log_sink.h"
#include "kernels/framework/kernel_registry.h"
#include "runtime/device/device.h"
#include "runtime/device/gpu_devices.h"
#include "runtime/exec/remote_rendezvous.h"
#include "runtime/session/graph_registration.h"
#include "runtime/session/worker_interface.h"
#include "runtime/session/worker_step_table.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {

struct WorkerOptions {
  // "/job:J/replica:0/task:T"; a local session's is /job:localhost/replica:0/task:0.
  std::string task;
  // Devices by type ({"CPU", 2}: CPU:0 and CPU:1); absent types: one CPU.
  std::map<std::string, int> device_count;
  GpuOptions gpu;            // How the GPUs are made (memory limit, virtual devices).
  int inter_op_threads = 0;  // <= 0: one per hardware thread.
  int intra_op_threads = 0;
  // Whether a step may run nodes on several pool threads at once.
  bool parallel_nodes = true;
  const KernelRegistry* registry = nullptr;  // Null: StandardKernels().
  // Sends tensors to other tasks. Null: the task is alone, and a graph
  // that sends to another task fails to register.
  PushTensorFn push;
  // What tensors pushed for steps not begun here may hold; tripped limits
  // are logged to `log` (null: stderr).
  PendingPushLimits pending_pushes;
  RegisteredGraphLimits graphs;  // Local sessions: none.
  LogSink* log = nullptr;
  // The task's devices. Null: CreateDevices(task, device_count,
  // intra_op_threads), the machine's. Tests give devices of their own.
  std::function<absl::StatusOr<std::vector<std::unique_ptr<Device>>>()> make_devices;
};

// Thread safety: all methods may be called concurrently.
class Worker final : public WorkerInterface {
 public:
  // Errors: a bad device count.
  static absl::StatusOr<std::unique_ptr<Worker>> Create(const WorkerOptions& options);
  // Steps still running must have finished.
  ~Worker() override;

  const std::string& task() const { return options_.task; }
  // Full names, CPUs first.
  std::vector<std::string> device_names() const;

  bool in_process() const override { return true; }
  void ListDevices(absl::Time deadline,
                   std::function<void(absl::StatusOr<std::vector<std::string>>)> done) override;
  // Errors: no partition, a partition for a device this task does not
  // have, a node placed elsewhere, feeds or fetches that no partition
  // holds, a node without a kernel; RESOURCE_EXHAUSTED over the limits.
  void RegisterGraph(const RegisterGraphRequest& request, absl::Time deadline,
                     std::function<void(absl::StatusOr<GraphRegistration>)> done) override;
  void DeregisterGraph(const std::string& graph_handle) override;
  void RunGraph(RunGraphCall* call, std::function<void(absl::Status)> done) override;

  // What other tasks send, by step id. A tensor pushed here for a step
  // (which may not have started here yet); dropped once the step ended.
  absl::Status Deliver(uint64_t step_id, std::string_view key, const Tensor& value);
  // Stops the step here (its receives and waiting kernels fail with
  // `status`), and refuses it from now on.
  void AbortStep(uint64_t step_id, const absl::Status& status);
  // Drops what was pushed for steps that did not begin within the
  // deadline (PendingPushLimits); returns how many steps.
  int ExpirePendingPushes(absl::Time now);
  // Forgets the graphs no step has run for RegisteredGraphLimits::idle_timeout
  // at `now`; returns how many.
  int ExpireIdleGraphs(absl::Time now);

 private:
  struct GraphRun;

  explicit Worker(const WorkerOptions& options);
  void Start(GraphRun* step) const;
  void Finish(GraphRun* step) const;

  const WorkerOptions options_;
  std::unique_ptr<Eigen::ThreadPool> inter_op_pool_;
  std::vector<std::unique_ptr<Device>> devices_;
  // Steps that other tasks reach by id.
  mutable WorkerStepTable steps_;

  RegisteredGraphs graphs_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_WORKER_H_
