#include "io/bundle_merge.h"

#include <map>
#include <memory>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "io/bundle_format.h"
#include "io/bundle_reader.h"
#include "io/bundle_writer.h"

namespace rill::io {

absl::Status MergeBundles(const std::vector<std::string>& prefixes, const std::string& destination,
                          const MergeOptions& options) {
  if (prefixes.empty()) return absl::InvalidArgumentError("no checkpoints to merge");
  Env* const env = options.env != nullptr ? options.env : Env::Default();
  std::vector<std::unique_ptr<BundleReader>> inputs;
  int num_shards = 0;
  for (const std::string& prefix : prefixes) {
    absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix, env);
    if (absl::IsNotFound(reader.status()) && options.allow_missing_files) continue;
    RETURN_IF_ERROR(reader.status());
    const BundleHeaderProto& header = (*reader)->header();
    if (!inputs.empty()) {
      const BundleHeaderProto& first = inputs.front()->header();
      if (header.endianness() != first.endianness() ||
          header.version().SerializeAsString() != first.version().SerializeAsString()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("cannot merge '%s' and '%s': their endianness or versions differ",
                            inputs.front()->prefix(), prefix));
      }
    }
    num_shards += header.num_shards();
    inputs.push_back(*std::move(reader));
  }
  if (inputs.empty()) return absl::NotFoundError("none of the checkpoints to merge exist");

  // Every input's shards are renumbered after those of the inputs before it.
  std::map<std::string, BundleEntryProto> merged;
  int base = 0;
  for (const std::unique_ptr<BundleReader>& input : inputs) {
    RETURN_IF_ERROR(input->ForEachEntry(
        [&](std::string_view key, const BundleEntryProto& entry) -> absl::Status {
          auto [it, inserted] = merged.try_emplace(std::string(key), entry);
          if (inserted) {
            if (entry.slices_size() == 0) it->second.set_shard_id(entry.shard_id() + base);
            return absl::OkStatus();
          }
          // A partitioned tensor's pieces may come from several inputs.
          if (entry.slices_size() > 0 && it->second.slices_size() > 0) {
            for (const TensorSliceProto& slice : entry.slices()) *it->second.add_slices() = slice;
            return absl::OkStatus();
          }
          return absl::InvalidArgumentError(absl::StrFormat(
              "cannot merge checkpoints into '%s': tensor '%s' is in more than one of them",
              destination, std::string(key)));
        }));
    base += input->header().num_shards();
  }
  RETURN_IF_ERROR(RemoveIndexBeforeReplacing(destination, env));
  base = 0;
  for (const std::unique_ptr<BundleReader>& input : inputs) {
    const int n = input->header().num_shards();
    for (int shard = 0; shard < n; ++shard) {
      RETURN_IF_ERROR(RenameFile(DataFilename(input->prefix(), shard, n),
                                 DataFilename(destination, base + shard, num_shards), env));
    }
    base += n;
  }
  RETURN_IF_ERROR(WriteBundleIndex(destination, MakeBundleHeader(num_shards), merged, env));

  // Cleaning up the inputs is best effort, as in TensorFlow.
  const std::string destination_dir = Dirname(destination);
  for (const std::unique_ptr<BundleReader>& input : inputs) {
    env->DeleteFile(IndexFilename(input->prefix())).IgnoreError();
    const std::string dir = Dirname(input->prefix());
    if (options.delete_old_dirs && dir != destination_dir) {
      env->DeleteDir(dir).IgnoreError();
    }
  }
  return absl::OkStatus();
}

}  // namespace rill::io
