// Joins the per-device checkpoints of a sharded save into one, as
// TensorFlow's MergeV2Checkpoints does: data files are renamed into the
// destination's shard numbering and one index lists every tensor.
#ifndef RILL_IO_BUNDLE_MERGE_H_
#define RILL_IO_BUNDLE_MERGE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "io/env.h"

namespace rill::io {

struct MergeOptions {
  // Remove each input prefix's directory when it differs from the
  // destination's (a sharded save writes its parts into a temporary one).
  bool delete_old_dirs = true;
  // Skip inputs whose index is missing instead of failing.
  bool allow_missing_files = false;
  // Every file operation goes through it; null: Env::Default() when the
  // merge runs (a kernel keeps its options from construction on).
  Env* env = nullptr;
};

// The destination's index is written last, so a crash leaves either no
// destination checkpoint or a whole one.
absl::Status MergeBundles(const std::vector<std::string>& prefixes, const std::string& destination,
                          const MergeOptions& options = {});

}  // namespace rill::io

#endif  // RILL_IO_BUNDLE_MERGE_H_
