// MasterService: the master half of a server. A client session sends its
// graph here; each Run signature is pruned, placed over the cluster's
// devices (asked of every worker), partitioned per task and registered
// with the workers, then run step by step under a fresh step id.
#ifndef RILL_RUNTIME_MASTER_SERVICE_H_
#define RILL_RUNTIME_MASTER_SERVICE_H_

#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "runtime/cluster_spec.h"
#include "runtime/worker_service.h"
#include "transport/proto/cluster_rpc.pb.h"
#include "transport/rpc.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {

struct MasterServiceOptions {
  ClusterSpec cluster;
  TaskId task;
  // This task's worker, called directly rather than over the network.
  WorkerService* local_worker = nullptr;
  // Session start-up lines and, when a session asks, the placement log.
  std::FILE* log = stderr;
  // How long device discovery waits for a worker; one that does not answer
  // is assumed to have its CPU:0 (a step that needs it fails then).
  absl::Duration discovery_timeout = absl::Seconds(2);
};

// Handle never blocks: set-up work runs on the master's own threads.
// Thread safety: all methods may be called concurrently.
class MasterService {
 public:
  explicit MasterService(const MasterServiceOptions& options);
  ~MasterService();

  // The RPC methods (cluster_rpc.proto): CreateSession, ExtendSession,
  // RunStep, CloseSession, ListDevices.
  void Handle(const std::string& method, RpcMessage request, RpcDone done);
  static const std::vector<std::string>& Methods();

 private:
  class Session;
  struct Plan;
  struct Step;
  // Calls a task's worker: this task's directly, others over RPC.
  using WorkerCall = std::function<void(const std::string& method, RpcMessage request,
                                        absl::Time deadline, RpcDone done)>;

  void CreateSession(RpcMessage request, RpcDone done);
  void ExtendSession(RpcMessage request, RpcDone done);
  void RunStep(RpcMessage request, RpcDone done);
  void CloseSession(RpcMessage request, RpcDone done);
  void ListDevices(RpcMessage request, RpcDone done);
  void StartStep(std::shared_ptr<const Plan> plan, const RunStepRequest& parsed, RpcMessage request,
                 RpcDone done);

  absl::StatusOr<WorkerCall> Worker(const std::string& task);
  absl::StatusOr<RpcMessage> CallWorker(const std::string& task, const std::string& method,
                                        RpcMessage request, absl::Time deadline);
  // Every task's devices (discovery_timeout per task, in parallel).
  std::vector<std::string> DiscoverDevices();
  absl::StatusOr<std::shared_ptr<Session>> FindSession(const std::string& handle);
  // The signature's plan when it was built before, else nullptr. Errors:
  // bad names (quick: no other task is asked).
  absl::StatusOr<std::shared_ptr<const Plan>> CachedPlan(Session& session,
                                                         const std::vector<std::string>& feeds,
                                                         const std::vector<std::string>& fetches,
                                                         const std::vector<std::string>& targets);
  absl::StatusOr<std::shared_ptr<const Plan>> BuildPlan(Session& session,
                                                        const std::vector<std::string>& feeds,
                                                        const std::vector<std::string>& fetches,
                                                        const std::vector<std::string>& targets);
  void Deregister(const Plan& plan);
  uint64_t NewStepId();

  const MasterServiceOptions options_;
  const std::string task_name_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<RpcClient>> workers_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_);
  // Where calls that wait for other tasks run, so that the transport's
  // threads never block on them.
  std::unique_ptr<Eigen::ThreadPool> blocking_pool_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_MASTER_SERVICE_H_
