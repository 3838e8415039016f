// Server: one task of a cluster. It binds one ZeroMQ endpoint and hosts a
// master (client sessions connect to it with target "zmq://HOST:PORT")
// and a worker (partitions of every session's graphs; variables live in
// its device, shared by name across sessions).
#ifndef RILL_RUNTIME_SERVER_H_
#define RILL_RUNTIME_SERVER_H_

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "runtime/cluster_spec.h"
#include "runtime/master_service.h"
#include "runtime/worker_service.h"
#include "transport/rpc.h"

namespace rill {

struct ServerOptions {
  ServerConfig config;
  // What to bind: empty means the task's address in the cluster. "HOST"
  // keeps the cluster's port ("0.0.0.0": every interface); "HOST:PORT"
  // replaces both. The address others use stays the cluster's.
  std::string bind;
  // Also bind an ipc:// endpoint for peers on this machine.
  bool bind_ipc = true;
  std::FILE* log = stderr;
  int inter_op_threads = 0;  // <= 0: one per hardware thread.
  int intra_op_threads = 0;
};

// Thread safety: all methods may be called concurrently.
class Server {
 public:
  // Binds and starts serving. Errors: the task is not in the cluster, a
  // malformed bind address, the port is taken (UNAVAILABLE).
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options);
  // A one-task cluster (job "localhost") on 127.0.0.1 and a free port.
  static absl::StatusOr<std::unique_ptr<Server>> CreateLocal(std::FILE* log = stderr);
  // A cluster in this process, as tf.test.create_local_cluster: `jobs`
  // gives each job's name and task count ({{"worker", 2}, {"ps", 1}});
  // every task listens on 127.0.0.1 and a port of its own, bound before the
  // cluster spec is made, so no other process can take it in between.
  // The servers come in `jobs` order, tasks in index order.
  static absl::StatusOr<std::vector<std::unique_ptr<Server>>> CreateLocalCluster(
      const std::vector<std::pair<std::string, int>>& jobs, std::FILE* log = stderr);
  // Stops serving.
  ~Server();

  // "zmq://HOST:PORT": what client sessions use.
  const std::string& target() const { return target_; }
  int port() const;
  // Returns once Stop has been called.
  void Join();
  void Stop();

 private:
  Server() = default;
  // Binds the transport; calls are refused until Serve.
  static absl::StatusOr<std::unique_ptr<Server>> Bind(const ServerOptions& options,
                                                      const std::string& bind_address);
  // Starts the services for options.config's task.
  absl::Status Serve(const ServerOptions& options, const std::string& bind_address);
  void Handle(const std::string& method, RpcMessage request, RpcDone done);

  std::string target_;
  std::unique_ptr<WorkerService> worker_;
  std::unique_ptr<MasterService> master_;
  // Set once the services exist: a call that arrives before is refused.
  std::atomic<bool> ready_{false};
  std::unique_ptr<RpcServer> rpc_;
  std::atomic<bool> stopping_{false};
  absl::Notification stopped_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_SERVER_H_
