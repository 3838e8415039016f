// WorkerService: the worker half of a server. Masters register graph
// partitions (all on this task) and run them step by step; tensors for
// other tasks are pushed to them, and tensors they push arrive here.
#ifndef RILL_RUNTIME_WORKER_SERVICE_H_
#define RILL_RUNTIME_WORKER_SERVICE_H_

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "graph/graph.h"
#include "kernels/kernel_registry.h"
#include "runtime/cluster_spec.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/remote_rendezvous.h"
#include "transport/rpc.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {

struct WorkerServiceOptions {
  ClusterSpec cluster;
  TaskId task;
  const KernelRegistry* registry = nullptr;  // Null: StandardKernels().
  int inter_op_threads = 0;                  // <= 0: one per hardware thread.
  int intra_op_threads = 0;
};

// Thread safety: all methods may be called concurrently.
class WorkerService {
 public:
  explicit WorkerService(const WorkerServiceOptions& options);
  ~WorkerService();

  // "/job:J/replica:0/task:T".
  const std::string& task_name() const { return task_name_; }
  // Full names of this task's devices.
  std::vector<std::string> devices() const;

  // The RPC methods (cluster_rpc.proto): GetStatus, RegisterGraph,
  // RunGraph, DeregisterGraph, PushTensor, AbortStep. Each calls `done`
  // once; malformed requests get INVALID_ARGUMENT.
  void Handle(const std::string& method, RpcMessage request, RpcDone done);
  static const std::vector<std::string>& Methods();
  // Those that only start work or answer at once (RunGraph runs quick
  // nodes itself and leaves the rest to its pool): the transport may run
  // them on its socket thread.
  static std::set<std::string> NonBlockingMethods();

 private:
  struct RegisteredGraph;

  void GetStatus(RpcDone done);
  void RegisterGraph(RpcMessage request, RpcDone done);
  void RunGraph(RpcMessage request, RpcDone done);
  void DeregisterGraph(RpcMessage request, RpcDone done);
  void PushTensor(RpcMessage request, RpcDone done);
  void AbortStep(RpcMessage request, RpcDone done);
  void Push(const std::string& dst_task, uint64_t step_id, std::string key, Tensor value,
            std::function<void(absl::Status)> done);
  absl::StatusOr<RpcClient*> Peer(const std::string& task);

  const WorkerServiceOptions options_;
  const std::string task_name_;
  std::unique_ptr<Eigen::ThreadPool> inter_op_pool_;
  std::unique_ptr<CpuDevice> device_;
  StepRendezvousTable steps_;
  std::atomic<int64_t> next_graph_{0};

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<RegisteredGraph>> graphs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<RpcClient>> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_WORKER_SERVICE_H_
