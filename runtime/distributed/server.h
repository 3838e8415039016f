// Server: one task of a cluster. It binds one ZeroMQ endpoint and hosts a
// master (client sessions connect to it with target "zmq://HOST:PORT")
// and a worker (partitions of every session's graphs; variables live in
// its device, shared by name across sessions).
#ifndef RILL_RUNTIME_DISTRIBUTED_SERVER_H_
#define RILL_RUNTIME_DISTRIBUTED_SERVER_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "graph/log_sink.h"
#include "kernels/framework/kernel_registry.h"
#include "runtime/distributed/channel_cache.h"
#include "runtime/distributed/cluster_spec.h"
#include "runtime/distributed/job_membership.h"
#include "runtime/distributed/master_service.h"
#include "runtime/distributed/worker_service.h"
#include "runtime/session/worker.h"
#include "transport/rpc.h"

namespace rill {

// What peers can make a server hold. Every limit is logged when it trips;
// the defaults are far above what training needs.
struct ServerLimits {
  // Per connection: calls whose replies are not written yet and the bytes
  // held; bytes held for all connections; connections open at once.
  ConnectionLimitOptions connections;
  // Tensors pushed for steps that have not begun here.
  PendingPushLimits pending_pushes;
  // Sessions unused this long are closed (clients renew theirs).
  absl::Duration session_idle_timeout = absl::Minutes(10);
  int max_sessions = 1024;
  // Graphs registered on this task's worker.
  RegisteredGraphLimits graphs{
      .idle_timeout = absl::Minutes(10), .max_graphs = 4096, .max_bytes = int64_t{4} << 30};
};

struct ServerOptions {
  ServerConfig config;
  // The task's devices ({"CPU", 2}: CPU:0 and CPU:1); absent: one CPU.
  std::map<std::string, int> device_count;
  // What to bind: empty means the task's address in the cluster. "HOST"
  // keeps the cluster's port ("0.0.0.0": every interface); "HOST:PORT"
  // replaces both. The address others use stays the cluster's.
  std::string bind;
  // Also bind an ipc:// endpoint for peers on this machine.
  bool bind_ipc = true;
  // Large tensors this task sends to a task on this machine (reached by
  // ipc) travel through shared memory (RpcClientOptions::shm_min_bytes).
  bool shared_memory = true;
  // Start-up lines, sessions and placement logs; null: stderr.
  LogSink* log = nullptr;
  int inter_op_threads = 0;  // <= 0: one per hardware thread.
  int intra_op_threads = 0;
  // The kernels nodes run with; null: StandardKernels(). Must outlive the
  // server (tests register their own kernels).
  const KernelRegistry* kernel_registry = nullptr;
  // CURVE keys: the server accepts only authorized clients and peers, and
  // encrypts everything; its own calls to other tasks use them too. Null:
  // read from config.curve_keys when that is set, else none.
  std::shared_ptr<const CurveKeys> curve;
  // The most bytes one tensor may take in this process (as
  // SessionOptions::max_tensor_bytes); 0 keeps the current limit.
  size_t max_tensor_bytes = 0;
  ServerLimits limits;
};

// Thread safety: all methods may be called concurrently.
class Server {
 public:
  // Binds and starts serving; a host name in the task's address (or in
  // `bind`) is bound as the address it resolves to. Errors: the task is
  // not in the cluster, a malformed bind address, a host name that does
  // not resolve (naming the task and its address), the port is taken
  // (UNAVAILABLE), a bad device count.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options);
  // A one-task cluster (job "localhost") on 127.0.0.1 and a free port.
  static absl::StatusOr<std::unique_ptr<Server>> CreateLocal(LogSink* log = nullptr);
  // A cluster in this process, as tf.test.create_local_cluster: `jobs`
  // gives each job's name and task count ({{"worker", 2}, {"ps", 1}});
  // every task listens on 127.0.0.1 and a port of its own, bound before the
  // cluster spec is made, so no other process can take it in between.
  // The servers come in `jobs` order, tasks in index order.
  static absl::StatusOr<std::vector<std::unique_ptr<Server>>> CreateLocalCluster(
      const std::vector<std::pair<std::string, int>>& jobs, LogSink* log = nullptr);
  // As above, every task with `options` (less config and bind, which the
  // cluster sets).
  static absl::StatusOr<std::vector<std::unique_ptr<Server>>> CreateLocalCluster(
      const std::vector<std::pair<std::string, int>>& jobs, const ServerOptions& options);
  // Stops serving.
  ~Server();

  // "zmq://HOST:PORT": what client sessions use.
  const std::string& target() const { return target_; }
  // The keys its clients need (SessionOptions::curve); null without.
  const std::shared_ptr<const CurveKeys>& curve() const { return curve_; }
  int port() const;
  // Who the job has now, as this server keeps it when it is the job's
  // coordinator (the chief's): workers join it, stay by heartbeats
  // (JobMember) and are dropped when silent.
  const JobMembership& membership() const { return *membership_; }
  // The same, for the chief's sync loop to say who contributed.
  JobMembership& membership() { return *membership_; }
  // Returns once Stop has been called.
  void Join();
  void Stop();

 private:
  Server() = default;
  // A server with its keys, nothing started.
  static absl::StatusOr<std::unique_ptr<Server>> New(const ServerOptions& options);
  // Binds the transport; calls are refused until Serve.
  static absl::StatusOr<std::unique_ptr<Server>> Bind(const ServerOptions& options,
                                                      const std::string& bind_address);
  // Starts the services for options.config's task on the bound transport.
  absl::Status Serve(const ServerOptions& options, const std::string& bind_address);
  // Makes the services for options.config's task; returns their methods.
  absl::StatusOr<std::vector<RpcMethod>> MakeServices(const ServerOptions& options,
                                                      const std::string& bind_address);
  // Binds the transport serving `methods` (none: refused until Serve).
  absl::Status Listen(const ServerOptions& options, const std::string& bind_address,
                      std::vector<RpcMethod> methods);
  // Starts the janitor and logs that the server is up.
  void Started(const ServerOptions& options, const std::string& bind_address);

  std::string target_;
  LogSink* log_ = LogSink::Stderr();
  std::shared_ptr<const CurveKeys> curve_;
  // Declared in the order they are made; destroyed transport first.
  std::unique_ptr<ChannelCache> channels_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<WorkerService> worker_service_;
  std::unique_ptr<MasterService> master_;
  std::unique_ptr<JobMembership> membership_;
  std::unique_ptr<RpcServer> rpc_;
  std::atomic<bool> stopping_{false};
  absl::Notification stopped_;
  // Expires idle sessions and pushes for steps that never began.
  absl::Notification janitor_stop_;
  std::thread janitor_;
};

// For a process that serves until it is told to stop: blocks SIGTERM and
// SIGINT in the calling thread, so that every thread started after it
// inherits the mask and the signals wait for WaitForStopSignal. Call it
// before starting a server.
void BlockStopSignals();
// Waits for SIGTERM or SIGINT (blocked by BlockStopSignals); returns which.
int WaitForStopSignal();

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_SERVER_H_
