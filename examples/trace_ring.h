// Keeps only the newest traces a training run writes, so that tracing many
// steps fills no disk: each one past the limit deletes the oldest.
#ifndef RILL_EXAMPLES_TRACE_RING_H_
#define RILL_EXAMPLES_TRACE_RING_H_

#include <cstddef>
#include <deque>
#include <string>

#include "absl/status/status.h"

namespace rill::examples {

// Thread safety: none; one writer of traces.
class TraceRing {
 public:
  // Keeps the newest `keep` files; 0 keeps them all.
  explicit TraceRing(size_t keep) : keep_(keep) {}

  // Records `path`, just written, and deletes the oldest recorded file
  // while more than `keep` are. An error names the file it could not delete.
  absl::Status Add(std::string path);

  size_t keep() const { return keep_; }
  // How many files Add has deleted.
  size_t deleted() const { return deleted_; }

 private:
  const size_t keep_;
  std::deque<std::string> paths_;  // Oldest first.
  size_t deleted_ = 0;
};

}  // namespace rill::examples

#endif  // RILL_EXAMPLES_TRACE_RING_H_
