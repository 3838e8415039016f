// What a serialized RpcHeader declares, counted from its bytes before it is
// parsed: parsing a header of 20 MB that lists ten million tensors would
// make the server hold gigabytes, so the count decides first.
#ifndef RILL_TRANSPORT_ZMTP_HEADER_CENSUS_H_
#define RILL_TRANSPORT_ZMTP_HEADER_CENSUS_H_

#include <cstdint>
#include <string_view>

namespace rill::zmtp {

struct HeaderCensus {
  // False when the bytes are not a protobuf message (a parse would fail).
  bool well_formed = false;
  std::string_view method;  // Into the bytes; empty when absent.
  uint64_t request_id = 0;
  bool has_request_id = false;
  // Entries of `tensors`.
  int64_t tensors = 0;
  // Of all entries, their shapes' dimensions, and the most of one entry.
  int64_t dims = 0;
  int64_t max_dims = 0;

  // What parsing the header takes beyond its own bytes, at most: each
  // TensorMeta and each dimension is a heap object (pinned by a test
  // against SpaceUsedLong).
  int64_t ParsedBytes() const { return tensors * kBytesPerTensor + dims * kBytesPerDim; }
  static constexpr int64_t kBytesPerTensor = 192;
  static constexpr int64_t kBytesPerDim = 64;
};

// Walks `bytes` as an RpcHeader without allocating.
HeaderCensus CountHeader(std::string_view bytes);

}  // namespace rill::zmtp

#endif  // RILL_TRANSPORT_ZMTP_HEADER_CENSUS_H_
