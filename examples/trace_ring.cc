#include "examples/trace_ring.h"

#include <utility>

#include "io/posix_file.h"

namespace rill::examples {

absl::Status TraceRing::Add(std::string path) {
  paths_.push_back(std::move(path));
  while (keep_ > 0 && paths_.size() > keep_) {
    const std::string oldest = std::move(paths_.front());
    paths_.pop_front();
    // Rewriting a kept name (a step traced again) leaves it recorded twice.
    bool still_kept = false;
    for (const std::string& kept : paths_) still_kept |= kept == oldest;
    if (still_kept) continue;
    // A file someone else removed is as good as deleted.
    if (absl::Status deleted = io::DeleteFile(oldest);
        !deleted.ok() && !absl::IsNotFound(deleted)) {
      return deleted;
    }
    ++deleted_;
  }
  return absl::OkStatus();
}

}  // namespace rill::examples
