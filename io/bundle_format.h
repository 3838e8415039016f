// Pieces of TensorFlow's V2 checkpoint ("tensor bundle") format shared by
// its writer, reader and merger: file names, the header, how string
// tensors are laid out, and the keys of a partitioned tensor's pieces.
#ifndef RILL_IO_BUNDLE_FORMAT_H_
#define RILL_IO_BUNDLE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "graph/proto/tensor_bundle.pb.h"
#include "graph/tensor.h"
#include "graph/tensor_slice.h"

namespace rill::io {

// The header sits under the empty key, which sorts first.
inline constexpr std::string_view kHeaderKey = "";
inline constexpr int kTensorBundleVersion = 1;
inline constexpr int kTensorBundleMinProducer = 0;

std::string IndexFilename(std::string_view prefix);
// "<prefix>.data-%05d-of-%05d".
std::string DataFilename(std::string_view prefix, int shard, int num_shards);

// Tensor bytes are read and written in pieces of this size, each
// checksummed while it is still in the cache (the L2 of current cores),
// rather than in two passes over the whole tensor.
inline constexpr size_t kChecksumChunkBytes = size_t{1} << 20;

BundleHeaderProto MakeBundleHeader(int num_shards);
// Checks the version and endianness TensorFlow's reader checks; `path`
// names the file in errors.
absl::Status CheckBundleHeader(const BundleHeaderProto& header, const std::string& path);

// A string tensor's bytes in a data file: each length as a varint64, a
// masked checksum of the lengths, then every string's bytes. Sets `*crc`
// to the entry's (unmasked) checksum.
std::string EncodeStringTensor(const Tensor& tensor, uint32_t* crc);
// Fills `out` (of the entry's shape, already allocated) from `data`; the
// error names `where` (file and key).
absl::Status DecodeStringTensor(std::string_view data, const Tensor& out, uint32_t* crc,
                                const std::string& where);

// Reverses the byte order of every element of a numeric tensor, for a
// bundle written on a machine of the other endianness.
void ByteSwapTensor(const Tensor& tensor);

// The key under which the piece `slice` of the tensor `name` is stored,
// built with TensorFlow's OrderedCode so pieces sort before plain names.
std::string SliceKey(std::string_view name, const TensorSlice& slice);

// Copies the part of `src` (holding `src_slice` of a tensor of shape
// `full`) that falls inside `dst_slice` into `dst` (holding `dst_slice`).
// REQUIRES: equal dtypes; the slices fit `full`.
void CopySliceData(const Tensor& src, const TensorSlice& src_slice, const Tensor& dst,
                   const TensorSlice& dst_slice, const TensorShape& full);

}  // namespace rill::io

#endif  // RILL_IO_BUNDLE_FORMAT_H_
