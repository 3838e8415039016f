// The local session: the session core over this process's worker, whose
// partitions are reached by in-process calls and share a local rendezvous.
#ifndef RILL_RUNTIME_SESSION_DIRECT_SESSION_H_
#define RILL_RUNTIME_SESSION_DIRECT_SESSION_H_

#include <memory>

#include "absl/status/statusor.h"
#include "graph/proto/graph.pb.h"
#include "runtime/session.h"

namespace rill {

// A session on this process's devices holding `graph` (may be empty);
// options.target is not read (NewSession picks this for an empty one).
absl::StatusOr<std::unique_ptr<Session>> NewDirectSession(const SessionOptions& options,
                                                          const GraphDef& graph);

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_DIRECT_SESSION_H_
