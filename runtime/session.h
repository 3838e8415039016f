// Session: the interface through which a program runs a graph, in this
// process or on a cluster; Extend gives it nodes, Run feeds tensors and returns fetches.
#ifndef RILL_RUNTIME_SESSION_H_
#define RILL_RUNTIME_SESSION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/log_sink.h"
#include "graph/proto/graph.pb.h"
#include "graph/tensor.h"
#include "runtime/device/gpu_devices.h"
#include "runtime/exec/step_stats.h"

namespace rill {

struct CurveKeys;  // transport/curve.h

class KernelRegistry;

struct SessionOptions {
  // Empty: run in this process. "zmq://HOST:PORT": run on the cluster
  // whose server listens there (its master places and runs the graph).
  std::string target;
  // The CURVE keys of a cluster that uses them (transport/curve.h): a
  // member's (Server::curve()) or a client's of that cluster.
  std::shared_ptr<const CurveKeys> curve;
  // Threads of the inter-op pool (the executor) and the intra-op pool
  // (Eigen inside kernels). <= 0: one per hardware thread. With one
  // inter-op thread a step runs its nodes one after another on the thread
  // that called Run.
  int inter_op_threads = 0;
  int intra_op_threads = 0;
  // Local devices by type: {"CPU", 2} gives /device:CPU:0 and /device:CPU:1
  // (sharing the intra-op pool), so that a graph placed on both runs
  // partitioned, with _Send/_Recv between them. Absent types: one CPU.
  std::map<std::string, int> device_count;
  // How this process's GPUs are made, the first time any session makes
  // them: each GPU's memory limit, and virtual devices per GPU (two give
  // /device:GPU:0 and /device:GPU:1 on a one-GPU machine).
  GpuOptions gpu;
  // Requests for devices that do not exist (or lack a kernel) fall back to
  // one that does, instead of failing (PlacerOptions).
  bool allow_soft_placement = false;
  // Prints one line per node when its executor is built:
  // "name: (Op): /job:localhost/replica:0/task:0/device:CPU:0", then a
  // summary per device.
  bool log_device_placement = false;
  // Where placement lines go; null: stderr.
  LogSink* log = nullptr;
  // The kernels nodes run with; nullptr means StandardKernels(). Must
  // outlive the session (tests register their own kernels).
  const KernelRegistry* kernel_registry = nullptr;
  // The most bytes one tensor may take (a constant, a feed, a kernel's
  // output); larger ones fail with RESOURCE_EXHAUSTED naming the node.
  // 0 keeps the current limit (by default half the machine's physical memory).
  // The limit is process-wide (graph/allocator.h's MaxTensorBytes): a
  // session made with a value sets it for every session of the process.
  size_t max_tensor_bytes = 0;
};

// Thread safety: Run may be called concurrently from several threads;
// Extend must not race with Run; Close may (the steps that run end
// CANCELLED).
class Session {
 public:
  virtual ~Session() = default;

  // Adds the nodes of `graph` (names must not clash with nodes already
  // there). The combined graph is validated as ImportGraphDef does.
  virtual absl::Status Extend(const GraphDef& graph) = 0;

  // `feeds` are (tensor name "node:k" or "node", value). `fetches` are
  // tensor names, returned in the same order (duplicates allowed); `targets`
  // are node names run for their effect. Bad names fail with TensorFlow's
  // messages before anything runs; a kernel error names its node.
  virtual absl::StatusOr<std::vector<Tensor>> Run(
      const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
      const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
      RunMetadata* metadata) = 0;

  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                          const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets = {}) {
    return Run(RunOptions(), feeds, fetches, targets, nullptr);
  }

  // Releases the executors and the variables' state; later calls fail.
  virtual absl::Status Close() = 0;
};

// A session over the standard ops and kernels holding `graph` (may be
// empty). Fails with the import error when `graph` is invalid.
absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options,
                                                    const GraphDef& graph = GraphDef());

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_H_
