// NewSession picks the session for a target: this process's, or a cluster's
// through its master. Apart from session.h so that the interface includes neither.
#include <memory>

#include "graph/allocator.h"
#include "runtime/distributed/remote_session.h"
#include "runtime/session.h"
#include "runtime/session/direct_session.h"

namespace rill {

absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options,
                                                    const GraphDef& graph) {
  if (options.max_tensor_bytes > 0) SetMaxTensorBytes(options.max_tensor_bytes);
  if (!options.target.empty()) return NewRemoteSession(options, graph);
  return NewDirectSession(options, graph);
}

}  // namespace rill
