// Sessions on a cluster: the graph lives on the master at
// SessionOptions::target ("zmq://HOST:PORT"), which places it over the
// cluster's devices and runs each step on the workers.
#ifndef RILL_RUNTIME_DISTRIBUTED_REMOTE_SESSION_H_
#define RILL_RUNTIME_DISTRIBUTED_REMOTE_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graph/proto/graph.pb.h"
#include "runtime/session.h"

namespace rill {

// "zmq://HOST:PORT" -> "HOST:PORT"; INVALID_ARGUMENT for another scheme or
// a malformed address.
absl::StatusOr<std::string> ParseTarget(const std::string& target);

// Errors: a malformed target; the master's CreateSession errors (an
// invalid graph); UNAVAILABLE when the master does not answer.
absl::StatusOr<std::unique_ptr<Session>> NewRemoteSession(const SessionOptions& options,
                                                          const GraphDef& graph);

// The devices of the cluster behind `target`, as its master sees them
// (through CURVE with `curve`).
absl::StatusOr<std::vector<std::string>> ListRemoteDevices(
    const std::string& target, absl::Duration timeout,
    std::shared_ptr<const CurveKeys> curve = nullptr);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_REMOTE_SESSION_H_
