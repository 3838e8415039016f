// Writes one V2 checkpoint (tensor bundle) as TensorFlow's BundleWriter
// does: <prefix>.data-00000-of-00001 with the tensors' bytes, then
// <prefix>.index, each under a temporary name until it is complete.
#ifndef RILL_IO_BUNDLE_WRITER_H_
#define RILL_IO_BUNDLE_WRITER_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/proto/tensor_bundle.pb.h"
#include "graph/tensor.h"
#include "graph/tensor_slice.h"
#include "io/posix_file.h"

namespace rill::io {

// Whether `prefix` can name a checkpoint: INVALID_ARGUMENT naming it when
// it is empty, its last part is empty, "." or "..", or it is an existing
// directory or device (the files would land beside it, as "/.index" for
// "/", or in /dev for "/dev/full").
absl::Status CheckCheckpointPrefix(std::string_view prefix);

// Replacing the checkpoint at `prefix` (two files, which no rename swaps
// together) starts with removing its index, durably: a crash before the
// new index is in place leaves no checkpoint there, never the old index
// over new data. OK when there is none.
absl::Status RemoveIndexBeforeReplacing(const std::string& prefix, Env* env);

// Thread safety: none; one writer per prefix. A writer destroyed before
// Finish removes its temporary files and leaves no checkpoint.
class BundleWriter {
 public:
  // Creates the directory of `prefix` when missing. Errors: a prefix
  // CheckCheckpointPrefix refuses, a directory that cannot be made. Every
  // file operation goes through `env`, which must outlive the writer.
  static absl::StatusOr<std::unique_ptr<BundleWriter>> Create(std::string prefix,
                                                              Env* env = Env::Default());
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  // Appends a whole tensor under `key`. Keys must be unique and non-empty;
  // their order does not matter (the index is sorted).
  absl::Status Add(std::string_view key, const Tensor& tensor);
  // Appends `slice_tensor`, the part `slice` of the tensor `key` of shape
  // `full_shape` (a partitioned variable's piece).
  absl::Status AddSlice(std::string_view key, const TensorShape& full_shape,
                        const TensorSlice& slice, const Tensor& slice_tensor);
  // Syncs and renames the data file and syncs its directory, then writes
  // the index the same way: the checkpoint exists (its .index is there)
  // only when all of it is, and after OK it survives a crash. A checkpoint
  // already at the prefix is gone from the moment its data is replaced.
  absl::Status Finish();

  const std::string& prefix() const { return prefix_; }

 private:
  BundleWriter(std::string prefix, std::string data_temp, std::unique_ptr<WritableFile> data,
               Env* env);
  absl::StatusOr<BundleEntryProto> AppendData(std::string_view key, const Tensor& tensor);
  absl::Status WriteIndex();

  const std::string prefix_;
  const std::string data_temp_;
  Env* const env_;
  std::unique_ptr<WritableFile> data_;
  std::map<std::string, BundleEntryProto> entries_;
  absl::Status status_;
  bool finished_ = false;
};

// Writes `entries` (sorted by key; the header is added) as the index of
// `prefix`, atomically and durably (synced, renamed, directory synced).
absl::Status WriteBundleIndex(const std::string& prefix, const BundleHeaderProto& header,
                              const std::map<std::string, BundleEntryProto>& entries,
                              Env* env = Env::Default());

}  // namespace rill::io

#endif  // RILL_IO_BUNDLE_WRITER_H_
