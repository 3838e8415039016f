// Reads a V2 checkpoint (tensor bundle) written by rill or TensorFlow:
// looks tensors up in <prefix>.index and reads and checks their bytes from
// the .data files.
#ifndef RILL_IO_BUNDLE_READER_H_
#define RILL_IO_BUNDLE_READER_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/proto/tensor_bundle.pb.h"
#include "graph/tensor.h"
#include "graph/tensor_slice.h"
#include "io/posix_file.h"
#include "io/table.h"

namespace rill::io {

// Thread safety: every method may be called concurrently.
class BundleReader {
 public:
  // NOT_FOUND when <prefix>.index is missing; DATA_LOSS naming the file
  // when it is not a valid index. Files are read through `env`, which must
  // outlive the reader.
  static absl::StatusOr<std::unique_ptr<BundleReader>> Open(std::string prefix,
                                                            Env* env = Env::Default());

  const std::string& prefix() const { return prefix_; }
  const BundleHeaderProto& header() const { return header_; }

  // NOT_FOUND naming the key and the checkpoint when it is not there.
  absl::StatusOr<BundleEntryProto> Entry(std::string_view key) const;
  // The whole tensor; a partitioned one is put together from its pieces.
  absl::StatusOr<Tensor> Read(std::string_view key) const;
  // The part `slice` of the tensor `key`, whose shape must be `full_shape`.
  absl::StatusOr<Tensor> ReadSlice(std::string_view key, const TensorShape& full_shape,
                                   const TensorSlice& slice) const;
  // Every entry but the header, in key order (pieces of partitioned tensors
  // included; their keys start with a zero byte).
  absl::Status ForEachEntry(
      const std::function<absl::Status(std::string_view key, const BundleEntryProto& entry)>& visit)
      const;

 private:
  BundleReader(std::string prefix, Env* env, std::unique_ptr<TableReader> index,
               BundleHeaderProto header);
  absl::StatusOr<const RandomAccessFile*> DataFile(int shard_id, std::string_view key) const;
  // Reads the bytes of a stored (unpartitioned) entry.
  absl::StatusOr<Tensor> ReadStored(std::string_view key, const BundleEntryProto& entry) const;
  absl::StatusOr<TensorShape> ShapeOf(std::string_view key, const BundleEntryProto& entry) const;

  const std::string prefix_;
  Env* const env_;
  const std::unique_ptr<TableReader> index_;
  const BundleHeaderProto header_;
  mutable absl::Mutex mu_;
  // By shard id, opened when first read: the header may announce any
  // number of shards (up to 2^31 - 1).
  mutable absl::flat_hash_map<int, std::unique_ptr<RandomAccessFile>> data_files_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace rill::io

#endif  // RILL_IO_BUNDLE_READER_H_
