// MasterService: the master half of a server, as RPC methods. A client
// session sends its graph here; the master discovers the devices of the
// tasks the graph names and runs the session through a SessionCore whose
// workers are this task's (in-process) and the others' (over RPC).
#ifndef RILL_RUNTIME_DISTRIBUTED_MASTER_SERVICE_H_
#define RILL_RUNTIME_DISTRIBUTED_MASTER_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "kernels/framework/kernel_registry.h"
#include "runtime/distributed/channel_cache.h"
#include "runtime/distributed/cluster_spec.h"
#include "runtime/distributed/remote_worker.h"
#include "runtime/session/worker.h"
#include "transport/rpc.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {

struct MasterServiceOptions {
  TaskId task;
  // This task's worker, called directly rather than over the network.
  Worker* local_worker = nullptr;
  // The other tasks (and the cluster spec).
  ChannelCache* channels = nullptr;
  // Session start-up lines and, when a session asks, the placement log;
  // null: stderr.
  LogSink* log = nullptr;
  // How long device discovery waits for a worker; one that does not answer
  // is assumed to have its CPU:0 (a step that needs it fails then).
  absl::Duration discovery_timeout = absl::Seconds(2);
  // Which devices have kernels for a node; null: StandardKernels().
  const KernelRegistry* kernel_registry = nullptr;
  // A session without a step, an extension or a renewal for this long is
  // closed (ExpireIdleSessions); clients renew theirs. Zero: never.
  absl::Duration session_idle_timeout = absl::Minutes(10);
  // Sessions open at once; CreateSession beyond is RESOURCE_EXHAUSTED.
  int max_sessions = 1024;
};

// Handlers never block: set-up work runs on the master's own threads.
// Thread safety: all methods may be called concurrently.
class MasterService {
 public:
  explicit MasterService(const MasterServiceOptions& options);
  ~MasterService();

  // CreateSession, ExtendSession, RunStep, RenewSession, CloseSession,
  // ListDevices (cluster_rpc.proto).
  std::vector<RpcMethod> Methods();

  // Closes the sessions idle for session_idle_timeout at `now` (none
  // while a step runs); returns how many.
  int ExpireIdleSessions(absl::Time now);

 private:
  class Workers;
  struct MasterSession;

  void CreateSession(RpcMessage request, RpcDone done);
  void ExtendSession(RpcMessage request, RpcDone done);
  void RunStep(RpcMessage request, RpcDone done);
  void RenewSession(RpcMessage request, RpcDone done);
  void CloseSession(RpcMessage request, RpcDone done);
  void ListDevices(RpcMessage request, RpcDone done);
  // The devices of `tasks` (discovery_timeout per task, in parallel).
  std::vector<std::string> DiscoverDevices(const std::vector<std::string>& tasks);
  // The open session `handle`, marked used now; `steps` is added to its
  // running steps.
  absl::StatusOr<std::shared_ptr<MasterSession>> FindSession(const std::string& handle,
                                                             int steps = 0);
  // A step of `session` is over.
  void StepDone(MasterSession& session);
  // `handler`, run on the master's own threads, so that the transport's
  // threads never wait for other tasks.
  RpcHandler Later(RpcHandler handler);

  const MasterServiceOptions options_;
  const std::string task_name_;
  LogSink* const log_;
  std::unique_ptr<Workers> workers_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<MasterSession>> sessions_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Eigen::ThreadPool> blocking_pool_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_MASTER_SERVICE_H_
