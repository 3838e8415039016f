// The graph one worker of distributed_mnist builds: the Fashion-MNIST
// model, its training op (asynchronous, synchronous or staleness-bounded),
// summaries, readiness op and saver, placed by the replica device setter.
#ifndef RILL_EXAMPLES_DISTRIBUTED_MNIST_GRAPH_H_
#define RILL_EXAMPLES_DISTRIBUTED_MNIST_GRAPH_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "examples/distributed_mnist_flags.h"
#include "graph/proto/graph.pb.h"
#include "runtime/distributed/server.h"
#include "runtime/training/monitored_session.h"

namespace rill::examples {

// The model, its global step, summaries (the loss, the accuracy, and the
// histograms of each variable, "hidden/weights", and of its gradient,
// "hidden/weights/gradient"), readiness op and saver, with the variables
// on the ps tasks and everything else on this worker (on its --device;
// summaries, the saver and the readiness report's string work on its CPU,
// as TensorFlow puts them). Nodes are
// named, since the graph outlives the scope that built it only as a
// GraphDef.
struct DistributedMnistGraph {
  GraphDef def;
  std::string loss;
  std::string accuracy;
  std::string train;
  Scaffold scaffold;
  std::string mode;  // "async", "sync 2 of 3", "staleness 2".
  // Synchronous: the local step after a step (the token, the global step
  // the next step starts at), and the hook that runs the chief's loop.
  std::string token;
  std::unique_ptr<SessionRunHook> sync_hook;
  // Bounded staleness: this worker's clock and the slowest one's.
  std::string clock;
  std::string slowest;
  std::string retire;  // Run when this worker is done, so nobody waits for it.
  // The chief's, with --max_workers: retires the clocks of workers that
  // left (or have not come).
  std::unique_ptr<SessionRunHook> staleness_hook;
};

// The graph of worker `config.task` of `config.cluster`, as `flags` ask.
// With --min_replicas_to_aggregate (synchronous) or --max_workers
// (bounded staleness) the chief follows `live_workers`, the indices of the
// workers its server's membership has now (synchronous: those that
// count), and tells `contributed` whose gradients its sync loop sees
// (SyncReplicasOptions::contributed).
absl::StatusOr<DistributedMnistGraph> BuildDistributedMnistGraph(
    const Flags& flags, const ServerConfig& config,
    std::function<std::vector<int>()> live_workers = nullptr,
    std::function<bool(int worker, absl::Time since)> contributed = nullptr);

}  // namespace rill::examples

#endif  // RILL_EXAMPLES_DISTRIBUTED_MNIST_GRAPH_H_
